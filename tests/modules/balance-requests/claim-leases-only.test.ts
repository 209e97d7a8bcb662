// A claim only leases: a batch's queue rows (up to 1000 a batch) are created before the claim, each batch in a
// transaction of its own, so a claim's transaction stays as short as the rows it leases.
import { expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { processBalances, startPendingBatches } from '../../../src/modules/balance-requests/processing';

const ctx = useTestContext();

const batch = (id: string) =>
  ctx.sql
    .query('SELECT status, (SELECT COUNT(*) FROM batch_items WHERE batch_id = ?1) AS items FROM batches WHERE id = ?1')
    .get(id) as { status: string; items: number };

test('a claim leaves a pending batch alone; starting it queues every row at once; then the claim leases them', async () => {
  const authorizers = Array.from({ length: 40 }, (_, i) => bankAuthorizer(`lease-only-${i}`, { account_number: `00012${String(i).padStart(5, '0')}` }));
  const { status, body } = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers } });
  expect(status).toBe(201);
  const id = body.batch_id as string;
  expect(batch(id)).toEqual({ status: 'pending', items: 0 });

  expect(await ctx.rt.stores.balances.claimDueReads({ deps: ctx.rt }, 10, ctx.clock.now())).toEqual([]);
  expect(batch(id)).toEqual({ status: 'pending', items: 0 });

  expect(await startPendingBatches(ctx.rt)).toBe(1);
  expect(batch(id)).toEqual({ status: 'processing', items: 40 });
  // Started once: a second call finds nothing pending and queues nothing twice.
  expect(await startPendingBatches(ctx.rt)).toBe(0);
  expect(batch(id).items).toBe(40);

  const claimed = await ctx.rt.stores.balances.claimDueReads({ deps: ctx.rt }, 10, ctx.clock.now());
  expect(claimed).toHaveLength(10);
  expect(new Set(claimed.map((c) => c.batchId))).toEqual(new Set([id]));

  // The job does both, in that order, and reads every row once the leases run out.
  ctx.clock.advance(200_000);
  await processBalances(ctx.rt);
  expect((await ctx.json('GET', `/v1/balance_requests/${id}`)).body).toMatchObject({ status: 'completed' });
});
