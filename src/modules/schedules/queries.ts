import type { Tx } from '../../platform/context';
import type { Db } from '../../platform/db';

// The scheduler's raw prepared statement: the due check runs every tick against every schedule and must
// cost O(due), not O(schedules) (bun run bench scheduler: < 2 ms with 2,000 idle schedules; the query
// builder's per-call cost alone was five times the raw statement's).

/** Due ACTIVE schedules, read off schedules_due_idx only. */
export const dueScheduleIds = (db: Db, now: number, limit: number) =>
  db.$client
    .query<{ id: string }, [number, number]>(
      "SELECT id FROM schedules WHERE status = 'ACTIVE' AND next_run_at <= ? ORDER BY next_run_at LIMIT ?",
    )
    .all(now, limit);

/** A schedule's authorizers, up to 1000: one prepared statement in the creating transaction (a multi-row insert of this size is slower). */
export const scheduleAuthorizerInsert = (tx: Tx) =>
  tx.$client.query<unknown, [string, string, string, string | null, string | null, string | null, string | null, number | null, string]>(
    `INSERT INTO schedule_authorizers (schedule_id, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents, sealed)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
