import { and, asc, desc, eq, getTableColumns, gt, gte, inArray, isNotNull, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import {
  bankAccounts,
  enrollments,
  ledgerEntries,
  paymentConnections,
  paymentEvents,
  paymentObservationsSetAside,
  payments,
} from '../../../db/schema-pg';
import { MONITOR_STATES, PAYMENT_STATUSES, type AccountType, type EventStatus, type MonitorState, type PaymentStatus } from '../../../db/schema/enums';
import { OPEN_HOLD } from '../fraud-monitoring/store-shared';
import { BLOCKING_ACCOUNT, standingColumns, standingOf, withStanding, type RawStanding, type StandingBeside } from '../bank-accounts/store-shared';
import { DAY_MS } from '../../platform/clock';
import type { PgDb } from '../../platform/pg';
import { builtOnce, exactSum, inList, listOf, lockFor, num, numOrNull, probeByIndex, readerOf, rows, sumOf, writerOf, type Summed } from '../../platform/sql/pg';
import { LeaseQueue, oldestDueFirst } from '../../platform/lease-queue.pg';
import type { PastPayment } from './rules';
import type { DispatchStore, OutcomeStore, MatchingStore, DecisionStore, DecisionRead, DecidingRow, PaymentReadStore, CountedSum, DuePayment, LedgerTotals, PaymentPageQuery, ScheduledPayment } from './store';
import { decidingColumns, DISPATCH_LEASE_MS, REVOKED, REVOKED_E } from './store-shared';

// Collection's SQL on PostgreSQL: the same questions as store.sqlite.ts, with the same answers, orders and
// shapes. Transactions run side by side here (READ COMMITTED), so what SQLite's single writer gave for free is
// said in the statements:
// - the dispatch queue (platform/lease-queue.pg.ts) is claimed in one statement that locks the rows it takes and
//   skips those another claimer holds (FOR UPDATE SKIP LOCKED): no payment is leased twice;
// - every status move is a compare-and-set in one UPDATE (the status it was read in, or the one it may move
//   from): of two movers, the second re-reads the row the first committed and moves nothing;
// - a send's claim locks its borrower's row and its bank accounts' rows for share, so a removal, an erasure or
//   a return of the account in progress is waited for and seen, never raced;
// - what the services read and then write about one borrower, one reference or one key's feed is serialized
//   by the lock functions at the end (serializeBorrowers, serializeReferences, serializeFeed), which the
//   services take first in their transactions.
// Raw statements read int8 as strings: amounts and times from them go through num (exact below 2^53), sums
// are read as text into BigInt (exactSum, sumOf).

/** A text array bound as one parameter. */
const textArray = (values: readonly string[]) => sql`${listOf(values)}::text[]`;

/**
 * Buckets of a lender's references: an observation locks its reference's bucket, so a page or an upload slice
 * of thousands of references takes at most this many advisory locks (each is a slot of the server's lock
 * table, a few thousand in all by default), while observations of different references rarely wait.
 */
const REFERENCE_BUCKETS = 64;

/** The key an advisory lock of a reference takes (lockFor's format), so one and many lock the same keys. */
export const referenceKey = (lenderId: string, reference: string) =>
  ['collection-reference', lenderId, String(Number(Bun.hash.wyhash(reference) % BigInt(REFERENCE_BUCKETS)))].join('\u001f');

/** The latest recorded event of a reference: by its recording time, then by its id (UUIDv7, in insertion order). */
const LATEST_FIRST = sql`ORDER BY recorded_at DESC, id DESC LIMIT 1`;

/**
 * The dispatch queue: one statement a claim, the due payments oldest due first, locked as they are picked (a
 * row another claimer holds is skipped; one it leased and committed meanwhile is re-read and no longer due),
 * leased, and returned in that order.
 */
const dispatchQueue = new LeaseQueue(payments, {
  leaseMs: DISPATCH_LEASE_MS,
  statements: 'one',
  pick: oldestDueFirst(
    sql`id, lender_id, enrollment_id, authorizer_unique_id, connection_id, rail, amount_cents, reference, attempts, attempt, next_attempt_at`,
    (r: Record<string, unknown>): Omit<DuePayment, 'leaseToken'> => ({
      id: String(r.id),
      lenderId: String(r.lender_id),
      enrollmentId: String(r.enrollment_id),
      authorizerUniqueId: String(r.authorizer_unique_id),
      connectionId: String(r.connection_id),
      rail: r.rail as DuePayment['rail'],
      amountCents: num(r.amount_cents),
      reference: String(r.reference),
      attempts: num(r.attempts),
      attempt: num(r.attempt),
    }),
  ),
});


export const pgDispatchStore: DispatchStore = {
  async claimDuePayments(c, want, now) {
    return dispatchQueue.claim(c, want, now);
  },
  async finishDue(c, claim, finish) {
    return dispatchQueue.finish(c, claim, finish);
  },
  async releasePaymentLeases(c, prefix) {
    // Only this replica's own: another replica's claim may be alive, and is taken over when its lease runs out.
    return dispatchQueue.release(c, prefix);
  },
  async sendStateOf(c, id) {
    const [r] = await readerOf(c)
      .select({ status: payments.status, firstAttemptAt: payments.firstAttemptAt, reportedStatus: payments.reportedStatus })
      .from(payments)
      .where(eq(payments.id, id));
    return r ?? null;
  },
  async borrowerToDebit(c, enrollmentId) {
    const [r] = await readerOf(c)
      .select({
        state: enrollments.state,
        sealed: enrollments.sealed,
        cardToken: enrollments.cardTokenSealed,
        routing: enrollments.routingNumber,
        revoked: sql<boolean>`${sql.raw(REVOKED)}`,
      })
      .from(enrollments)
      .where(eq(enrollments.id, enrollmentId));
    return r ?? null;
  },
  async accountsToDebit(c, paymentId) {
    const found = await rows<{ authorizationAt: string | null; accountType: AccountType | null } & (RawStanding | { [K in keyof RawStanding]: null })>(
      readerOf(c),
      sql`SELECT e.authorization_at AS "authorizationAt", CASE WHEN a.id = e.bank_account_id THEN a.account_type END AS "accountType", ${sql.raw(standingColumns('a.'))}
            FROM payments p JOIN enrollments e ON e.id = p.enrollment_id
            LEFT JOIN bank_accounts a ON a.id IN (p.bank_account_id, e.bank_account_id)
           WHERE p.id = ${paymentId}`,
    );
    return {
      authorizationAt: numOrNull(found[0]?.authorizationAt ?? null),
      accounts: found.flatMap((r) => (r.state === null ? [] : [standingOf(r as RawStanding)])),
      accountType: found.find((r) => r.accountType !== null)?.accountType ?? null,
    };
  },
  async keyToSend(c, connectionId) {
    const [r] = await readerOf(c)
      .select({ processor: paymentConnections.processor, keySealed: paymentConnections.keySealed })
      .from(paymentConnections)
      .where(eq(paymentConnections.id, connectionId));
    return r ?? null;
  },
  async paymentKeyLive(c, paymentId) {
    const [r] = await readerOf(c)
      .select({ keySealed: paymentConnections.keySealed })
      .from(payments)
      .innerJoin(paymentConnections, eq(paymentConnections.id, payments.connectionId))
      .where(eq(payments.id, paymentId));
    return !!r?.keySealed;
  },
  async claimSend(c, claim, now, details) {
    // The borrower's row is read FOR SHARE: a removal or erasure that has changed it and not committed yet is
    // waited for, and the claim then sees what it committed (a plain subquery would read the row as it was).
    // So are its bank accounts' rows, whatever their state: a return being recorded on one is waited for. The
    // accounts are locked in a subquery fenced by OFFSET 0: without it the planner pushes the blocking test
    // below the lock, and an account whose committed state is ok would be passed over, not waited for.
    // Only while this claim holds the payment's queue row: a claim whose lease ran out sends nothing.
    const claimed = await rows<{ id: string }>(
      writerOf(c),
      sql`UPDATE payments SET first_attempt_at = COALESCE(first_attempt_at, ${now}::bigint), updated_at = ${now}
           WHERE id = ${String(claim.id)} AND status = 'initiating' AND lease_token = ${claim.leaseToken}
             AND EXISTS (SELECT 1 FROM enrollments e WHERE e.id = payments.enrollment_id AND e.state = 'monitored' AND e.sealed IS NOT NULL AND NOT ${sql.raw(REVOKED_E)} AND NOT ${sql.raw(OPEN_HOLD('e'))}
                            AND (${details?.sealed ?? null}::text IS NULL OR (e.sealed = ${details?.sealed ?? null}::text AND e.routing_number IS NOT DISTINCT FROM ${details?.routing ?? null}::text)) FOR SHARE)
             AND NOT EXISTS (
               SELECT 1 FROM (SELECT a.state, a.last_return_at, a.pending_change_id FROM bank_accounts a
                                WHERE a.id = payments.bank_account_id OR a.id = (SELECT e.bank_account_id FROM enrollments e WHERE e.id = payments.enrollment_id)
                                FOR SHARE OFFSET 0) AS a,
                             (SELECT e.authorization_at FROM enrollments e WHERE e.id = payments.enrollment_id) AS e
                WHERE ${sql.raw(BLOCKING_ACCOUNT)})
          RETURNING id`,
    );
    return claimed.length === 1;
  },
  async noteProcessorPaymentId(c, id, processorPaymentId, now) {
    await writerOf(c)
      .update(payments)
      .set({ processorPaymentId: sql`COALESCE(${payments.processorPaymentId}, ${processorPaymentId}::text)`, updatedAt: now })
      .where(eq(payments.id, id));
  },
};

export const pgOutcomeStore: OutcomeStore = {
  async eventSeen(c, lenderId, source, sourceEventId) {
    const r = await readerOf(c)
      .select({ id: paymentEvents.id })
      .from(paymentEvents)
      .where(and(eq(paymentEvents.lenderId, lenderId), eq(paymentEvents.source, source), eq(paymentEvents.sourceEventId, sourceEventId)))
      .limit(1);
    return r.length > 0;
  },
  async lastEventOf(c, lenderId, reference) {
    const [r] = await rows<{ status: EventStatus; occurredAt: string }>(
      readerOf(c),
      sql`SELECT status, occurred_at AS "occurredAt" FROM payment_events WHERE lender_id = ${lenderId} AND reference = ${reference} ${LATEST_FIRST}`,
    );
    return r ? { status: r.status, occurredAt: num(r.occurredAt) } : null;
  },
  async seenAmong(c, lenderId, source, sourceEventIds) {
    if (sourceEventIds.length === 0) return [];
    // One probe of the unique index (lender_id, source, source_event_id) per id: an upload's transaction adds
    // events its statistics do not count yet, and a plain `= ANY` was planned as a read of all the lender's
    // events, slice after slice (the LIMIT keeps the subquery a probe, not a join the planner may reorder).
    const r = await rows<{ id: string }>(
      readerOf(c),
      sql`SELECT e.id FROM unnest(${textArray(sourceEventIds)}) AS s(id)
            CROSS JOIN LATERAL (SELECT source_event_id AS id FROM payment_events
                                 WHERE lender_id = ${lenderId} AND source = ${source} AND source_event_id = s.id LIMIT 1) e`,
    );
    return r.map((x) => x.id);
  },
  async lastEventsAmong(c, lenderId, references) {
    if (references.length === 0) return [];
    // In the order asked, once per reference asked (as SQLite's join over json_each).
    const r = await rows<{ reference: string; status: EventStatus; occurredAt: string }>(
      readerOf(c),
      sql`SELECT e.reference, e.status, e.occurred_at AS "occurredAt"
            FROM unnest(${textArray(references)}) WITH ORDINALITY j(ref, ord)
            CROSS JOIN LATERAL (SELECT reference, status, occurred_at FROM payment_events
                                 WHERE lender_id = ${lenderId} AND reference = j.ref ${LATEST_FIRST}) e
           ORDER BY j.ord`,
    );
    return r.map((x) => ({ reference: x.reference, status: x.status, occurredAt: num(x.occurredAt) }));
  },
  async paymentStatusOf(c, id) {
    const [r] = await readerOf(c).select({ status: payments.status }).from(payments).where(eq(payments.id, id));
    return r?.status ?? null;
  },
  async paymentAccountOf(c, id) {
    const [r] = await readerOf(c).select({ rail: payments.rail, bankAccountId: payments.bankAccountId }).from(payments).where(eq(payments.id, id));
    return r ?? null;
  },
  async recordEvent(c, v) {
    await writerOf(c).insert(paymentEvents).values({
      id: v.id,
      lenderId: v.lenderId,
      enrollmentId: v.enrollmentId,
      authorizerUniqueId: v.aid,
      paymentId: v.paymentId,
      connectionId: v.connectionId,
      reference: v.reference,
      status: v.status,
      amountCents: v.amount,
      returnCode: v.returnCode,
      message: v.message,
      source: v.source,
      sourceEventId: v.sourceEventId,
      occurredAt: v.occurredAt,
      recordedAt: v.recordedAt,
    });
  },
  async creditedFor(c, lenderId, reference) {
    const [r] = await rows<{ net: string }>(
      readerOf(c),
      sql`SELECT COALESCE(SUM(CASE WHEN kind = 'credit' THEN amount_cents ELSE -amount_cents END), 0)::text AS net
            FROM ledger_entries WHERE lender_id = ${lenderId} AND reference = ${reference}`,
    );
    return num(r!.net);
  },
  async postLedgerEntry(c, v) {
    await writerOf(c)
      .insert(ledgerEntries)
      .values({ lenderId: v.lenderId, enrollmentId: v.enrollmentId, reference: v.reference, kind: v.kind, amountCents: v.amount, eventId: v.eventId, at: v.at });
  },
  async movePaymentStatus(c, v) {
    // Compare and set: a second mover that read the same status waits for the first's row lock, re-reads the
    // row it committed, finds the status moved and moves nothing.
    await writerOf(c)
      .update(payments)
      .set({
        status: v.status,
        returnCode: v.returnCode,
        message: v.message,
        updatedAt: v.now,
        settledAt: sql`COALESCE(${v.settledAt}::bigint, ${payments.settledAt})`,
        // A lender's report the new status confirms is cleared; one it does not confirm stands, held for why.
        reportHold: sql`CASE WHEN ${payments.reportedStatus} IS NULL OR ${payments.reportedStatus} = ${v.status} THEN NULL ELSE ${v.reportHold} END`,
        reportedReturnCode: sql`CASE WHEN ${payments.reportedStatus} = ${v.status} THEN NULL ELSE ${payments.reportedReturnCode} END`,
        reportedAt: sql`CASE WHEN ${payments.reportedStatus} = ${v.status} THEN NULL ELSE ${payments.reportedAt} END`,
        reportedStatus: sql`CASE WHEN ${payments.reportedStatus} = ${v.status} THEN NULL ELSE ${payments.reportedStatus} END`,
      })
      .where(and(eq(payments.id, v.id), v.from === null ? isNull(payments.status) : eq(payments.status, v.from)));
  },
  async releasePayment(c, id, now) {
    const moved = await writerOf(c)
      .update(payments)
      .set({ status: 'initiating', state: 'pending', nextAttemptAt: now, updatedAt: now })
      .where(and(eq(payments.id, id), eq(payments.status, 'scheduled')))
      .returning({ id: payments.id });
    return moved.length === 1;
  },
  async sendStateHeld(c, id) {
    const [r] = await writerOf(c)
      .select({ status: payments.status, firstAttemptAt: payments.firstAttemptAt })
      .from(payments)
      .where(eq(payments.id, id))
      .for('update');
    return r ?? null;
  },
  async notePaymentReport(c, r) {
    const queued = r.lookUp ? { state: 'pending' as const, attempts: 0, nextAttemptAt: r.at, leaseUntil: 0, leaseToken: null } : {};
    await writerOf(c)
      .update(payments)
      .set({ reportedStatus: r.status, reportedReturnCode: r.returnCode, reportedAt: r.at, reportHold: r.hold, ...queued })
      .where(eq(payments.id, r.id));
  },
  async holdPaymentReport(c, id, hold) {
    await writerOf(c)
      .update(payments)
      .set({ reportHold: hold })
      .where(and(eq(payments.id, id), isNotNull(payments.reportedStatus)));
  },
  async setObservationAside(c, v) {
    await writerOf(c).insert(paymentObservationsSetAside).values({
      lenderId: v.lenderId,
      connectionId: v.connectionId,
      source: v.source,
      sourceEventId: v.sourceEventId,
      reference: v.reference,
      status: v.status,
      error: v.error,
      at: v.at,
    });
  },
  async serializeReferences(c, lenderId, references) {
    const keys = [...new Set(references.map((r) => referenceKey(lenderId, r)))].sort();
    if (keys.length === 0) return;
    if (keys.length === 1) return lockFor(c, keys[0]!);
    // Many at once, in one order for every caller (sorted), in one round trip.
    await writerOf(c).execute(
      sql`SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM (SELECT k FROM unnest(${textArray(keys)}) WITH ORDINALITY u(k, o) ORDER BY o) s`,
    );
  },
};

export const pgMatchingStore: MatchingStore = {
  async ownPaymentsAmong(c, lenderId, connectionId, references, processorPaymentIds) {
    type Row = { key: string; id: string; enrollmentId: string; aid: string; amount: string; pid: string | null };
    const found = (r: Row[]) => new Map(r.map((x) => [x.key, { id: x.id, enrollmentId: x.enrollmentId, aid: x.aid, amount: num(x.amount), pid: x.pid }]));
    // A probe of an index per key (as seenAmong): a page is matched against payments made since the statistics.
    const among = (keys: string[], where: SQL) =>
      keys.length === 0
        ? []
        : rows<Row>(
            readerOf(c),
            sql`SELECT s.key, p.* FROM unnest(${textArray(keys)}) AS s(key)
                  CROSS JOIN LATERAL (SELECT id, enrollment_id AS "enrollmentId", authorizer_unique_id AS aid, amount_cents AS amount, processor_payment_id AS pid
                                        FROM payments WHERE ${where} LIMIT 1) p`,
          );
    const [byReference, byProcessorId] = await Promise.all([
      among(references, sql`lender_id = ${lenderId} AND reference = s.key`),
      among(processorPaymentIds, sql`connection_id = ${connectionId} AND processor_payment_id = s.key AND lender_id = ${lenderId}`),
    ]);
    return { byReference: found(byReference), byProcessorId: found(byProcessorId) };
  },
  async paymentById(c, id) {
    const [r] = await readerOf(c).select({ lenderId: payments.lenderId, reference: payments.reference }).from(payments).where(eq(payments.id, id));
    return r ?? null;
  },
  async ingestedAmong(c, connectionId, processorPaymentIds) {
    if (processorPaymentIds.length === 0) return [];
    // A probe of the unique index per id (as seenAmong): a page's feed adds rows its statistics do not count yet.
    return rows<{ id: string; matched: boolean }>(
      readerOf(c),
      sql`SELECT i.id, i.matched FROM unnest(${textArray(processorPaymentIds)}) AS s(id)
            CROSS JOIN LATERAL (SELECT processor_payment_id AS id, matched = 1 AS matched FROM ingested_payments
                                 WHERE connection_id = ${connectionId} AND processor_payment_id = s.id LIMIT 1) i`,
    );
  },
  async saveIngested(c, connectionId, payments) {
    if (payments.length === 0) return;
    await writerOf(c).execute(
      sql`INSERT INTO ingested_payments (connection_id, processor_payment_id, matched)
          SELECT ${connectionId}, v.id, CASE v.matched WHEN 't' THEN 1 ELSE 0 END
            FROM unnest(${textArray(payments.map((p) => p.id))}, ${textArray(payments.map((p) => (p.matched ? 't' : 'f')))}) AS v(id, matched)
          ON CONFLICT (connection_id, processor_payment_id) DO UPDATE SET matched = 1 WHERE excluded.matched = 1`,
    );
  },
  async oldestUnsettled(c, connectionId, settledSince) {
    const [r] = await rows<{ at: string | null }>(
      readerOf(c),
      sql`SELECT MIN(COALESCE(first_attempt_at, created_at)) AS at FROM payments
           WHERE connection_id = ${connectionId} AND first_attempt_at IS NOT NULL
             AND (status IN ('initiating', 'processing') OR (status = 'settled' AND settled_at >= ${settledSince}))`,
    );
    return numOrNull(r?.at);
  },
  async ownPaymentById(c, id, connectionId) {
    const [r] = await readerOf(c)
      .select({
        id: payments.id,
        lenderId: payments.lenderId,
        enrollmentId: payments.enrollmentId,
        aid: payments.authorizerUniqueId,
        amount: payments.amountCents,
        reference: payments.reference,
      })
      .from(payments)
      .where(and(eq(payments.id, id), eq(payments.connectionId, connectionId)));
    return r ?? null;
  },
  async keepProcessorPaymentId(c, id, processorPaymentId) {
    await writerOf(c).update(payments).set({ processorPaymentId }).where(and(eq(payments.id, id), isNull(payments.processorPaymentId)));
  },
  async serializeFeed(c, connectionId) {
    await writerOf(c).execute(sql`SELECT 1 FROM payment_connections WHERE id = ${connectionId} FOR NO KEY UPDATE`);
    // Taken first in a page's transaction: its probes stay index probes while it records the page.
    await probeByIndex(c);
  },
};

// The decision's reads, built once per handle (a flush of results asks them for each of its borrowers).
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
const decidingRow = (r: Omit<DecidingRow, 'account' | 'fraudHold'> & StandingBeside & { fraudHold: number }): DecidingRow => withStanding(r);
const enrollmentToDecide = builtOnce((db) =>
  db.select(DECIDING).from(enrollments).leftJoin(bankAccounts, eq(bankAccounts.id, enrollments.bankAccountId)).where(eq(enrollments.id, sql.placeholder('id'))).prepare('enrollment_to_decide'),
);
/** A payment as the collection rules read it (PastPayment), and a scheduled one as a decision reads it. */
const PAST_PAYMENT = {
  id: payments.id,
  status: payments.status,
  returnCode: payments.returnCode,
  amountCents: payments.amountCents,
  attempt: payments.attempt,
  reinitiationOf: payments.reinitiationOf,
  createdAt: payments.createdAt,
  updatedAt: payments.updatedAt,
  firstAttemptAt: payments.firstAttemptAt,
  reportedReturnCode: payments.reportedReturnCode,
  reportedAt: payments.reportedAt,
  debitOn: payments.debitOn,
  noticeClass: payments.noticeClass,
};
const SCHEDULED_PAYMENT = {
  id: payments.id,
  lenderId: payments.lenderId,
  enrollmentId: payments.enrollmentId,
  aid: payments.authorizerUniqueId,
  reference: payments.reference,
  amountCents: payments.amountCents,
  debitOn: payments.debitOn,
  noticeNeeds: payments.noticeNeeds,
  noticeDueFrom: payments.noticeDueFrom,
  noticeDueBy: payments.noticeDueBy,
  noticeSentAt: payments.noticeSentAt,
};
const paymentHistory = builtOnce((db) =>
  db
    .select(PAST_PAYMENT)
    .from(payments)
    .where(eq(payments.enrollmentId, sql.placeholder('id')))
    .orderBy(asc(payments.createdAt), asc(payments.id))
    .prepare('payment_history'),
);
/** Borrowers' scheduled payments (at most one each). */
const scheduledPayments = async (db: PgDb, enrollmentIds: readonly string[]): Promise<ScheduledPayment[]> =>
  (await db.select(SCHEDULED_PAYMENT).from(payments).where(and(inList(payments.enrollmentId, enrollmentIds), eq(payments.status, 'scheduled')))).map((p) => ({
    ...p,
    debitOn: p.debitOn as number,
  }));

const paymentInFlight = builtOnce((db) =>
  db
    .select({ id: payments.id })
    .from(payments)
    .where(and(eq(payments.enrollmentId, sql.placeholder('id')), inArray(payments.status, ['initiating', 'processing'])))
    .limit(1)
    .prepare('payment_in_flight'),
);

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

export const pgDecisionStore: DecisionStore = {
  async paymentNoticeOf(c, lenderId, paymentId) {
    const [r] = await readerOf(c).select(PAYMENT_NOTICE).from(payments).where(and(eq(payments.id, paymentId), eq(payments.lenderId, lenderId)));
    return r ?? null;
  },
  async confirmNotice(c, v) {
    const r = await writerOf(c)
      .update(payments)
      .set({ noticeSentAt: v.sentAt, noticeSentChannel: v.channel, noticeEvidenceRef: v.ref, noticeDueFrom: v.dueFrom, noticeDueBy: v.dueBy, updatedAt: v.now })
      .where(and(eq(payments.id, v.id), eq(payments.status, 'scheduled'), isNull(payments.noticeSentAt)))
      .returning({ id: payments.id });
    return r.length > 0;
  },
  async enrollmentToDecide(c, enrollmentId) {
    const [r] = await enrollmentToDecide(readerOf(c)).execute({ id: enrollmentId });
    return r ? decidingRow(r) : null;
  },
  async decisionInputsOf(c, enrollmentIds) {
    const db = readerOf(c);
    const out = new Map<string, DecisionRead>();
    if (enrollmentIds.length === 0) return out;
    const rowsToDecide = await db.select(DECIDING).from(enrollments).leftJoin(bankAccounts, eq(bankAccounts.id, enrollments.bankAccountId)).where(inList(enrollments.id, enrollmentIds));
    for (const r of rowsToDecide) out.set(r.id, { enrollment: decidingRow(r), history: [], scheduled: null });
    const histories = await db
      .select({ enrollmentId: payments.enrollmentId, ...PAST_PAYMENT })
      .from(payments)
      .where(inList(payments.enrollmentId, enrollmentIds))
      .orderBy(asc(payments.enrollmentId), asc(payments.createdAt), asc(payments.id));
    for (const { enrollmentId, ...p } of histories) out.get(enrollmentId)?.history.push(p);
    for (const p of await scheduledPayments(db, enrollmentIds)) {
      const r = out.get(p.enrollmentId);
      if (r) r.scheduled = p;
    }
    return out;
  },
  async paymentHistory(c, enrollmentId) {
    const r: PastPayment[] = await paymentHistory(readerOf(c)).execute({ id: enrollmentId });
    return r;
  },
  async scheduledPaymentsOf(c, enrollmentIds) {
    const out = new Map<string, ScheduledPayment>();
    if (enrollmentIds.length > 0) for (const p of await scheduledPayments(readerOf(c), enrollmentIds)) out.set(p.enrollmentId, p);
    return out;
  },
  async scheduledPaymentOf(c, enrollmentId) {
    const [r] = await readerOf(c)
      .select(SCHEDULED_PAYMENT)
      .from(payments)
      .where(and(eq(payments.enrollmentId, enrollmentId), eq(payments.status, 'scheduled')))
      .limit(1);
    return r ? { ...r, debitOn: r.debitOn as number } : null;
  },
  async paymentInFlight(c, enrollmentId) {
    const r = await paymentInFlight(readerOf(c)).execute({ id: enrollmentId });
    return r.length > 0;
  },
  async createPayment(c, payment) {
    await writerOf(c).insert(payments).values(payment as typeof payments.$inferInsert);
  },
  async chainInputsOf(c, enrollmentId) {
    const [r] = await rows<{
      lenderId: string;
      state: string;
      blockedReason: string | null;
      authorizationAt: string | null;
      cfpbCovered: number | null;
      collectableAmountCents: string;
      revokedAt: string | null;
      reauthorizedAt: string | null;
    }>(
      readerOf(c),
      sql`SELECT lender_id AS "lenderId", state, blocked_reason AS "blockedReason", authorization_at AS "authorizationAt",
                 cfpb_covered AS "cfpbCovered", collectable_amount_cents AS "collectableAmountCents", revoked_at AS "revokedAt",
                 reauthorized_at AS "reauthorizedAt"
            FROM enrollments WHERE id = ${enrollmentId}`,
    );
    return r
      ? { ...r, authorizationAt: numOrNull(r.authorizationAt), cfpbCovered: numOrNull(r.cfpbCovered), collectableAmountCents: num(r.collectableAmountCents), revokedAt: numOrNull(r.revokedAt), reauthorizedAt: numOrNull(r.reauthorizedAt) }
      : null;
  },
  async accountStandingOf(c, enrollmentId) {
    const [r] = await rows<RawStanding>(
      readerOf(c),
      sql`SELECT ${sql.raw(standingColumns('a.'))} FROM enrollments e JOIN bank_accounts a ON a.id = e.bank_account_id WHERE e.id = ${enrollmentId}`,
    );
    return r ? standingOf(r) : null;
  },
  // What the services read and then write, serialized (no-ops on SQLite, where one writer at a time gives it).
  async serializeBorrowers(c, enrollmentIds) {
    // The borrowers' rows, locked as an update of them would: a second decision, chain recount or stop of the
    // same borrower waits for this transaction, then reads what it committed. FOR NO KEY UPDATE, so the rows
    // that only refer to the borrower (events, ledger entries) are still written meanwhile. One round trip
    // for a flush's borrowers, each row locked as the sort reaches it: in the order of their ids.
    if (enrollmentIds.length === 0) return;
    await writerOf(c).execute(sql`SELECT 1 FROM enrollments WHERE id = ANY(${textArray(enrollmentIds)}) ORDER BY id FOR NO KEY UPDATE`);
  },
};

export const pgPaymentReadStore: PaymentReadStore = {
  // The overview's sums: PostgreSQL sums int8 into numeric, exact at any size, read as text into BigInt.
  async ledgerTotals(c, lenderId, from) {
    const [r] = await rows<Summed<'c' | 'r'>>(
      readerOf(c),
      sql`SELECT ${CREDITED}, ${REVERSED} FROM ledger_entries WHERE lender_id = ${lenderId} AND at >= ${from}`,
    );
    return { credited: sumOf(r!, 'c'), reversed: sumOf(r!, 'r') };
  },
  async ledgerTotalsByDay(c, lenderId, from) {
    const r = await rows<Summed<'c' | 'r'> & { day: string }>(
      readerOf(c),
      sql`SELECT ((at / ${sql.raw(String(DAY_MS))}) * ${sql.raw(String(DAY_MS))})::text AS day, ${CREDITED}, ${REVERSED}
            FROM ledger_entries WHERE lender_id = ${lenderId} AND at >= ${from} GROUP BY 1 ORDER BY 1`,
    );
    return r.map((x): LedgerTotals & { day: number } => ({ day: num(x.day), credited: sumOf(x, 'c'), reversed: sumOf(x, 'r') }));
  },
  async inFlightTotals(c, lenderId, from) {
    const [r] = await rows<Summed<'amount'> & { n: number }>(
      readerOf(c),
      sql`SELECT ${exactSum('amount_cents', 'amount')}, COUNT(*)::int AS n FROM payments
           WHERE lender_id = ${lenderId} AND status IN ('initiating', 'processing') AND created_at >= ${from}`,
    );
    return countedSum(r!);
  },
  async returnedTotals(c, lenderId, from) {
    const [r] = await rows<Summed<'amount'> & { n: number }>(
      readerOf(c),
      sql`SELECT ${exactSum('a', 'amount')}, COUNT(*)::int AS n FROM (
            SELECT reference, MAX(amount_cents) AS a FROM payment_events
             WHERE lender_id = ${lenderId} AND status IN ('returned', 'late_returned') AND occurred_at >= ${from} GROUP BY reference) d`,
    );
    return countedSum(r!);
  },
  async borrowerCountsByState(c, lenderId) {
    const r = await readerOf(c)
      .select({ key: enrollments.state, n: sql<number>`COUNT(*)::int` })
      .from(enrollments)
      .where(eq(enrollments.lenderId, lenderId))
      .groupBy(enrollments.state);
    return countsOf<MonitorState>(MONITOR_STATES, r);
  },
  async paymentCountsByStatus(c, lenderId) {
    const r = await readerOf(c)
      .select({ key: payments.status, n: sql<number>`COUNT(*)::int` })
      .from(payments)
      .where(eq(payments.lenderId, lenderId))
      .groupBy(payments.status);
    return countsOf<PaymentStatus>(PAYMENT_STATUSES, r);
  },
  async eventsOfBorrower(c, lenderId, aid) {
    return readerOf(c)
      .select()
      .from(paymentEvents)
      .where(and(eq(paymentEvents.lenderId, lenderId), eq(paymentEvents.authorizerUniqueId, aid)))
      .orderBy(asc(paymentEvents.recordedAt), asc(paymentEvents.id));
  },
  async paymentsPage(c, v) {
    return paymentsPage(readerOf(c), v);
  },
};

const CREDITED = exactSum('amount_cents', 'c', `kind = 'credit'`);
const REVERSED = exactSum('amount_cents', 'r', `kind = 'reversal'`);

const countedSum = (r: Summed<'amount'> & { n: number }): CountedSum => ({ amount: sumOf(r, 'amount'), count: num(r.n) });

/** Every key with its count from grouped rows, 0 for a key no row has. */
function countsOf<K extends string>(keys: readonly K[], found: { key: K; n: number }[]): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const r of found) out[r.key] = num(r.n);
  return out;
}

/** Up to `take` of the lender's payments after a position, filtered and in the order asked (as on SQLite). */
function paymentsPage(db: PgDb, v: PaymentPageQuery) {
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
    .limit(v.take);
}
