import { expect, test } from 'bun:test';
import { contract } from './contract';
import { addBusinessDays } from '../../src/platform/business-days';
import { DAY_MS } from '../../src/platform/clock';

const day = (d: string) => Date.parse(`${d}T00:00:00.000Z`);
const HOUR = 3_600_000;

contract('achReport', (t) => {
  const { ctx, store, storeCtx, stores } = t;
  let n = 0;
  /** A bank account of the lender's, made as enrollment makes them. */
  const account = async (lenderId: string) => {
    const id = `acct-${t.engine}-${++n}`;
    await t.inTx((tx) => stores.bankAccounts.accountsFor(tx, lenderId, [{ id, fingerprint: (n * 104729).toString(16).padStart(64, '0'), last4: '4567' }], day('2026-09-01')));
    return id;
  };
  /** A Notification of Change as received: due six banking days later. */
  const change = (lenderId: string, accountId: string, v: { id: string; code: string; status: string; receivedAt: number; appliedAt?: number | null }) =>
    ctx.sql
      .query(
        `INSERT INTO account_changes (id, lender_id, bank_account_id, code, source, source_key, old_last4, status, received_at, due_by, applied_at)
         VALUES (?, ?, ?, ?, 'upload', ?, '4567', ?, ?, ?, ?)`,
      )
      .run(v.id, lenderId, accountId, v.code, `key-${v.id}`, v.status, v.receivedAt, addBusinessDays(v.receivedAt, 6), v.appliedAt ?? null);

  // October 2026: received Wednesday the 14th, due Thursday the 22nd (Columbus Day is the 12th).
  const from = day('2026-10-01');
  const to = day('2026-11-01') - 1;
  const now = day('2026-10-23') + 12 * HOUR;

  test('changeCounts and changesIn: the month’s Notifications of Change, both ends included, by code, status and timeliness as of now', async () => {
    const lender = ctx.newLender();
    const acct = await account(lender.id);
    const received = day('2026-10-14') + 16 * HOUR;
    const due = addBusinessDays(received, 6);
    expect(due).toBe(day('2026-10-22'));
    change(lender.id, acct, { id: 'noc-on-time', code: 'C01', status: 'applied', receivedAt: received, appliedAt: received + DAY_MS });
    // Applied late in the due day itself: still by the due day.
    change(lender.id, acct, { id: 'noc-due-day', code: 'C01', status: 'applied', receivedAt: received, appliedAt: due + 23 * HOUR });
    change(lender.id, acct, { id: 'noc-late', code: 'C03', status: 'applied', receivedAt: received, appliedAt: due + DAY_MS });
    // Not applied, the due day over by now; not applied and not yet due; recorded with nothing to apply.
    change(lender.id, acct, { id: 'noc-overdue', code: 'C02', status: 'review', receivedAt: received });
    change(lender.id, acct, { id: 'noc-pending', code: 'C05', status: 'received', receivedAt: day('2026-10-21') });
    change(lender.id, acct, { id: 'noc-none', code: 'C09', status: 'recorded', receivedAt: from });
    change(lender.id, acct, { id: 'noc-last', code: 'C01', status: 'received', receivedAt: to });
    // Outside the month by a millisecond, each side.
    change(lender.id, acct, { id: 'noc-before', code: 'C01', status: 'applied', receivedAt: from - 1, appliedAt: from });
    change(lender.id, acct, { id: 'noc-after', code: 'C01', status: 'received', receivedAt: to + 1 });
    // Another lender's, inside the month.
    const other = ctx.newLender();
    change(other.id, await account(other.id), { id: 'noc-other', code: 'C01', status: 'received', receivedAt: received });

    const counts = await store.changeCounts(storeCtx, lender.id, from, to, now);
    const key = (r: { code: string; status: string; timeliness: string }) => `${r.code}/${r.status}/${r.timeliness}`;
    expect(Object.fromEntries(counts.map((r) => [key(r), r.n]))).toEqual({
      'C01/applied/on_time': 2,
      'C03/applied/late': 1,
      'C02/review/overdue': 1,
      'C05/received/pending': 1,
      'C09/recorded/none': 1,
      'C01/received/pending': 1,
    });
    expect(counts.every((r) => typeof r.n === 'number')).toBe(true);
    // As of a later time the ones not applied are overdue; the applied ones stay as they were.
    const later = Object.fromEntries((await store.changeCounts(storeCtx, lender.id, from, to, day('2026-12-01'))).map((r) => [key(r), r.n]));
    expect(later).toMatchObject({ 'C05/received/overdue': 1, 'C01/received/overdue': 1, 'C01/applied/on_time': 2, 'C09/recorded/none': 1 });

    const listed = await store.changesIn(storeCtx, lender.id, from, to, now, 100);
    expect(listed.map((r) => r.id)).toEqual(['noc-none', 'noc-due-day', 'noc-late', 'noc-on-time', 'noc-overdue', 'noc-pending', 'noc-last']);
    expect(listed.find((r) => r.id === 'noc-on-time')).toEqual({
      id: 'noc-on-time',
      code: 'C01',
      status: 'applied',
      bankAccountId: acct,
      receivedAt: received,
      dueBy: due,
      appliedAt: received + DAY_MS,
      timeliness: 'on_time',
    });
    expect(listed.find((r) => r.id === 'noc-overdue')).toMatchObject({ appliedAt: null, timeliness: 'overdue' });
    expect(listed.find((r) => r.id === 'noc-due-day')!.timeliness).toBe('on_time');
    // At most `limit`, the first received; another lender's month is empty.
    expect((await store.changesIn(storeCtx, lender.id, from, to, now, 2)).map((r) => r.id)).toEqual(['noc-none', 'noc-due-day']);
    expect(await store.changesIn(storeCtx, ctx.lender.id, from, to, now, 100)).toEqual([]);
    expect(await store.changeCounts(storeCtx, ctx.lender.id, from, to, now)).toEqual([]);
  });

  test('blockedCounts: accounts whose blocking state was set in the month, by state; ok accounts and other months are not', async () => {
    const lender = ctx.newLender();
    const block = async (state: 'invalid' | 'frozen' | 'unauthorized' | 'deceased', code: string, at: number) => {
      const id = await account(lender.id);
      await t.inTx((tx) => stores.bankAccounts.recordReturn(tx, { id, state, code, reference: `DRS-${id}`, at }));
      return id;
    };
    await block('unauthorized', 'R10', from);
    await block('unauthorized', 'R07', day('2026-10-20'));
    await block('invalid', 'R02', to);
    await block('deceased', 'R14', day('2026-10-05'));
    await block('frozen', 'R16', from - 1);
    await block('invalid', 'R03', to + 1);
    // Made in the month and still ok.
    await t.inTx((tx) => stores.bankAccounts.accountsFor(tx, lender.id, [{ id: `ok-${t.engine}`, fingerprint: 'f'.repeat(64), last4: '0000' }], day('2026-10-10')));
    const found = await store.blockedCounts(storeCtx, lender.id, from, to);
    expect(Object.fromEntries(found.map((r) => [r.state, r.n]))).toEqual({ unauthorized: 2, invalid: 1, deceased: 1 });
    expect(found.every((r) => typeof r.n === 'number')).toBe(true);
    expect(await store.blockedCounts(storeCtx, ctx.lender.id, from, to)).toEqual([]);
  });
});
