import { and, asc, desc, eq, getTableColumns, gt, gte, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import { bankAccounts, enrollments, paymentConnections, paymentEvents, payments } from '../../../db/schema';
import { MONITOR_STATES, PAYMENT_STATUSES, type AccountType, type EventSource, type EventStatus, type MonitorState, type PaymentStatus, type Rail } from '../../../db/schema/enums';
import type { Db, Orm } from '../../platform/db';
import { DAY_MS } from '../../platform/clock';
import { LeaseQueue, oldestDueFirst } from '../../platform/lease-queue';
import { builtOnce, exactSum, listOf, readerOf, sumOf, writerOf, type Summed } from '../../platform/sql/sqlite';
import type { PastPayment } from './rules';
import { decidingColumns, DISPATCH_LEASE_MS, REVOKED, REVOKED_E } from './store-shared';
import { OPEN_HOLD } from '../fraud-monitoring/store-shared';
import { BLOCKING_ACCOUNT, standingColumns, standingOf, withStanding, type RawStanding, type StandingBeside } from '../bank-accounts/store-shared';
import type { DispatchStore, OutcomeStore, MatchingStore, DecisionStore, DecisionRead, DecidingRow, PaymentReadStore, CountedSum, DuePayment, EventRecord, LedgerTotals, OwnPayment, PaymentPageQuery, PaymentReport, ScheduledPayment, StatusMove } from './store';

// Collection's SQL on SQLite. The raw prepared statements: recording an observed status and matching a
// processor change run once per change of a polled feed (bun run bench collection: a 50,000-change backlog at
// 20,000 changes/s or more), where the query builder's per-call cost is most of the time. bun:sqlite caches
// each statement. The statements are written first, as synchronous functions; the five stores at the end
// (dispatch, outcomes, matching, decisions, payment reads) call them.

const eventSeen = (db: Db, lenderId: string, source: EventSource, sourceEventId: string) =>
  db.$client
    .query<{ id: string }, [string, string, string]>('SELECT id FROM payment_events WHERE lender_id = ? AND source = ? AND source_event_id = ?')
    .get(lenderId, source, sourceEventId);

/** The latest recorded event of a reference: its status (forward only, so the reference's status) and time. */
const lastEventOf = (db: Db, lenderId: string, reference: string) =>
  db.$client
    .query<{ status: EventStatus; occurredAt: number }, [string, string]>(
      `SELECT status, occurred_at AS occurredAt FROM payment_events INDEXED BY payment_events_reference_idx
        WHERE lender_id = ? AND reference = ? ORDER BY recorded_at DESC, rowid DESC LIMIT 1`,
    )
    .get(lenderId, reference);

/** Which of these source events of a lender were read before: eventSeen for a slice of observations at once. */
const seenAmong = (db: Db, lenderId: string, source: EventSource, sourceEventIds: string[]) =>
  db.$client
    .query<{ id: string }, [string, string, string]>(
      'SELECT source_event_id AS id FROM payment_events WHERE lender_id = ? AND source = ? AND source_event_id IN (SELECT value FROM json_each(?))',
    )
    .all(lenderId, source, listOf(sourceEventIds));

/** The latest recorded event of each of some references: lastEventOf for a slice of observations at once. */
const lastEventsAmong = (db: Db, lenderId: string, references: string[]) =>
  db.$client
    .query<{ reference: string; status: EventStatus; occurredAt: number }, [string, string]>(
      `SELECT e.reference, e.status, e.occurred_at AS occurredAt FROM json_each(?2) j
         JOIN payment_events e ON e.rowid = (SELECT rowid FROM payment_events INDEXED BY payment_events_reference_idx
                                              WHERE lender_id = ?1 AND reference = j.value ORDER BY recorded_at DESC, rowid DESC LIMIT 1)`,
    )
    .all(lenderId, listOf(references));

/** A payment's recorded status. */
const paymentStatusOf = (db: Db, id: string) =>
  db.$client.query<{ status: PaymentStatus }, [string]>('SELECT status FROM payments WHERE id = ?').get(id)?.status;

const insertEvent = (
  tx: Orm,
  v: EventRecord,
) =>
  tx.$client
    .query(
      `INSERT INTO payment_events (id, lender_id, enrollment_id, authorizer_unique_id, payment_id, connection_id, reference, status,
         amount_cents, return_code, message, source, source_event_id, occurred_at, recorded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(v.id, v.lenderId, v.enrollmentId, v.aid, v.paymentId, v.connectionId, v.reference, v.status, v.amount, v.returnCode, v.message, v.source, v.sourceEventId, v.occurredAt, v.recordedAt);

/** What is credited for a reference, net of reversals (one reference: at most a few amounts under the cap). */
const creditedFor = (db: Db, lenderId: string, reference: string) =>
  db.$client
    .query<{ net: number }, [string, string]>(
      "SELECT COALESCE(SUM(CASE WHEN kind = 'credit' THEN amount_cents ELSE -amount_cents END), 0) AS net FROM ledger_entries WHERE lender_id = ? AND reference = ?",
    )
    .get(lenderId, reference)!.net;

const insertLedger = (tx: Orm, v: { lenderId: string; enrollmentId: string; reference: string; kind: 'credit' | 'reversal'; amount: number; eventId: string; at: number }) =>
  tx.$client
    .query('INSERT INTO ledger_entries (lender_id, enrollment_id, reference, kind, amount_cents, event_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run(v.lenderId, v.enrollmentId, v.reference, v.kind, v.amount, v.eventId, v.at);

/**
 * Moves a payment from the status it was read in (compare and set: a status that moved since is left alone).
 * A lender's report the new status confirms is cleared; one it does not confirm stands, held for `reportHold`.
 */
const updatePaymentStatus = (tx: Orm, v: StatusMove) =>
  tx.$client
    .query(
      `UPDATE payments SET status = ?1, return_code = ?2, message = ?3, updated_at = ?4, settled_at = COALESCE(?5, settled_at),
              report_hold = CASE WHEN reported_status IS NULL OR reported_status = ?1 THEN NULL ELSE ?8 END,
              reported_return_code = CASE WHEN reported_status = ?1 THEN NULL ELSE reported_return_code END,
              reported_at = CASE WHEN reported_status = ?1 THEN NULL ELSE reported_at END,
              reported_status = CASE WHEN reported_status = ?1 THEN NULL ELSE reported_status END
        WHERE id = ?6 AND status IS ?7`,
    )
    .run(v.status, v.returnCode, v.message, v.now, v.settledAt, v.id, v.from, v.reportHold);

/** A lender's report of the payment kept (an earlier one replaced); queued for a look-up at once when asked. */
const notePaymentReport = (tx: Orm, r: PaymentReport) =>
  tx.$client
    .query(
      `UPDATE payments SET reported_status = ?2, reported_return_code = ?3, reported_at = ?4, report_hold = ?5
              ${r.lookUp ? ", state = 'pending', attempts = 0, next_attempt_at = ?4, lease_until = 0, lease_token = NULL" : ''}
        WHERE id = ?1`,
    )
    .run(r.id, r.status, r.returnCode, r.at, r.hold);

/** What a change's match reads of the service's own payment. */
const OWN_COLUMNS = 'id, enrollment_id AS enrollmentId, authorizer_unique_id AS aid, amount_cents AS amount, processor_payment_id AS pid';

/** The lender's own payment with this reference. */
const ownByReference = (db: Db, lenderId: string, reference: string) =>
  db.$client
    .query<OwnPayment, [string, string]>(`SELECT ${OWN_COLUMNS} FROM payments WHERE lender_id = ?1 AND reference = ?2 LIMIT 1`)
    .get(lenderId, reference);

/** The lender's own payment with this processor id through the key. */
const ownByProcessorId = (db: Db, lenderId: string, connectionId: string, processorPaymentId: string) =>
  db.$client
    .query<OwnPayment, [string, string, string]>(
      `SELECT ${OWN_COLUMNS} FROM payments INDEXED BY payments_processor_idx WHERE connection_id = ?2 AND processor_payment_id = ?3 AND lender_id = ?1 LIMIT 1`,
    )
    .get(lenderId, connectionId, processorPaymentId);

/** A payment the service made, by its id (the tail of its reference), whichever lender made it. */
const paymentById = (db: Db, id: string) =>
  db.$client.query<{ lenderId: string; reference: string }, [string]>('SELECT lender_id AS lenderId, reference FROM payments WHERE id = ?').get(id);

/** Whether a processor payment was ingested through the key, and matched then. */
const ingested = (db: Db, connectionId: string, processorPaymentId: string) =>
  db.$client
    .query<{ matched: number }, [string, string]>('SELECT matched FROM ingested_payments WHERE connection_id = ? AND processor_payment_id = ?')
    .get(connectionId, processorPaymentId);

/** Ingests a processor payment through the key; one ingested before is only ever marked matched. */
const saveIngested = (tx: Orm, connectionId: string, processorPaymentId: string, matched: boolean) =>
  tx.$client
    .query(
      `INSERT INTO ingested_payments (connection_id, processor_payment_id, matched) VALUES (?1, ?2, ?3)
         ON CONFLICT (connection_id, processor_payment_id) DO UPDATE SET matched = 1 WHERE excluded.matched = 1`,
    )
    .run(connectionId, processorPaymentId, matched ? 1 : 0);

/**
 * When the oldest of a key's payments that can still change was first sent: in flight, or settled since
 * `settledSince` (watched for late returns). Null when there is none (nothing to reconcile).
 */
const oldestUnsettled = (db: Db, connectionId: string, settledSince: number) =>
  db.$client
    .query<{ at: number | null }, [string, number]>(
      `SELECT MIN(COALESCE(first_attempt_at, created_at)) AS at FROM payments
        WHERE connection_id = ?1 AND first_attempt_at IS NOT NULL
          AND (status IN ('initiating', 'processing') OR (status = 'settled' AND settled_at >= ?2))`,
    )
    .get(connectionId, settledSince)!.at;

/** The service's payment with this id, sent through this key. */
const ownPaymentById = (db: Db, id: string, connectionId: string) =>
  db.$client
    .query<{ id: string; lenderId: string; enrollmentId: string; aid: string; amount: number; reference: string }, [string, string]>(
      `SELECT id, lender_id AS lenderId, enrollment_id AS enrollmentId, authorizer_unique_id AS aid, amount_cents AS amount, reference
         FROM payments WHERE id = ? AND connection_id = ?`,
    )
    .get(id, connectionId);

/** Keeps the processor's id of a payment the first time it is seen (a no-op read of the key after that). */
const setProcessorPaymentId = (tx: Orm, id: string, processorPaymentId: string) =>
  tx.$client.query('UPDATE payments SET processor_payment_id = ? WHERE id = ? AND processor_payment_id IS NULL').run(processorPaymentId, id);

/** A payment as the collection rules read it (PastPayment), and a scheduled one as a decision reads it. */
const PAST_PAYMENT = `id, status, return_code AS returnCode, amount_cents AS amountCents, attempt, reinitiation_of AS reinitiationOf,
  created_at AS createdAt, updated_at AS updatedAt, first_attempt_at AS firstAttemptAt,
  reported_return_code AS reportedReturnCode, reported_at AS reportedAt, debit_on AS debitOn, notice_class AS noticeClass`;
const SCHEDULED_PAYMENT = `id, lender_id AS lenderId, enrollment_id AS enrollmentId, authorizer_unique_id AS aid, reference, amount_cents AS amountCents,
  debit_on AS debitOn, notice_needs AS noticeNeeds, notice_due_from AS noticeDueFrom, notice_due_by AS noticeDueBy, notice_sent_at AS noticeSentAt`;

/** Every payment of a borrower, oldest first, as the collection rules read it (collection/rules.ts). */
const paymentHistory = (db: Db, enrollmentId: string) =>
  db.$client
    .query<PastPayment, [string]>(`SELECT ${PAST_PAYMENT} FROM payments INDEXED BY payments_enrollment_idx WHERE enrollment_id = ? ORDER BY created_at, id`)
    .all(enrollmentId);

/** The borrower's scheduled payment (at most one: it counts as in flight). */
const scheduledPaymentOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<ScheduledPayment, [string]>(`SELECT ${SCHEDULED_PAYMENT} FROM payments INDEXED BY payments_enrollment_idx WHERE enrollment_id = ? AND status = 'scheduled'`)
    .get(enrollmentId);

/** A borrower as a decision reads it: its enrollment row, and its bank account's state and last return beside it. */
const DECIDING = {
  ...decidingColumns(getTableColumns(enrollments)),
  accountState: bankAccounts.state,
  accountLastReturnAt: bankAccounts.lastReturnAt,
  accountPendingChangeId: bankAccounts.pendingChangeId,
  accountValidatedAt: bankAccounts.validatedAt,
  accountNumberChangedAt: bankAccounts.numberChangedAt,
  // A fraud-monitoring hold rule's alert, open or needing information, holds the borrower (1) or not (0).
  fraudHold: sql<number>`CASE WHEN ${sql.raw(OPEN_HOLD('"enrollments"'))} THEN 1 ELSE 0 END`.mapWith(Number),
};
/** A row read with DECIDING, as the decision takes it: the account's standing as one field, null when none is linked. */
const decidingRow = (r: Omit<DecidingRow, 'account' | 'fraudHold'> & StandingBeside & { fraudHold: number }): DecidingRow => withStanding(r);

/** decisionInputsOf's three reads, for a list of borrowers (bound as one JSON parameter). */
const enrollmentsToDecide = builtOnce((db: Db) =>
  db
    .select(DECIDING)
    .from(enrollments)
    .leftJoin(bankAccounts, eq(bankAccounts.id, enrollments.bankAccountId))
    .where(sql`${enrollments.id} IN (SELECT value FROM json_each(${sql.placeholder('ids')}))`)
    .prepare(),
);
const paymentHistories = (db: Db, ids: string) =>
  db.$client
    .query<PastPayment & { enrollmentId: string }, [string]>(
      `SELECT enrollment_id AS enrollmentId, ${PAST_PAYMENT}
         FROM payments INDEXED BY payments_enrollment_idx WHERE enrollment_id IN (SELECT value FROM json_each(?)) ORDER BY enrollment_id, created_at, id`,
    )
    .all(ids);
const scheduledPayments = (db: Db, ids: string) =>
  db.$client
    .query<ScheduledPayment, [string]>(
      `SELECT ${SCHEDULED_PAYMENT} FROM payments INDEXED BY payments_enrollment_idx WHERE enrollment_id IN (SELECT value FROM json_each(?)) AND status = 'scheduled'`,
    )
    .all(ids);

/** Its day has come and nothing stops it: a scheduled payment becomes an initiating one, due for dispatch now. */
const releasePayment = (tx: Orm, id: string, now: number) =>
  tx.$client
    .query("UPDATE payments SET status = 'initiating', state = 'pending', next_attempt_at = ?, updated_at = ? WHERE id = ? AND status = 'scheduled'")
    .run(now, now, id);

/** What the collection rules read of a borrower besides its payments. */
const chainInputsOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<
      { lenderId: string; state: string; blockedReason: string | null; authorizationAt: number | null; cfpbCovered: number | null; collectableAmountCents: number; revokedAt: number | null; reauthorizedAt: number | null },
      [string]
    >(
      `SELECT lender_id AS lenderId, state, blocked_reason AS blockedReason, authorization_at AS authorizationAt,
              cfpb_covered AS cfpbCovered, collectable_amount_cents AS collectableAmountCents, revoked_at AS revokedAt,
              reauthorized_at AS reauthorizedAt
         FROM enrollments WHERE id = ?`,
    )
    .get(enrollmentId);

/** The standing of a borrower's bank account. */
const accountStandingOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<RawStanding, [string]>(
      `SELECT ${standingColumns('a.')} FROM enrollments e JOIN bank_accounts a ON a.id = e.bank_account_id WHERE e.id = ?`,
    )
    .get(enrollmentId);

const setAside = (
  tx: Orm,
  v: { lenderId: string; connectionId: string | null; source: EventSource; sourceEventId: string; reference: string; status: EventStatus; error: string; at: number },
) =>
  tx.$client
    .query('INSERT INTO payment_observations_set_aside (lender_id, connection_id, source, source_event_id, reference, status, error, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
    .run(v.lenderId, v.connectionId, v.source, v.sourceEventId, v.reference, v.status, v.error, v.at);
// The portal overview's sums: every amount of the lender's ledger and payments, exactly (exactSum: read with
// safeIntegers, put together by sumOf).

const CREDITED = exactSum('amount_cents', 'c', `kind = 'credit'`);
const REVERSED = exactSum('amount_cents', 'r', `kind = 'reversal'`);

// What was credited, and what was reversed by returns, from the ledger_entries_lender_at_idx covering index.
/** The overview's ledger totals since `from`. */
const ledgerSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Summed<'c' | 'r'>, [string, number]>(`SELECT ${CREDITED}, ${REVERSED} FROM ledger_entries WHERE lender_id = ? AND at >= ?`)
    .safeIntegers(true)
    .get(lender, from)!;
/** The same per UTC day. */
const ledgerByDay = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Summed<'c' | 'r'> & { day: bigint }, [string, number]>(
      `SELECT (at / ${DAY_MS}) * ${DAY_MS} AS day, ${CREDITED}, ${REVERSED} FROM ledger_entries WHERE lender_id = ? AND at >= ? GROUP BY 1`,
    )
    .safeIntegers(true)
    .all(lender, from);
// In flight: sent and not yet settled or returned (initiating, processing).
const flightSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Summed<'f'> & { n: bigint }, [string, number]>(
      `SELECT ${exactSum('amount_cents', 'f')}, COUNT(*) AS n FROM payments
        WHERE lender_id = ? AND status IN ('initiating', 'processing') AND created_at >= ?`,
    )
    .safeIntegers(true)
    .get(lender, from)!;
// Returned debits: every reference returned (or returned late) since `from`, once each however many return
// events it has, with its amount; off payment_events_returns_idx, the amounts read from the rows it names.
const returnedSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Summed<'d'> & { n: bigint }, [string, number]>(
      `SELECT ${exactSum('a', 'd')}, COUNT(*) AS n FROM (
         SELECT reference, MAX(amount_cents) AS a FROM payment_events INDEXED BY payment_events_returns_idx
          WHERE lender_id = ? AND status IN ('returned', 'late_returned') AND occurred_at >= ? GROUP BY reference)`,
    )
    .safeIntegers(true)
    .get(lender, from)!;

/** The overview's figures as exact sums: the parts above put together. */
const ledgerTotals = (db: Db, lender: string, from: number): LedgerTotals => {
  const l = ledgerSince(db, lender, from);
  return { credited: sumOf(l, 'c'), reversed: sumOf(l, 'r') };
};
const ledgerTotalsByDay = (db: Db, lender: string, from: number): (LedgerTotals & { day: number })[] =>
  ledgerByDay(db, lender, from).map((r) => ({ day: Number(r.day), credited: sumOf(r, 'c'), reversed: sumOf(r, 'r') }));
const inFlightTotals = (db: Db, lender: string, from: number): CountedSum => {
  const f = flightSince(db, lender, from);
  return { amount: sumOf(f, 'f'), count: Number(f.n) };
};
const returnedTotals = (db: Db, lender: string, from: number): CountedSum => {
  const d = returnedSince(db, lender, from);
  return { amount: sumOf(d, 'd'), count: Number(d.n) };
};

/**
 * The claim of a send: the payment still initiating, its queue row still held by this claim, and its borrower
 * still monitored and not held by a fraud-monitoring alert, with its first attempt recorded (kept when it was sent before). One statement, so a removal
 * either committed before it (no row changes) or finds the payment claimed.
 */
const claimSend = (tx: Orm, id: string, leaseToken: string, now: number, details: { sealed: string; routing: string | null } | undefined) =>
  tx.$client
    .query(
      `UPDATE payments SET first_attempt_at = COALESCE(first_attempt_at, ?2), updated_at = ?2
      WHERE id = ?1 AND status = 'initiating' AND lease_token = ?3
        AND EXISTS (SELECT 1 FROM enrollments e WHERE e.id = payments.enrollment_id AND e.state = 'monitored' AND e.sealed IS NOT NULL AND NOT ${REVOKED_E} AND NOT ${OPEN_HOLD('e')}
                       AND (?4 IS NULL OR (e.sealed = ?4 AND e.routing_number IS ?5)))
        AND NOT EXISTS (SELECT 1 FROM enrollments e JOIN bank_accounts a ON a.id IN (payments.bank_account_id, e.bank_account_id)
                         WHERE e.id = payments.enrollment_id AND ${BLOCKING_ACCOUNT})`,
    )
    .run(id, now, leaseToken, details?.sealed ?? null, details?.routing ?? null);

/** The borrower a collection decision is about: its whole row, and its bank account's standing. */
const enrollmentToDecide = builtOnce((db: Db) =>
  db.select(DECIDING).from(enrollments).leftJoin(bankAccounts, eq(bankAccounts.id, enrollments.bankAccountId)).where(eq(enrollments.id, sql.placeholder('id'))).prepare(),
);

/** A payment of the borrower in flight (initiating or processing), if any. */
const paymentInFlight = builtOnce((db: Db) =>
  db
    .select({ id: payments.id })
    .from(payments)
    .where(and(eq(payments.enrollmentId, sql.placeholder('id')), inArray(payments.status, ['initiating', 'processing'])))
    .prepare(),
);

const insertPayment = (tx: Orm, row: typeof payments.$inferInsert) => tx.insert(payments).values(row).run();

/** What the dispatcher reads of a due payment before it decides. */
const sendStateOf = (db: Db, id: string) =>
  db.select({ status: payments.status, firstAttemptAt: payments.firstAttemptAt, reportedStatus: payments.reportedStatus }).from(payments).where(eq(payments.id, id)).get();

/** What a debit needs of its borrower: whether it is still monitored, and its sealed details. */
const borrowerToDebit = (db: Db, enrollmentId: string) =>
  db
    .select({
      state: enrollments.state,
      sealed: enrollments.sealed,
      cardToken: enrollments.cardTokenSealed,
      routing: enrollments.routingNumber,
      revoked: sql<number>`${sql.raw(REVOKED)}`,
    })
    .from(enrollments)
    .where(eq(enrollments.id, enrollmentId))
    .get();

/** The bank accounts a payment's debit would meet: the one it was made for and its borrower's now, with the borrower's authorization. */
const accountsToDebit = (db: Db, paymentId: string) =>
  db.$client
    .query<{ authorizationAt: number | null; accountType: AccountType | null } & (RawStanding | { [K in keyof RawStanding]: null }), [string]>(
      `SELECT e.authorization_at AS authorizationAt, CASE WHEN a.id = e.bank_account_id THEN a.account_type END AS accountType, ${standingColumns('a.')}
         FROM payments p JOIN enrollments e ON e.id = p.enrollment_id
         LEFT JOIN bank_accounts a ON a.id IN (p.bank_account_id, e.bank_account_id)
        WHERE p.id = ?`,
    )
    .all(paymentId);

/** The processor key a payment goes through: its processor and its sealed key (null once deleted). */
const keyToSend = (db: Db, connectionId: string) =>
  db
    .select({ processor: paymentConnections.processor, keySealed: paymentConnections.keySealed })
    .from(paymentConnections)
    .where(eq(paymentConnections.id, connectionId))
    .get();

/** Keeps the processor's id of a payment it answered about (an id kept before stands). */
const noteProcessorPaymentId = (tx: Orm, id: string, processorPaymentId: string | null, now: number) =>
  tx
    .update(payments)
    .set({ processorPaymentId: sql`COALESCE(${payments.processorPaymentId}, ${processorPaymentId})`, updatedAt: now })
    .where(eq(payments.id, id))
    .run();

/** Every key with its count from grouped rows, 0 for a key no row has. */
function countsOf<K extends string>(keys: readonly K[], rows: { key: K; n: number }[]): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const r of rows) out[r.key] = r.n;
  return out;
}

const borrowerCountsByState = (db: Db, lender: string): Record<MonitorState, number> =>
  countsOf(
    MONITOR_STATES,
    db.select({ key: enrollments.state, n: sql<number>`COUNT(*)` }).from(enrollments).where(eq(enrollments.lenderId, lender)).groupBy(enrollments.state).all(),
  );

const paymentCountsByStatus = (db: Db, lender: string): Record<PaymentStatus, number> =>
  countsOf(
    PAYMENT_STATUSES,
    db.select({ key: payments.status, n: sql<number>`COUNT(*)` }).from(payments).where(eq(payments.lenderId, lender)).groupBy(payments.status).all(),
  );

/** Every event of one borrower of the lender, oldest first. */
const eventsOfBorrower = (db: Db, lenderId: string, aid: string) =>
  db
    .select()
    .from(paymentEvents)
    .where(and(eq(paymentEvents.lenderId, lenderId), eq(paymentEvents.authorizerUniqueId, aid)))
    .orderBy(asc(paymentEvents.recordedAt), asc(paymentEvents.id))
    .all();

/** Up to `take` of the lender's payments after a position, filtered and in the order asked. */
const paymentsPage = (db: Db, v: PaymentPageQuery) => {
  const byAmount = v.sort === 'amount_desc' || v.sort === 'amount_asc';
  const descending = v.sort === 'newest' || v.sort === 'amount_desc';
  const key = byAmount ? payments.amountCents : payments.createdAt;
  const filters: SQL[] = [eq(payments.lenderId, v.lenderId)];
  if (v.status) filters.push(eq(payments.status, v.status));
  if (v.from !== null) filters.push(gte(payments.createdAt, v.from));
  if (v.to !== null) filters.push(lt(payments.createdAt, v.to));
  const p = v.after;
  const beyond = p
    ? descending
      ? or(lt(key, p.k), and(eq(key, p.k), lt(payments.id, p.i)))!
      : or(gt(key, p.k), and(eq(key, p.k), gt(payments.id, p.i)))!
    : undefined;
  return db
    .select()
    .from(payments)
    .where(and(...filters, ...(beyond ? [beyond] : [])))
    .orderBy(descending ? desc(key) : asc(key), descending ? desc(payments.id) : asc(payments.id))
    .limit(v.take)
    .all();
};

const queues = new WeakMap<Db, LeaseQueue<typeof payments, DuePayment>>();

/** The dispatch queue of a database, one per connection (its finalizing statements are cached). */
function dispatchQueue(db: Db): LeaseQueue<typeof payments, DuePayment> {
  let q = queues.get(db);
  if (!q) {
    q = new LeaseQueue(db, payments, {
      leaseMs: DISPATCH_LEASE_MS,
      // Raw: claimed every tick of the dispatch job (bench collection).
      pick: oldestDueFirst<DuePayment>(
        `SELECT id, lender_id AS lenderId, enrollment_id AS enrollmentId, authorizer_unique_id AS authorizerUniqueId,
                connection_id AS connectionId, rail, amount_cents AS amountCents, reference, attempts, attempt
           FROM payments`,
      ),
    });
    queues.set(db, q);
  }
  return q;
}

export const sqliteDispatchStore: DispatchStore = {
  async claimDuePayments(c, want, now) {
    return dispatchQueue(c.deps.db).claim(c, want, now);
  },
  async finishDue(c, claim, finish) {
    return dispatchQueue(c.deps.db).finish(c, claim, finish);
  },
  async releasePaymentLeases(c, prefix) {
    return dispatchQueue(c.deps.db).release(c, prefix);
  },
  async sendStateOf(c, id) {
    return sendStateOf(readerOf(c), id) ?? null;
  },
  async borrowerToDebit(c, enrollmentId) {
    const r = borrowerToDebit(readerOf(c), enrollmentId);
    return r ? { ...r, revoked: r.revoked === 1 } : null;
  },
  async accountsToDebit(c, paymentId) {
    const found = accountsToDebit(readerOf(c), paymentId);
    return {
      authorizationAt: found[0]?.authorizationAt ?? null,
      accounts: found.flatMap((r) => (r.state === null ? [] : [standingOf(r as RawStanding)])),
      accountType: found.find((r) => r.accountType !== null)?.accountType ?? null,
    };
  },
  async keyToSend(c, connectionId) {
    return keyToSend(readerOf(c), connectionId) ?? null;
  },
  async paymentKeyLive(c, paymentId) {
    return (
      readerOf(c)
        .$client.query<{ live: number }, [string]>('SELECT k.key_sealed IS NOT NULL AS live FROM payments p JOIN payment_connections k ON k.id = p.connection_id WHERE p.id = ?')
        .get(paymentId)?.live === 1
    );
  },
  async claimSend(c, claim, now, details) {
    return claimSend(writerOf(c), String(claim.id), claim.leaseToken, now, details).changes === 1;
  },
  async noteProcessorPaymentId(c, id, processorPaymentId, now) {
    noteProcessorPaymentId(writerOf(c), id, processorPaymentId, now);
  },
};

export const sqliteOutcomeStore: OutcomeStore = {
  async eventSeen(c, lenderId, source, sourceEventId) {
    return eventSeen(readerOf(c), lenderId, source, sourceEventId) != null;
  },
  async lastEventOf(c, lenderId, reference) {
    return lastEventOf(readerOf(c), lenderId, reference) ?? null;
  },
  async seenAmong(c, lenderId, source, sourceEventIds) {
    return seenAmong(readerOf(c), lenderId, source, sourceEventIds).map((r) => r.id);
  },
  async lastEventsAmong(c, lenderId, references) {
    return lastEventsAmong(readerOf(c), lenderId, references);
  },
  async paymentStatusOf(c, id) {
    return paymentStatusOf(readerOf(c), id) ?? null;
  },
  async paymentAccountOf(c, id) {
    return readerOf(c).$client.query<{ rail: Rail; bankAccountId: string | null }, [string]>('SELECT rail, bank_account_id AS bankAccountId FROM payments WHERE id = ?').get(id) ?? null;
  },
  async recordEvent(c, event) {
    insertEvent(writerOf(c), event);
  },
  async creditedFor(c, lenderId, reference) {
    return creditedFor(readerOf(c), lenderId, reference);
  },
  async postLedgerEntry(c, entry) {
    insertLedger(writerOf(c), entry);
  },
  async movePaymentStatus(c, move) {
    updatePaymentStatus(writerOf(c), move);
  },
  async releasePayment(c, id, now) {
    return releasePayment(writerOf(c), id, now).changes === 1;
  },
  async sendStateHeld(c, id) {
    const s = sendStateOf(writerOf(c), id);
    return s ? { status: s.status, firstAttemptAt: s.firstAttemptAt } : null;
  },
  async notePaymentReport(c, report) {
    notePaymentReport(writerOf(c), report);
  },
  async holdPaymentReport(c, id, hold) {
    writerOf(c).$client.query('UPDATE payments SET report_hold = ? WHERE id = ? AND reported_status IS NOT NULL').run(hold, id);
  },
  async setObservationAside(c, v) {
    setAside(writerOf(c), v);
  },
  async serializeReferences() {},
};

export const sqliteMatchingStore: MatchingStore = {
  async ownPaymentsAmong(c, lenderId, connectionId, references, processorPaymentIds) {
    const db = readerOf(c);
    const found = (keys: string[], one: (k: string) => OwnPayment | null) =>
      new Map(
        keys.flatMap((k) => {
          const p = one(k);
          return p ? [[k, p] as const] : [];
        }),
      );
    return {
      byReference: found(references, (r) => ownByReference(db, lenderId, r)),
      byProcessorId: found(processorPaymentIds, (p) => ownByProcessorId(db, lenderId, connectionId, p)),
    };
  },
  async paymentById(c, id) {
    return paymentById(readerOf(c), id) ?? null;
  },
  async ingestedAmong(c, connectionId, processorPaymentIds) {
    const db = readerOf(c);
    return processorPaymentIds.flatMap((id) => {
      const row = ingested(db, connectionId, id);
      return row ? [{ id, matched: row.matched === 1 }] : [];
    });
  },
  async saveIngested(c, connectionId, payments) {
    const tx = writerOf(c);
    for (const p of payments) saveIngested(tx, connectionId, p.id, p.matched);
  },
  async oldestUnsettled(c, connectionId, settledSince) {
    return oldestUnsettled(readerOf(c), connectionId, settledSince);
  },
  async ownPaymentById(c, id, connectionId) {
    return ownPaymentById(readerOf(c), id, connectionId) ?? null;
  },
  async keepProcessorPaymentId(c, id, processorPaymentId) {
    setProcessorPaymentId(writerOf(c), id, processorPaymentId);
  },
  async serializeFeed() {},
};

const PAYMENT_NOTICE = {
  id: payments.id,
  enrollmentId: payments.enrollmentId,
  aid: payments.authorizerUniqueId,
  reference: payments.reference,
  status: payments.status,
  amountCents: payments.amountCents,
  debitOn: payments.debitOn,
  noticeClass: payments.noticeClass,
  noticeNeeds: payments.noticeNeeds,
  noticeChannel: payments.noticeChannel,
  noticeDueFrom: payments.noticeDueFrom,
  noticeDueBy: payments.noticeDueBy,
  noticeSentAt: payments.noticeSentAt,
  noticeSentChannel: payments.noticeSentChannel,
  noticeEvidenceRef: payments.noticeEvidenceRef,
  createdAt: payments.createdAt,
};

export const sqliteDecisionStore: DecisionStore = {
  async paymentNoticeOf(c, lenderId, paymentId) {
    return readerOf(c).select(PAYMENT_NOTICE).from(payments).where(and(eq(payments.id, paymentId), eq(payments.lenderId, lenderId))).get() ?? null;
  },
  async confirmNotice(c, v) {
    const r = writerOf(c)
      .$client.query(
        `UPDATE payments SET notice_sent_at = ?, notice_sent_channel = ?, notice_evidence_ref = ?, notice_due_from = ?, notice_due_by = ?, updated_at = ?
          WHERE id = ? AND status = 'scheduled' AND notice_sent_at IS NULL`,
      )
      .run(v.sentAt, v.channel, v.ref, v.dueFrom, v.dueBy, v.now, v.id);
    return r.changes > 0;
  },
  async enrollmentToDecide(c, enrollmentId) {
    const r = enrollmentToDecide(readerOf(c)).get({ id: enrollmentId });
    return r ? decidingRow(r) : null;
  },
  async decisionInputsOf(c, enrollmentIds) {
    const db = readerOf(c);
    const ids = listOf(enrollmentIds);
    const out = new Map<string, DecisionRead>();
    for (const r of enrollmentsToDecide(db).all({ ids })) out.set(r.id, { enrollment: decidingRow(r), history: [], scheduled: null });
    for (const { enrollmentId, ...p } of paymentHistories(db, ids)) out.get(enrollmentId)?.history.push(p);
    for (const p of scheduledPayments(db, ids)) {
      const r = out.get(p.enrollmentId);
      if (r) r.scheduled = p;
    }
    return out;
  },
  async paymentHistory(c, enrollmentId) {
    return paymentHistory(readerOf(c), enrollmentId);
  },
  async scheduledPaymentOf(c, enrollmentId) {
    return scheduledPaymentOf(readerOf(c), enrollmentId) ?? null;
  },
  async scheduledPaymentsOf(c, enrollmentIds) {
    const out = new Map<string, ScheduledPayment>();
    if (enrollmentIds.length > 0) for (const p of scheduledPayments(readerOf(c), listOf(enrollmentIds))) out.set(p.enrollmentId, p);
    return out;
  },
  async paymentInFlight(c, enrollmentId) {
    return paymentInFlight(readerOf(c)).get({ id: enrollmentId }) !== undefined;
  },
  async createPayment(c, payment) {
    insertPayment(writerOf(c), payment);
  },
  async chainInputsOf(c, enrollmentId) {
    return chainInputsOf(readerOf(c), enrollmentId) ?? null;
  },
  async accountStandingOf(c, enrollmentId) {
    const r = accountStandingOf(readerOf(c), enrollmentId);
    return r ? standingOf(r) : null;
  },
  // One writer at a time: a transaction's reads and writes are never interleaved with another's.
  async serializeBorrowers() {},
};

export const sqlitePaymentReadStore: PaymentReadStore = {
  async ledgerTotals(c, lenderId, from) {
    return ledgerTotals(readerOf(c), lenderId, from);
  },
  async ledgerTotalsByDay(c, lenderId, from) {
    return ledgerTotalsByDay(readerOf(c), lenderId, from);
  },
  async inFlightTotals(c, lenderId, from) {
    return inFlightTotals(readerOf(c), lenderId, from);
  },
  async returnedTotals(c, lenderId, from) {
    return returnedTotals(readerOf(c), lenderId, from);
  },
  async borrowerCountsByState(c, lenderId) {
    return borrowerCountsByState(readerOf(c), lenderId);
  },
  async paymentCountsByStatus(c, lenderId) {
    return paymentCountsByStatus(readerOf(c), lenderId);
  },
  async eventsOfBorrower(c, lenderId, aid) {
    return eventsOfBorrower(readerOf(c), lenderId, aid);
  },
  async paymentsPage(c, v) {
    return paymentsPage(readerOf(c), v);
  },
};
