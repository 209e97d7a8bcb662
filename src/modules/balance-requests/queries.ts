import type { Tx } from '../../platform/context';
import type { Db } from '../../platform/db';
import type { BatchSource, BatchStatus, PaymentType } from '../../../db/schema/enums';

// The balance pipeline's raw prepared statements: each is on a measured hot path (bun run bench: accept,
// processing, export), where the query builder's per-call cost shows. Everything else in the module uses
// Drizzle's query builder. bun:sqlite caches each statement by its text, so a call here compiles nothing.

/** Accepting a request: one batch row (bench accept). */
export const insertBatchRow = (
  tx: Tx,
  v: { id: string; lenderId: string; source: BatchSource; scheduleId: string | null; webhookUrl: string | null; creator: string | null; now: number; total: number },
) =>
  tx.$client
    .query(
      `INSERT INTO batches (id, lender_id, source, schedule_id, status, webhook_url, creator, submitted_at, total_authorizers, total_processed)
       VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, 0)`,
    )
    .run(v.id, v.lenderId, v.source, v.scheduleId, v.webhookUrl, v.creator, v.now, v.total);

/** Accepting a request: its whole payload in one row (bench accept). */
export const insertBatchPayload = (tx: Tx, batchId: string, sealed: string, items: Uint8Array) =>
  tx.$client.query('INSERT INTO batch_payloads (batch_id, sealed, items) VALUES (?, ?, ?)').run(batchId, sealed, items);

/** A waiting batch's clear items as stored: compressed bytes, or JSON text from before compression. */
export const payloadItems = (tx: Tx, batchId: string) =>
  tx.$client.query<{ items: string | Uint8Array }, [string]>('SELECT items FROM batch_payloads WHERE batch_id = ?').get(batchId);

/** The 24-hour replay cache, read on every accept (bench accept). */
export const findCachedResponse = (db: Db, lenderId: string, bodyHash: string, since: number) =>
  db.$client
    .query<{ statusCode: number; responseBody: string }, [string, string, number]>(
      'SELECT status_code AS statusCode, response_body AS responseBody FROM idempotency_keys WHERE lender_id = ? AND body_hash = ? AND created_at > ?',
    )
    .get(lenderId, bodyHash, since);

export const cacheResponse = (tx: Tx, lenderId: string, bodyHash: string, body: string, now: number) =>
  tx.$client
    .query(
      `INSERT INTO idempotency_keys (lender_id, body_hash, status_code, response_body, created_at) VALUES (?, ?, 201, ?, ?)
       ON CONFLICT(lender_id, body_hash) DO UPDATE SET status_code = 201, response_body = excluded.response_body, created_at = excluded.created_at`,
    )
    .run(lenderId, bodyHash, body, now);

/**
 * Authorizers accepted and not yet checked, of one lender (read on every accept: one row of balance_backlog,
 * which triggers on batches keep equal to the open batches' sum) or of all.
 */
/** Up to `limit` idempotency entries created before `before`, oldest first off idempotency_created_idx, deleted. */
export const deleteExpiredIdempotency = (tx: Tx, before: number, limit: number): number =>
  tx.$client
    .query(
      `DELETE FROM idempotency_keys WHERE rowid IN
         (SELECT rowid FROM idempotency_keys INDEXED BY idempotency_created_idx WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
    )
    .run(before, limit).changes;

export const pendingAuthorizers = (db: Db, lenderId: string | null) =>
  (lenderId === null
    ? db.$client.query<{ n: number }, []>('SELECT COALESCE(SUM(pending), 0) AS n FROM balance_backlog').get()
    : db.$client.query<{ n: number }, [string]>('SELECT COALESCE(MAX(pending), 0) AS n FROM balance_backlog WHERE lender_id = ?1').get(lenderId))!.n;

/** Batches with work left, for the fair claim (bench processing: every claim). */
export const openBatches = (db: Db) =>
  db.$client
    .query<{ id: string; lenderId: string; status: BatchStatus }, []>(
      "SELECT id, lender_id AS lenderId, status FROM batches WHERE status IN ('pending', 'processing') ORDER BY submitted_at, id",
    )
    .all();

export const batchStatus = (tx: Tx, batchId: string) =>
  (tx.$client.query<{ status: BatchStatus }, [string]>('SELECT status FROM batches WHERE id = ?').get(batchId))?.status ?? null;

export interface ClaimedItem {
  id: number;
  batchId: string;
  lenderId: string;
  seq: number;
  authorizerUniqueId: string;
  paymentType: PaymentType;
  routingNumber: string | null;
  phone: string | null;
  zip: string | null;
  attempts: number;
  /** Since when a linked account's balance refresh has been waited on (null: not waiting). */
  waitingSince: number | null;
}

/** Due items of one batch in request order, straight off batch_items_pending_idx (bench processing). */
export const dueItemsOfBatch = (db: Db, due: string, batchId: string, now: number, limit: number) =>
  db.$client
    .query<ClaimedItem, [number, string, number]>(
      `SELECT id, batch_id AS batchId, lender_id AS lenderId, seq, authorizer_unique_id AS authorizerUniqueId,
              payment_type AS paymentType, routing_number AS routingNumber, phone, zip, attempts, waiting_since AS waitingSince
         FROM batch_items
        WHERE batch_id = ?2 AND ${due}
        ORDER BY seq LIMIT ?3`,
    )
    .all(now, batchId, limit);

/** pending → processing creates up to 1000 queue rows in the claim's transaction (bench processing). */
export const insertItemStatement = (tx: Tx) =>
  tx.$client.query<unknown, [string, string, number, string, string, string | null, string | null, string | null, string | null, number | null]>(
    `INSERT INTO batch_items (batch_id, lender_id, seq, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );

/** Result flushes: one row per item, a unique item_id makes a second impossible (bench processing). */
export const insertResult = (
  tx: Tx,
  v: {
    itemId: number;
    batchId: string;
    lenderId: string;
    aid: string;
    cents: number | null;
    code: number;
    exportStatus: string;
    institution: string | null;
    at: number;
    kind?: string | null;
    asOf?: number | null;
    detail?: string | null;
  },
) =>
  tx.$client
    .query(
      `INSERT OR IGNORE INTO balance_results (item_id, batch_id, lender_id, authorizer_unique_id, balance_cents, status_code, export_status, institution, recorded_at, balance_kind, balance_as_of, detail)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(v.itemId, v.batchId, v.lenderId, v.aid, v.cents, v.code, v.exportStatus, v.institution, v.at, v.kind ?? null, v.asOf ?? null, v.detail ?? null);

/** An authorizer's latest result of a lender, off the history index. */
export const latestResultOf = (db: Db, lenderId: string, aid: string) =>
  db.$client
    .query<{ balanceKind: 'available' | 'current' | null; balanceAsOf: number | null }, [string, string]>(
      `SELECT balance_kind AS balanceKind, balance_as_of AS balanceAsOf FROM balance_results
        WHERE lender_id = ? AND authorizer_unique_id = ? ORDER BY id DESC LIMIT 1`,
    )
    .get(lenderId, aid);

/** Result flushes: the batch's counter, and whether this result was its last (bench processing). */
export const bumpProcessed = (tx: Tx, batchId: string, n: number) =>
  tx.$client
    .query<
      { id: string; lenderId: string; source: BatchSource; scheduleId: string | null; webhookUrl: string | null; completed: number },
      [number, string]
    >(
      `UPDATE batches SET total_processed = total_processed + ?1
        WHERE id = ?2
        RETURNING id, lender_id AS lenderId, source, schedule_id AS scheduleId, webhook_url AS webhookUrl,
                  (total_processed >= total_authorizers AND status != 'completed') AS completed`,
    )
    .get(n, batchId);

export interface ExportRow {
  rid: number;
  aid: string;
  batchId: string;
  institution: string | null;
  phone: string | null;
  zip: string | null;
  cents: number | null;
  status: string;
  creator: string | null;
  at: number;
  metadata: string | null;
}

/** One export chunk (bench export: 100,000 rows at over 100k rows/s). */
export const exportPage = (db: Db, batchId: string, afterId: number, limit: number) =>
  db.$client
    .query<ExportRow, [string, number, number]>(
      `SELECT r.id AS rid, r.authorizer_unique_id AS aid, r.batch_id AS batchId, r.institution, i.phone, i.zip,
              r.balance_cents AS cents, r.export_status AS status, b.creator, r.recorded_at AS at, i.metadata
         FROM balance_results r
         JOIN batch_items i ON i.id = r.item_id
         JOIN batches b ON b.id = r.batch_id
        WHERE r.batch_id = ? AND r.id > ?
        ORDER BY r.id LIMIT ?`,
    )
    .all(batchId, afterId, limit);

/**
 * The export's meta_ columns, one slice of a batch's items at a time (after `afterSeq`, at most `limit` items
 * with metadata), so the scan can yield between slices: the distinct keys of the slice and its last seq (null
 * when the batch has no more). json_each has no query-builder form.
 */
export const metadataKeysPage = (db: Db, batchId: string, afterSeq: number, limit: number) => {
  const last = db.$client
    .query<{ last: number | null }, [string, number, number]>(
      `SELECT MAX(seq) AS last FROM (SELECT seq FROM batch_items WHERE batch_id = ?1 AND seq > ?2 AND metadata IS NOT NULL ORDER BY seq LIMIT ?3)`,
    )
    .get(batchId, afterSeq, limit)!.last;
  if (last === null) return { keys: [], last: null };
  const keys = db.$client
    .query<{ key: string }, [string, number, number]>(
      `SELECT DISTINCT j.key AS key FROM batch_items i, json_each(i.metadata) j
        WHERE i.batch_id = ?1 AND i.seq > ?2 AND i.seq <= ?3 AND i.metadata IS NOT NULL`,
    )
    .all(batchId, afterSeq, last)
    .map((r) => r.key);
  return { keys, last };
};

/** Threshold hits of a completed schedule run, joined in SQL (one statement per run). */
export const thresholdHits = (db: Db, batchId: string) =>
  db.$client
    .query<{ aid: string; institution: string | null; cents: number; threshold: number }, [string]>(
      `SELECT r.authorizer_unique_id AS aid, r.institution, r.balance_cents AS cents, i.threshold_cents AS threshold
         FROM balance_results r JOIN batch_items i ON i.id = r.item_id
        WHERE r.batch_id = ? AND i.threshold_cents IS NOT NULL AND r.balance_cents IS NOT NULL AND r.balance_cents >= i.threshold_cents
        ORDER BY i.seq`,
    )
    .all(batchId);

/** A link recorded as needing relinking; false when it already was (its lender has been told). */
export const insertRelink = (tx: Tx, v: { lenderId: string; digest: string; provider: string; aid: string; now: number }): boolean =>
  tx.$client
    .query('INSERT OR IGNORE INTO bank_link_relinks (lender_id, link_digest, provider, authorizer_unique_id, created_at) VALUES (?, ?, ?, ?, ?)')
    .run(v.lenderId, v.digest, v.provider, v.aid, v.now).changes > 0;

/** A borrower's clear details (phone, zip, metadata) in the queue rows of started batches, overwritten. */
export const eraseQueuedDetails = (tx: Tx, lenderId: string, aid: string) =>
  tx.$client.query('UPDATE batch_items SET phone = NULL, zip = NULL, metadata = NULL WHERE lender_id = ? AND authorizer_unique_id = ?').run(lenderId, aid);

/** The item lists of the lender's batches still waiting to start. */
export const waitingPayloads = (tx: Tx, lenderId: string) =>
  tx.$client
    .query<{ batchId: string; items: string | Uint8Array }, [string]>(
      `SELECT p.batch_id AS batchId, p.items FROM batch_payloads p JOIN batches b ON b.id = p.batch_id
        WHERE b.lender_id = ? AND b.status = 'pending'`,
    )
    .all(lenderId);

export const replacePayloadItems = (tx: Tx, batchId: string, items: Uint8Array) =>
  tx.$client.query('UPDATE batch_payloads SET items = ? WHERE batch_id = ?').run(items, batchId);
