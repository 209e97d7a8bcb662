// Collection's functions have two forms while other modules still call them from synchronous code: the
// asynchronous one on the collection store and the synchronous one on the same statements (transitional.ts,
// and the …Now functions of decide.ts and chain.ts). Fed the same borrowers and observations, they record and
// decide the same (events, statuses, ledger, set-asides, payments, presentments) and read the same (the dry
// run's questions, the overview, the payments listing, the events).
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { knownAmong, recordSlice, staleAgainst, type Observation, type Recorded } from '../../../src/modules/collection/record';
import { madeForAnotherLender } from '../../../src/modules/collection/reference';
import { collectionOverview } from '../../../src/modules/collection/overview';
import { listPayments } from '../../../src/modules/collection/payment-list';
import { listPaymentEvents } from '../../../src/modules/collection/events';
import { decideCollection, decideCollectionNow, voidScheduledOnStop, voidScheduledOnStopNow } from '../../../src/modules/collection/decide';
import {
  collectionOverviewNow,
  knownAmongNow,
  listPaymentEventsNow,
  listPaymentsNow,
  madeForAnotherLenderNow,
  recordSliceNow,
  staleAgainstNow,
} from '../../../src/modules/collection/transitional';
import { transaction, withTransaction } from '../../../src/platform/context';
import type { EventStatus } from '../../../db/schema/enums';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

const rows = <T>(c: TestContext, sql: string, ...args: (string | number)[]) => c.rt.sqlite.query(sql).all(...args) as T[];

async function setup() {
  const c = createTestContext();
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_record_forms_0001', rail_scope: 'both', is_default: true } })).status).toBe(201);
  return c;
}

async function borrowerWithPayment(c: TestContext, aid: string) {
  const conn = rows<{ id: string }>(c, 'SELECT id FROM payment_connections')[0]!.id;
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: 1000 })] } });
  expect(r.status).toBe(207);
  const eid = rows<{ id: string }>(c, 'SELECT id FROM enrollments WHERE authorizer_unique_id = ?', aid)[0]!.id;
  // A payment id as the service makes them: a reference's tail names it.
  const pid = crypto.randomUUID();
  const now = c.clock.now();
  c.rt.sqlite
    .query(
      `INSERT INTO payments (id, lender_id, enrollment_id, authorizer_unique_id, connection_id, rail, amount_cents, reference, status, state, created_at, updated_at, first_attempt_at)
       VALUES (?, ?, ?, ?, ?, 'ach', 1000, ?, 'initiating', 'done', ?, ?, ?)`,
    )
    .run(pid, c.lender.id, eid, aid, conn, `DRS-${aid}-${pid}`, now, now, now);
  return { eid, pid, reference: `DRS-${aid}-${pid}` };
}

/** One borrower's slices: forward, a re-read, a stale status, a late return; and a slice with an observation that cannot be recorded. */
function slicesOf(c: TestContext, aid: string, b: { eid: string; pid: string; reference: string }): Observation[][] {
  const at = c.clock.now();
  const o = (status: EventStatus, n: number, over: Partial<Observation> = {}): Observation => ({
    lenderId: c.lender.id,
    reference: b.reference,
    status,
    amountCents: 1000,
    returnCode: status === 'returned' ? 'R01' : null,
    message: null,
    occurredAt: at + n * 1000,
    source: 'upload',
    sourceEventId: `${aid}:row-${n}:${status}`,
    enrollmentId: b.eid,
    authorizerUniqueId: aid,
    paymentId: b.pid,
    connectionId: null,
    ...over,
  });
  return [
    [o('processing', 1), o('settled', 2)],
    [o('settled', 2), o('processing', 3), o('returned', 4)],
    // Money back (a dispute won), first from a row naming a borrower that does not exist: its event's key
    // fails, it alone is set aside, and the slice's other row is recorded.
    [o('settled', 5, { repeat: true, enrollmentId: 'no-such-borrower', sourceEventId: `${aid}:row-5:bad` }), o('settled', 6, { repeat: true })],
  ];
}

/** What a slice records, through the form given; the known state read first, as the upload does. */
type Recorder = (slice: Observation[]) => Promise<(Recorded | null)[]>;

const recordedOf = (c: TestContext, aid: string, pid: string) => ({
  payment: rows<{ status: string; returnCode: string | null }>(c, 'SELECT status, return_code AS returnCode FROM payments WHERE id = ?', pid),
  events: rows<{ status: string; code: string | null }>(c, 'SELECT status, return_code AS code FROM payment_events WHERE authorizer_unique_id = ? ORDER BY recorded_at, rowid', aid),
  ledger: rows<{ kind: string; amount: number }>(c, 'SELECT kind, amount_cents AS amount FROM ledger_entries WHERE reference LIKE ? ORDER BY rowid', `DRS-${aid}-%`),
  setAside: rows<{ status: string }>(c, 'SELECT status FROM payment_observations_set_aside WHERE reference LIKE ? ORDER BY rowid', `DRS-${aid}-%`),
});

describe("collection's asynchronous functions and their synchronous forms", () => {
  test('record the same slices alike, a fault set aside alone in both', async () => {
    const c = await setup();
    const a = await borrowerWithPayment(c, 'async-borrower');
    const s = await borrowerWithPayment(c, 'sync-borrower');

    const asynchronous: Recorder = (slice) =>
      transaction({ deps: c.rt }, async (tx) => {
        const known = await knownAmong(tx, c.lender.id, 'upload', slice);
        return recordSlice(tx, async (record) => {
          const out: (Recorded | null)[] = [];
          for (const [i, o] of slice.entries()) out.push(await record({ ...o, known: known[i] }));
          return out;
        });
      });
    const synchronous: Recorder = async (slice) =>
      withTransaction({ deps: c.rt }, (tx) => {
        const known = knownAmongNow(tx.tx, c.lender.id, 'upload', slice);
        return recordSliceNow(tx, (record) => slice.map((o, i) => record({ ...o, known: known[i] })));
      });

    const outcomes = async (recorder: Recorder, slices: Observation[][]) => {
      const out: string[] = [];
      for (const slice of slices) for (const r of await recorder(slice)) out.push(r === null ? 'set aside' : r.recorded ? `recorded ${r.status}` : `not recorded: ${r.why}`);
      return out;
    };
    const viaAsync = await outcomes(asynchronous, slicesOf(c, 'async-borrower', a));
    const viaSync = await outcomes(synchronous, slicesOf(c, 'sync-borrower', s));
    expect(viaAsync).toEqual([
      'recorded processing',
      'recorded settled',
      'not recorded: seen',
      'not recorded: stale',
      'recorded late_returned',
      'set aside',
      'recorded settled',
    ]);
    expect(viaSync).toEqual(viaAsync);

    const recordedAsync = recordedOf(c, 'async-borrower', a.pid);
    expect(recordedAsync).toEqual({
      payment: [{ status: 'settled', returnCode: null }],
      events: [
        { status: 'processing', code: null },
        { status: 'settled', code: null },
        { status: 'late_returned', code: 'R01' },
        { status: 'settled', code: null },
      ],
      ledger: [
        { kind: 'credit', amount: 1000 },
        { kind: 'reversal', amount: 1000 },
        { kind: 'credit', amount: 1000 },
      ],
      setAside: [{ status: 'settled' }],
    });
    expect(recordedOf(c, 'sync-borrower', s.pid)).toEqual(recordedAsync);
  });

  test("answer the dry run's questions alike: stale against what, and another lender's payment", async () => {
    const c = await setup();
    const b = await borrowerWithPayment(c, 'dry-borrower');
    const settled = { lenderId: c.lender.id, reference: b.reference, paymentId: b.pid, source: 'upload' as const };
    await transaction({ deps: c.rt }, (tx) =>
      recordSlice(tx, async (record) =>
        record({ ...settled, status: 'settled', amountCents: 1000, returnCode: null, message: null, occurredAt: c.clock.now(), sourceEventId: 'dry:settled', enrollmentId: b.eid, authorizerUniqueId: 'dry-borrower', connectionId: null }),
      ),
    );
    const questions = [
      { ...settled, status: 'processing' as const, sourceEventId: 'dry:processing' },
      { ...settled, status: 'returned' as const, sourceEventId: 'dry:returned' },
      { ...settled, status: 'processing' as const, sourceEventId: 'dry:settled' },
    ];
    const answers = await Promise.all(questions.map((o) => staleAgainst({ deps: c.rt }, o)));
    expect(answers).toEqual(['settled', undefined, undefined]);
    expect(questions.map((o) => staleAgainstNow(c.rt.db, o))).toEqual(answers);

    // The payment is this lender's: made for another lender, as seen by any other lender; not a payment of
    // the service's at all when its tail names none.
    const asked = [
      [c.lender.id, b.reference],
      ['another-lender', b.reference],
      ['another-lender', b.reference.replace(b.pid, crypto.randomUUID())],
    ] as const;
    const made = await Promise.all(asked.map(([lender, reference]) => madeForAnotherLender({ deps: c.rt }, lender, reference)));
    expect(made).toEqual([false, true, false]);
    expect(asked.map(([lender, reference]) => madeForAnotherLenderNow(c.rt.db, lender, reference))).toEqual(made);
  });

  test('the overview, the payments listing a page at a time and the events read alike in both forms', async () => {
    const c = await setup();
    for (const aid of ['list-a', 'list-b', 'list-c']) {
      const b = await borrowerWithPayment(c, aid);
      c.clock.advance(1000);
      await transaction({ deps: c.rt }, (tx) =>
        recordSlice(tx, async (record) =>
          record({ lenderId: c.lender.id, reference: b.reference, status: 'settled', amountCents: 1000, returnCode: null, message: null, occurredAt: c.clock.now(), source: 'upload', sourceEventId: `${aid}:settled`, enrollmentId: b.eid, authorizerUniqueId: aid, paymentId: b.pid, connectionId: null }),
        ),
      );
    }
    const ctx = { lender: { id: c.lender.id, name: 'lender', debitCardApproved: false }, deps: c.rt };
    const overview = await collectionOverview(ctx);
    expect(overview.allTime.collected).toBe(3000n);
    expect(overview.paymentsByStatus.settled).toBe(3);
    expect(collectionOverviewNow(ctx)).toEqual(overview);

    const pages = async (list: (input: { limit: number; next_page_token?: string; sort: 'amount_asc' }) => unknown) => {
      const seen: unknown[] = [];
      let token: string | undefined;
      do {
        const page = (await list({ limit: 2, sort: 'amount_asc', ...(token ? { next_page_token: token } : {}) })) as { next_page_token: string | null };
        seen.push(page);
        token = page.next_page_token ?? undefined;
      } while (token);
      return seen;
    };
    const viaAsync = await pages((input) => listPayments({ ctx, input }));
    expect(viaAsync).toHaveLength(2);
    expect(viaAsync.flatMap((p) => (p as { payments: { authorizer_unique_id: string }[] }).payments.map((x) => x.authorizer_unique_id)).sort()).toEqual(['list-a', 'list-b', 'list-c']);
    expect(await pages((input) => listPaymentsNow({ ctx, input }))).toEqual(viaAsync);

    const events = await listPaymentEvents({ ctx, input: { authorizerUniqueId: 'list-b' } });
    expect(events.events.map((e) => e.status)).toEqual(['settled']);
    expect(listPaymentEventsNow({ ctx, input: { authorizerUniqueId: 'list-b' } })).toEqual(events);
  });

  test('decide alike: a payment initiated, none while it is in flight; with notice, scheduled and voided on removal', async () => {
    const c = await setup();
    const enroll = async (aid: string) => {
      const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: 1000 })] } });
      expect(r.status).toBe(207);
      return rows<{ id: string; state: string }>(c, 'SELECT id, state FROM enrollments WHERE authorizer_unique_id = ?', aid)[0]!;
    };
    const read = (aid: string, enrollmentId: string) => ({
      batchId: 'batch',
      lenderId: c.lender.id,
      authorizerUniqueId: aid,
      balanceCents: 1_000_000,
      statusCode: 200,
      at: c.clock.now(),
      enrollmentId,
    });
    const viaAsync = (aid: string, id: string) => transaction({ deps: c.rt }, (tx) => decideCollection(tx, read(aid, id)));
    const viaSync = (aid: string, id: string) => withTransaction({ deps: c.rt }, (tx) => decideCollectionNow(tx, read(aid, id)));
    const decided = (aid: string) => ({
      payments: rows(c, 'SELECT status, state, amount_cents AS amount, attempt, debit_on AS debitOn FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id', aid),
      enrollment: rows(c, 'SELECT state, blocked_reason AS blockedReason, payments_used AS used FROM enrollments WHERE authorizer_unique_id = ?', aid),
      events: rows(c, 'SELECT status, message FROM payment_events WHERE authorizer_unique_id = ? ORDER BY recorded_at, rowid', aid),
    });

    const a = await enroll('decide-async');
    const s = await enroll('decide-sync');
    expect(a.state).toBe('monitored');
    for (let i = 0; i < 2; i++) {
      await viaAsync('decide-async', a.id);
      viaSync('decide-sync', s.id);
    }
    expect(decided('decide-async').payments).toEqual([{ status: 'initiating', state: 'pending', amount: 1000, attempt: 1, debitOn: null }]);
    expect(decided('decide-sync')).toEqual(decided('decide-async'));

    // With notice: scheduled, then voided when monitoring stops.
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { notice_days: 2 } })).status).toBe(200);
    const na = await enroll('notice-async');
    const ns = await enroll('notice-sync');
    await viaAsync('notice-async', na.id);
    viaSync('notice-sync', ns.id);
    expect(decided('notice-async').payments).toMatchObject([{ status: 'scheduled', state: 'done' }]);
    await transaction({ deps: c.rt }, (tx) => voidScheduledOnStop(tx, { enrollmentId: na.id }));
    withTransaction({ deps: c.rt }, (tx) => voidScheduledOnStopNow(tx, { enrollmentId: ns.id }));
    expect(decided('notice-async').payments).toMatchObject([{ status: 'voided' }]);
    expect(decided('notice-async').enrollment).toMatchObject([{ used: 0 }]);
    expect(decided('notice-sync')).toEqual(decided('notice-async'));
  });
});
