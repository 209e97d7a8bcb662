import { expect, test } from 'bun:test';
import { contract, inTurns } from './contract';
import { enrollBorrower } from '../helpers/fixtures';
import { fingerprintKey } from '../../src/modules/bank-accounts/fingerprint';
import { linkAccounts } from '../../src/modules/bank-accounts/service';
import type { AccountToLink, ChangeRow, NewChange } from '../../src/modules/bank-accounts/store';
import { SANDBOX_ROUTING_NUMBERS } from '../../src/adapters/routing/directory';
import type { TxCtx } from '../../src/platform/store';

/** An account no Notification of Change or correction has touched, and without validation evidence. */
const UNTOUCHED = { pendingChangeId: null, validatedAt: null, numberChangedAt: null };
const UNVALIDATED = { accountType: null, validationMethod: null, validationSource: null, validationReference: null };

const hex = (n: number) => n.toString(16).padStart(64, '0');

/** Each column's JavaScript type as read, null where null: what both engines must hand back alike. */
const typesOf = (e: Record<string, unknown>) => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === null ? 'null' : typeof v]));

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

  /** A Notification of Change of the lender's account, as bank-accounts/changes.ts keeps one (its corrected data sealed). */
  let changes = 0;
  const change = (lenderId: string, accountId: string, over: Partial<NewChange> = {}): NewChange => {
    const i = ++changes;
    return {
      id: `change-${t.engine}-${String(i).padStart(3, '0')}`,
      lenderId,
      bankAccountId: accountId,
      code: 'C01',
      source: 'upload',
      sourceKey: `upload:contract:C01:${i}`,
      reference: `DRS-change-${i}`,
      correctedSealed: ctx.rt.vault.seal(JSON.stringify({ x: '0009876543', r: null, a: '0009876543', t: null, i: null })),
      oldLast4: '4567',
      newLast4: '6543',
      status: 'received',
      receivedAt: 10_000 + i,
      dueBy: 20_000 + i,
      ...over,
    };
  };
  /** A change as it reads back: as kept (its source key is not read), not applied. */
  const asKept = ({ sourceKey, ...row }: NewChange): ChangeRow => ({ ...row, appliedAt: null, appliedBy: null });
  const keep = (row: NewChange) => t.inTx((tx) => store.insertChange(tx, row));
  /** When the account's borrowers are due to be told, undefined when they are not. */
  const dueOf = async (id: string) => (await store.accountsToTell(storeCtx, 10_000)).find((d) => d.id === id)?.due;
  const finished = { fingerprint: null, last4: null, accountType: null, numberChanged: false } as const;
  const enroll = async (lender: { key: string }, borrowers: unknown[], outcome = 'enrolled') => {
    const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers } });
    expect(r.body.results.map((x: { outcome: string }) => x.outcome)).toEqual(borrowers.map(() => outcome));
  };
  const enrollmentOf = async (lenderId: string, aid: string) => (await t.stores.enrollments.enrollmentOf(storeCtx, lenderId, aid))!;

  test('recordValidations: each account keeps its latest evidence, the list in one call; its borrowers are due to be told', async () => {
    const lender = ctx.newLender();
    const [a, b, c] = [account('1111'), account('2222'), account('3333')];
    await t.inTx((tx) => store.accountsFor(tx, lender.id, [a, b, c], 1_000));
    await t.inTx((tx) =>
      store.recordValidations(tx, [
        { id: a.id, method: 'prenote', source: null, reference: 'PN-1', at: 2_000 },
        { id: b.id, method: 'bank_link', source: 'plaid', reference: null, at: 3_000 },
      ]),
    );
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ validationMethod: 'prenote', validationSource: null, validationReference: 'PN-1', validatedAt: 2_000, updatedAt: 2_000 });
    const bValidated = await store.accountOf(storeCtx, lender.id, b.id);
    expect(bValidated).toMatchObject({ validationMethod: 'bank_link', validationSource: 'plaid', validationReference: null, validatedAt: 3_000, updatedAt: 3_000 });
    // An account not in the list is untouched.
    expect(await store.accountOf(storeCtx, lender.id, c.id)).toMatchObject({ ...UNVALIDATED, validatedAt: null, updatedAt: 1_000 });
    expect([await dueOf(a.id), await dueOf(b.id), await dueOf(c.id)]).toEqual([2_000, 3_000, undefined]);
    // Later evidence takes the place of the account's (a); older, or as old, is dropped (b).
    await t.inTx((tx) =>
      store.recordValidations(tx, [
        { id: a.id, method: 'micro_deposits', source: 'lender', reference: 'MD-7', at: 4_000 },
        { id: b.id, method: 'third_party', source: 'acme', reference: 'TP-1', at: 2_500 },
      ]),
    );
    await t.inTx((tx) => store.recordValidations(tx, [{ id: b.id, method: 'other', source: null, reference: null, at: 3_000 }]));
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ validationMethod: 'micro_deposits', validationSource: 'lender', validationReference: 'MD-7', validatedAt: 4_000, updatedAt: 4_000 });
    expect(await store.accountOf(storeCtx, lender.id, b.id)).toEqual(bValidated);
    expect([await dueOf(a.id), await dueOf(b.id)]).toEqual([4_000, 3_000]);
    // Evidence dated before the account's last update (a return): the update time stays, the mark moves on past the one due.
    await t.inTx((tx) => store.recordReturn(tx, { id: a.id, state: 'frozen', code: 'R16', reference: 'DRS-v', at: 6_000 }));
    await t.inTx((tx) => store.recordValidations(tx, [{ id: a.id, method: 'prenote', source: null, reference: 'PN-2', at: 5_000 }]));
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ state: 'frozen', validationMethod: 'prenote', validationReference: 'PN-2', validatedAt: 5_000, updatedAt: 6_000 });
    expect(await dueOf(a.id)).toBe(6_001);
    // None, an unknown account, and a rolled-back one: nothing.
    await t.inTx((tx) => store.recordValidations(tx, []));
    await t.inTx((tx) => store.recordValidations(tx, [{ id: 'no-such-account', method: 'other', source: null, reference: null, at: 9_000 }]));
    await expect(
      t.inTx(async (tx) => {
        await store.recordValidations(tx, [{ id: a.id, method: 'other', source: null, reference: null, at: 9_000 }]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ validationMethod: 'prenote', validatedAt: 5_000, updatedAt: 6_000 });
    expect(await dueOf(a.id)).toBe(6_001);
  });

  test('unvalidatedAmong: the borrowers whose account has no evidence given after its number last changed', async () => {
    const lender = ctx.newLender();
    const now = ctx.clock.now();
    await enroll(lender, [
      enrollBorrower('uv-1'),
      enrollBorrower('uv-2'),
      enrollBorrower('uv-3', { account_number: '0007654321', routing_number: SANDBOX_ROUTING_NUMBERS.unvalidated }),
      enrollBorrower('uv-card', { charge_instrument: { processor_token: 'sbxpm_x', card_last4: '4242' } }),
    ]);
    const [one, two, three, card] = [await enrollmentOf(lender.id, 'uv-1'), await enrollmentOf(lender.id, 'uv-2'), await enrollmentOf(lender.id, 'uv-3'), await enrollmentOf(lender.id, 'uv-card')];
    const [x, y] = [one.bankAccountId!, three.bankAccountId!];
    expect(two.bankAccountId).toBe(x);
    const unvalidated = async () => (await store.unvalidatedAmong(storeCtx, [one.id, two.id, three.id, card.id, 'no-such-enrollment'])).sort();
    // The sandbox's accounts count as linked, but those of its unvalidated bank; a card borrower has no account.
    expect(await store.accountOf(storeCtx, lender.id, x)).toMatchObject({ validationMethod: 'bank_link', validationSource: 'sandbox', validatedAt: now, numberChangedAt: null });
    expect(await store.accountOf(storeCtx, lender.id, y)).toMatchObject({ validationMethod: null, validatedAt: null });
    expect(await unvalidated()).toEqual([three.id]);
    // x's number changed (a change applied): its borrowers have no evidence since, until some comes after the change.
    const c = change(lender.id, x);
    expect(await keep(c)).toBe(true);
    await t.inTx((tx) => store.finishChange(tx, { ...finished, changeId: c.id, accountId: x, status: 'applied', by: 'automatic', numberChanged: true, now: now + 10 }));
    expect(await unvalidated()).toEqual([one.id, two.id, three.id].sort());
    await t.inTx((tx) => store.recordValidations(tx, [{ id: x, method: 'prenote', source: null, reference: null, at: now + 10 }]));
    expect(await unvalidated()).toEqual([one.id, two.id, three.id].sort());
    await t.inTx((tx) =>
      store.recordValidations(tx, [
        { id: x, method: 'prenote', source: null, reference: null, at: now + 11 },
        { id: y, method: 'third_party', source: null, reference: 'TP-9', at: now + 1 },
      ]),
    );
    expect(await unvalidated()).toEqual([]);
    expect(await store.unvalidatedAmong(storeCtx, [])).toEqual([]);
  });

  test('accountOfMatch: the account a payment was made for, else its borrower’s now', async () => {
    const lender = ctx.newLender();
    const connection = { api_key: `sbx_contract_bank_accounts_${t.engine}`, rail_scope: 'both', is_default: true };
    expect((await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: connection })).status).toBe(201);
    const [key] = await ctx.rows<{ id: string }>('SELECT id FROM payment_connections WHERE lender_id = ?', lender.id);
    await enroll(lender, [
      enrollBorrower('match-1', { account_number: '0001112222' }),
      enrollBorrower('match-card', { charge_instrument: { processor_token: 'sbxpm_x', card_last4: '4242' } }),
    ]);
    const [before, card] = [await enrollmentOf(lender.id, 'match-1'), await enrollmentOf(lender.id, 'match-card')];
    const now = ctx.clock.now();
    const base = { lenderId: lender.id, connectionId: key!.id, amountCents: 100, status: 'scheduled' as const, attempt: 1, reinitiationOf: null, debitOn: now, state: 'done' as const, nextAttemptAt: now, createdAt: now, updatedAt: now };
    const [paid, cardPaid] = [`match-pay-${t.engine}-1`, `match-pay-${t.engine}-2`];
    await t.inTx(async (tx) => {
      await t.stores.decisions.createPayment(tx, { ...base, id: paid, enrollmentId: before.id, authorizerUniqueId: 'match-1', rail: 'ach', reference: 'DRS-match-1-1', bankAccountId: before.bankAccountId });
      await t.stores.decisions.createPayment(tx, { ...base, id: cardPaid, enrollmentId: card.id, authorizerUniqueId: 'match-card', rail: 'card', reference: 'DRS-match-card-1', bankAccountId: null });
    });
    // The borrower sent again with another account: linked to that one now.
    await enroll(lender, [enrollBorrower('match-1', { account_number: '0003334444' })], 'updated');
    const after = await enrollmentOf(lender.id, 'match-1');
    expect(after.bankAccountId).not.toBe(before.bankAccountId);
    expect(await store.accountOfMatch(storeCtx, paid, before.id)).toEqual({ id: before.bankAccountId!, last4: '2222' });
    expect(await store.accountOfMatch(storeCtx, null, before.id)).toEqual({ id: after.bankAccountId!, last4: '4444' });
    expect(await store.accountOfMatch(storeCtx, 'no-such-payment', before.id)).toEqual({ id: after.bankAccountId!, last4: '4444' });
    // A payment without an account, to a borrower without one: none.
    expect(await store.accountOfMatch(storeCtx, cardPaid, card.id)).toBeUndefined();
    expect(await store.accountOfMatch(storeCtx, null, 'no-such-enrollment')).toBeUndefined();
  });

  test('insertChange and changeOf: a change kept once per lender and source key, read back as kept; of the lender, when one is named', async () => {
    const [lender, other] = [ctx.newLender(), ctx.newLender()];
    const [a, b] = [account(), account()];
    await t.inTx((tx) => store.accountsFor(tx, lender.id, [a], 1_000));
    await t.inTx((tx) => store.accountsFor(tx, other.id, [b], 1_000));
    const first = change(lender.id, a.id, { code: 'C05', reference: null, newLast4: null });
    expect(await keep(first)).toBe(true);
    const read = await store.changeOf(storeCtx, first.id);
    expect(read).toEqual(asKept(first));
    expect(typesOf(read as unknown as Record<string, unknown>)).toEqual({
      id: 'string',
      lenderId: 'string',
      bankAccountId: 'string',
      code: 'string',
      source: 'string',
      reference: 'null',
      correctedSealed: 'string',
      oldLast4: 'string',
      newLast4: 'null',
      status: 'string',
      receivedAt: 'number',
      dueBy: 'number',
      appliedAt: 'null',
      appliedBy: 'null',
    });
    expect(ctx.rt.vault.open(read!.correctedSealed!)).toContain('0009876543');
    expect(await store.changeOf(storeCtx, first.id, lender.id)).toEqual(asKept(first));
    expect(await store.changeOf(storeCtx, first.id, other.id)).toBeUndefined();
    expect(await store.changeOf(storeCtx, 'no-such-change')).toBeUndefined();
    // The same source key again (a re-upload): not kept, whatever else differs.
    const again = change(lender.id, a.id, { sourceKey: first.sourceKey, code: 'C01' });
    expect(await keep(again)).toBe(false);
    expect(await store.changeOf(storeCtx, again.id)).toBeUndefined();
    expect(await store.changeOf(storeCtx, first.id)).toEqual(asKept(first));
    // Another lender's of the same source key is its own.
    const theirs = change(other.id, b.id, { sourceKey: first.sourceKey, source: 'processor', status: 'review' });
    expect(await keep(theirs)).toBe(true);
    expect(await store.changeOf(storeCtx, theirs.id, other.id)).toEqual(asKept(theirs));
    // Rolled back: none kept, and its source key is free.
    const rolled = change(lender.id, a.id);
    await expect(
      t.inTx(async (tx) => {
        expect(await store.insertChange(tx, rolled)).toBe(true);
        expect(await store.changeOf(tx, rolled.id)).toEqual(asKept(rolled));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.changeOf(storeCtx, rolled.id)).toBeUndefined();
    expect(await keep(rolled)).toBe(true);
  });

  test('serializeAccount: a second transaction about the account waits for the first, then reads what it committed', async () => {
    const lender = ctx.newLender();
    const a = account();
    await t.inTx((tx) => store.accountsFor(tx, lender.id, [a], 1_000));
    const first = change(lender.id, a.id);
    await keep(first);
    const seen = await inTurns(
      t,
      (tx) => store.serializeAccount(tx, a.id),
      (tx) => store.holdForChange(tx, { accountId: a.id, changeId: first.id, tell: false, now: 2_000 }),
      async (tx) => (await store.accountOf(tx, lender.id, a.id))!.pendingChangeId,
    );
    expect(seen).toBe(first.id);
  });

  test('holdForChange: the account held for the first change not applied; told when asked, its mark moved on', async () => {
    const lender = ctx.newLender();
    const a = account();
    await t.inTx((tx) => store.accountsFor(tx, lender.id, [a], 1_000));
    const [first, second] = [change(lender.id, a.id), change(lender.id, a.id, { status: 'review' })];
    await keep(first);
    await keep(second);
    await t.inTx((tx) => store.holdForChange(tx, { accountId: a.id, changeId: first.id, tell: false, now: 2_000 }));
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ pendingChangeId: first.id, updatedAt: 2_000 });
    expect(await dueOf(a.id)).toBeUndefined();
    // A second change: the first stays pending; told, the account's borrowers are due.
    await t.inTx((tx) => store.holdForChange(tx, { accountId: a.id, changeId: second.id, tell: true, now: 3_000 }));
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ pendingChangeId: first.id, updatedAt: 3_000 });
    expect(await dueOf(a.id)).toBe(3_000);
    // Told again before they were, at an earlier time: the mark moves on past the one due, never back.
    await t.inTx((tx) => store.holdForChange(tx, { accountId: a.id, changeId: second.id, tell: true, now: 2_500 }));
    expect(await dueOf(a.id)).toBe(3_001);
    await expect(
      t.inTx(async (tx) => {
        await store.holdForChange(tx, { accountId: a.id, changeId: second.id, tell: true, now: 9_000 });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await dueOf(a.id)).toBe(3_001);
    expect((await store.accountOf(storeCtx, lender.id, a.id))!.pendingChangeId).toBe(first.id);
  });

  test('finishChange and accountByFingerprint: the change done; the account’s new number, type and hold, found by its new fingerprint', async () => {
    const [lender, other] = [ctx.newLender(), ctx.newLender()];
    const [a, b] = [account('4567'), account('8888')];
    const moved = hex(7919 * 100_000 + 1);
    await t.inTx((tx) => store.accountsFor(tx, lender.id, [a, b], 1_000));
    expect(await store.accountByFingerprint(storeCtx, lender.id, a.fingerprint)).toBe(a.id);
    expect(await store.accountByFingerprint(storeCtx, lender.id, moved)).toBeUndefined();
    expect(await store.accountByFingerprint(storeCtx, other.id, a.fingerprint)).toBeUndefined();
    // Three changes of a's to apply, oldest first: number, then (received earlier than the one under review) type.
    const number = change(lender.id, a.id, { code: 'C01' });
    const review = change(lender.id, a.id, { code: 'C03', status: 'review', receivedAt: number.receivedAt + 50 });
    const type = change(lender.id, a.id, { code: 'C05', receivedAt: number.receivedAt + 20 });
    const done = change(lender.id, a.id, { code: 'C09', status: 'recorded', receivedAt: number.receivedAt + 10 });
    const ofB = change(lender.id, b.id, { receivedAt: number.receivedAt + 5 });
    for (const ch of [number, review, type, done, ofB]) expect(await keep(ch)).toBe(true);
    await t.inTx((tx) => store.holdForChange(tx, { accountId: a.id, changeId: number.id, tell: false, now: 2_000 }));
    await t.inTx((tx) => store.holdForChange(tx, { accountId: b.id, changeId: ofB.id, tell: false, now: 2_000 }));

    // The number applied: a's new fingerprint and last four, its type, the time its number changed; held for the next.
    await t.inTx((tx) =>
      store.finishChange(tx, { changeId: number.id, accountId: a.id, status: 'applied', by: 'automatic', fingerprint: moved, last4: '6543', accountType: 'savings', numberChanged: true, now: 5_000 }),
    );
    expect(await store.changeOf(storeCtx, number.id)).toEqual({ ...asKept(number), status: 'applied', appliedAt: 5_000, appliedBy: 'automatic' });
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ last4: '6543', accountType: 'savings', numberChangedAt: 5_000, pendingChangeId: type.id, updatedAt: 5_000 });
    expect(await store.accountByFingerprint(storeCtx, lender.id, moved)).toBe(a.id);
    expect(await store.accountByFingerprint(storeCtx, lender.id, a.fingerprint)).toBeUndefined();
    expect(await dueOf(a.id)).toBe(5_000);

    // Recorded, the number unchanged: the fingerprint, last four and the time the number changed stay; the type is the change's.
    await t.inTx((tx) => store.finishChange(tx, { ...finished, changeId: type.id, accountId: a.id, status: 'recorded', by: 'none', accountType: 'checking', now: 6_000 }));
    expect(await store.changeOf(storeCtx, type.id)).toMatchObject({ status: 'recorded', appliedAt: 6_000, appliedBy: 'none' });
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ last4: '6543', accountType: 'checking', numberChangedAt: 5_000, pendingChangeId: review.id, updatedAt: 6_000 });
    expect(await store.accountByFingerprint(storeCtx, lender.id, moved)).toBe(a.id);
    expect(await dueOf(a.id)).toBe(6_000);

    // The last applied (no type given: the account's stays): nothing left to hold for; the mark moves on past the one due.
    await t.inTx((tx) => store.finishChange(tx, { ...finished, changeId: review.id, accountId: a.id, status: 'applied', by: 'lender', now: 5_500 }));
    expect(await store.changeOf(storeCtx, review.id)).toMatchObject({ status: 'applied', appliedAt: 5_500, appliedBy: 'lender' });
    expect(await store.accountOf(storeCtx, lender.id, a.id)).toMatchObject({ last4: '6543', accountType: 'checking', numberChangedAt: 5_000, pendingChangeId: null });
    expect(await dueOf(a.id)).toBe(6_001);
    // b's change is b's alone.
    expect(await store.accountOf(storeCtx, lender.id, b.id)).toMatchObject({ last4: '8888', accountType: null, numberChangedAt: null, pendingChangeId: ofB.id });
    expect(await store.changeOf(storeCtx, ofB.id)).toEqual(asKept(ofB));
    expect(await store.accountByFingerprint(storeCtx, lender.id, b.fingerprint)).toBe(b.id);
    // Rolled back: the change and the account as they were.
    await expect(
      t.inTx(async (tx) => {
        await store.finishChange(tx, { ...finished, changeId: ofB.id, accountId: b.id, status: 'applied', by: 'lender', accountType: 'savings', now: 7_000 });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.changeOf(storeCtx, ofB.id)).toEqual(asKept(ofB));
    expect(await store.accountOf(storeCtx, lender.id, b.id)).toMatchObject({ accountType: null, pendingChangeId: ofB.id });
  });

  test('changesToApply and confirmChange: the received changes oldest first, at most `limit`; a lender’s change under review confirmed once', async () => {
    const [lender, other] = [ctx.newLender(), ctx.newLender()];
    const [a, b] = [account(), account()];
    await t.inTx((tx) => store.accountsFor(tx, lender.id, [a], 1_000));
    await t.inTx((tx) => store.accountsFor(tx, other.id, [b], 1_000));
    // Received before any change of the tests before: the oldest of the database.
    const late = change(lender.id, a.id, { receivedAt: 5 });
    const review = change(lender.id, a.id, { status: 'review', receivedAt: 2 });
    const early = change(lender.id, a.id, { receivedAt: 1 });
    const tie = change(other.id, b.id, { receivedAt: 1 });
    const recorded = change(lender.id, a.id, { status: 'recorded', receivedAt: 0 });
    const theirs = change(other.id, b.id, { status: 'review', receivedAt: 3 });
    for (const ch of [late, review, early, tie, recorded, theirs]) expect(await keep(ch)).toBe(true);
    const toApply = async (limit: number) => (await store.changesToApply(storeCtx, limit)).map((ch) => ch.id);
    // Of one time, by id.
    const first = [early.id, tie.id].sort();
    expect(await toApply(3)).toEqual([...first, late.id]);
    expect(await toApply(1)).toEqual([first[0]]);
    // Confirmed: received now, in its place by time; once only, and only the lender's own under review.
    expect(await t.inTx((tx) => store.confirmChange(tx, lender.id, review.id))).toBe(true);
    expect(await store.changeOf(storeCtx, review.id)).toEqual({ ...asKept(review), status: 'received' });
    expect(await toApply(4)).toEqual([...first, review.id, late.id]);
    for (const id of [review.id, late.id, recorded.id, theirs.id, 'no-such-change']) expect(await t.inTx((tx) => store.confirmChange(tx, lender.id, id))).toBe(false);
    expect((await store.changeOf(storeCtx, theirs.id))!.status).toBe('review');
    expect((await store.changeOf(storeCtx, recorded.id))!.status).toBe('recorded');
    // Rolled back: still under review.
    await expect(
      t.inTx(async (tx) => {
        expect(await store.confirmChange(tx, other.id, theirs.id)).toBe(true);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect((await store.changeOf(storeCtx, theirs.id))!.status).toBe('review');
    expect(await t.inTx((tx) => store.confirmChange(tx, other.id, theirs.id))).toBe(true);
    // Applied: no longer to apply.
    await t.inTx((tx) => store.finishChange(tx, { ...finished, changeId: early.id, accountId: a.id, status: 'applied', by: 'automatic', now: 3_000 }));
    expect(await toApply(4)).toEqual([tie.id, review.id, theirs.id, late.id]);
  });

  test('changesOn: each account’s latest changes newest first, at most `perAccount`, and how many it has', async () => {
    const lender = ctx.newLender();
    const [a, b, c] = [account(), account(), account()];
    await t.inTx((tx) => store.accountsFor(tx, lender.id, [a, b, c], 1_000));
    const ofA = [
      change(lender.id, a.id, { receivedAt: 300 }),
      change(lender.id, a.id, { receivedAt: 100, status: 'recorded' }),
      change(lender.id, a.id, { receivedAt: 200, status: 'review' }),
      change(lender.id, a.id, { receivedAt: 200 }),
    ];
    const ofB = [change(lender.id, b.id, { code: 'C09', status: 'recorded', receivedAt: 50 })];
    for (const ch of [...ofA, ...ofB]) expect(await keep(ch)).toBe(true);
    const newestFirst = (xs: NewChange[]) => [...xs].sort((x, y) => y.receivedAt - x.receivedAt || (x.id < y.id ? 1 : -1));
    const shown = [
      { account: a.id, rows: newestFirst(ofA).slice(0, 3).map((ch) => ({ ...asKept(ch), total: 4 })) },
      { account: b.id, rows: ofB.map((ch) => ({ ...asKept(ch), total: 1 })) },
    ].sort((x, y) => (x.account < y.account ? -1 : 1));
    expect(await store.changesOn(storeCtx, [c.id, b.id, a.id, 'no-such-account'], 3)).toEqual(shown.flatMap((s) => s.rows));
    expect((await store.changesOn(storeCtx, [a.id], 1)).map((ch) => [ch.receivedAt, ch.total])).toEqual([[300, 4]]);
    expect(await store.changesOn(storeCtx, [c.id], 3)).toEqual([]);
    expect(await store.changesOn(storeCtx, [], 3)).toEqual([]);
  });
});
