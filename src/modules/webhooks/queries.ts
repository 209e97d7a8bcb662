import type { Tx } from '../../platform/context';
import type { WebhookType } from '../../../db/schema/enums';

// The outbox's raw prepared statements, each on a measured hot path (bun run bench webhooks: 2,000
// deliveries enqueued in one transaction, then sent at thousands per second). bun:sqlite caches each by its text.

export interface DueRow {
  id: string;
  /** The attempt row opened for this claim. */
  attemptId?: number;
  lenderId: string;
  type: WebhookType;
  targetUrl: string;
  payload: string;
  attempts: number;
  firstAttemptAt: number | null;
}

/** One delivery into the outbox, inside the transaction of the change that causes it. */
export const insertDelivery = (
  tx: Tx,
  v: { id: string; lenderId: string; type: WebhookType; url: string; body: string; now: number },
) =>
  tx.$client
    .query(
      `INSERT INTO webhook_deliveries (id, lender_id, type, target_url, payload, state, attempts, created_at, next_attempt_at, lease_until)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, 0)`,
    )
    .run(v.id, v.lenderId, v.type, v.url, v.body, v.now, v.now);

/** Due deliveries, oldest first, leaving out those a run already holds (a JSON array of ids, bound as ?3). */
export const dueDeliveries = (tx: Tx, due: string, now: number, limit: number, excludeJson: string) =>
  tx.$client
    .query<DueRow, [number, number, string]>(
      `SELECT id, lender_id AS lenderId, type, target_url AS targetUrl, payload, attempts, first_attempt_at AS firstAttemptAt
         FROM webhook_deliveries
        WHERE ${due} AND id NOT IN (SELECT value FROM json_each(?3))
        ORDER BY next_attempt_at LIMIT ?2`,
    )
    .all(now, limit, excludeJson);

/** What an attempt row says while its request is out, and after a crash cut it short. */
export const SENDING = 'sending';
export const CUT_SHORT = 'interrupted: the service stopped while sending; no answer was recorded';

/**
 * Every attempt is recorded beside its delivery, opened before the request leaves (in the claim's
 * transaction, so it costs no commit of its own) and completed when the answer is recorded: a crash
 * mid-send leaves the row, never a gap in the log.
 */
export const openAttempt = (tx: Tx, deliveryId: string, at: number): number =>
  tx.$client
    .query<{ id: number }, [string, number, string]>(
      'INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms) VALUES (?, ?, NULL, ?, 0) RETURNING id',
    )
    .get(deliveryId, at, SENDING)!.id;

export const completeAttempt = (
  tx: Tx,
  v: { id: number; at: number; statusCode: number | null; error: string | null; durationMs: number },
) =>
  tx.$client
    .query('UPDATE webhook_attempts SET attempted_at = ?, status_code = ?, error = ?, duration_ms = ? WHERE id = ?')
    .run(v.at, v.statusCode, v.error, v.durationMs, v.id);

/** An attempt opened at the claim whose request never left (the run stopped first). */
export const dropAttempt = (tx: Tx, id: number) => tx.$client.query('DELETE FROM webhook_attempts WHERE id = ?').run(id);

/**
 * At start: attempts a stopped process left open are said to have been cut short. Only the deliveries it
 * still held (a lease) can have one, so the scan stays on the delivery index.
 */
export const closeCutShortAttempts = (tx: Tx) =>
  tx.$client
    .query(
      `UPDATE webhook_attempts SET error = ?1
        WHERE error = ?2 AND delivery_id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND lease_until > 0)`,
    )
    .run(CUT_SHORT, SENDING).changes;

/** A lender's endpoints (at most ten), read for each event pushed. */
export const endpointsOf = (tx: Tx, lenderId: string) =>
  tx.$client.query<{ url: string; eventTypes: string }, [string]>('SELECT url, event_types AS eventTypes FROM webhook_endpoints WHERE lender_id = ?').all(lenderId);
