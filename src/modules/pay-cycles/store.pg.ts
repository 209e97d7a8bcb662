import { and, asc, eq, gte, isNotNull, lte, sql } from 'drizzle-orm';
import { balanceResults, enrollments, payHistory, payHistoryDeposits } from '../../../db/schema-pg';
import { inList, inTransaction, listOf, numOrNull, readerOf, rows, writerOf } from '../../platform/sql/pg';
import type { CadenceState, DueHistory, PayCycleStore } from './store';

// The pay cycle's SQL on PostgreSQL (store.sqlite.ts is the SQLite one). Transactions run side by side here:
// - the cadence reads a borrower's monitor and cycle to write them: read inside a transaction, the row is locked
//   until it ends, so the next read it sets is never one another transaction has just stopped (a block, a removal);
// - the readings due are claimed in one statement (FOR UPDATE SKIP LOCKED), so two ticks never read one twice;
// - a reading's record takes its borrower's row first (serializeReading), in the order every other writer of
//   a borrower takes it (the enrollment, then its pay_history), so they never wait on each other in a cycle.


export const pgPayCycleStore: PayCycleStore = {
  async cadenceStatesOf(c, enrollmentIds) {
    const out = new Map<string, CadenceState>();
    if (enrollmentIds.length === 0) return out;
    const q = readerOf(c)
      .select({
        id: enrollments.id,
        lenderId: enrollments.lenderId,
        state: enrollments.state,
        blockedReason: enrollments.blockedReason,
        nextReadAt: enrollments.nextReadAt,
        frequency: enrollments.payCycleFrequency,
        nextPayday: enrollments.payCycleNextPayday,
        confidence: enrollments.payCycleConfidence,
        learnedAt: enrollments.payCycleAt,
        altFrequency: enrollments.payCycleAlternativeFrequency,
        altNextPayday: enrollments.payCycleAlternativeNextPayday,
        landsEarly: enrollments.payCycleLandsEarly,
      })
      .from(enrollments)
      .where(inList(enrollments.id, enrollmentIds))
      .orderBy(asc(enrollments.id));
    // As SQLite reads the flag: 0 or 1.
    for (const { id, ...e } of await (inTransaction(c) ? q.for('no key update') : q)) out.set(id, { ...e, landsEarly: e.landsEarly === null ? null : e.landsEarly ? 1 : 0 } as CadenceState);
    return out;
  },
  async balanceHistory(c, lenderId, aid, since) {
    return (await readerOf(c)
      // Dated by the provider's own time for a balance where it gave one.
      .select({ at: sql<number>`COALESCE(${balanceResults.balanceAsOf}, ${balanceResults.recordedAt})`.mapWith(Number), balanceCents: balanceResults.balanceCents })
      .from(balanceResults)
      .where(
        and(
          eq(balanceResults.lenderId, lenderId),
          eq(balanceResults.authorizerUniqueId, aid),
          isNotNull(balanceResults.balanceCents),
          gte(balanceResults.recordedAt, since),
        ),
      )
      .orderBy(asc(balanceResults.id))) as { at: number; balanceCents: number }[];
  },
  async historyOf(c, enrollmentId) {
    const db = readerOf(c);
    const [h] = await db.select({ coveredTo: payHistory.coveredTo }).from(payHistory).where(eq(payHistory.enrollmentId, enrollmentId));
    if (!h || h.coveredTo === null) return null;
    const deposits = await db
      .select({ at: payHistoryDeposits.day, amountCents: payHistoryDeposits.amountCents })
      .from(payHistoryDeposits)
      .where(eq(payHistoryDeposits.enrollmentId, enrollmentId))
      .orderBy(asc(payHistoryDeposits.day));
    return { coveredTo: h.coveredTo, deposits };
  },
  async lastReadOf(c, enrollmentId) {
    const [e] = await readerOf(c).select({ lastReadAt: enrollments.lastReadAt }).from(enrollments).where(eq(enrollments.id, enrollmentId));
    return e?.lastReadAt ?? null;
  },
  async dueHistories(c, now, limit) {
    return readerOf(c)
      .select({
        enrollmentId: payHistory.enrollmentId,
        lenderId: payHistory.lenderId,
        wantedAt: payHistory.wantedAt,
        attempts: payHistory.attempts,
        aid: enrollments.authorizerUniqueId,
        routing: enrollments.routingNumber,
        sealed: enrollments.sealed,
      })
      .from(payHistory)
      .innerJoin(enrollments, eq(enrollments.id, payHistory.enrollmentId))
      .where(and(isNotNull(payHistory.dueAt), lte(payHistory.dueAt, now)))
      .orderBy(asc(payHistory.dueAt), asc(payHistory.enrollmentId))
      .limit(limit);
  },
  async claimDueHistories(c, now, limit, until) {
    // One statement: the readings due locked (those another transaction holds skipped), each due again at `until`,
    // and returned oldest due first, with what reading the borrower's account needs.
    const claimed = await rows<{
      enrollment_id: string;
      lender_id: string;
      wanted_at: string | null;
      attempts: number;
      aid: string;
      routing: string | null;
      sealed: string | null;
    }>(
      writerOf(c),
      sql`WITH due AS (
            SELECT enrollment_id, due_at FROM pay_history WHERE due_at IS NOT NULL AND due_at <= ${now}::bigint
             ORDER BY due_at, enrollment_id LIMIT ${limit}::int FOR UPDATE SKIP LOCKED
          ), claimed AS (
            UPDATE pay_history h SET due_at = ${until}::bigint FROM due WHERE h.enrollment_id = due.enrollment_id
            RETURNING h.enrollment_id, h.lender_id, h.wanted_at, h.attempts, due.due_at AS was_due
          )
          SELECT claimed.enrollment_id, claimed.lender_id, claimed.wanted_at, claimed.attempts,
                 e.authorizer_unique_id AS aid, e.routing_number AS routing, e.sealed
            FROM claimed JOIN enrollments e ON e.id = claimed.enrollment_id
           ORDER BY claimed.was_due, claimed.enrollment_id`,
    );
    return claimed.map(
      (r): DueHistory => ({
        enrollmentId: r.enrollment_id,
        lenderId: r.lender_id,
        wantedAt: numOrNull(r.wanted_at),
        attempts: r.attempts,
        aid: r.aid,
        routing: r.routing,
        sealed: r.sealed,
      }),
    );
  },
  async wantHistory(c, lenderId, enrollmentIds, now) {
    if (enrollmentIds.length === 0) return;
    // A reading wanted now (enrollment, re-send, a new link): due at once, its failures forgotten.
    await writerOf(c).execute(sql`
      INSERT INTO pay_history (enrollment_id, lender_id, wanted_at, due_at, attempts)
      SELECT id, ${lenderId}, ${now}::bigint, ${now}::bigint, 0 FROM unnest(${listOf(enrollmentIds)}::text[]) AS id
      ON CONFLICT (enrollment_id) DO UPDATE SET wanted_at = excluded.wanted_at, due_at = excluded.due_at, attempts = 0`);
  },
  async setHistoryDue(c, enrollmentId, dueAt, attempts) {
    await writerOf(c).update(payHistory).set({ dueAt, attempts }).where(eq(payHistory.enrollmentId, enrollmentId));
  },
  async endHistory(c, enrollmentId, wantedAt, outcome) {
    // Nothing more is due, unless it was wanted again meanwhile (a re-send while it ran), which keeps its own due time.
    await writerOf(c).execute(sql`
      UPDATE pay_history SET due_at = CASE WHEN wanted_at IS NOT DISTINCT FROM ${wantedAt}::bigint THEN NULL ELSE due_at END,
             wanted_at = CASE WHEN wanted_at IS NOT DISTINCT FROM ${wantedAt}::bigint THEN NULL ELSE wanted_at END, attempts = 0, outcome = ${outcome}
       WHERE enrollment_id = ${enrollmentId}`);
  },
  async storeDeposits(c, enrollmentId, deposits, at, coveredTo) {
    const tx = writerOf(c);
    await tx.delete(payHistoryDeposits).where(eq(payHistoryDeposits.enrollmentId, enrollmentId));
    if (deposits.length > 0) {
      await tx.execute(sql`
        INSERT INTO pay_history_deposits (enrollment_id, day, amount_cents)
        SELECT ${enrollmentId}, day, amount FROM unnest(${listOf(deposits.map((d) => d.at))}::bigint[], ${listOf(deposits.map((d) => d.amountCents))}::bigint[]) AS t(day, amount)
        ON CONFLICT (enrollment_id, day) DO UPDATE SET amount_cents = excluded.amount_cents`);
    }
    await tx.update(payHistory).set({ fetchedAt: at, coveredTo }).where(eq(payHistory.enrollmentId, enrollmentId));
  },
  async eraseHistory(c, enrollmentIds) {
    if (enrollmentIds.length === 0) return;
    const tx = writerOf(c);
    const these = (column: typeof payHistory.enrollmentId | typeof payHistoryDeposits.enrollmentId) => inList(column, enrollmentIds);
    // The amounts are overwritten before the rows go, so no version of them this transaction writes holds them.
    // The versions before it stay in the table's pages until VACUUM reclaims them (PostgreSQL has no secure_delete).
    await tx.update(payHistoryDeposits).set({ amountCents: 0 }).where(these(payHistoryDeposits.enrollmentId));
    await tx.delete(payHistoryDeposits).where(these(payHistoryDeposits.enrollmentId));
    await tx.delete(payHistory).where(these(payHistory.enrollmentId));
  },
  async serializeReading(c, enrollmentId) {
    await writerOf(c).select({ id: enrollments.id }).from(enrollments).where(eq(enrollments.id, enrollmentId)).for('no key update');
  },
};
