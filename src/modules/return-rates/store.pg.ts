import { eq, sql } from 'drizzle-orm';
import { lenders, returnRateWatch } from '../../../db/schema-pg';
import { exactSum, lockFor, readerOf, rows, sumOf, writerOf, type Summed } from '../../platform/sql/pg';
import { NOT_DEBITED, NOT_SENT } from './store-shared';
import type { ReturnRateStore, WindowReturn } from './store';

// The return-rate statements on PostgreSQL, on the same indexes as SQLite's (payments_rates_idx,
// payment_events_returns_idx, payment_events_reference_returns_idx, uploaded_results_submitted_idx,
// uploaded_results_returned_idx), chosen by the planner. An evaluation reads the lender's last statuses,
// alerts on a change and saves the new ones: serializeWatch makes the lender's evaluations take turns, so a
// change is alerted once.

// What a debit that went to the bank is, written once for both questions asked of it (how many; how many and
// their total), as store.sqlite.ts writes it.
const ownDebits = (lenderId: string, from: number, to: number) =>
  sql`FROM payments WHERE lender_id = ${lenderId} AND rail = 'ach' AND first_attempt_at BETWEEN ${from} AND ${to} AND status NOT IN (${sql.raw(NOT_SENT)})`;
const uploadedDebits = (lenderId: string, from: number, to: number) =>
  sql`FROM uploaded_results u
       WHERE u.lender_id = ${lenderId} AND u.submitted_at BETWEEN ${from} AND ${to} AND u.status NOT IN (${sql.raw(NOT_DEBITED)})
         AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.lender_id = ${lenderId} AND p.reference = u.reference)`;

export const pgReturnRateStore: ReturnRateStore = {
  async serializeWatch(c, lenderId) {
    await lockFor(c, 'return-rate-watch', lenderId);
  },
  async debitsIn(c, lenderId, from, to) {
    const [row] = await rows<{ n: number }>(
      readerOf(c),
      sql`SELECT (SELECT count(*) ${ownDebits(lenderId, from, to)}) + (SELECT count(*) ${uploadedDebits(lenderId, from, to)}) AS n`,
    );
    // count(*) is int8, which a raw query reads as a string.
    return Number(row!.n);
  },
  async debitTotalsIn(c, lenderId, from, to) {
    const [row] = await rows<Summed<'c'> & { n: string }>(
      readerOf(c),
      sql`SELECT count(*) AS n, ${exactSum('a', 'c')}
            FROM (SELECT amount_cents AS a ${ownDebits(lenderId, from, to)} UNION ALL SELECT u.amount_cents ${uploadedDebits(lenderId, from, to)}) d`,
    );
    return { count: Number(row!.n), cents: sumOf(row!, 'c') };
  },
  async returnsIn(c, lenderId, from, to) {
    return rows<WindowReturn>(
      readerOf(c),
      sql`SELECT e.reference, e.return_code AS code FROM payment_events e
            JOIN payments p ON p.id = e.payment_id
           WHERE e.lender_id = ${lenderId} AND e.status IN ('returned', 'late_returned') AND e.occurred_at BETWEEN ${from} AND ${to} AND p.rail = 'ach'
             AND NOT EXISTS (SELECT 1 FROM payment_events f
                              WHERE f.lender_id = ${lenderId} AND f.reference = e.reference
                                AND f.status IN ('returned', 'late_returned') AND f.occurred_at < e.occurred_at AND f.payment_id IS NOT NULL)
          UNION ALL
          SELECT u.reference, u.return_code FROM uploaded_results u
           WHERE u.lender_id = ${lenderId} AND u.returned_at BETWEEN ${from} AND ${to} AND u.status IN ('returned', 'late_return')
             AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.lender_id = ${lenderId} AND p.reference = u.reference)`,
    );
  },
  async watchedStatuses(c, lenderId) {
    const [row] = await readerOf(c)
      .select({
        unauthorized: returnRateWatch.unauthorized,
        administrative: returnRateWatch.administrative,
        overall: returnRateWatch.overall,
        evaluatedAt: returnRateWatch.evaluatedAt,
      })
      .from(returnRateWatch)
      .where(eq(returnRateWatch.lenderId, lenderId));
    return row;
  },
  async saveWatchedStatuses(c, lenderId, statuses, evaluatedAt) {
    const row = { lenderId, ...statuses, evaluatedAt };
    await writerOf(c).insert(returnRateWatch).values(row).onConflictDoUpdate({ target: returnRateWatch.lenderId, set: row });
  },
  async lenderIds(c) {
    return (await readerOf(c).select({ id: lenders.id }).from(lenders)).map((r) => r.id);
  },
};
