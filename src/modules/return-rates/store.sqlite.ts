import { eq } from 'drizzle-orm';
import { lenders, returnRateWatch } from '../../../db/schema';
import type { Db, Orm } from '../../platform/db';
import { exactSum, lockFor, readerOf, sumOf, writerOf, type Summed } from '../../platform/sql/sqlite';
import type { DebitTotals, ReturnRateStore, SavedStatuses, WatchedStatuses, WindowReturn } from './store';
import { NOT_DEBITED, NOT_SENT } from './store-shared';

// The return-rate statements, each on an index of its own (payments_rates_idx, payment_events_returns_idx and
// payment_events_reference_returns_idx, covering what they read; uploaded_results_submitted_idx,
// uploaded_results_returned_idx): the window's index entries are read, never the lender's whole history.

// What a debit that went to the bank is, written once for both questions asked of it (how many; how many and
// their total): the service's own ACH payments that reached the processor, by when they first did, and uploaded
// results of references it did not make, by submitted_at. ?1 the lender, ?2 and ?3 the window's ends.
const OWN_DEBITS = `FROM payments INDEXED BY payments_rates_idx
  WHERE lender_id = ?1 AND rail = 'ach' AND first_attempt_at BETWEEN ?2 AND ?3 AND status NOT IN (${NOT_SENT})`;
const UPLOADED_DEBITS = `FROM uploaded_results u INDEXED BY uploaded_results_submitted_idx
  WHERE u.lender_id = ?1 AND u.submitted_at BETWEEN ?2 AND ?3 AND u.status NOT IN (${NOT_DEBITED})
    AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.lender_id = ?1 AND p.reference = u.reference)`;

/** ACH debits that went to the bank in [from, to]: the service's own that reached the processor, and uploaded ones. */
const debitsIn = (db: Db, lenderId: string, from: number, to: number): number =>
  db.$client
    .query<{ n: number }, [string, number, number]>(`SELECT (SELECT COUNT(*) ${OWN_DEBITS}) + (SELECT COUNT(*) ${UPLOADED_DEBITS}) AS n`)
    .get(lenderId, from, to)!.n;

/** The same debits, with their amounts summed exactly (each own payment's amount read from its row). */
const debitTotalsIn = (db: Db, lenderId: string, from: number, to: number): DebitTotals => {
  const r = db.$client
    .query<Summed<'c'> & { n: bigint }, [string, number, number]>(
      `SELECT COUNT(*) AS n, ${exactSum('a', 'c')} FROM (SELECT amount_cents AS a ${OWN_DEBITS} UNION ALL SELECT u.amount_cents ${UPLOADED_DEBITS})`,
    )
    .safeIntegers(true)
    .get(lenderId, from, to)!;
  return { count: Number(r.n), cents: sumOf(r, 'c') };
};

/**
 * Returns in [from, to], once per reference, with their code: returns of the service's own ACH payments, read
 * from their events (the first return of a reference; a lender's report of one, which names no payment, is
 * neither counted nor taken for an earlier return), and uploaded returns (by their return date) of references
 * the service did not make.
 */
const returnsIn = (db: Db, lenderId: string, from: number, to: number): WindowReturn[] =>
  db.$client
    .query<{ reference: string; code: string | null }, [string, number, number]>(
      `SELECT e.reference, e.return_code AS code FROM payment_events e INDEXED BY payment_events_returns_idx
         JOIN payments p ON p.id = e.payment_id
        WHERE e.lender_id = ?1 AND e.status IN ('returned', 'late_returned') AND e.occurred_at BETWEEN ?2 AND ?3 AND p.rail = 'ach'
          AND NOT EXISTS (SELECT 1 FROM payment_events f INDEXED BY payment_events_reference_returns_idx
                           WHERE f.lender_id = ?1 AND f.reference = e.reference
                             AND f.status IN ('returned', 'late_returned') AND f.occurred_at < e.occurred_at AND f.payment_id IS NOT NULL)
       UNION ALL
       SELECT u.reference, u.return_code FROM uploaded_results u INDEXED BY uploaded_results_returned_idx
        WHERE u.lender_id = ?1 AND u.returned_at BETWEEN ?2 AND ?3 AND u.status IN ('returned', 'late_return')
          AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.lender_id = ?1 AND p.reference = u.reference)`,
    )
    .all(lenderId, from, to);

const watchedStatuses = (db: Db, lenderId: string): SavedStatuses | undefined =>
  db
    .select({
      unauthorized: returnRateWatch.unauthorized,
      administrative: returnRateWatch.administrative,
      overall: returnRateWatch.overall,
      evaluatedAt: returnRateWatch.evaluatedAt,
    })
    .from(returnRateWatch)
    .where(eq(returnRateWatch.lenderId, lenderId))
    .get();

const saveWatchedStatuses = (tx: Orm, lenderId: string, statuses: WatchedStatuses, evaluatedAt: number): void => {
  const row = { lenderId, ...statuses, evaluatedAt };
  tx.insert(returnRateWatch).values(row).onConflictDoUpdate({ target: returnRateWatch.lenderId, set: row }).run();
};

export const sqliteReturnRateStore: ReturnRateStore = {
  // One writer at a time: an evaluation is never interleaved with another.
  async serializeWatch(c, lenderId) {
    await lockFor(c, 'return-rate-watch', lenderId);
  },
  async debitsIn(c, lenderId, from, to) {
    return debitsIn(readerOf(c), lenderId, from, to);
  },
  async debitTotalsIn(c, lenderId, from, to) {
    return debitTotalsIn(readerOf(c), lenderId, from, to);
  },
  async returnsIn(c, lenderId, from, to) {
    return returnsIn(readerOf(c), lenderId, from, to);
  },
  async watchedStatuses(c, lenderId) {
    return watchedStatuses(readerOf(c), lenderId);
  },
  async saveWatchedStatuses(c, lenderId, statuses, evaluatedAt) {
    saveWatchedStatuses(writerOf(c), lenderId, statuses, evaluatedAt);
  },
  async lenderIds(c) {
    return readerOf(c)
      .select({ id: lenders.id })
      .from(lenders)
      .all()
      .map((r) => r.id);
  },
};
