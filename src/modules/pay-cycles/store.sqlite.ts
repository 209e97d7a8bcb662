import type { Db, Orm } from '../../platform/db';
import { listOf, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { CadenceState, DueHistory, PayCycleStore } from './store';

// The pay cycle's SQL: what learn.ts reads and writes after each monitoring read (raw cached statements: it runs
// in the transaction of every recorded balance result), and the transaction history's readings (history.ts).

/** Borrowers' cadence states (a JSON list of enrollment ids), each with its id. */
const cadenceStatesOf = (db: Db, ids: string) =>
  db.$client
    .query<CadenceState & { id: string }, [string]>(
      `SELECT id, lender_id AS lenderId, state, blocked_reason AS blockedReason, next_read_at AS nextReadAt, pay_cycle_frequency AS frequency,
              pay_cycle_next_payday AS nextPayday, pay_cycle_confidence AS confidence, pay_cycle_at AS learnedAt,
              pay_cycle_alternative_frequency AS altFrequency, pay_cycle_alternative_next_payday AS altNextPayday, pay_cycle_lands_early AS landsEarly
         FROM enrollments WHERE id IN (SELECT value FROM json_each(?))`,
    )
    .all(ids);

/**
 * The borrower's balances as the service read them since a time (off the history index), each dated by the
 * provider's own time for it where it gave one (a linked account's balance can be hours old when read).
 */
const balanceHistory = (db: Db, lenderId: string, aid: string, since: number) =>
  db.$client
    .query<{ at: number; balanceCents: number }, [string, string, number]>(
      `SELECT COALESCE(balance_as_of, recorded_at) AS at, balance_cents AS balanceCents FROM balance_results INDEXED BY balance_results_history_idx
        WHERE lender_id = ? AND authorizer_unique_id = ? AND balance_cents IS NOT NULL AND recorded_at >= ? ORDER BY id`,
    )
    .all(lenderId, aid, since);

// Transaction history (history.ts): the reading wanted per enrollment, and the income deposits it found.

/** Readings due, oldest due first, off the partial index of wanted ones. */
const dueHistories = (db: Db, now: number, limit: number) =>
  db.$client
    .query<DueHistory, [number, number]>(
      `SELECT h.enrollment_id AS enrollmentId, h.lender_id AS lenderId, h.wanted_at AS wantedAt, h.attempts,
              e.authorizer_unique_id AS aid, e.routing_number AS routing, e.sealed
         FROM pay_history h INDEXED BY pay_history_due_idx JOIN enrollments e ON e.id = h.enrollment_id
        WHERE h.due_at IS NOT NULL AND h.due_at <= ? ORDER BY h.due_at LIMIT ?`,
    )
    .all(now, limit);

/** Pushes a reading's due time (a claim's lease, a retry, a pending source's time), with its attempts. */
const setHistoryDue = (tx: Orm, enrollmentId: string, dueAt: number, attempts: number) => {
  tx.$client.query('UPDATE pay_history SET due_at = ?, attempts = ? WHERE enrollment_id = ?').run(dueAt, attempts, enrollmentId);
};

/** The stored deposits and the last day they cover; null when no reading gave credits. */
function historyOf(db: Db, enrollmentId: string): { coveredTo: number; deposits: { at: number; amountCents: number }[] } | null {
  const h = db.$client
    .query<{ coveredTo: number | null }, [string]>('SELECT covered_to AS coveredTo FROM pay_history WHERE enrollment_id = ?')
    .get(enrollmentId);
  if (!h || h.coveredTo === null) return null;
  const deposits = db.$client
    .query<{ at: number; amountCents: number }, [string]>('SELECT day AS at, amount_cents AS amountCents FROM pay_history_deposits WHERE enrollment_id = ? ORDER BY day')
    .all(enrollmentId);
  return { coveredTo: h.coveredTo, deposits };
}

export const sqlitePayCycleStore: PayCycleStore = {
  async cadenceStatesOf(c, enrollmentIds) {
    const out = new Map<string, CadenceState>();
    if (enrollmentIds.length === 0) return out;
    for (const { id, ...state } of cadenceStatesOf(readerOf(c), listOf(enrollmentIds))) out.set(id, state);
    return out;
  },
  async balanceHistory(c, lenderId, aid, since) {
    return balanceHistory(readerOf(c), lenderId, aid, since);
  },
  async historyOf(c, enrollmentId) {
    return historyOf(readerOf(c), enrollmentId);
  },
  async lastReadOf(c, enrollmentId) {
    return (
      readerOf(c)
        .$client.query<{ lastReadAt: number | null }, [string]>('SELECT last_read_at AS lastReadAt FROM enrollments WHERE id = ?')
        .get(enrollmentId)?.lastReadAt ?? null
    );
  },
  async dueHistories(c, now, limit) {
    return dueHistories(readerOf(c), now, limit);
  },
  async claimDueHistories(c, now, limit, until) {
    const tx = writerOf(c);
    const due = dueHistories(tx, now, limit);
    for (const d of due) setHistoryDue(tx, d.enrollmentId, until, d.attempts);
    return due;
  },
  async wantHistory(c, lenderId, enrollmentIds, now) {
    if (enrollmentIds.length === 0) return;
    // A reading wanted now (enrollment, re-send, a new link): due at once, its failures forgotten.
    const stmt = writerOf(c).$client.query(
      `INSERT INTO pay_history (enrollment_id, lender_id, wanted_at, due_at, attempts) VALUES (?1, ?2, ?3, ?3, 0)
       ON CONFLICT(enrollment_id) DO UPDATE SET wanted_at = ?3, due_at = ?3, attempts = 0`,
    );
    for (const id of enrollmentIds) stmt.run(id, lenderId, now);
  },
  async setHistoryDue(c, enrollmentId, dueAt, attempts) {
    setHistoryDue(writerOf(c), enrollmentId, dueAt, attempts);
  },
  async endHistory(c, enrollmentId, wantedAt, outcome) {
    // Nothing more is due, unless it was wanted again meanwhile (a re-send while it ran), which keeps its own due time.
    writerOf(c)
      .$client.query(
        `UPDATE pay_history SET due_at = CASE WHEN wanted_at IS ?2 THEN NULL ELSE due_at END,
                wanted_at = CASE WHEN wanted_at IS ?2 THEN NULL ELSE wanted_at END, attempts = 0, outcome = ?3
          WHERE enrollment_id = ?1`,
      )
      .run(enrollmentId, wantedAt, outcome);
  },
  async storeDeposits(c, enrollmentId, deposits, at, coveredTo) {
    const tx = writerOf(c);
    tx.$client.query('DELETE FROM pay_history_deposits WHERE enrollment_id = ?').run(enrollmentId);
    const insert = tx.$client.query('INSERT OR REPLACE INTO pay_history_deposits (enrollment_id, day, amount_cents) VALUES (?, ?, ?)');
    for (const d of deposits) insert.run(enrollmentId, d.at, d.amountCents);
    tx.$client.query('UPDATE pay_history SET fetched_at = ?, covered_to = ? WHERE enrollment_id = ?').run(at, coveredTo, enrollmentId);
  },
  async eraseHistory(c, enrollmentIds) {
    const tx = writerOf(c);
    const deposits = tx.$client.query('DELETE FROM pay_history_deposits WHERE enrollment_id = ?');
    const reading = tx.$client.query('DELETE FROM pay_history WHERE enrollment_id = ?');
    for (const id of enrollmentIds) {
      deposits.run(id);
      reading.run(id);
    }
  },
  async serializeReading() {
    // One writer at a time: the transaction that calls this is alone already.
  },
};
