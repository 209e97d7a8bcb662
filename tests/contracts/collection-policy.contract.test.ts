import { expect, test } from 'bun:test';
import { contract } from './contract';

contract('collectionPolicy', (t) => {
  const { ctx, store, storeCtx } = t;

  test('a lender that never saved a policy has no row and no change time', async () => {
    expect(await store.policyRow(storeCtx, ctx.lender.id)).toBeUndefined();
    expect(await store.policyUpdatedAt(storeCtx, ctx.lender.id)).toBeNull();
    const read = await ctx.json('GET', '/v1/collection_policy');
    expect(read.status).toBe(200);
    expect(read.body.notice_days).toBe(0);
  });

  test('a change through the API is stored whole and read back the same on both engines', async () => {
    const changed = await ctx.json('PATCH', '/v1/collection_policy', { body: { notice_days: 3, debit_buffer_cents: 1250 } });
    expect(changed.status).toBe(200);
    const row = await store.policyRow(storeCtx, ctx.lender.id);
    expect(row).toMatchObject({ noticeDays: 3, debitBufferCents: 1250 });
    expect(typeof row!.cfpbCovered).toBe('number');
    expect(await store.policyUpdatedAt(storeCtx, ctx.lender.id)).toBe(ctx.clock.now());
  });

  test('savePolicy replaces the row: a second save wins, fields not named stay as saved', async () => {
    const other = ctx.newLender();
    // Taken by the change before it reads the policy it patches; a lender's own, so another lender's waits not.
    await t.inTx((tx) => store.serializePolicyChange(tx, other.id));
    const first = await ctx.json('PATCH', '/v1/collection_policy', { key: other.key, body: { max_reinitiations: 1 } });
    expect(first.status).toBe(200);
    ctx.clock.advance(60_000);
    const second = await ctx.json('PATCH', '/v1/collection_policy', { key: other.key, body: { notice_days: 2 } });
    expect(second.status).toBe(200);
    expect(await store.policyRow(storeCtx, other.id)).toMatchObject({ maxReinitiations: 1, noticeDays: 2 });
    expect(await store.policyUpdatedAt(storeCtx, other.id)).toBe(ctx.clock.now());
  });
});
