import { expect, test } from 'bun:test';
import { contract, inTurns } from './contract';
import { enrollBorrower } from '../helpers/fixtures';
import { fingerprintKey } from '../../src/modules/bank-accounts/fingerprint';
import { linkAccounts } from '../../src/modules/bank-accounts/service';
import type { AccountToLink } from '../../src/modules/bank-accounts/store';
import type { TxCtx } from '../../src/platform/store';

/** An account no Notification of Change or correction has touched, and without validation evidence. */
const UNTOUCHED = { pendingChangeId: null, validatedAt: null, numberChangedAt: null };
const UNVALIDATED = { accountType: null, validationMethod: null, validationSource: null, validationReference: null };

const hex = (n: number) => n.toString(16).padStart(64, '0');

contract('bankAccounts', (t) => {
  const { ctx, store, storeCtx } = t;
  let n = 0;
  /** A transaction's context with the whole runtime, as a service has it (the vault, the clock). */
  const full = (tx: TxCtx) => ({ ...tx, deps: ctx.rt });
  /** An account to link, with a fingerprint of its own. */
  const account = (last4 = '4567'): AccountToLink => ({ id: `acct-${t.engine}-${++n}`, fingerprint: hex(n * 7919), last4 });

  test('keepSecret: the first kept stands, a second is dropped, a rolled-back one leaves none; sealedSecret reads it back', async () => {
    expect(await store.sealedSecret(storeCtx, 'contract-secret')).toBeUndefined();
    await expect(
      t.inTx(async (tx) => {
        await store.keepSecret(tx, { name: 'contract-secret', sealed: 'v1.rolled-back', now: 1 });
        expect(await store.sealedSecret(tx, 'contract-secret')).toBe('v1.rolled-back');
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.sealedSecret(storeCtx, 'contract-secret')).toBeUndefined();
    await t.inTx((tx) => store.keepSecret(tx, { name: 'contract-secret', sealed: 'v1.first', now: 1 }));
    await t.inTx((tx) => store.keepSecret(tx, { name: 'contract-secret', sealed: 'v1.second', now: 2 }));
    expect(await store.sealedSecret(storeCtx, 'contract-secret')).toBe('v1.first');
  });

  test('the fingerprint key: made once, whichever transaction comes first; the second reads the first one’s', async () => {
    // Two transactions that each make the key: the second waits for the first (on PostgreSQL its insert waits
    // for the first's), then makes nothing and reads the key the first made.
    const key = await inTurns(
      t,
      async (tx) => void (await fingerprintKey(full(tx))),
      async () => undefined,
      (tx) => fingerprintKey(full(tx)),
    );
    expect(key.length).toBe(32);
    expect(await t.inTx((tx) => fingerprintKey(full(tx)))).toEqual(key);
    const sealed = await store.sealedSecret(storeCtx, 'bank-account-fingerprint');
    expect(ctx.rt.vault.openBytes(sealed!)).toEqual(key);
    // Sealed: the key is not stored in the clear.
    expect(sealed).toMatch(/^v1\./);
  });

  test('accountsFor: one account per fingerprint, made once (ok, as of now), found again; a rollback makes none', async () => {
    const a = account('1111');
    const b = account('2222');
    const now = ctx.clock.now();
    const made = await t.inTx((tx) => store.accountsFor(tx, ctx.lender.id, [a, b, { ...a, id: 'another-id' }], now));
    expect([...made.keys()].sort()).toEqual([a.fingerprint, b.fingerprint].sort());
    expect(made.get(a.fingerprint)).toEqual({ id: a.id, state: 'ok', lastReturnAt: null, ...UNTOUCHED });
    expect(made.get(b.fingerprint)).toEqual({ id: b.id, state: 'ok', lastReturnAt: null, ...UNTOUCHED });
    // Found again, whatever id is offered: the first one made.
    const again = await t.inTx((tx) => store.accountsFor(tx, ctx.lender.id, [{ ...b, id: 'not-used' }], now + 5));
    expect(again.get(b.fingerprint)).toEqual({ id: b.id, state: 'ok', lastReturnAt: null, ...UNTOUCHED });
    expect(await store.accountOf(storeCtx, ctx.lender.id, b.id)).toEqual({
      id: b.id,
      lenderId: ctx.lender.id,
      last4: '2222',
      state: 'ok',
      stateSince: now,
      returnCodes: [],
      stateReference: null,
      lastReturnAt: null,
      ...UNTOUCHED,
      ...UNVALIDATED,
      createdAt: now,
      updatedAt: now,
    });
    // Another lender's account of the same fingerprint is its own.
    const other = ctx.newLender();
    const theirs = await t.inTx((tx) => store.accountsFor(tx, other.id, [{ ...a, id: `${a.id}-other` }], now));
    expect(theirs.get(a.fingerprint)!.id).toBe(`${a.id}-other`);
    expect(await store.accountOf(storeCtx, other.id, a.id)).toBeUndefined();
    expect(await t.inTx((tx) => store.accountsFor(tx, other.id, [], now))).toEqual(new Map());
    const c = account();
    await expect(
      t.inTx(async (tx) => {
        await store.accountsFor(tx, ctx.lender.id, [c], now);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.accountOf(storeCtx, ctx.lender.id, c.id)).toBeUndefined();
  });

  test('recordReturn: the more severe state stays (the first between equals), every code once in order, the latest return, borrowers due', async () => {
    const a = account();
    await t.inTx((tx) => store.accountsFor(tx, ctx.lender.id, [a], 1_000));
    const record = (state: 'invalid' | 'frozen' | 'unauthorized' | 'deceased', code: string, reference: string, at: number) =>
      t.inTx((tx) => store.recordReturn(tx, { id: a.id, state, code, reference, at }));
    await record('unauthorized', 'R10', 'DRS-one', 2_000);
    expect(await store.accountOf(storeCtx, ctx.lender.id, a.id)).toMatchObject({ state: 'unauthorized', stateSince: 2_000, returnCodes: ['R10'], stateReference: 'DRS-one', lastReturnAt: 2_000, updatedAt: 2_000 });
    // An equal one: the first stays, its code once, the latest return moves.
    await record('unauthorized', 'R10', 'DRS-two', 3_000);
    await record('unauthorized', 'R07', 'DRS-three', 4_000);
    expect(await store.accountOf(storeCtx, ctx.lender.id, a.id)).toMatchObject({ state: 'unauthorized', stateSince: 2_000, returnCodes: ['R10', 'R07'], stateReference: 'DRS-one', lastReturnAt: 4_000 });
    // A more severe one takes over; a less severe one after it only adds its code.
    await record('invalid', 'R02', 'DRS-four', 5_000);
    await record('frozen', 'R16', 'DRS-five', 6_000);
    expect(await store.accountOf(storeCtx, ctx.lender.id, a.id)).toMatchObject({ state: 'invalid', stateSince: 5_000, returnCodes: ['R10', 'R07', 'R02', 'R16'], stateReference: 'DRS-four', lastReturnAt: 6_000 });
    // A return recorded late (an older time) never moves the latest return back.
    await record('deceased', 'R15', 'DRS-six', 5_500);
    expect(await store.accountOf(storeCtx, ctx.lender.id, a.id)).toMatchObject({ state: 'deceased', stateSince: 5_500, returnCodes: ['R10', 'R07', 'R02', 'R16', 'R15'], stateReference: 'DRS-six', lastReturnAt: 6_000 });
    // Two borrowers' returns of one account in one transaction: neither code is lost.
    const b = account();
    await t.inTx(async (tx) => {
      await store.accountsFor(tx, ctx.lender.id, [b], 1_000);
      await Promise.all([
        store.recordReturn(tx, { id: b.id, state: 'unauthorized', code: 'R10', reference: 'DRS-b1', at: 7_000 }),
        store.recordReturn(tx, { id: b.id, state: 'invalid', code: 'R03', reference: 'DRS-b2', at: 7_000 }),
      ]);
    });
    expect(await store.accountOf(storeCtx, ctx.lender.id, b.id)).toMatchObject({ state: 'invalid', returnCodes: ['R10', 'R03'], stateReference: 'DRS-b2' });
    // Each is due for its borrowers to be told.
    const due = await store.accountsToTell(storeCtx, 100);
    expect(due.map((d) => d.id)).toEqual(expect.arrayContaining([a.id, b.id]));
  });

  test('accountsToTell and told: due oldest first, at most `limit`; cleared only if no later return marked it again', async () => {
    // Clear what earlier tests left due.
    for (const d of await store.accountsToTell(storeCtx, 1000)) await t.inTx((tx) => store.told(tx, d.id, d.due));
    expect(await store.accountsToTell(storeCtx, 10)).toEqual([]);
    const a = account();
    const b = account();
    await t.inTx((tx) => store.accountsFor(tx, ctx.lender.id, [a, b], 1_000));
    await t.inTx((tx) => store.recordReturn(tx, { id: b.id, state: 'frozen', code: 'R16', reference: 'DRS-b', at: 10_000 }));
    await t.inTx((tx) => store.recordReturn(tx, { id: a.id, state: 'frozen', code: 'R16', reference: 'DRS-a', at: 20_000 }));
    expect(await store.accountsToTell(storeCtx, 10)).toEqual([
      { id: b.id, due: 10_000 },
      { id: a.id, due: 20_000 },
    ]);
    expect(await store.accountsToTell(storeCtx, 1)).toEqual([{ id: b.id, due: 10_000 }]);
    // Another return of b before it is told: the mark moves on, and the old one clears nothing.
    await t.inTx((tx) => store.recordReturn(tx, { id: b.id, state: 'frozen', code: 'R16', reference: 'DRS-b', at: 10_000 }));
    await t.inTx((tx) => store.told(tx, b.id, 10_000));
    expect(await store.accountsToTell(storeCtx, 10)).toEqual([
      { id: b.id, due: 10_001 },
      { id: a.id, due: 20_000 },
    ]);
    await t.inTx((tx) => store.told(tx, b.id, 10_001));
    await t.inTx((tx) => store.told(tx, a.id, 20_000));
    expect(await store.accountsToTell(storeCtx, 10)).toEqual([]);
  });

  test('accountsPage: the lender’s accounts by id after a position, of one state or all, at most `limit`', async () => {
    const lender = ctx.newLender();
    const accounts = [account('0001'), account('0002'), account('0003')].sort((x, y) => (x.id < y.id ? -1 : 1));
    await t.inTx((tx) => store.accountsFor(tx, lender.id, accounts, 1_000));
    await t.inTx((tx) => store.recordReturn(tx, { id: accounts[1]!.id, state: 'unauthorized', code: 'R10', reference: 'DRS-x', at: 2_000 }));
    const ids = async (q: { state?: 'ok' | 'unauthorized'; after?: string; limit?: number }) =>
      (await store.accountsPage(storeCtx, { lenderId: lender.id, state: q.state, after: q.after ?? '', limit: q.limit ?? 10 })).map((a) => a.id);
    expect(await ids({})).toEqual(accounts.map((a) => a.id));
    expect(await ids({ limit: 2 })).toEqual([accounts[0]!.id, accounts[1]!.id]);
    expect(await ids({ after: accounts[0]!.id })).toEqual([accounts[1]!.id, accounts[2]!.id]);
    expect(await ids({ state: 'ok' })).toEqual([accounts[0]!.id, accounts[2]!.id]);
    expect(await ids({ state: 'unauthorized' })).toEqual([accounts[1]!.id]);
    const [row] = await store.accountsPage(storeCtx, { lenderId: lender.id, state: 'unauthorized', after: '', limit: 10 });
    expect(row).toEqual({
      id: accounts[1]!.id,
      lenderId: lender.id,
      last4: accounts[1]!.last4,
      state: 'unauthorized',
      stateSince: 2_000,
      returnCodes: ['R10'],
      stateReference: 'DRS-x',
      lastReturnAt: 2_000,
      ...UNTOUCHED,
      ...UNVALIDATED,
      createdAt: 1_000,
      updatedAt: 2_000,
    });
  });

  test('borrowersOn and monitoredOn: the borrowers enrolled on an account, by id, bounded per account', async () => {
    const lender = ctx.newLender();
    const enroll = async (aid: string, account_number: string) => {
      const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower(aid, { account_number })] } });
      expect(r.body.results[0].outcome).toBe('enrolled');
    };
    for (const aid of ['on-c', 'on-a', 'on-b']) await enroll(aid, '0007654321');
    await enroll('alone', '0001111111');
    const rows = await ctx.rows<{ id: string; aid: string; account: string }>(
      'SELECT id, authorizer_unique_id AS aid, bank_account_id AS account FROM enrollments WHERE lender_id = ? ORDER BY authorizer_unique_id',
      lender.id,
    );
    const shared = rows.find((r) => r.aid === 'on-a')!.account;
    const alone = rows.find((r) => r.aid === 'alone')!.account;
    expect(shared).not.toBe(alone);
    expect(await store.borrowersOn(storeCtx, [shared, alone], 2)).toEqual([
      ...[
        { accountId: shared, aid: 'on-a', total: 3 },
        { accountId: shared, aid: 'on-b', total: 3 },
      ],
      { accountId: alone, aid: 'alone', total: 1 },
    ].sort((x, y) => (x.accountId < y.accountId ? -1 : x.accountId > y.accountId ? 1 : 0)));
    expect(await store.borrowersOn(storeCtx, [], 2)).toEqual([]);
    // The monitored ones, by enrollment id; a removed one is left out.
    expect((await ctx.json('DELETE', '/v1/payment_enrollments', { key: lender.key, body: { authorizer_unique_ids: ['on-c'] } })).status).toBe(200);
    const monitored = rows.filter((r) => r.account === shared && r.aid !== 'on-c').map((r) => r.id).sort();
    expect((await store.monitoredOn(storeCtx, shared, '', 10)).map((r) => r.id)).toEqual(monitored);
    expect((await store.monitoredOn(storeCtx, shared, monitored[0]!, 10)).map((r) => r.id)).toEqual([monitored[1]]);
    expect((await store.monitoredOn(storeCtx, shared, '', 1)).map((r) => r.id)).toEqual([monitored[0]]);
  });

  test('linkAccounts through the service: the same routing and account number is one account, however the number is written', async () => {
    const lender = ctx.newLender();
    const [x, y, z] = await t.inTx((tx) =>
      linkAccounts(
        full(tx),
        lender.id,
        [
          { routing: '110000000', accountNumber: '0001234567' },
          { routing: '110000000', accountNumber: '000-123 4567' },
          { routing: '021000021', accountNumber: '0001234567' },
        ],
        ctx.clock.now(),
      ),
    );
    expect(y!.id).toBe(x!.id);
    expect(z!.id).not.toBe(x!.id);
    expect((await store.accountOf(storeCtx, lender.id, x!.id))!.last4).toBe('4567');
    // Neither the number nor its fingerprint is stored in the clear.
    expect(ctx.storedInClear('0001234567')).toBe(false);
  });
});
