import { expect, test } from 'bun:test';
import { contract } from './contract';
import { ACCOUNT_OF_ANOTHER_LENDER, learnAccounts, listBindings, releaseAccount } from '../../src/modules/payment-connections/accounts';
import { resolveKey } from '../../src/modules/payment-connections/resolve';
import type { NewPaymentConnection } from '../../src/modules/payment-connections/store';
import { newId } from '../../src/platform/ids';

let n = 0;
const sbx = () => `sbx_contract_${String(++n).padStart(12, '0')}`;
// The sandbox's account of a key, as it answers verifyKey.
const accountOf = (key: string) => `sbxacct_${new Bun.CryptoHasher('sha256').update(key).digest('hex').slice(0, 32)}`;

contract('paymentConnections', (t) => {
  const { ctx, store, storeCtx } = t;

  const create = (key: string | undefined, body: Record<string, unknown>) =>
    ctx.json('POST', '/v1/payment_connections', { key, body: { api_key: sbx(), ...body } });

  /** A key stored as it was before accounts were recorded: no account, no binding. */
  const storedWithoutAccount = (lenderId: string, key: string, extra: Partial<NewPaymentConnection> = {}): NewPaymentConnection => ({
    id: newId(),
    lenderId,
    processor: 'sandbox',
    label: 'older key',
    railScope: 'ach',
    keySealed: ctx.rt.vault.seal(key),
    keyLast4: key.slice(-4),
    createdAt: ctx.clock.now(),
    updatedAt: ctx.clock.now(),
    ...extra,
  });

  test('a registered key is read back whole and typed, bound to its account from the moment it was registered', async () => {
    const lender = ctx.newLender();
    const apiKey = sbx();
    const made = await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: apiKey, rail_scope: 'ach', is_default: true } });
    expect(made.status).toBe(201);
    const row = (await store.liveKey(storeCtx, lender.id, made.body.id))!;
    expect(row).toMatchObject({
      id: made.body.id,
      lenderId: lender.id,
      processor: 'sandbox',
      merchantRef: null,
      railScope: 'ach',
      isDefault: true,
      keyLast4: apiKey.slice(-4),
      pollCursor: null,
      lastPollAt: null,
      lastPollError: null,
      ingested: 0,
      matched: 0,
      accountId: accountOf(apiKey),
      reconciledAt: null,
      reconcileDue: false,
      createdAt: ctx.clock.now(),
      updatedAt: ctx.clock.now(),
      deletedAt: null,
    });
    expect(ctx.rt.vault.open(row.keySealed!)).toBe(apiKey);
    // Another lender's id does not find it, nor an unknown id.
    expect(await store.liveKey(storeCtx, ctx.lender.id, made.body.id)).toBeUndefined();
    expect(await store.liveKey(storeCtx, lender.id, newId())).toBeUndefined();

    expect(await store.accountBinding(storeCtx, 'sandbox', accountOf(apiKey))).toEqual({ lenderId: lender.id, boundAt: ctx.clock.now() });
    expect(await store.accountBinding(storeCtx, 'stripe', accountOf(apiKey))).toBeUndefined();
    expect(await store.accountInUse(storeCtx, { processor: 'sandbox', accountId: accountOf(apiKey), lenderId: lender.id })).toBe(true);
    expect(await store.accountInUse(storeCtx, { processor: 'sandbox', accountId: accountOf(apiKey), lenderId: ctx.lender.id })).toBe(false);
  });

  test('live keys are listed defaults first, then oldest first, ties in the order they were made; other lenders\' left out', async () => {
    const lender = ctx.newLender();
    const other = ctx.newLender();
    await create(other.key, { rail_scope: 'ach' });
    const plain = (await create(lender.key, { rail_scope: 'ach' })).body.id;
    ctx.clock.advance(1_000);
    const tagged = (await create(lender.key, { rail_scope: 'card', merchant_ref: 'shop' })).body.id;
    const sameMs = (await create(lender.key, { rail_scope: 'card', merchant_ref: 'mall' })).body.id;
    ctx.clock.advance(1_000);
    const cardDefault = (await create(lender.key, { rail_scope: 'card', is_default: true })).body.id;
    const achDefault = (await create(lender.key, { rail_scope: 'ach', is_default: true })).body.id;
    const listed = (await store.listLiveKeys(storeCtx, lender.id)).map((k) => k.id);
    expect(listed).toEqual([cardDefault, achDefault, plain, tagged, sameMs]);
    expect((await ctx.json('GET', '/v1/payment_connections', { key: lender.key })).body.connections.map((k: { id: string }) => k.id)).toEqual(listed);
    // liveKeys promises no order: the same set.
    expect((await store.liveKeys(storeCtx, lender.id)).map((k) => k.id).sort()).toEqual([...listed].sort());
    expect(await store.liveKeys(storeCtx, ctx.newLender().id)).toEqual([]);
  });

  test('a second default of a rail_scope is refused, by the service at once and by the store when it is bypassed', async () => {
    const lender = ctx.newLender();
    const [a, b] = await Promise.all([create(lender.key, { rail_scope: 'card', is_default: true }), create(lender.key, { rail_scope: 'card', is_default: true })]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    await expect(
      t.inTx(async (tx) => {
        await store.serializeKeyChanges(tx, lender.id);
        await store.insertKey(tx, storedWithoutAccount(lender.id, sbx(), { railScope: 'card', isDefault: true, accountId: 'acct_bypass' }));
      }),
    ).rejects.toThrow();
    const defaults = (await store.liveKeys(storeCtx, lender.id)).filter((k) => k.isDefault);
    expect(defaults).toHaveLength(1);
  });

  test('promotion swaps defaults; updateKey writes the columns named and nothing else; a rolled-back change is not kept', async () => {
    const lender = ctx.newLender();
    const first = (await create(lender.key, { rail_scope: 'both', is_default: true })).body.id;
    const second = (await create(lender.key, { rail_scope: 'both', label: 'second' })).body.id;
    ctx.clock.advance(1_000);
    const promoted = await ctx.json('PATCH', `/v1/payment_connections/${second}`, { key: lender.key, body: { is_default: true } });
    expect(promoted.status).toBe(200);
    expect((await store.liveKey(storeCtx, lender.id, first))!).toMatchObject({ isDefault: false, updatedAt: ctx.clock.now() });
    expect((await store.liveKey(storeCtx, lender.id, second))!).toMatchObject({ isDefault: true, label: 'second', updatedAt: ctx.clock.now() });

    await t.inTx((tx) => store.updateKey(tx, first, { pollCursor: 'cursor-7', lastPollAt: ctx.clock.now() + 5, reconcileDue: true }));
    const polled = (await store.liveKey(storeCtx, lender.id, first))!;
    expect(polled).toMatchObject({ pollCursor: 'cursor-7', lastPollAt: ctx.clock.now() + 5, reconcileDue: true, railScope: 'both', isDefault: false });
    await expect(
      t.inTx(async (tx) => {
        await store.updateKey(tx, first, { label: 'never', pollCursor: null });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect((await store.liveKey(storeCtx, lender.id, first))!).toMatchObject({ label: polled.label, pollCursor: 'cursor-7' });
  });

  test('a deleted key is erased and no longer live; what was read through it still counts, and its account stays bound', async () => {
    const lender = ctx.newLender();
    expect(await store.keyTotals(storeCtx, lender.id)).toEqual({ ingested: 0, matched: 0, lastPollAt: null });
    const apiKey = sbx();
    const gone = (await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: apiKey, rail_scope: 'ach', is_default: true } })).body.id;
    const kept = (await create(lender.key, { rail_scope: 'card' })).body.id;
    const polledAt = ctx.clock.now() + 60_000;
    await t.inTx(async (tx) => {
      await store.updateKey(tx, gone, { ingested: 7, matched: 3, lastPollAt: polledAt });
      await store.updateKey(tx, kept, { ingested: 5, matched: 1, lastPollAt: polledAt - 1 });
    });
    ctx.clock.advance(120_000);
    expect((await ctx.json('DELETE', `/v1/payment_connections/${gone}`, { key: lender.key })).status).toBe(204);
    // A second delete finds no live key.
    expect((await ctx.json('DELETE', `/v1/payment_connections/${gone}`, { key: lender.key })).status).toBe(404);
    expect(await store.liveKey(storeCtx, lender.id, gone)).toBeUndefined();
    expect((await store.liveKeys(storeCtx, lender.id)).map((k) => k.id)).toEqual([kept]);
    const [row] = await ctx.rows<{ key_sealed: string | null; is_default: unknown; deleted_at: number; updated_at: number }>(
      'SELECT key_sealed, is_default, deleted_at, updated_at FROM payment_connections WHERE id = ?',
      gone,
    );
    expect(row).toMatchObject({ key_sealed: null, deleted_at: ctx.clock.now(), updated_at: ctx.clock.now() });
    expect(Number(row!.is_default)).toBe(0);

    const totals = await store.keyTotals(storeCtx, lender.id);
    expect(totals).toEqual({ ingested: 12, matched: 4, lastPollAt: polledAt });
    expect(typeof totals.ingested).toBe('number');
    const listed = (await ctx.json('GET', '/v1/payment_connections', { key: lender.key })).body;
    expect(listed).toMatchObject({ ingested: 12, matched: 4, last_poll_at: new Date(polledAt).toISOString() });

    // Erasing directly does the same, and the account of a deleted key is no longer in use but stays bound.
    await t.inTx((tx) => store.eraseKey(tx, kept, ctx.clock.now()));
    expect(await store.listLiveKeys(storeCtx, lender.id)).toEqual([]);
    expect(await store.accountInUse(storeCtx, { processor: 'sandbox', accountId: accountOf(apiKey), lenderId: lender.id })).toBe(false);
    expect((await store.accountBinding(storeCtx, 'sandbox', accountOf(apiKey)))?.lenderId).toBe(lender.id);
  });

  test('an account is released only when no live key uses it, and then the next lender binds it from its own moment', async () => {
    const holder = ctx.newLender('Account Holder');
    const next = ctx.newLender('Next Holder');
    const apiKey = sbx();
    const account = accountOf(apiKey);
    const id = (await ctx.json('POST', '/v1/payment_connections', { key: holder.key, body: { api_key: apiKey, rail_scope: 'ach' } })).body.id;
    const boundAt = ctx.clock.now();
    expect(await t.inTx((tx) => releaseAccount(tx, 'sandbox', account))).toBe('in_use');
    expect((await ctx.json('POST', '/v1/payment_connections', { key: next.key, body: { api_key: apiKey, rail_scope: 'ach' } })).status).toBe(409);
    expect((await listBindings(storeCtx)).find((b) => b.accountId === account)).toEqual({ processor: 'sandbox', accountId: account, lender: 'Account Holder', boundAt });

    expect((await ctx.json('DELETE', `/v1/payment_connections/${id}`, { key: holder.key })).status).toBe(204);
    // A release in a transaction that rolls back leaves the binding.
    await expect(
      t.inTx(async (tx) => {
        await store.releaseAccount(tx, 'sandbox', account);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect((await store.accountBinding(storeCtx, 'sandbox', account))?.lenderId).toBe(holder.id);
    expect(await t.inTx((tx) => releaseAccount(tx, 'sandbox', account))).toBe('released');
    expect(await store.accountBinding(storeCtx, 'sandbox', account)).toBeUndefined();
    expect(await t.inTx((tx) => releaseAccount(tx, 'sandbox', account))).toBe('unknown');

    ctx.clock.advance(30_000);
    expect((await ctx.json('POST', '/v1/payment_connections', { key: next.key, body: { api_key: apiKey, rail_scope: 'ach' } })).status).toBe(201);
    expect(await store.accountBinding(storeCtx, 'sandbox', account)).toEqual({ lenderId: next.id, boundAt: ctx.clock.now() });
  });

  test('bindings are listed oldest first with their lender\'s name; a second binding of one account is refused', async () => {
    const lender = ctx.newLender('Binding Lister');
    const at = ctx.clock.now();
    await t.inTx(async (tx) => {
      await store.serializeAccount(tx, 'stripe', 'acct_late');
      await store.bindAccount(tx, { processor: 'stripe', accountId: 'acct_late', lenderId: lender.id, boundAt: at + 2_000 });
      await store.bindAccount(tx, { processor: 'stripe', accountId: 'acct_early', lenderId: lender.id, boundAt: at - 2_000 });
      await store.bindAccount(tx, { processor: 'stripe', accountId: 'acct_middle', lenderId: lender.id, boundAt: at });
    });
    const mine = (await store.listBindings(storeCtx)).filter((b) => b.lender === 'Binding Lister');
    expect(mine).toEqual([
      { processor: 'stripe', accountId: 'acct_early', lender: 'Binding Lister', boundAt: at - 2_000 },
      { processor: 'stripe', accountId: 'acct_middle', lender: 'Binding Lister', boundAt: at },
      { processor: 'stripe', accountId: 'acct_late', lender: 'Binding Lister', boundAt: at + 2_000 },
    ]);
    const all = await store.listBindings(storeCtx);
    expect(all.map((b) => b.boundAt)).toEqual([...all.map((b) => b.boundAt)].sort((x, y) => x - y));
    await expect(
      t.inTx((tx) => store.bindAccount(tx, { processor: 'stripe', accountId: 'acct_early', lenderId: ctx.lender.id, boundAt: at })),
    ).rejects.toThrow();
    expect((await store.accountBinding(storeCtx, 'stripe', 'acct_early'))?.lenderId).toBe(lender.id);
    // The same account id at another processor is another account.
    expect(await store.accountBinding(storeCtx, 'sandbox', 'acct_early')).toBeUndefined();
  });

  test('keys without an account are found oldest first, learned once, and bound to their first lender only', async () => {
    const first = ctx.newLender();
    const second = ctx.newLender();
    const shared = sbx();
    const before = await store.keysWithoutAccount(storeCtx);
    const a = storedWithoutAccount(first.id, shared, { createdAt: ctx.clock.now() - 10_000 });
    const b = storedWithoutAccount(second.id, shared, { createdAt: ctx.clock.now() - 5_000, railScope: 'card' });
    const stripeKey = storedWithoutAccount(first.id, 'sk_test_never_asked', { processor: 'stripe', createdAt: ctx.clock.now() - 7_000 });
    // Left out: a key already erased, and one whose account is known.
    const erased = storedWithoutAccount(first.id, sbx(), { keySealed: null, deletedAt: ctx.clock.now(), railScope: 'both' });
    const known = storedWithoutAccount(second.id, sbx(), { accountId: 'sbxacct_known', railScope: 'both' });
    await t.inTx(async (tx) => {
      for (const row of [b, stripeKey, a, erased, known]) await store.insertKey(tx, row);
    });
    const waiting = (await store.keysWithoutAccount(storeCtx)).filter((k) => !before.some((o) => o.id === k.id));
    expect(waiting).toEqual([
      { id: a.id, lenderId: first.id, processor: 'sandbox', keySealed: a.keySealed! },
      { id: stripeKey.id, lenderId: first.id, processor: 'stripe', keySealed: stripeKey.keySealed! },
      { id: b.id, lenderId: second.id, processor: 'sandbox', keySealed: b.keySealed! },
    ]);
    expect((await store.keysWithoutAccount(storeCtx, 'sandbox')).map((k) => k.id)).toEqual([a.id, b.id]);

    expect(await learnAccounts(ctx.rt, { processor: 'sandbox' })).toBe(2);
    expect(await store.keysWithoutAccount(storeCtx, 'sandbox')).toEqual([]);
    expect(await store.accountBinding(storeCtx, 'sandbox', accountOf(shared))).toEqual({ lenderId: first.id, boundAt: ctx.clock.now() });
    expect((await store.liveKey(storeCtx, first.id, a.id))!).toMatchObject({ accountId: accountOf(shared), lastPollError: null });
    expect((await store.liveKey(storeCtx, second.id, b.id))!).toMatchObject({ accountId: accountOf(shared), lastPollError: ACCOUNT_OF_ANOTHER_LENDER });

    // Recorded directly: the account, and the error only when one is given.
    await t.inTx((tx) => store.recordKeyAccount(tx, stripeKey.id, 'acct_learned'));
    expect((await store.liveKey(storeCtx, first.id, stripeKey.id))!).toMatchObject({ accountId: 'acct_learned', lastPollError: null });
    await t.inTx((tx) => store.recordKeyAccount(tx, stripeKey.id, 'acct_learned_2', 'said why'));
    expect((await store.liveKey(storeCtx, first.id, stripeKey.id))!).toMatchObject({ accountId: 'acct_learned_2', lastPollError: 'said why' });
    await t.inTx((tx) => store.recordKeyAccount(tx, stripeKey.id, 'acct_learned_3'));
    expect((await store.liveKey(storeCtx, first.id, stripeKey.id))!).toMatchObject({ accountId: 'acct_learned_3', lastPollError: 'said why' });
  });

  test('a payment chooses among the lender\'s live keys by rail and tag, with the sealed key and nothing more', async () => {
    const lender = ctx.newLender();
    const both = sbx();
    const tagKey = sbx();
    const bothId = (await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: both, rail_scope: 'both', is_default: true } })).body.id;
    const tagId = (await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: tagKey, rail_scope: 'card', merchant_ref: 'shop' } }))
      .body.id;
    const achId = (await create(lender.key, { rail_scope: 'ach', is_default: true })).body.id;
    const keys = await store.resolvableKeys(storeCtx, lender.id);
    expect(keys).toHaveLength(3);
    expect(Object.keys(keys[0]!).sort()).toEqual(['id', 'isDefault', 'keySealed', 'merchantRef', 'processor', 'railScope']);
    expect(keys.find((k) => k.id === tagId)).toMatchObject({ railScope: 'card', isDefault: false, merchantRef: 'shop', processor: 'sandbox' });

    const card = (await resolveKey(storeCtx, { lenderId: lender.id, rail: 'card', merchantRef: null }))!;
    expect(card).toMatchObject({ id: bothId, isDefault: true, merchantRef: null });
    expect(ctx.rt.vault.open(card.keySealed!)).toBe(both);
    expect((await resolveKey(storeCtx, { lenderId: lender.id, rail: 'ach', merchantRef: null }))?.id).toBe(achId);
    expect((await resolveKey(storeCtx, { lenderId: lender.id, rail: 'card', merchantRef: 'shop' }))?.id).toBe(tagId);
    expect(await resolveKey(storeCtx, { lenderId: lender.id, rail: 'ach', merchantRef: 'shop' })).toBeNull();
    // A deleted key takes no payment.
    await ctx.json('DELETE', `/v1/payment_connections/${achId}`, { key: lender.key });
    expect((await store.resolvableKeys(storeCtx, lender.id)).map((k) => k.id).sort()).toEqual([bothId, tagId].sort());
    expect((await resolveKey(storeCtx, { lenderId: lender.id, rail: 'ach', merchantRef: null }))?.id).toBe(bothId);
  });
});
