import type { Database } from 'bun:sqlite';
import type { WebhookType } from '../../../db/schema/enums';

// The outbox's raw prepared statements, each on a measured hot path (bun run bench webhooks: 2,000
// deliveries enqueued in one transaction, then sent at thousands per second). bun:sqlite caches each by its text.

export interface DueRow {
  id: string;
  lenderId: string;
  type: WebhookType;
  targetUrl: string;
  payload: string;
  attempts: number;
  firstAttemptAt: number | null;
}

/** One delivery into the outbox, inside the transaction of the change that causes it. */
export const insertDelivery = (
  sqlite: Database,
  v: { id: string; lenderId: string; type: WebhookType; url: string; body: string; now: number },
) =>
  sqlite
    .query(
      `INSERT INTO webhook_deliveries (id, lender_id, type, target_url, payload, state, attempts, created_at, next_attempt_at, lease_until)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, 0)`,
    )
    .run(v.id, v.lenderId, v.type, v.url, v.body, v.now, v.now);

/** Due deliveries, oldest first, leaving out those a run already holds (a JSON array of ids, bound as ?3). */
export const dueDeliveries = (sqlite: Database, due: string, now: number, limit: number, excludeJson: string) =>
  sqlite
    .query<DueRow, [number, number, string]>(
      `SELECT id, lender_id AS lenderId, type, target_url AS targetUrl, payload, attempts, first_attempt_at AS firstAttemptAt
         FROM webhook_deliveries
        WHERE ${due} AND id NOT IN (SELECT value FROM json_each(?3))
        ORDER BY next_attempt_at LIMIT ?2`,
    )
    .all(now, limit, excludeJson);

/** Every attempt is recorded beside its delivery. */
export const insertAttempt = (
  sqlite: Database,
  v: { deliveryId: string; at: number; statusCode: number | null; error: string | null; durationMs: number },
) =>
  sqlite
    .query('INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?)')
    .run(v.deliveryId, v.at, v.statusCode, v.error, v.durationMs);
