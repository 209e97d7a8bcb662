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

// Borrower search (search.ts, db/schema/search.ts): an entry is (hash, borrower) in one WITHOUT ROWID b-tree,
// and searchable_borrowers holds each borrower's hashes, so its own entries are found without an index of them.

/** A borrower's key id and hashes (12 bytes each, concatenated), or null when it has no search entries. */
export const searchRowOf = (tx: Tx, lenderId: string, aid: string) =>
  tx.$client
    .query<{ keyId: string; hashes: Uint8Array }, [string, string]>('SELECT key_id AS keyId, hashes FROM searchable_borrowers WHERE lender_id = ? AND authorizer_unique_id = ?')
    .get(lenderId, aid);

/** Removes a borrower's entries (the hashes its row lists) and the row. */
export function deleteSearchEntries(tx: Tx, lenderId: string, aid: string, hashes: Uint8Array, width: number): void {
  const del = tx.$client.query('DELETE FROM borrower_search WHERE hash = ? AND authorizer_unique_id = ?');
  for (let i = 0; i + width <= hashes.length; i += width) del.run(hashes.subarray(i, i + width), aid);
  tx.$client.query('DELETE FROM searchable_borrowers WHERE lender_id = ? AND authorizer_unique_id = ?').run(lenderId, aid);
}

const entriesSql: string[] = [];
const insertEntriesSql = (n: number) =>
  (entriesSql[n] ??= `INSERT OR IGNORE INTO borrower_search (hash, authorizer_unique_id) VALUES ${Array.from({ length: n }, () => '(?, ?)').join(', ')}`);

/**
 * A borrower's row and entries (the entries in one statement, one cached statement per count, at most five);
 * false, writing nothing, when the borrower already has a row.
 */
export function insertSearchEntries(tx: Tx, lenderId: string, aid: string, keyId: string, hashes: Uint8Array[]): boolean {
  // Written even with no entries: the borrower is indexed under this key, and the start-up job leaves it be.
  const row = tx.$client
    .query('INSERT INTO searchable_borrowers (lender_id, authorizer_unique_id, key_id, hashes) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING')
    .run(lenderId, aid, keyId, Buffer.concat(hashes));
  if (row.changes === 0) return false;
  if (hashes.length > 0) {
    const args: (Uint8Array | string)[] = [];
    for (const h of hashes) args.push(h, aid);
    tx.$client.query(insertEntriesSql(hashes.length)).run(...args);
  }
  return true;
}

/**
 * The search's two queries. CROSS JOIN keeps the order written: the hash is sought first, then each borrower
 * found is checked to be the lender's; the other way round would walk every borrower of the lender.
 */
export const SEARCH_SQL = {
  byHash: `SELECT s.authorizer_unique_id AS aid FROM borrower_search s
             CROSS JOIN searchable_borrowers b ON b.lender_id = ?1 AND b.authorizer_unique_id = s.authorizer_unique_id
            WHERE s.hash = ?2 LIMIT ?3`,
  named: `SELECT a.authorizer_unique_id AS aid FROM borrower_search a
            CROSS JOIN borrower_search o ON o.hash = ?3 AND o.authorizer_unique_id = a.authorizer_unique_id
            CROSS JOIN searchable_borrowers b ON b.lender_id = ?1 AND b.authorizer_unique_id = a.authorizer_unique_id
           WHERE a.hash = ?2 LIMIT ?4`,
};

/** The lender's borrowers with an entry of this hash; the join keeps the answer to the lender's own borrowers. */
export const borrowersWith = (db: Db, lenderId: string, hash: Uint8Array, limit: number) =>
  db.$client.query<{ aid: string }, [string, Uint8Array, number]>(SEARCH_SQL.byHash).all(lenderId, hash, limit);

/** The lender's borrowers with both of two name entries (a first and a last name, in either order), off the key. */
export const borrowersNamed = (db: Db, lenderId: string, one: Uint8Array, other: Uint8Array, limit: number) =>
  db.$client.query<{ aid: string }, [string, Uint8Array, Uint8Array, number]>(SEARCH_SQL.named).all(lenderId, one, other, limit);
