import { expect, test } from 'bun:test';
import { contract } from './contract';
import {
  createLender,
  createLenderKey,
  ensureBootstrapLender,
  LenderError,
  listKeys,
  MAX_LIVE_API_KEYS,
  revokeKey,
  revokeLenderKey,
  setDebitCardApproval,
  TooManyApiKeys,
} from '../../src/modules/lenders/service';
import { displayPrefix, generateApiKey, hashApiKey } from '../../src/platform/api-keys';
import { newId } from '../../src/platform/ids';

contract('lenders', (t) => {
  const { ctx, store, storeCtx } = t;
  const deps = ctx.rt;

  test('a lender is read back by name with its columns typed; an unknown name is undefined', async () => {
    const { lender } = await createLender(deps, 'Typed Lender', ctx.clock.now());
    const row = await store.lenderNamed(storeCtx, 'Typed Lender');
    expect(row).toEqual({ id: lender.id, name: 'Typed Lender', debitCardApproved: false, createdAt: ctx.clock.now() });
    expect(typeof row!.createdAt).toBe('number');
    expect(await store.lenderNamed(storeCtx, 'Nobody By This Name')).toBeUndefined();
    // Names are matched exactly, not case-folded.
    expect(await store.lenderNamed(storeCtx, 'typed lender')).toBeUndefined();
    expect(await store.anyLender(storeCtx)).toBe(true);
  });

  test('lenders are listed oldest first, those made in the same millisecond in the order they were made', async () => {
    ctx.clock.advance(60_000);
    const at = ctx.clock.now();
    const names = ['Order C', 'Order A', 'Order B'];
    for (const name of names) await createLender(deps, name, at);
    ctx.clock.advance(1);
    await createLender(deps, 'Order 0', ctx.clock.now());
    const listed = (await store.listLenders(storeCtx)).map((l) => l.name);
    expect(listed.filter((n) => n.startsWith('Order '))).toEqual([...names, 'Order 0']);
    // The first lender of the service came before all of them.
    const first = (await store.listLenders(storeCtx))[0]!;
    expect(first.id).toBe(ctx.lender.id);
    expect(typeof first.debitCardApproved).toBe('boolean');
  });

  test('a name is taken once: the service refuses a second, and the store itself refuses a duplicate row', async () => {
    await createLender(deps, 'Taken Name', ctx.clock.now());
    await expect(createLender(deps, 'Taken Name', ctx.clock.now())).rejects.toBeInstanceOf(LenderError);
    await expect(
      t.inTx((tx) => store.addLender(tx, { id: newId(), name: 'Taken Name', debitCardApproved: false, createdAt: ctx.clock.now() })),
    ).rejects.toThrow();
    expect((await store.listLenders(storeCtx)).filter((l) => l.name === 'Taken Name')).toHaveLength(1);
  });

  test('creations of one name at once: one lender, every other caller told the name is taken', async () => {
    const results = await Promise.allSettled([1, 2, 3].map(() => createLender(deps, 'Raced Name', ctx.clock.now())));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect(r.reason).toBeInstanceOf(LenderError);
    const lender = (await store.lenderNamed(storeCtx, 'Raced Name'))!;
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(1);
  });

  test('a lender added in a transaction that rolls back is not there', async () => {
    const oops = new Error('rolled back');
    await expect(
      t.inTx(async (tx) => {
        await store.serializeLenderCreation(tx);
        await store.addLender(tx, { id: newId(), name: 'Rolled Back', debitCardApproved: false, createdAt: ctx.clock.now() });
        // Inside the transaction it is already seen.
        expect(await store.lenderNamed(tx, 'Rolled Back')).toBeDefined();
        throw oops;
      }),
    ).rejects.toBe(oops);
    expect(await store.lenderNamed(storeCtx, 'Rolled Back')).toBeUndefined();
  });

  test('debit-card approval is set and taken back, for that lender only', async () => {
    const { lender } = await createLender(deps, 'Cards Lender', ctx.clock.now());
    await setDebitCardApproval(deps, lender.id, true);
    expect((await store.lenderNamed(storeCtx, 'Cards Lender'))!.debitCardApproved).toBe(true);
    const firstName = (await store.listLenders(storeCtx))[0]!.name;
    expect((await store.lenderNamed(storeCtx, firstName))!.debitCardApproved).toBe(false);
    await t.inTx((tx) => store.setDebitCardApproval(tx, lender.id, false));
    expect((await store.lenderNamed(storeCtx, 'Cards Lender'))!.debitCardApproved).toBe(false);
  });

  test('a new key is listed oldest first, never with its hash, and its hash is known', async () => {
    const { lender, apiKey: firstKey } = await createLender(deps, 'Keys Lender', ctx.clock.now());
    ctx.clock.advance(1_000);
    const second = await createLenderKey(deps, lender.id, ctx.clock.now());
    // Two more in the same millisecond: listed in the order they were made.
    ctx.clock.advance(1_000);
    const third = await createLenderKey(deps, lender.id, ctx.clock.now());
    const fourth = await createLenderKey(deps, lender.id, ctx.clock.now());
    const keys = await store.listKeys(storeCtx, lender.id);
    expect(keys.map((k) => k.prefix)).toEqual([firstKey, second, third, fourth].map(displayPrefix));
    expect(Object.keys(keys[0]!).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'prefix', 'revokedAt']);
    expect(keys[1]).toMatchObject({ createdAt: ctx.clock.now() - 1_000, lastUsedAt: null, revokedAt: null });
    expect(typeof keys[1]!.createdAt).toBe('number');
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(4);
    expect(await store.keyHashKnown(storeCtx, hashApiKey(second))).toBe(true);
    expect(await store.keyHashKnown(storeCtx, hashApiKey(generateApiKey()))).toBe(false);
    // Another lender's keys are not among them.
    expect((await store.listKeys(storeCtx, ctx.lender.id)).map((k) => k.prefix)).toEqual([displayPrefix(ctx.lender.key)]);
  });

  test('a key added directly is read back as written; one added in a rolled-back transaction is not', async () => {
    const { lender } = await createLender(deps, 'Direct Keys', ctx.clock.now());
    const key = generateApiKey();
    const row = { id: newId(), lenderId: lender.id, prefix: displayPrefix(key), keyHash: hashApiKey(key), createdAt: ctx.clock.now() + 5 };
    await t.inTx(async (tx) => {
      await store.serializeKeyIssue(tx, lender.id);
      await store.addKey(tx, row);
    });
    expect((await store.listKeys(storeCtx, lender.id)).at(-1)).toEqual({
      id: row.id,
      prefix: row.prefix,
      createdAt: row.createdAt,
      lastUsedAt: null,
      revokedAt: null,
    });
    const lost = generateApiKey();
    await expect(
      t.inTx(async (tx) => {
        await store.addKey(tx, { ...row, id: newId(), prefix: displayPrefix(lost), keyHash: hashApiKey(lost) });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.keyHashKnown(storeCtx, hashApiKey(lost))).toBe(false);
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(2);
  });

  test('revoking by id: once, the lender\'s own key only; a revoked key is no longer live but its hash stays known', async () => {
    const { lender, apiKey } = await createLender(deps, 'Revoking Lender', ctx.clock.now());
    const [own] = await store.listKeys(storeCtx, lender.id);
    const [others] = await store.listKeys(storeCtx, ctx.lender.id);
    ctx.clock.advance(5_000);
    expect(await t.inTx((tx) => store.revokeLenderKey(tx, ctx.lender.id, own!.id, ctx.clock.now()))).toBe(false);
    expect(await revokeLenderKey(deps, lender.id, others!.id, ctx.clock.now())).toBe(false);
    expect(await revokeLenderKey(deps, lender.id, own!.id, ctx.clock.now())).toBe(true);
    const revokedAt = ctx.clock.now();
    ctx.clock.advance(5_000);
    // A second revocation finds no live key, and the first time stays.
    expect(await revokeLenderKey(deps, lender.id, own!.id, ctx.clock.now())).toBe(false);
    expect((await store.listKeys(storeCtx, lender.id))[0]!.revokedAt).toBe(revokedAt);
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(0);
    expect(await store.keyHashKnown(storeCtx, hashApiKey(apiKey))).toBe(true);
    expect((await store.listKeys(storeCtx, ctx.lender.id))[0]!.revokedAt).toBeNull();
  });

  test('revoking by display prefix: once; an unknown prefix revokes nothing', async () => {
    const { lender } = await createLender(deps, 'Prefix Lender', ctx.clock.now());
    const key = await createLenderKey(deps, lender.id, ctx.clock.now());
    expect(await revokeKey(deps, displayPrefix(generateApiKey()), ctx.clock.now())).toBe(false);
    expect(await revokeKey(deps, displayPrefix(key), ctx.clock.now())).toBe(true);
    expect(await t.inTx((tx) => store.revokeKeyByPrefix(tx, displayPrefix(key), ctx.clock.now() + 1))).toBe(false);
    const listed = await listKeys(deps, lender.id);
    expect(listed.map((k) => k.revokedAt)).toEqual([null, ctx.clock.now()]);
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(1);
  });

  test('the live-key limit holds when the last place is asked for twice at once', async () => {
    const { lender } = await createLender(deps, 'Limit Lender', ctx.clock.now());
    for (let i = 1; i < MAX_LIVE_API_KEYS - 1; i++) await createLenderKey(deps, lender.id, ctx.clock.now());
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(MAX_LIVE_API_KEYS - 1);
    const results = await Promise.allSettled([1, 2].map(() => createLenderKey(deps, lender.id, ctx.clock.now())));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
    expect(refused.reason).toBeInstanceOf(TooManyApiKeys);
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(MAX_LIVE_API_KEYS);
  });

  test('a bootstrap key is registered once for the lender default', async () => {
    const key = generateApiKey();
    expect(await ensureBootstrapLender(deps, key, ctx.clock.now())).toEqual({ printedKey: null });
    const lender = (await store.lenderNamed(storeCtx, 'default'))!;
    expect(await store.keyHashKnown(storeCtx, hashApiKey(key))).toBe(true);
    expect(await ensureBootstrapLender(deps, key, ctx.clock.now())).toEqual({ printedKey: null });
    expect(await store.liveKeyCount(storeCtx, lender.id)).toBe(1);
    // With lenders already there and no key configured, nothing is created.
    expect(await ensureBootstrapLender(deps, null, ctx.clock.now())).toEqual({ printedKey: null });
    expect((await store.listLenders(storeCtx)).filter((l) => l.name === 'default')).toHaveLength(1);
  });
});
