import type { Database } from 'bun:sqlite';

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
export const dueReads = (sqlite: Database, now: number, limit: number) =>
  sqlite
    .query<DueRead, [number, number]>(
      `SELECT id, lender_id AS lenderId, authorizer_unique_id AS aid, routing_number AS routing, sealed, metadata
         FROM enrollments INDEXED BY enrollments_read_due_idx
        WHERE state = 'monitored' AND next_read_at <= ? AND sealed IS NOT NULL
        ORDER BY next_read_at LIMIT ?`,
    )
    .all(now, limit);
