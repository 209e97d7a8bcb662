import type { Tx } from '../../platform/context';
import type { Db } from '../../platform/db';

// The enrollment's raw prepared statements (the writes of a borrower and its monitor are in monitor-store.ts):
// the monitoring due check runs every second against every borrower's index entry (bench: under 2 ms with 100,000 not due).

export interface DueRead {
  id: string;
  lenderId: string;
  aid: string;
  routing: string | null;
  sealed: string;
  metadata: string | null;
}

/** Monitored borrowers whose read is due, off enrollments_read_due_idx (the partial index of monitored rows). */
export const dueReads = (db: Db, now: number, limit: number) =>
  db.$client
    .query<DueRead, [number, number]>(
      `SELECT id, lender_id AS lenderId, authorizer_unique_id AS aid, routing_number AS routing, sealed, metadata
         FROM enrollments INDEXED BY enrollments_read_due_idx
        WHERE state = 'monitored' AND next_read_at <= ? AND sealed IS NOT NULL
        ORDER BY next_read_at LIMIT ?`,
    )
    .all(now, limit);

/** A borrower's credited and reversed cents, summed by SQLite in 64-bit integers and read as BigInt (exact). */
export const ledgerTotals = (db: Db, lenderId: string, enrollmentId: string) =>
  db.$client
    .query<{ collected: bigint; reversed: bigint }, [string, string]>(
      `SELECT COALESCE(SUM(CASE WHEN kind = 'credit' THEN amount_cents END), 0) AS collected,
              COALESCE(SUM(CASE WHEN kind = 'reversal' THEN amount_cents END), 0) AS reversed
         FROM ledger_entries WHERE lender_id = ? AND enrollment_id = ?`,
    )
    .safeIntegers(true)
    .get(lenderId, enrollmentId)!;

/** A borrower's payments for its enrollment read, oldest first, with the original's reference for reinitiations. */
export const paymentsOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<{ reference: string; amount: number; status: string; attempt: number; reinitiationOf: string | null; createdAt: number; debitOn: number | null }, [string]>(
      `SELECT p.reference, p.amount_cents AS amount, p.status, p.attempt, o.reference AS reinitiationOf, p.created_at AS createdAt, p.debit_on AS debitOn
         FROM payments p INDEXED BY payments_enrollment_idx LEFT JOIN payments o ON o.id = p.reinitiation_of
        WHERE p.enrollment_id = ? ORDER BY p.created_at, p.id`,
    )
    .all(enrollmentId);

/** A borrower's search entries, removed before they are written again (a re-send) or at erasure. */
export const deleteSearchEntries = (tx: Tx, lenderId: string, aid: string) =>
  tx.$client.query('DELETE FROM borrower_search WHERE lender_id = ? AND authorizer_unique_id = ?').run(lenderId, aid);

export const insertSearchEntry = (tx: Tx, lenderId: string, aid: string, kind: string, hash: string, keyId: string) =>
  tx.$client
    .query('INSERT OR IGNORE INTO borrower_search (lender_id, authorizer_unique_id, kind, hash, key_id) VALUES (?, ?, ?, ?, ?)')
    .run(lenderId, aid, kind, hash, keyId);

/** The lender's borrowers with both of two name entries (a first and a last name, in either order), off the key. */
export const borrowersNamed = (db: Db, lenderId: string, one: string, other: string, limit: number) =>
  db.$client
    .query<{ aid: string }, [string, string, string, number]>(
      `SELECT a.authorizer_unique_id AS aid FROM borrower_search a
         JOIN borrower_search b ON b.lender_id = a.lender_id AND b.kind = 'name' AND b.hash = ?3 AND b.authorizer_unique_id = a.authorizer_unique_id
        WHERE a.lender_id = ?1 AND a.kind = 'name' AND a.hash = ?2 LIMIT ?4`,
    )
    .all(lenderId, one, other, limit);
