import type { Tx } from '../../platform/context';
import type { Db } from '../../platform/db';
import { DAY_MS } from '../../platform/clock';
import type { EventSource, EventStatus, PaymentStatus } from '../../../db/schema/enums';

// Collection's raw prepared statements: recording an observed status and matching a processor change run
// once per change of a polled feed (bun run bench collection: a 50,000-change backlog at 20,000 changes/s
// or more), where the query builder's per-call cost is most of the time. bun:sqlite caches each statement.

export const eventSeen = (db: Db, lenderId: string, source: EventSource, sourceEventId: string) =>
  db.$client
    .query<{ id: string }, [string, string, string]>('SELECT id FROM payment_events WHERE lender_id = ? AND source = ? AND source_event_id = ?')
    .get(lenderId, source, sourceEventId);

/** The latest recorded event of a reference: its status (forward only, so the reference's status) and time. */
export const lastEventOf = (db: Db, lenderId: string, reference: string) =>
  db.$client
    .query<{ status: EventStatus; occurredAt: number }, [string, string]>(
      `SELECT status, occurred_at AS occurredAt FROM payment_events INDEXED BY payment_events_reference_idx
        WHERE lender_id = ? AND reference = ? ORDER BY recorded_at DESC, rowid DESC LIMIT 1`,
    )
    .get(lenderId, reference);

/** Which of these source events of a lender were read before: eventSeen for a slice of observations at once. */
export const seenAmong = (db: Db, lenderId: string, source: EventSource, sourceEventIds: string[]) =>
  db.$client
    .query<{ id: string }, [string, string, string]>(
      'SELECT source_event_id AS id FROM payment_events WHERE lender_id = ? AND source = ? AND source_event_id IN (SELECT value FROM json_each(?))',
    )
    .all(lenderId, source, JSON.stringify(sourceEventIds));

/** The latest recorded event of each of some references: lastEventOf for a slice of observations at once. */
export const lastEventsAmong = (db: Db, lenderId: string, references: string[]) =>
  db.$client
    .query<{ reference: string; status: EventStatus; occurredAt: number }, [string, string]>(
      `SELECT e.reference, e.status, e.occurred_at AS occurredAt FROM json_each(?2) j
         JOIN payment_events e ON e.rowid = (SELECT rowid FROM payment_events INDEXED BY payment_events_reference_idx
                                              WHERE lender_id = ?1 AND reference = j.value ORDER BY recorded_at DESC, rowid DESC LIMIT 1)`,
    )
    .all(lenderId, JSON.stringify(references));

/** A payment's recorded status. */
export const paymentStatusOf = (db: Db, id: string) =>
  db.$client.query<{ status: PaymentStatus }, [string]>('SELECT status FROM payments WHERE id = ?').get(id)?.status;

export const insertEvent = (
  tx: Tx,
  v: {
    id: string;
    lenderId: string;
    enrollmentId: string | null;
    aid: string | null;
    paymentId: string | null;
    connectionId: string | null;
    reference: string;
    status: EventStatus;
    amount: number;
    returnCode: string | null;
    message: string | null;
    source: EventSource;
    sourceEventId: string;
    occurredAt: number;
    recordedAt: number;
  },
) =>
  tx.$client
    .query(
      `INSERT INTO payment_events (id, lender_id, enrollment_id, authorizer_unique_id, payment_id, connection_id, reference, status,
         amount_cents, return_code, message, source, source_event_id, occurred_at, recorded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(v.id, v.lenderId, v.enrollmentId, v.aid, v.paymentId, v.connectionId, v.reference, v.status, v.amount, v.returnCode, v.message, v.source, v.sourceEventId, v.occurredAt, v.recordedAt);

/** What is credited for a reference, net of reversals (one reference: at most a few amounts under the cap). */
export const creditedFor = (db: Db, lenderId: string, reference: string) =>
  db.$client
    .query<{ net: number }, [string, string]>(
      "SELECT COALESCE(SUM(CASE WHEN kind = 'credit' THEN amount_cents ELSE -amount_cents END), 0) AS net FROM ledger_entries WHERE lender_id = ? AND reference = ?",
    )
    .get(lenderId, reference)!.net;

export const insertLedger = (tx: Tx, v: { lenderId: string; enrollmentId: string; reference: string; kind: 'credit' | 'reversal'; amount: number; eventId: string; at: number }) =>
  tx.$client
    .query('INSERT INTO ledger_entries (lender_id, enrollment_id, reference, kind, amount_cents, event_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run(v.lenderId, v.enrollmentId, v.reference, v.kind, v.amount, v.eventId, v.at);

/** Moves a payment from the status it was read in (compare and set: a status that moved since is left alone). */
export const updatePaymentStatus = (tx: Tx, v: { id: string; from: PaymentStatus | null; status: EventStatus; returnCode: string | null; message: string | null; now: number; settledAt: number | null }) =>
  tx.$client
    .query('UPDATE payments SET status = ?, return_code = ?, message = ?, updated_at = ?, settled_at = COALESCE(?, settled_at) WHERE id = ? AND status IS ?')
    .run(v.status, v.returnCode, v.message, v.now, v.settledAt, v.id, v.from);

/** The service's own payment a change is about: by its reference, or by the processor's id through the same key. */
export const ownPayment = (db: Db, lenderId: string, connectionId: string, reference: string | null, processorPaymentId: string) =>
  db.$client
    .query<{ id: string; enrollmentId: string; aid: string; amount: number; pid: string | null }, [string, string, string, string]>(
      `SELECT id, enrollment_id AS enrollmentId, authorizer_unique_id AS aid, amount_cents AS amount, processor_payment_id AS pid FROM payments
        WHERE lender_id = ?1 AND reference = ?2
       UNION ALL
       SELECT id, enrollment_id, authorizer_unique_id, amount_cents, processor_payment_id FROM payments INDEXED BY payments_processor_idx
        WHERE connection_id = ?3 AND processor_payment_id = ?4 AND lender_id = ?1
       LIMIT 1`,
    )
    .get(lenderId, reference ?? '', connectionId, processorPaymentId);

/** A payment the service made, by its id (the tail of its reference), whichever lender made it. */
export const paymentById = (db: Db, id: string) =>
  db.$client.query<{ lenderId: string; reference: string }, [string]>('SELECT lender_id AS lenderId, reference FROM payments WHERE id = ?').get(id);

/** The lender's borrowers among these identifiers (the candidate splits of a DRS- reference). */
export const borrowersAmong = (db: Db, lenderId: string, ids: string[]) =>
  db.$client
    .query<{ id: string; aid: string }, [string, string]>(
      'SELECT id, authorizer_unique_id AS aid FROM enrollments WHERE lender_id = ? AND authorizer_unique_id IN (SELECT value FROM json_each(?))',
    )
    .all(lenderId, JSON.stringify(ids));

export const ingested = (db: Db, connectionId: string, processorPaymentId: string) =>
  db.$client
    .query<{ matched: number }, [string, string]>('SELECT matched FROM ingested_payments WHERE connection_id = ? AND processor_payment_id = ?')
    .get(connectionId, processorPaymentId);

export const insertIngested = (tx: Tx, connectionId: string, processorPaymentId: string, matched: boolean) =>
  tx.$client.query('INSERT INTO ingested_payments (connection_id, processor_payment_id, matched) VALUES (?, ?, ?)').run(connectionId, processorPaymentId, matched ? 1 : 0);

export const markIngestedMatched = (tx: Tx, connectionId: string, processorPaymentId: string) =>
  tx.$client.query('UPDATE ingested_payments SET matched = 1 WHERE connection_id = ? AND processor_payment_id = ?').run(connectionId, processorPaymentId);

/**
 * When the oldest of a key's payments that can still change was first sent: in flight, or settled since
 * `settledSince` (watched for late returns). Null when there is none (nothing to reconcile).
 */
export const oldestUnsettled = (db: Db, connectionId: string, settledSince: number) =>
  db.$client
    .query<{ at: number | null }, [string, number]>(
      `SELECT MIN(COALESCE(first_attempt_at, created_at)) AS at FROM payments
        WHERE connection_id = ?1 AND first_attempt_at IS NOT NULL
          AND (status IN ('initiating', 'processing') OR (status = 'settled' AND settled_at >= ?2))`,
    )
    .get(connectionId, settledSince)!.at;

/** The service's payment with this id, sent through this key. */
export const ownPaymentById = (db: Db, id: string, connectionId: string) =>
  db.$client
    .query<{ id: string; lenderId: string; enrollmentId: string; aid: string; amount: number; reference: string }, [string, string]>(
      `SELECT id, lender_id AS lenderId, enrollment_id AS enrollmentId, authorizer_unique_id AS aid, amount_cents AS amount, reference
         FROM payments WHERE id = ? AND connection_id = ?`,
    )
    .get(id, connectionId);

/** Keeps the processor's id of a payment the first time it is seen (a no-op read of the key after that). */
export const setProcessorPaymentId = (tx: Tx, id: string, processorPaymentId: string) =>
  tx.$client.query('UPDATE payments SET processor_payment_id = ? WHERE id = ? AND processor_payment_id IS NULL').run(processorPaymentId, id);

/** Every payment of a borrower, oldest first, as the collection rules read it (collection/rules.ts). */
export const paymentHistory = (db: Db, enrollmentId: string) =>
  db.$client
    .query<import('./rules').PastPayment, [string]>(
      `SELECT id, status, return_code AS returnCode, amount_cents AS amountCents, attempt, reinitiation_of AS reinitiationOf,
              created_at AS createdAt, updated_at AS updatedAt, first_attempt_at AS firstAttemptAt
         FROM payments INDEXED BY payments_enrollment_idx WHERE enrollment_id = ? ORDER BY created_at, id`,
    )
    .all(enrollmentId);

/** The borrower's scheduled payment (at most one: it counts as in flight). */
export const scheduledPaymentOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<{ id: string; lenderId: string; enrollmentId: string; aid: string; reference: string; amountCents: number; debitOn: number }, [string]>(
      `SELECT id, lender_id AS lenderId, enrollment_id AS enrollmentId, authorizer_unique_id AS aid, reference, amount_cents AS amountCents,
              debit_on AS debitOn
         FROM payments INDEXED BY payments_enrollment_idx WHERE enrollment_id = ? AND status = 'scheduled'`,
    )
    .get(enrollmentId);

/** Its day has come and nothing stops it: a scheduled payment becomes an initiating one, due for dispatch now. */
export const releaseScheduled = (tx: Tx, id: string, now: number) =>
  tx.$client
    .query("UPDATE payments SET status = 'initiating', state = 'pending', next_attempt_at = ?, updated_at = ? WHERE id = ? AND status = 'scheduled'")
    .run(now, now, id);

/** What the collection rules read of a borrower besides its payments. */
export const chainInputsOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<
      { lenderId: string; state: string; blockedReason: string | null; authorizationAt: number | null; cfpbCovered: number | null; collectableAmountCents: number },
      [string]
    >(
      `SELECT lender_id AS lenderId, state, blocked_reason AS blockedReason, authorization_at AS authorizationAt,
              cfpb_covered AS cfpbCovered, collectable_amount_cents AS collectableAmountCents
         FROM enrollments WHERE id = ?`,
    )
    .get(enrollmentId);

export const setPaymentsUsed = (tx: Tx, enrollmentId: string, n: number, now: number) =>
  tx.$client.query('UPDATE enrollments SET payments_used = ?, updated_at = ? WHERE id = ?').run(n, now, enrollmentId);

/** A payment the processor never held, ended: only from initiating (an outcome read meanwhile stands). */
export const markNotAttempted = (tx: Tx, id: string, message: string, now: number) =>
  tx.$client.query("UPDATE payments SET status = 'not_attempted', message = ?, updated_at = ? WHERE id = ? AND status = 'initiating'").run(message, now, id);

export const setAside = (
  tx: Tx,
  v: { lenderId: string; connectionId: string | null; source: EventSource; sourceEventId: string; reference: string; status: EventStatus; error: string; at: number },
) =>
  tx.$client
    .query('INSERT INTO payment_observations_set_aside (lender_id, connection_id, source, source_event_id, reference, status, error, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
    .run(v.lenderId, v.connectionId, v.source, v.sourceEventId, v.reference, v.status, v.error, v.at);
// The portal overview's sums: every amount of the lender's ledger and payments, exactly.

/**
 * SUM of an amount column that cannot overflow: each amount (under 2^54 cents: a borrower's ledger stays under
 * 2^53) is summed as three 18-bit parts, each part's sum staying under 2^63 for up to 2^45 rows, more than a
 * SQLite file can hold. The parts are put together in BigInt by `sumOf`. Read with safeIntegers.
 */
const PART_BITS = 18;
const PART_MASK = (1 << PART_BITS) - 1;
const partSums = (amount: string, name: string, when = '1') =>
  [0, 1, 2]
    .map((i) => `COALESCE(SUM(CASE WHEN ${when} THEN (${amount} >> ${i * PART_BITS})${i < 2 ? ` & ${PART_MASK}` : ''} END), 0) AS ${name}${i}`)
    .join(', ');
export type Parts<N extends string> = Record<`${N}${0 | 1 | 2}`, bigint>;
/** The exact sum of a column summed by `partSums` as `name`. */
export const sumOf = <N extends string>(row: Parts<N>, name: N): bigint =>
  row[`${name}0`] + (row[`${name}1`] << BigInt(PART_BITS)) + (row[`${name}2`] << BigInt(2 * PART_BITS));

const CREDITED = partSums('amount_cents', 'c', `kind = 'credit'`);
const REVERSED = partSums('amount_cents', 'r', `kind = 'reversal'`);

// What was credited, and what was reversed by returns, from the ledger_entries_lender_at_idx covering index.
/** The overview's ledger totals since `from`. */
export const ledgerSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Parts<'c' | 'r'>, [string, number]>(`SELECT ${CREDITED}, ${REVERSED} FROM ledger_entries WHERE lender_id = ? AND at >= ?`)
    .safeIntegers(true)
    .get(lender, from)!;
/** The same per UTC day. */
export const ledgerByDay = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Parts<'c' | 'r'> & { day: bigint }, [string, number]>(
      `SELECT (at / ${DAY_MS}) * ${DAY_MS} AS day, ${CREDITED}, ${REVERSED} FROM ledger_entries WHERE lender_id = ? AND at >= ? GROUP BY 1`,
    )
    .safeIntegers(true)
    .all(lender, from);
// In flight: sent and not yet settled or returned (initiating, processing).
export const flightSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Parts<'f'> & { n: bigint }, [string, number]>(
      `SELECT ${partSums('amount_cents', 'f')}, COUNT(*) AS n FROM payments
        WHERE lender_id = ? AND status IN ('initiating', 'processing') AND created_at >= ?`,
    )
    .safeIntegers(true)
    .get(lender, from)!;
// Returned debits: every reference returned (or returned late) since `from`, once each however many return
// events it has, with its amount; off payment_events_returns_idx, the amounts read from the rows it names.
export const returnedSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Parts<'d'> & { n: bigint }, [string, number]>(
      `SELECT ${partSums('a', 'd')}, COUNT(*) AS n FROM (
         SELECT reference, MAX(amount_cents) AS a FROM payment_events INDEXED BY payment_events_returns_idx
          WHERE lender_id = ? AND status IN ('returned', 'late_returned') AND occurred_at >= ? GROUP BY reference)`,
    )
    .safeIntegers(true)
    .get(lender, from)!;

/**
 * The claim of a send: the payment still initiating and its borrower still monitored, with its first attempt
 * recorded (kept when it was sent before). One statement, so a removal either committed before it (no row
 * changes) or finds the payment claimed.
 */
export const claimSend = (tx: Tx, id: string, now: number) =>
  tx.$client
    .query(
      `UPDATE payments SET first_attempt_at = COALESCE(first_attempt_at, ?2), updated_at = ?2
      WHERE id = ?1 AND status = 'initiating'
        AND EXISTS (SELECT 1 FROM enrollments e WHERE e.id = payments.enrollment_id AND e.state = 'monitored' AND e.sealed IS NOT NULL)`,
    )
    .run(id, now);
