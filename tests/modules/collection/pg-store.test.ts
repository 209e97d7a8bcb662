// engine: postgres
// The collection store on PostgreSQL answers as the SQLite one does: the same rows written through each
// engine's store, every read asked of both, the answers compared (values, types, order, null for none), and
// the writes compared by the rows they leave. Without DATABASE_URL=postgres://… one test says it does not apply.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { asc, eq } from 'drizzle-orm';
import * as sq from '../../../db/schema';
import * as pgs from '../../../db/schema-pg';
import { onPostgres, freshPgDatabase } from '../../helpers/pg';
import { openPg, type PgHandle } from '../../../src/platform/pg';
import { openDatabase, type DbHandle } from '../../../src/platform/db';
import { transaction } from '../../../src/platform/context';
import { sqliteTransactions } from '../../../src/platform/transactions.sqlite';
import { replicaPrefix } from '../../../src/platform/lease-token';
import type { StoreCtx, TxCtx } from '../../../src/platform/store';
import { type NewPayment, type PaymentRow } from '../../../src/modules/collection/store';
import type { EventStatus, PaymentStatus } from '../../../db/schema/enums';
import { sqliteStores } from '../../../src/stores';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 0, 20, 12);

if (!onPostgres) {
  test('not applicable without DATABASE_URL=postgres://… (the collection store on PostgreSQL against SQLite)', () => {});
} else {
  let pgDb: ReturnType<typeof freshPgDatabase>;
  let pg: PgHandle;
  let lite: DbHandle;
  let onPg: StoreCtx;
  let onLite: StoreCtx;

  /** Runs fn on both engines and expects the same answer; returns it. */
  async function same<T>(fn: (c: StoreCtx) => Promise<T>): Promise<T> {
    const a = await fn(onLite);
    const b = await fn(onPg);
    expect(b).toEqual(a);
    return a;
  }
  /** The same write on both engines, each in a transaction. */
  async function write(fn: (c: TxCtx) => Promise<unknown>): Promise<void> {
    await transaction(onLite, fn);
    await transaction(onPg, fn);
  }
  /** The same rows inserted on both engines. */
  async function insert(table: 'lenders' | 'paymentConnections' | 'enrollments' | 'payments', values: Record<string, unknown>[]) {
    await lite.db.insert(sq[table] as never).values(values as never);
    await pg.db.insert(pgs[table] as never).values(values as never);
  }
  /** A table's rows on both engines, alike. */
  async function sameRows(table: 'payments' | 'paymentEvents' | 'ledgerEntries' | 'ingestedPayments' | 'paymentConnections' | 'enrollments' | 'paymentObservationsSetAside') {
    const order = (t: Record<string, unknown>) => ('id' in t ? [asc(t.id as never)] : [asc(t.connectionId as never), asc(t.processorPaymentId as never)]);
    const a = await lite.db.select().from(sq[table] as never).orderBy(...order(sq[table] as never));
    const b = await pg.db.select().from(pgs[table] as never).orderBy(...order(pgs[table] as never));
    expect(b).toEqual(a);
  }

  const L1 = '01900000-0000-7000-8000-000000000001';
  const L2 = '01900000-0000-7000-8000-000000000002';
  const K1 = '01900000-0000-7000-8000-0000000000a1';
  const K2 = '01900000-0000-7000-8000-0000000000a2';
  const K3 = '01900000-0000-7000-8000-0000000000a3';
  const enr = (n: number) => `01900000-0000-7000-8000-0000000001${String(n).padStart(2, '0')}`;
  const pay = (n: number) => `01900000-0000-7000-8000-0000000002${String(n).padStart(2, '0')}`;
  const evt = (n: number) => `01900000-0000-7000-8000-0000000003${String(n).padStart(2, '0')}`;
  const ref = (n: number) => `DRS-aid-${n}-${pay(n)}`;

  beforeAll(async () => {
    pgDb = freshPgDatabase();
    pg = openPg(pgDb.url);
    lite = openDatabase(':memory:');
    onPg = { deps: pgStoreDeps(pg) };
    onLite = { deps: { db: lite.db, reader: lite.reader, stores: sqliteStores, engine: { transactions: sqliteTransactions(lite.db) } } };

    await insert('lenders', [
      { id: L1, name: 'one', createdAt: 0 },
      { id: L2, name: 'two', createdAt: 0 },
    ]);
    await insert('paymentConnections', [
      { id: K1, lenderId: L1, processor: 'sandbox', label: 'a', railScope: 'ach', isDefault: true, keySealed: 's1', pollCursor: 'c', createdAt: NOW - 10 * DAY, updatedAt: 0 },
      { id: K2, lenderId: L1, processor: 'stripe', label: 'b', railScope: 'card', isDefault: true, keySealed: 's2', reconciledAt: NOW, createdAt: 0, updatedAt: 0 },
      { id: K3, lenderId: L2, processor: 'sandbox', label: 'c', railScope: 'any', keySealed: null, merchantRef: 'm', createdAt: 0, updatedAt: 0, deletedAt: 5 },
    ]);
    const states = ['monitored', 'monitored', 'removed', 'blocked', 'monitored', 'monitored'] as const;
    await insert(
      'enrollments',
      states.map((state, i) => ({
        id: enr(i + 1),
        lenderId: i < 5 ? L1 : L2,
        authorizerUniqueId: `aid-${i + 1}`,
        state,
        collectableAmountCents: 1_000 * (i + 1),
        daysPastDue: 3,
        rail: 'ach',
        sealed: i === 3 ? null : 'sealed',
        routingNumber: '011000015',
        cardTokenSealed: i === 1 ? 'tok' : null,
        blockedReason: i === 3 ? 'r08' : null,
        cfpbCovered: i === 0 ? true : i === 1 ? false : null,
        authorizationAt: i === 0 ? NOW - DAY : null,
        windowEndsAt: NOW + DAY,
        paymentsUsed: i,
        enrolledAt: 0,
        updatedAt: 0,
      })),
    );
    const rows: { n: number; e: number; status: PaymentStatus; amount: number; created: number; extra?: Partial<NewPayment> }[] = [
      { n: 1, e: 1, status: 'settled', amount: 500, created: NOW - 40 * DAY, extra: { firstAttemptAt: NOW - 40 * DAY, settledAt: NOW - 38 * DAY, processorPaymentId: 'pi_1' } },
      { n: 2, e: 1, status: 'returned', amount: 700, created: NOW - 20 * DAY, extra: { firstAttemptAt: NOW - 20 * DAY, returnCode: 'R01', processorPaymentId: 'pi_2' } },
      { n: 3, e: 1, status: 'initiating', amount: 700, created: NOW - DAY, extra: { attempt: 2, reinitiationOf: pay(2), firstAttemptAt: NOW - DAY + 5 } },
      { n: 4, e: 2, status: 'processing', amount: 500, created: NOW - DAY, extra: { firstAttemptAt: NOW - DAY, connectionId: K2, rail: 'card' } },
      { n: 5, e: 5, status: 'scheduled', amount: 900, created: NOW - 2 * DAY, extra: { state: 'done', debitOn: NOW + DAY } },
      { n: 6, e: 3, status: 'not_attempted', amount: 300, created: NOW - DAY, extra: { state: 'done' } },
      { n: 7, e: 6, status: 'initiating', amount: 123, created: NOW - 3 * DAY },
    ];
    await insert(
      'payments',
      rows.map((r) => ({
        id: pay(r.n),
        lenderId: r.e === 6 ? L2 : L1,
        enrollmentId: enr(r.e),
        authorizerUniqueId: `aid-${r.e}`,
        connectionId: r.e === 6 ? K3 : K1,
        rail: 'ach',
        amountCents: r.amount,
        reference: ref(r.n),
        status: r.status,
        state: r.status === 'initiating' ? 'pending' : 'done',
        nextAttemptAt: r.created,
        createdAt: r.created,
        updatedAt: r.created,
        ...r.extra,
      })),
    );
    const events: [number, number | null, EventStatus, number, string, number][] = [
      // [event, payment, status, amount, reference, occurred]
      [1, 1, 'processing', 500, ref(1), NOW - 40 * DAY],
      [2, 1, 'settled', 500, ref(1), NOW - 38 * DAY],
      [3, 2, 'processing', 700, ref(2), NOW - 20 * DAY],
      [4, 2, 'settled', 700, ref(2), NOW - 19 * DAY],
      [5, 2, 'returned', 700, ref(2), NOW - 18 * DAY],
      [6, null, 'settled', 250, 'OUTSIDE-1', NOW - 5 * DAY],
      [7, null, 'late_returned', 250, 'OUTSIDE-1', NOW - 2 * DAY],
      [8, null, 'returned', 90, 'OUTSIDE-2', NOW - 2 * DAY],
    ];
    await write(async (c) => {
      for (const [n, p, status, amount, reference, at] of events) {
        await c.deps.stores.outcomes.recordEvent(c, {
          id: evt(n),
          lenderId: L1,
          enrollmentId: p ? enr(1) : enr(2),
          aid: p ? 'aid-1' : 'aid-2',
          paymentId: p ? pay(p) : null,
          connectionId: K1,
          reference,
          status,
          amount,
          returnCode: status.includes('returned') ? 'R01' : null,
          message: null,
          source: p ? 'processor' : 'upload',
          sourceEventId: `src-${n}`,
          occurredAt: at,
          // Two events recorded in the same millisecond: the later one is the reference's latest.
          recordedAt: n === 7 ? NOW - 5 * DAY : at,
        });
        if (status === 'settled') await c.deps.stores.outcomes.postLedgerEntry(c, { lenderId: L1, enrollmentId: p ? enr(1) : enr(2), reference, kind: 'credit', amount, eventId: evt(n), at });
        if (status.includes('returned')) {
          await c.deps.stores.outcomes.postLedgerEntry(c, { lenderId: L1, enrollmentId: p ? enr(1) : enr(2), reference, kind: 'reversal', amount: Math.max(0, await c.deps.stores.outcomes.creditedFor(c, L1, reference)), eventId: evt(n), at });
        }
      }
      await c.deps.stores.matching.saveIngested(c, K1, [
        { id: 'pi_1', matched: true },
        { id: 'pi_x', matched: false },
        { id: 'pi_y', matched: false },
      ]);
    });
  });
  afterAll(async () => {
    await pg?.close();
    pgDb?.drop();
    lite?.close();
  });

  describe('reads', () => {
    test('what recording an observation reads', async () => {
      expect(await same((c) => c.deps.stores.outcomes.eventSeen(c, L1, 'processor', 'src-1'))).toBe(true);
      await same((c) => c.deps.stores.outcomes.eventSeen(c, L1, 'upload', 'src-1'));
      await same((c) => c.deps.stores.outcomes.eventSeen(c, L2, 'processor', 'src-1'));
      expect(await same((c) => c.deps.stores.outcomes.lastEventOf(c, L1, ref(2)))).toEqual({ status: 'returned', occurredAt: NOW - 18 * DAY });
      expect((await same((c) => c.deps.stores.outcomes.lastEventOf(c, L1, 'OUTSIDE-1')))?.status).toBe('late_returned');
      expect(await same((c) => c.deps.stores.outcomes.lastEventOf(c, L1, 'none'))).toBeNull();
      expect(await same((c) => c.deps.stores.outcomes.seenAmong(c, L1, 'upload', ['src-6', 'src-1', 'src-8', 'nope']).then((r) => r.sort()))).toEqual(['src-6', 'src-8']);
      expect(await same((c) => c.deps.stores.outcomes.seenAmong(c, L1, 'upload', []))).toEqual([]);
      expect((await same((c) => c.deps.stores.outcomes.lastEventsAmong(c, L1, ['OUTSIDE-2', 'none', ref(1), 'OUTSIDE-2']))).map((r) => r.reference)).toEqual(['OUTSIDE-2', ref(1), 'OUTSIDE-2']);
      expect(await same((c) => c.deps.stores.outcomes.lastEventsAmong(c, L1, []))).toEqual([]);
      expect(await same((c) => c.deps.stores.outcomes.paymentStatusOf(c, pay(3)))).toBe('initiating');
      expect(await same((c) => c.deps.stores.outcomes.paymentStatusOf(c, 'none'))).toBeNull();
      expect(await same((c) => c.deps.stores.outcomes.creditedFor(c, L1, ref(2)))).toBe(0);
      expect(await same((c) => c.deps.stores.outcomes.creditedFor(c, L1, ref(1)))).toBe(500);
      expect(await same((c) => c.deps.stores.outcomes.creditedFor(c, L1, 'none'))).toBe(0);
    });

    test('matching and reconciling', async () => {
      const own = (lender: string, refs: string[], pids: string[]) =>
        same((c) => c.deps.stores.matching.ownPaymentsAmong(c, lender, K1, refs, pids).then((o) => ({ byReference: [...o.byReference].sort(), byProcessorId: [...o.byProcessorId].sort() })));
      const found = await own(L1, [ref(1), 'none', ref(2)], ['zzz', 'pi_2', 'pi_1']);
      expect(found.byReference.map(([k, p]) => [k, p.id])).toEqual([[ref(1), pay(1)], [ref(2), pay(2)]].sort());
      expect(found.byProcessorId.map(([k, p]) => [k, p.id])).toEqual([['pi_1', pay(1)], ['pi_2', pay(2)]]);
      expect(await own(L2, [ref(1)], ['pi_1'])).toEqual({ byReference: [], byProcessorId: [] });
      expect(await own(L1, [], [])).toEqual({ byReference: [], byProcessorId: [] });
      await same((c) => c.deps.stores.matching.paymentById(c, pay(7)));
      await same((c) => c.deps.stores.matching.paymentById(c, 'none'));
      expect(await same((c) => c.deps.stores.matching.ingestedAmong(c, K1, ['none', 'pi_x', 'pi_1']).then((r) => r.sort((a, b) => a.id.localeCompare(b.id))))).toEqual([
        { id: 'pi_1', matched: true },
        { id: 'pi_x', matched: false },
      ]);
      expect(await same((c) => c.deps.stores.matching.ingestedAmong(c, K1, []))).toEqual([]);
      expect(await same((c) => c.deps.stores.matching.oldestUnsettled(c, K1, NOW - 60 * DAY))).toBe(NOW - 40 * DAY);
      expect(await same((c) => c.deps.stores.matching.oldestUnsettled(c, K1, NOW))).toBe(NOW - DAY + 5);
      expect(await same((c) => c.deps.stores.matching.oldestUnsettled(c, K3, 0))).toBeNull();
      await same((c) => c.deps.stores.matching.ownPaymentById(c, pay(1), K1));
      expect(await same((c) => c.deps.stores.matching.ownPaymentById(c, pay(1), K2))).toBeNull();
      expect((await same((c) => c.deps.stores.feeds.keysToPoll(c))).map((k) => k.id).sort()).toEqual([K1, K2]);
      expect((await same((c) => c.deps.stores.feeds.keysToReconcile(c, { dueBefore: NOW - DAY }))).map((k) => k.id)).toEqual([K1]);
      expect((await same((c) => c.deps.stores.feeds.keysToReconcile(c, { connectionIds: [K2, K3], dueBefore: 0 }))).map((k) => k.id)).toEqual([K2]);
      await same((c) => c.deps.stores.feeds.keysToReconcile(c, { connectionIds: [], dueBefore: 0 }));
    });

    test('deciding and sending', async () => {
      for (const e of [1, 2, 3, 4, 5]) {
        await same((c) => c.deps.stores.decisions.enrollmentToDecide(c, enr(e)));
        await same((c) => c.deps.stores.decisions.chainInputsOf(c, enr(e)));
        await same((c) => c.deps.stores.decisions.paymentHistory(c, enr(e)));
        await same((c) => c.deps.stores.decisions.scheduledPaymentOf(c, enr(e)));
        await same((c) => c.deps.stores.decisions.paymentInFlight(c, enr(e)));
        await same((c) => c.deps.stores.dispatch.borrowerToDebit(c, enr(e)));
      }
      expect(await same((c) => c.deps.stores.decisions.enrollmentToDecide(c, 'none'))).toBeNull();
      expect(await same((c) => c.deps.stores.decisions.chainInputsOf(c, 'none'))).toBeNull();
      expect((await same((c) => c.deps.stores.decisions.chainInputsOf(c, enr(1))))?.cfpbCovered).toBe(1);
      expect((await same((c) => c.deps.stores.decisions.paymentHistory(c, enr(1)))).map((p) => p.id)).toEqual([pay(1), pay(2), pay(3)]);
      expect((await same((c) => c.deps.stores.decisions.scheduledPaymentOf(c, enr(5))))?.debitOn).toBe(NOW + DAY);
      for (const p of [1, 3, 5]) await same((c) => c.deps.stores.dispatch.sendStateOf(c, pay(p)));
      await same((c) => c.deps.stores.dispatch.sendStateOf(c, 'none'));
      await same((c) => c.deps.stores.dispatch.keyToSend(c, K1));
      await same((c) => c.deps.stores.dispatch.keyToSend(c, K3));
      await same((c) => c.deps.stores.dispatch.keyToSend(c, 'none'));
      for (const p of [1, 3, 5]) await same((c) => c.deps.stores.dispatch.paymentKeyLive(c, pay(p)));
      await same((c) => c.deps.stores.dispatch.paymentKeyLive(c, 'none'));
    });

    test("the portal's figures, lists and pages", async () => {
      for (const from of [0, NOW - 30 * DAY, NOW]) {
        await same((c) => c.deps.stores.paymentReads.ledgerTotals(c, L1, from));
        await same((c) => c.deps.stores.paymentReads.inFlightTotals(c, L1, from));
        await same((c) => c.deps.stores.paymentReads.returnedTotals(c, L1, from));
      }
      expect(await same((c) => c.deps.stores.paymentReads.ledgerTotals(c, L1, 0))).toEqual({ credited: 1450n, reversed: 950n });
      expect(await same((c) => c.deps.stores.paymentReads.returnedTotals(c, L1, 0))).toEqual({ amount: 1040n, count: 3 });
      expect((await same((c) => c.deps.stores.paymentReads.ledgerTotalsByDay(c, L1, NOW - 60 * DAY))).length).toBe(5);
      await same((c) => c.deps.stores.paymentReads.borrowerCountsByState(c, L1));
      await same((c) => c.deps.stores.paymentReads.paymentCountsByStatus(c, L1));
      await same((c) => c.deps.stores.paymentReads.paymentCountsByStatus(c, 'none'));
      await same((c) => c.deps.stores.paymentReads.eventsOfBorrower(c, L1, 'aid-1'));
      await same((c) => c.deps.stores.paymentReads.eventsOfBorrower(c, L1, 'aid-2'));
      for (const sort of ['newest', 'oldest', 'amount_desc', 'amount_asc'] as const) {
        for (const take of [1, 2, 10]) {
          // Every page to the end, from each position the page before ends at.
          let after: { k: number; i: string } | null = null;
          for (let guard = 0; guard < 20; guard++) {
            const a: { k: number; i: string } | null = after;
            const page: PaymentRow[] = await same((c) => c.deps.stores.paymentReads.paymentsPage(c, { lenderId: L1, from: null, to: null, sort, after: a, take }));
            if (page.length < take) break;
            const last: PaymentRow = page.at(-1)!;
            after = { k: sort.startsWith('amount') ? last.amountCents : last.createdAt, i: last.id };
          }
        }
      }
      await same((c) => c.deps.stores.paymentReads.paymentsPage(c, { lenderId: L1, status: 'initiating', from: NOW - 2 * DAY, to: NOW, sort: 'oldest', after: null, take: 10 }));
    });
  });

  describe('writes', () => {
    test('every write leaves the same rows', async () => {
      await write(async (c) => {
        // Lenders' reports: one the move below confirms (cleared), one it does not (held, saying why), one queued.
        await c.deps.stores.outcomes.notePaymentReport(c, { id: pay(4), status: 'settled', returnCode: null, at: NOW, hold: null, lookUp: true });
        await c.deps.stores.outcomes.notePaymentReport(c, { id: pay(7), status: 'returned', returnCode: 'R01', at: NOW, hold: null, lookUp: false });
        await c.deps.stores.outcomes.notePaymentReport(c, { id: pay(6), status: 'voided', returnCode: null, at: NOW, hold: 'no key', lookUp: true });
        await c.deps.stores.outcomes.movePaymentStatus(c, { id: pay(4), from: 'processing', status: 'settled', returnCode: null, message: 'ok', now: NOW, settledAt: NOW - 1, reportHold: 'recorded settled' });
        // Read in another status: left alone.
        await c.deps.stores.outcomes.movePaymentStatus(c, { id: pay(3), from: 'processing', status: 'settled', returnCode: null, message: 'no', now: NOW, settledAt: null, reportHold: 'recorded settled' });
        await c.deps.stores.outcomes.movePaymentStatus(c, { id: pay(7), from: 'initiating', status: 'processing', returnCode: null, message: null, now: NOW, settledAt: null, reportHold: 'recorded processing' });
        await c.deps.stores.outcomes.holdPaymentReport(c, pay(6), 'asked, no answer');
        // No report: nothing to hold.
        await c.deps.stores.outcomes.holdPaymentReport(c, pay(3), 'nothing');
        await c.deps.stores.outcomes.setObservationAside(c, { lenderId: L1, connectionId: null, source: 'upload', sourceEventId: 's', reference: 'r', status: 'settled', error: 'e', at: NOW });
        // pi_x marked matched; pi_1 stays matched; pi_y stays unmatched (ingested before: never unmarked); pi_z is new.
        await c.deps.stores.matching.saveIngested(c, K1, [
          { id: 'pi_x', matched: true },
          { id: 'pi_1', matched: false },
          { id: 'pi_z', matched: false },
        ]);
        await c.deps.stores.matching.keepProcessorPaymentId(c, pay(1), 'pi_other');
        await c.deps.stores.matching.keepProcessorPaymentId(c, pay(3), 'pi_3');
        await c.deps.stores.dispatch.noteProcessorPaymentId(c, pay(7), null, NOW);
        await c.deps.stores.dispatch.noteProcessorPaymentId(c, pay(5), 'pi_5', NOW);
        await c.deps.stores.feeds.recordPoll(c, K1, { from: 'c', cursor: 'next', at: NOW, error: null, reconcileDue: true, ingested: 3, matched: 2 });
        await c.deps.stores.feeds.recordPoll(c, K2, { from: null, cursor: null, at: NOW, error: 'x', reconcileDue: false, ingested: 0, matched: 0 });
        await c.deps.stores.feeds.recordPollError(c, K1, 'failed');
        await c.deps.stores.feeds.markReconciled(c, K2, NOW);
        expect(await c.deps.stores.outcomes.releasePayment(c, pay(5), NOW)).toBe(true);
        expect(await c.deps.stores.outcomes.releasePayment(c, pay(3), NOW)).toBe(false);
        await c.deps.stores.enrollments.setPaymentsUsed(c, enr(2), 7, NOW);
        await c.deps.stores.enrollments.giveBackPresentment(c, enr(1), NOW);
        await c.deps.stores.enrollments.giveBackPresentment(c, enr(1), NOW);
        await c.deps.stores.enrollments.giveBackPresentment(c, enr(1), NOW);
      });
      // A send is claimed only by the claim that holds the payment's queue row.
      await lite.db.update(sq.payments).set({ leaseToken: 'claim-3' }).where(eq(sq.payments.id, pay(3)));
      await pg.db.update(pgs.payments).set({ leaseToken: 'claim-3' }).where(eq(pgs.payments.id, pay(3)));
      const held = (id: string) => ({ id, leaseToken: 'claim-3' });
      expect(await same((c) => transaction(c, (t) => t.deps.stores.dispatch.claimSend(t, { id: pay(3), leaseToken: 'another-claim' }, NOW)))).toBe(false);
      // What the recorder reads before it ends a payment not attempted: its status and its first attempt.
      expect(await same((c) => transaction(c, (t) => t.deps.stores.outcomes.sendStateHeld(t, pay(5))))).toEqual({ status: 'initiating', firstAttemptAt: null });
      await write((c) => c.deps.stores.outcomes.movePaymentStatus(c, { id: pay(5), from: 'initiating', status: 'not_attempted', returnCode: null, message: 'never sent', now: NOW, settledAt: null, reportHold: '' }));
      expect(await same((c) => transaction(c, (t) => t.deps.stores.dispatch.claimSend(t, held(pay(3)), NOW)))).toBe(true);
      expect(await same((c) => transaction(c, (t) => t.deps.stores.dispatch.claimSend(t, held(pay(7)), NOW)))).toBe(false);
      expect(await same((c) => transaction(c, (t) => t.deps.stores.dispatch.claimSend(t, held(pay(4)), NOW)))).toBe(false);
      expect((await same((c) => transaction(c, (t) => t.deps.stores.outcomes.sendStateHeld(t, pay(7)))))?.status).toBe('processing');
      expect(await same((c) => transaction(c, (t) => t.deps.stores.outcomes.sendStateHeld(t, 'none')))).toBeNull();
      // Sent: its first attempt recorded.
      expect(await same((c) => transaction(c, (t) => t.deps.stores.outcomes.sendStateHeld(t, pay(3))))).toEqual({ status: 'initiating', firstAttemptAt: expect.any(Number) });
      await write((c) => c.deps.stores.outcomes.movePaymentStatus(c, { id: pay(3), from: 'initiating', status: 'not_attempted', returnCode: null, message: 'absent', now: NOW, settledAt: null, reportHold: '' }));
      await write((c) =>
        c.deps.stores.decisions.createPayment(c, {
          id: pay(8),
          lenderId: L1,
          enrollmentId: enr(4),
          authorizerUniqueId: 'aid-4',
          connectionId: K1,
          rail: 'ach',
          amountCents: 42,
          reference: ref(8),
          status: 'initiating',
          attempt: 1,
          reinitiationOf: null,
          debitOn: null,
          state: 'pending',
          nextAttemptAt: NOW,
          createdAt: NOW,
          updatedAt: NOW,
        }),
      );
      // The queue: claimed, finished and released alike.
      // Each engine's claim has its own token; the same rows otherwise.
      const claimedOn = async (c: StoreCtx) => (await c.deps.stores.dispatch.claimDuePayments(c, 10, NOW)).map(({ leaseToken, ...p }) => ({ ...p, token: leaseToken }));
      const liteClaimed = await claimedOn(onLite);
      const pgClaimed = await claimedOn(onPg);
      expect(pgClaimed.map(({ token: _, ...p }) => p)).toEqual(liteClaimed.map(({ token: _, ...p }) => p));
      // Oldest due first; two due at once in the order they were made (4 and 6 queued for a look-up by their reports).
      expect(liteClaimed.map((p) => p.id)).toEqual([pay(7), pay(3), pay(4), pay(5), pay(6), pay(8)]);
      const claimOf = (list: typeof liteClaimed, id: string) => ({ id, leaseToken: list.find((p) => p.id === id)!.token });
      for (const [c, list] of [[onLite, liteClaimed], [onPg, pgClaimed]] as const) {
        await transaction(c, (t) => t.deps.stores.dispatch.finishDue(t, claimOf(list, pay(7)), { state: 'pending', attempts: 2, nextAttemptAt: NOW + 10, set: { message: 'later' } }));
        await transaction(c, (t) => t.deps.stores.dispatch.finishDue(t, claimOf(list, pay(8)), { state: 'done' }));
      }
      expect(await same((c) => transaction(c, (t) => t.deps.stores.dispatch.releasePaymentLeases(t, replicaPrefix())))).toBe(4);
      expect((await same(async (c) => (await c.deps.stores.dispatch.claimDuePayments(c, 10, NOW + 10)).map((p) => p.id)))).toEqual([pay(3), pay(4), pay(5), pay(6), pay(7)]);
      // The tokens differ between the engines (each claim has its own); the rows are otherwise alike.
      await lite.db.update(sq.payments).set({ leaseToken: null });
      await pg.db.update(pgs.payments).set({ leaseToken: null });
      for (const t of ['payments', 'paymentEvents', 'ledgerEntries', 'ingestedPayments', 'paymentConnections', 'enrollments', 'paymentObservationsSetAside'] as const) await sameRows(t);
    });
  });
}
