import { expect, test } from 'bun:test';
import { contract } from './contract';
import { enrollBorrower, ownAccount } from '../helpers/fixtures';
import { cycle } from '../helpers/collection';
import { pollProcessors } from '../../src/modules/collection/poll';
import type { NewAlert } from '../../src/modules/fraud-monitoring/store';

// The fraud-monitoring store on both engines: policy versions, alerts once per rule, subject and fact, a page of
// them newest first by each filter, dispositions (one final), the hold a borrower's debit reads, and the facts
// the rules read of payments, accounts and returns.

const SETTLE = 60_000;
const READ = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.parse('2026-11-25T12:00:00.000Z');

/** Each field's JavaScript type as read, null where null: what both engines must hand back alike. */
const typesOf = (e: object) => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === null ? 'null' : typeof v]));

contract(
  'fraud',
  (t) => {
    const { ctx, store, storeCtx } = t;
    const idOf = async (lenderId: string, aid: string) =>
      (await ctx.rows<{ id: string; bankAccountId: string | null }>('SELECT id, bank_account_id AS bankAccountId FROM enrollments WHERE lender_id = ? AND authorizer_unique_id = ?', lenderId, aid))[0]!;
    const alert = (lenderId: string, v: Partial<NewAlert> & { id: string; createdAt: number }): NewAlert => ({
      lenderId,
      rule: 'velocity',
      ruleVersion: 1,
      policyVersion: 0,
      action: 'alert',
      subject: `s-${v.id}`,
      fact: `f-${v.id}`,
      enrollmentId: null,
      aid: null,
      bankAccountId: null,
      paymentId: null,
      details: '{}',
      ...v,
    });

    test('policy versions: none, then each insert the latest', async () => {
      const lender = ctx.newLender();
      expect(await store.latestPolicy(storeCtx, lender.id)).toBeUndefined();
      for (const version of [1, 2]) {
        await t.inTx(async (tx) => {
          await store.serializePolicy(tx, lender.id);
          await store.insertPolicy(tx, { id: `p-${version}`, lenderId: lender.id, version, rules: `{"v":${version}}`, notes: version === 2 ? 'n' : null, changedBy: 'who', createdAt: T0 + version });
        });
      }
      const p = await store.latestPolicy(storeCtx, lender.id);
      expect(p).toEqual({ id: 'p-2', lenderId: lender.id, version: 2, rules: '{"v":2}', notes: 'n', changedBy: 'who', createdAt: T0 + 2 });
      expect(typesOf(p!)).toEqual({ id: 'string', lenderId: 'string', version: 'number', rules: 'string', notes: 'string', changedBy: 'string', createdAt: 'number' });
      // A version taken twice is refused: the unique index keeps one.
      await expect(t.inTx((tx) => store.insertPolicy(tx, { id: 'p-dup', lenderId: lender.id, version: 2, rules: '{}', notes: null, changedBy: 'x', createdAt: T0 }))).rejects.toThrow();
    });

    test('alerts: one per rule, subject and fact; a page newest first by each filter; dispositions, one final; the hold', async () => {
      const lender = ctx.newLender();
      expect((await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower('held', { account_number: ownAccount(1) })] } })).status).toBe(207);
      const held = await idOf(lender.id, 'held');
      const insert = (row: NewAlert) => t.inTx((tx) => store.insertAlert(tx, row));
      expect(await insert(alert(lender.id, { id: 'a-1', createdAt: T0, rule: 'velocity', aid: 'held', enrollmentId: held.id, bankAccountId: held.bankAccountId, action: 'hold' }))).toBe(true);
      // The same rule, subject and fact again: nothing.
      expect(await insert(alert(lender.id, { id: 'a-1b', createdAt: T0 + 5, subject: 's-a-1', fact: 'f-a-1' }))).toBe(false);
      expect(await insert(alert(lender.id, { id: 'a-2', createdAt: T0 + 1, rule: 'amount_outlier', aid: 'other' }))).toBe(true);
      expect(await insert(alert(lender.id, { id: 'a-3', createdAt: T0 + 1, rule: 'velocity', paymentId: 'pay-3', details: '{"debits":4}' }))).toBe(true);
      expect(await insert(alert(ctx.newLender().id, { id: 'a-x', createdAt: T0 + 9 }))).toBe(true);

      const page = async (q: { rule?: 'velocity'; state?: 'open' | 'cleared'; aid?: string; bankAccountId?: string }, after = { createdAt: Number.MAX_SAFE_INTEGER, id: '' }, limit = 10) =>
        (await store.alertsPage(storeCtx, { lenderId: lender.id, ...q, after, limit })).map((a) => a.id);
      expect(await page({})).toEqual(['a-3', 'a-2', 'a-1']);
      expect(await page({ rule: 'velocity' })).toEqual(['a-3', 'a-1']);
      expect(await page({ aid: 'held' })).toEqual(['a-1']);
      expect(await page({ bankAccountId: held.bankAccountId! })).toEqual(['a-1']);
      expect(await page({}, { createdAt: T0 + 1, id: 'a-3' })).toEqual(['a-2', 'a-1']);
      expect(await page({}, undefined, 1)).toEqual(['a-3']);

      const a1 = await store.alertOf(storeCtx, lender.id, 'a-1');
      expect(a1).toMatchObject({ id: 'a-1', rule: 'velocity', action: 'hold', state: 'open', enrollmentId: held.id, aid: 'held', disposedAt: null, createdAt: T0 });
      expect(typesOf(a1!)).toMatchObject({ ruleVersion: 'number', policyVersion: 'number', createdAt: 'number', disposedAt: 'null' });
      expect(await store.alertOf(storeCtx, 'another-lender', 'a-1')).toBeUndefined();

      // The hold: an open hold rule's alert holds the borrower; needs_info keeps it; cleared lifts it.
      expect(await store.holdsDebit(storeCtx, held.id)).toBe(true);
      const dispose = (id: string, disposition: 'needs_info' | 'cleared' | 'confirmed_fraud', at: number) =>
        t.inTx(async (tx) => {
          await store.serializeAlert(tx, 'a-1');
          const kept = await store.insertDisposition(tx, { id, alertId: 'a-1', lenderId: lender.id, disposition, note: null, disposedBy: 'me', createdAt: at });
          return { kept, moved: kept && (await store.setAlertState(tx, { id: 'a-1', state: disposition, at })) };
        });
      expect(await dispose('d-1', 'needs_info', T0 + 10)).toEqual({ kept: true, moved: true });
      expect(await store.holdsDebit(storeCtx, held.id)).toBe(true);
      expect(await dispose('d-2', 'cleared', T0 + 20)).toEqual({ kept: true, moved: true });
      expect(await store.holdsDebit(storeCtx, held.id)).toBe(false);
      // A second final one is not kept, and the state no longer moves.
      expect(await dispose('d-3', 'confirmed_fraud', T0 + 30)).toEqual({ kept: false, moved: false });
      expect(await t.inTx((tx) => store.setAlertState(tx, { id: 'a-1', state: 'confirmed_fraud', at: T0 + 30 }))).toBe(false);
      expect(await store.alertOf(storeCtx, lender.id, 'a-1')).toMatchObject({ state: 'cleared', disposedAt: T0 + 20 });
      expect((await store.dispositionsOf(storeCtx, ['a-1', 'a-2'])).map((d) => [d.id, d.disposition, d.createdAt])).toEqual([
        ['d-1', 'needs_info', T0 + 10],
        ['d-2', 'cleared', T0 + 20],
      ]);
      expect(await page({ state: 'cleared' })).toEqual(['a-1']);
      expect(await store.dispositionsOf(storeCtx, [])).toEqual([]);
    });

    test('the yearly record: versions before a time, reviews by page and by days, alerts counted by rule, state and action, accounts confirmed', async () => {
      const lender = ctx.newLender();
      for (const [version, at] of [[1, T0 - 100], [2, T0], [3, T0 + 100]] as const) {
        await t.inTx((tx) => store.insertPolicy(tx, { id: `py-${version}`, lenderId: lender.id, version, rules: '{}', notes: null, changedBy: 'me', createdAt: at }));
      }
      expect((await store.policyVersionsBefore(storeCtx, lender.id, T0 + 1, 10)).map((p) => p.version)).toEqual([2, 1]);
      expect((await store.policyVersionsBefore(storeCtx, lender.id, T0 + 1, 1)).map((p) => p.version)).toEqual([2]);

      for (const [id, day] of [['rv-a', '2026-01-05'], ['rv-b', '2026-06-30'], ['rv-c', '2026-06-30'], ['rv-d', '2027-01-01']] as const) {
        await t.inTx((tx) => store.insertReview(tx, { id, lenderId: lender.id, reviewedOn: day, reviewer: 'r', notes: id === 'rv-a' ? 'n' : null, policyVersion: 1, createdAt: T0 }));
      }
      const between = await store.reviewsBetween(storeCtx, lender.id, '2026-01-01', '2026-12-31', 10);
      expect(between.map((r) => r.id)).toEqual(['rv-a', 'rv-b', 'rv-c']);
      expect(between[0]).toEqual({ id: 'rv-a', lenderId: lender.id, reviewedOn: '2026-01-05', reviewer: 'r', notes: 'n', policyVersion: 1, createdAt: T0 });
      expect(typesOf(between[0]!)).toMatchObject({ policyVersion: 'number', createdAt: 'number' });
      const page = async (after: { reviewedOn: string; id: string }, limit = 10) => (await store.reviewsPage(storeCtx, { lenderId: lender.id, after, limit })).map((r) => r.id);
      expect(await page({ reviewedOn: '9999-99-99', id: '' })).toEqual(['rv-d', 'rv-c', 'rv-b', 'rv-a']);
      expect(await page({ reviewedOn: '2026-06-30', id: 'rv-c' }, 2)).toEqual(['rv-b', 'rv-a']);

      const insert = (row: NewAlert) => t.inTx((tx) => store.insertAlert(tx, row));
      await insert(alert(lender.id, { id: 'c-1', createdAt: T0, rule: 'velocity', action: 'hold' }));
      await insert(alert(lender.id, { id: 'c-2', createdAt: T0 + 1, rule: 'velocity', action: 'hold', bankAccountId: 'acct-1' }));
      await insert(alert(lender.id, { id: 'c-3', createdAt: T0 + 2, rule: 'shared_account', bankAccountId: 'acct-1' }));
      await insert(alert(lender.id, { id: 'c-4', createdAt: T0 + 3, rule: 'shared_account', bankAccountId: 'acct-2' }));
      await insert(alert(lender.id, { id: 'c-late', createdAt: T0 + 1000, rule: 'velocity' }));
      for (const id of ['c-2', 'c-3']) await t.inTx((tx) => store.setAlertState(tx, { id, state: 'confirmed_fraud', at: T0 + 10 }));
      await t.inTx((tx) => store.setAlertState(tx, { id: 'c-4', state: 'confirmed_fraud', at: T0 + 2000 }));
      const counts = await store.alertCounts(storeCtx, lender.id, T0, T0 + 1000);
      expect(counts).toEqual([
        { rule: 'shared_account', state: 'confirmed_fraud', action: 'alert', n: 2 },
        { rule: 'velocity', state: 'confirmed_fraud', action: 'hold', n: 1 },
        { rule: 'velocity', state: 'open', action: 'hold', n: 1 },
      ]);
      expect(typesOf(counts[0]!)).toMatchObject({ n: 'number' });
      // acct-1 twice is one account; acct-2 was confirmed after the period.
      expect(await store.accountsConfirmed(storeCtx, lender.id, T0, T0 + 1000)).toBe(1);
      expect(await store.accountsConfirmed(storeCtx, lender.id, T0, T0 + 3000)).toBe(2);
      expect(await store.accountsConfirmed(storeCtx, 'another-lender', T0, T0 + 3000)).toBe(0);
    });

    test('the facts the rules read: a debit’s history and account, an account’s sharing, a switch, a return’s clusters', async () => {
      const lender = ctx.newLender();
      await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: `sbx_fraud_contract_${t.engine.padEnd(10, '0')}`, rail_scope: 'both', is_default: true } });
      // Two borrowers on one account (debits returned R10: cents 94), one on its own, enrolled on two days.
      const body = (aid: string, account: string, cents: number, metadata?: Record<string, string>) =>
        ({ borrowers: [enrollBorrower(aid, { account_number: account, collectable_amount: cents, ...(metadata ? { metadata } : {}) })] });
      expect((await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: body('s-1', ownAccount(7), 10094, { channel: 'web' }) })).status).toBe(207);
      ctx.clock.advance(DAY);
      expect((await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: body('s-2', ownAccount(7), 20094, { channel: 'web' }) })).status).toBe(207);
      expect((await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: body('own', ownAccount(8), 30000) })).status).toBe(207);
      await cycle(ctx);
      ctx.clock.advance(SETTLE);
      await pollProcessors(ctx.rt);
      const [s1, s2, own] = [await idOf(lender.id, 's-1'), await idOf(lender.id, 's-2'), await idOf(lender.id, 'own')];
      const pay = async (aid: string) => (await ctx.rows<{ id: string; status: string; returnCode: string | null }>('SELECT id, status, return_code AS returnCode FROM payments WHERE authorizer_unique_id = ? AND lender_id = ?', aid, lender.id))[0]!;
      const [p1, p2, p3] = [await pay('s-1'), await pay('s-2'), await pay('own')];
      expect([p1.status, p1.returnCode, p2.returnCode]).toEqual(['returned', 'R10', 'R10']);

      const facts = await store.debitFacts(storeCtx, { lenderId: lender.id, enrollmentId: s2.id, bankAccountId: s2.bankAccountId, paymentId: 'a-new-one', since: T0, cap: 10 });
      expect(facts).toEqual({ earlierToAccount: 1, borrowerAmounts: [20094], lenderAmounts: expect.any(Array), debitsToAccount: 2, lastSwitch: null });
      expect([...facts.lenderAmounts].sort()).toEqual([10094, 20094, 30000]);
      // Its own payment is left out; the count stops at the cap.
      expect(await store.debitFacts(storeCtx, { lenderId: lender.id, enrollmentId: s2.id, bankAccountId: s2.bankAccountId, paymentId: p2.id, since: T0, cap: 1 })).toMatchObject({
        earlierToAccount: 0,
        borrowerAmounts: [],
        debitsToAccount: 1,
      });

      const sharing = await store.accountSharing(storeCtx, lender.id, [{ accountId: s1.bankAccountId!, except: s2.id }, { accountId: own.bankAccountId!, except: own.id }], 5);
      expect(sharing).toEqual([
        { accountId: s1.bankAccountId!, borrowers: 2, firstId: s1.id, firstSealed: expect.any(String) },
        { accountId: own.bankAccountId!, borrowers: 1, firstId: null, firstSealed: null },
      ]);
      expect((await store.accountSharing(storeCtx, lender.id, [{ accountId: s1.bankAccountId!, except: s1.id }], 1))[0]).toMatchObject({ borrowers: 1, firstId: s2.id });
      // Another lender's: nobody of it is on this lender's account, and no borrower of this lender is named to it.
      expect(await store.accountSharing(storeCtx, ctx.lender.id, [{ accountId: s1.bankAccountId!, except: 'none' }, { accountId: 'no-such-account', except: 'none' }], 5)).toEqual([
        { accountId: s1.bankAccountId!, borrowers: 0, firstId: null, firstSealed: null },
        { accountId: 'no-such-account', borrowers: 0, firstId: null, firstSealed: null },
      ]);

      await t.inTx((tx) => store.recordSwitch(tx, { id: 'sw-1', lenderId: lender.id, enrollmentId: own.id, bankAccountId: own.bankAccountId, switchedAt: T0 + 5 }));
      await t.inTx((tx) => store.recordSwitch(tx, { id: 'sw-2', lenderId: lender.id, enrollmentId: own.id, bankAccountId: own.bankAccountId, switchedAt: T0 + 9 }));
      expect((await store.debitFacts(storeCtx, { lenderId: lender.id, enrollmentId: own.id, bankAccountId: own.bankAccountId, paymentId: p3.id, since: T0, cap: 5 })).lastSwitch).toEqual({ id: 'sw-2', at: T0 + 9 });

      const rc = await store.returnContext(storeCtx, p2.id);
      expect(rc).toEqual({ enrollmentId: s2.id, aid: 's-2', bankAccountId: s2.bankAccountId, routing: '110000000', enrolledAt: T0 + DAY, channel: 'web' });
      expect(typesOf(rc!)).toMatchObject({ enrolledAt: 'number' });
      expect(await store.returnContext(storeCtx, 'no-such-payment')).toBeUndefined();
      const streak = (q: Partial<Parameters<typeof store.streakCounts>[1]>) =>
        store.streakCounts(storeCtx, { lenderId: lender.id, codes: ['R10'], since: T0, routing: '110000000', dayStart: T0 + DAY - 1000, dayEnd: T0 + 2 * DAY, channel: 'web', cap: 10, ...q });
      expect(await streak({})).toEqual({ routing: 2, day: 1, channel: 2 });
      expect(await streak({ cap: 1 })).toEqual({ routing: 1, day: 1, channel: 1 });
      expect(await streak({ codes: ['R05'] })).toEqual({ routing: 0, day: 0, channel: 0 });
      expect(await streak({ routing: null, channel: null })).toEqual({ routing: 0, day: 1, channel: 0 });
      expect(await streak({ since: ctx.clock.now() + 1 })).toEqual({ routing: 0, day: 0, channel: 0 });
    });
  },
  { env: { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) }, clockAt: '2026-11-25T12:00:00.000Z' },
);
