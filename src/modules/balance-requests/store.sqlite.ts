import { and, asc, count, desc, eq, gt, inArray, lt, ne } from 'drizzle-orm';
import { balanceResults, batchItems, batchPayloads, batches } from '../../../db/schema';
import type { BatchStatus } from '../../../db/schema/enums';
import type { Db, Orm } from '../../platform/db';
import { groupCommit } from '../../platform/group-commit';
import { olderThan } from '../../platform/pagination';
import { LeaseQueue, type PickStrategy } from '../../platform/lease-queue';
import { lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import { BACKLOG_LOCK, ITEM_LEASE_MS, MIN_BATCH_CHUNK } from './store-shared';
import type { BalanceStore, CachedResponse, ResultRow, ClaimedItem, CountedBatch, ExportRow, LatestResult, LatestResultOf, NewBatch, ThresholdHit } from './store';

// The balance pipeline's SQL. The raw prepared statements are each on a measured hot path (bun run bench:
// accept, processing, export), where the query builder's per-call cost shows; the rest uses Drizzle's query
// builder. bun:sqlite caches each statement by its text, so a call here compiles nothing.

/** Accepting a request: one batch row (bench accept). */
const insertBatchRow = (tx: Orm, v: NewBatch) =>
  tx.$client
    .query(
      `INSERT INTO batches (id, lender_id, source, schedule_id, status, webhook_url, creator, submitted_at, total_authorizers, total_processed)
       VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, 0)`,
    )
    .run(v.id, v.lenderId, v.source, v.scheduleId, v.webhookUrl, v.creator, v.now, v.total);

/** Accepting a request: its whole payload in one row (bench accept). */
const insertBatchPayload = (tx: Orm, batchId: string, sealed: string, items: Uint8Array) =>
  tx.$client.query('INSERT INTO batch_payloads (batch_id, sealed, items) VALUES (?, ?, ?)').run(batchId, sealed, items);

/** A waiting batch's clear items as stored: compressed bytes, or JSON text from before compression. */
const payloadItems = (db: Db, batchId: string) =>
  db.$client.query<{ items: string | Uint8Array }, [string]>('SELECT items FROM batch_payloads WHERE batch_id = ?').get(batchId);

/** The 24-hour replay cache, read on every accept (bench accept). */
const findCachedResponse = (db: Db, lenderId: string, bodyHash: string, since: number) =>
  db.$client
    .query<CachedResponse, [string, string, number]>(
      'SELECT status_code AS statusCode, response_body AS responseBody FROM idempotency_keys WHERE lender_id = ? AND body_hash = ? AND created_at > ?',
    )
    .get(lenderId, bodyHash, since);

const cacheResponse = (tx: Orm, lenderId: string, bodyHash: string, body: string, now: number) =>
  tx.$client
    .query(
      `INSERT INTO idempotency_keys (lender_id, body_hash, status_code, response_body, created_at) VALUES (?, ?, 201, ?, ?)
       ON CONFLICT(lender_id, body_hash) DO UPDATE SET status_code = 201, response_body = excluded.response_body, created_at = excluded.created_at`,
    )
    .run(lenderId, bodyHash, body, now);

/** Up to `limit` idempotency entries created before `before`, oldest first off idempotency_created_idx, deleted. */
const deleteExpiredIdempotency = (tx: Orm, before: number, limit: number): number =>
  tx.$client
    .query(
      `DELETE FROM idempotency_keys WHERE rowid IN
         (SELECT rowid FROM idempotency_keys INDEXED BY idempotency_created_idx WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
    )
    .run(before, limit).changes;

/**
 * Authorizers accepted and not yet checked, of one lender (read on every accept: one row of balance_backlog,
 * which triggers on batches keep equal to the open batches' sum) or of all.
 */
const pendingAuthorizers = (db: Db, lenderId: string | null): number =>
  (lenderId === null
    ? db.$client.query<{ n: number }, []>('SELECT COALESCE(SUM(pending), 0) AS n FROM balance_backlog').get()
    : db.$client.query<{ n: number }, [string]>('SELECT COALESCE(MAX(pending), 0) AS n FROM balance_backlog WHERE lender_id = ?1').get(lenderId))!.n;

/** Batches with work left, for the fair claim (bench processing: every claim). */
const openBatches = (db: Db) =>
  db.$client
    .query<{ id: string; lenderId: string; status: BatchStatus }, []>(
      "SELECT id, lender_id AS lenderId, status FROM batches WHERE status IN ('pending', 'processing') ORDER BY submitted_at, id",
    )
    .all();

const batchStatus = (db: Db, batchId: string) =>
  (db.$client.query<{ status: BatchStatus }, [string]>('SELECT status FROM batches WHERE id = ?').get(batchId))?.status ?? null;

/** Due items of one batch in request order, straight off batch_items_pending_idx (bench processing). */
const dueItemsOfBatch = (db: Db, due: string, batchId: string, now: number, limit: number) =>
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
const insertItemStatement = (tx: Orm) =>
  tx.$client.query<unknown, [string, string, number, string, string, string | null, string | null, string | null, string | null, number | null]>(
    `INSERT INTO batch_items (batch_id, lender_id, seq, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );

/** Result flushes: one row per item, a unique item_id makes a second impossible (bench processing). */
const insertResult = (tx: Orm, v: ResultRow) =>
  tx.$client
    .query(
      `INSERT OR IGNORE INTO balance_results (item_id, batch_id, lender_id, authorizer_unique_id, balance_cents, status_code, export_status, institution, recorded_at, balance_kind, balance_as_of, detail)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(v.itemId, v.batchId, v.lenderId, v.aid, v.cents, v.code, v.exportStatus, v.institution, v.at, v.kind, v.asOf, v.detail);

/** An authorizer's latest result of a lender, off the history index. */
const latestResultOf = (db: Db, lenderId: string, aid: string) =>
  db.$client
    .query<LatestResult, [string, string]>(
      `SELECT balance_kind AS balanceKind, balance_as_of AS balanceAsOf, detail FROM balance_results
        WHERE lender_id = ? AND authorizer_unique_id = ? ORDER BY id DESC LIMIT 1`,
    )
    .get(lenderId, aid);

/** The latest result of each of some authorizers of a lender: latestResultOf for a page of them, one probe of the history index each. */
const latestResultsAmong = (db: Db, lenderId: string, aids: readonly string[]) =>
  db.$client
    .query<LatestResultOf, [string, string]>(
      `SELECT j.value AS aid, r.balance_kind AS balanceKind, r.balance_as_of AS balanceAsOf, r.detail FROM json_each(?2) j
         JOIN balance_results r ON r.id = (SELECT id FROM balance_results WHERE lender_id = ?1 AND authorizer_unique_id = j.value ORDER BY id DESC LIMIT 1)`,
    )
    .all(lenderId, JSON.stringify(aids));

/** Result flushes: the batch's counter, and whether this result was its last (bench processing). */
const bumpProcessed = (tx: Orm, batchId: string, n: number) =>
  tx.$client
    .query<CountedBatch, [number, string]>(
      `UPDATE batches SET total_processed = total_processed + ?1
        WHERE id = ?2
        RETURNING id, lender_id AS lenderId, source, schedule_id AS scheduleId, webhook_url AS webhookUrl,
                  (total_processed >= total_authorizers AND status != 'completed') AS completed`,
    )
    .get(n, batchId);

/** One export chunk (bench export: 100,000 rows at over 100k rows/s). */
const exportPage = (db: Db, batchId: string, afterId: number, limit: number) =>
  db.$client
    .query<ExportRow, [string, number, number]>(
      `SELECT r.id AS rid, r.authorizer_unique_id AS aid, r.batch_id AS batchId, r.institution, i.phone, i.zip,
              r.balance_cents AS cents, r.export_status AS status, b.creator, r.recorded_at AS at, r.balance_as_of AS asOf, i.metadata
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
const metadataKeysPage = (db: Db, batchId: string, afterSeq: number, limit: number): { keys: string[]; last: number | null } => {
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
const thresholdHits = (db: Db, batchId: string) =>
  db.$client
    .query<ThresholdHit, [string]>(
      `SELECT r.authorizer_unique_id AS aid, r.institution, r.balance_cents AS cents, i.threshold_cents AS threshold
         FROM balance_results r JOIN batch_items i ON i.id = r.item_id
        WHERE r.batch_id = ? AND i.threshold_cents IS NOT NULL AND r.balance_cents IS NOT NULL AND r.balance_cents >= i.threshold_cents
        ORDER BY i.seq`,
    )
    .all(batchId);

/** A borrower's clear details (phone, zip, metadata) in the queue rows of started batches, overwritten. */
const eraseQueuedDetails = (tx: Orm, lenderId: string, aid: string) =>
  tx.$client.query('UPDATE batch_items SET phone = NULL, zip = NULL, metadata = NULL WHERE lender_id = ? AND authorizer_unique_id = ?').run(lenderId, aid);

/** The item lists of the lender's batches still waiting to start. */
const waitingPayloads = (db: Db, lenderId: string) =>
  db.$client
    .query<{ batchId: string; items: string | Uint8Array }, [string]>(
      `SELECT p.batch_id AS batchId, p.items FROM batch_payloads p JOIN batches b ON b.id = p.batch_id
        WHERE b.lender_id = ? AND b.status = 'pending'`,
    )
    .all(lenderId);

const replacePayloadItems = (tx: Orm, batchId: string, items: Uint8Array) =>
  tx.$client.query('UPDATE batch_payloads SET items = ? WHERE batch_id = ?').run(items, batchId);

/**
 * The fair claim of the balance queue: first an equal share per lender with pending work, then an equal share
 * per batch within a lender, so one large batch never starves a small one. Runs inside the queue's claim
 * transaction, which only leases: batches are started (their rows queued) before, each in a transaction of
 * its own. Two statements a claim (bench processing).
 */
function fairShares(turn: () => number): PickStrategy<ClaimedItem> {
  return ({ db, want, now, due, lease }) => {
    const active = openBatches(db).filter((b) => b.status === 'processing');
    if (active.length === 0) return;
    const byLender = new Map<string, string[]>();
    for (const b of active) {
      const list = byLender.get(b.lenderId) ?? [];
      list.push(b.id);
      byLender.set(b.lenderId, list);
    }
    let claimed = 0;
    const t = turn();
    // Two passes: the fair share first, then whatever is left over for batches that have more. `turn`
    // rotates where each pass starts, and a batch gives at least MIN_BATCH_CHUNK items at a time, so many
    // open batches are served in turn without each claim touching every one of them.
    const lenders = [...byLender.values()];
    for (let pass = 0; pass < 2 && claimed < want; pass++) {
      const perLender = Math.max(1, Math.ceil((want - claimed) / lenders.length));
      for (let li = 0; li < lenders.length && claimed < want; li++) {
        const batchIds = lenders[(li + t) % lenders.length]!;
        let lenderBudget = perLender;
        const perBatch = Math.max(MIN_BATCH_CHUNK, Math.ceil(perLender / batchIds.length));
        for (let bi = 0; bi < batchIds.length && lenderBudget > 0 && claimed < want; bi++) {
          const batchId = batchIds[(bi + t) % batchIds.length]!;
          const items = dueItemsOfBatch(db, due, batchId, now, Math.min(perBatch, lenderBudget, want - claimed));
          lease(items);
          claimed += items.length;
          lenderBudget -= items.length;
        }
      }
    }
  };
}

const queues = new WeakMap<Db, LeaseQueue<typeof batchItems, ClaimedItem>>();

/** The balance-read queue of a database, one per connection (its finalizing statements are cached). */
function itemQueue(db: Db): LeaseQueue<typeof batchItems, ClaimedItem> {
  let queue = queues.get(db);
  if (!queue) {
    let turn = 0;
    queue = new LeaseQueue(db, batchItems, { leaseMs: ITEM_LEASE_MS, pick: fairShares(() => turn++) });
    queues.set(db, queue);
  }
  return queue;
}

export const sqliteBalanceStore: BalanceStore = {
  readsPerClaim: 0,
  async cachedResponse(c, lenderId, bodyHash, since) {
    return findCachedResponse(readerOf(c), lenderId, bodyHash, since) ?? undefined;
  },
  acceptBatch(c, a) {
    // Requests accepted at about the same moment share one commit (and its fsync).
    return groupCommit(c, (t) => {
      const db = writerOf(t);
      // Checked again under the write lock: two identical requests at once still make one batch.
      const hit = a.replay ? findCachedResponse(db, a.batch.lenderId, a.replay.bodyHash, a.replay.since) : null;
      if (hit) return { kind: 'replay' as const, hit };
      // Counted under the write lock, so two requests at once cannot both squeeze under the bound.
      const pending = pendingAuthorizers(db, a.batch.lenderId);
      if (pending + a.batch.total > a.maxPending) return { kind: 'over_backlog' as const, pending };
      insertBatchRow(db, a.batch);
      insertBatchPayload(db, a.batch.id, a.payload.sealed, a.payload.items);
      if (a.replay) cacheResponse(db, a.batch.lenderId, a.replay.bodyHash, a.replay.responseBody, a.batch.now);
      return { kind: 'accepted' as const };
    });
  },
  async serializeBacklog(c, lenderId) {
    await lockFor(c, BACKLOG_LOCK, lenderId);
  },
  async insertBatch(c, batch, payload) {
    const tx = writerOf(c);
    insertBatchRow(tx, batch);
    insertBatchPayload(tx, batch.id, payload.sealed, payload.items);
  },
  async pendingAuthorizers(c, lenderId) {
    return pendingAuthorizers(readerOf(c), lenderId);
  },
  async dropExpiredIdempotency(c, before, limit) {
    return deleteExpiredIdempotency(writerOf(c), before, limit);
  },

  async openBatches(c) {
    return openBatches(readerOf(c));
  },
  async claimDueReads(c, want, now) {
    return itemQueue(c.deps.db).claim(c, want, now);
  },
  async lockReads() {
    // The transaction writes alone.
  },
  async finishReads(c, finishes) {
    itemQueue(c.deps.db).finishAll(c, finishes);
  },
  async releaseReadLeases(c, prefix) {
    return itemQueue(c.deps.db).release(c, prefix);
  },
  async batchStatus(c, batchId) {
    return batchStatus(readerOf(c), batchId);
  },
  async lockWaitingBatch(c, batchId) {
    return batchStatus(writerOf(c), batchId) === 'pending';
  },
  async waitingItems(c, batchId) {
    return payloadItems(readerOf(c), batchId)?.items;
  },
  async startBatch(c, batchId, lenderId, items) {
    const tx = writerOf(c);
    const insert = insertItemStatement(tx);
    for (let i = 0; i < items.length; i++) {
      const a = items[i]!;
      insert.run(batchId, lenderId, i, a.id, a.type, a.routing, a.phone, a.zip, a.meta ? JSON.stringify(a.meta) : null, a.threshold);
    }
    tx.update(batches).set({ status: 'processing' }).where(eq(batches.id, batchId)).run();
    // The clear part of the payload (phone, zip, metadata) now lives in the queue rows; the copy goes, so there
    // is one place to erase a borrower's details from.
    tx.update(batchPayloads).set({ items: '[]' }).where(eq(batchPayloads.batchId, batchId)).run();
  },
  async sealedPayload(c, batchId) {
    return readerOf(c).select({ sealed: batchPayloads.sealed }).from(batchPayloads).where(eq(batchPayloads.batchId, batchId)).get()?.sealed;
  },
  async recordResults(c, rows) {
    const tx = writerOf(c);
    return rows.map((r) => insertResult(tx, r).changes > 0);
  },
  async lockBatches() {
    // The transaction writes alone.
  },
  async countProcessed(c, batchId, n) {
    return bumpProcessed(writerOf(c), batchId, n) ?? undefined;
  },
  async completeBatch(c, batchId, at) {
    writerOf(c).update(batches).set({ status: 'completed', completedAt: at }).where(eq(batches.id, batchId)).run();
  },

  async batchOf(c, lenderId, batchId) {
    return readerOf(c)
      .select()
      .from(batches)
      .where(and(eq(batches.id, batchId), eq(batches.lenderId, lenderId)))
      .get();
  },
  async ownedBatchIds(c, lenderId, batchIds) {
    return readerOf(c)
      .select({ id: batches.id })
      .from(batches)
      .where(and(eq(batches.lenderId, lenderId), inArray(batches.id, batchIds)))
      .all()
      .map((r) => r.id);
  },
  async resultsPage(c, batchId, afterId, take) {
    return readerOf(c)
      .select({
        id: balanceResults.id,
        aid: balanceResults.authorizerUniqueId,
        cents: balanceResults.balanceCents,
        code: balanceResults.statusCode,
        at: balanceResults.recordedAt,
        kind: balanceResults.balanceKind,
        asOf: balanceResults.balanceAsOf,
        detail: balanceResults.detail,
      })
      .from(balanceResults)
      .where(and(eq(balanceResults.batchId, batchId), gt(balanceResults.id, afterId)))
      .orderBy(asc(balanceResults.id))
      .limit(take)
      .all();
  },
  async resultCountsByStatus(c, batchId) {
    return readerOf(c)
      .select({ status: balanceResults.exportStatus, n: count() })
      .from(balanceResults)
      .where(eq(balanceResults.batchId, batchId))
      .groupBy(balanceResults.exportStatus)
      .all();
  },
  async historyCount(c, lenderId, aid) {
    return readerOf(c)
      .select({ n: count() })
      .from(balanceResults)
      .where(and(eq(balanceResults.lenderId, lenderId), eq(balanceResults.authorizerUniqueId, aid)))
      .get()!.n;
  },
  async historyPage(c, lenderId, aid, beforeId, take) {
    return readerOf(c)
      .select({
        id: balanceResults.id,
        aid: balanceResults.authorizerUniqueId,
        batchId: balanceResults.batchId,
        cents: balanceResults.balanceCents,
        code: balanceResults.statusCode,
        exportStatus: balanceResults.exportStatus,
        at: balanceResults.recordedAt,
        kind: balanceResults.balanceKind,
        asOf: balanceResults.balanceAsOf,
        detail: balanceResults.detail,
      })
      .from(balanceResults)
      .where(and(eq(balanceResults.lenderId, lenderId), eq(balanceResults.authorizerUniqueId, aid), lt(balanceResults.id, beforeId)))
      .orderBy(desc(balanceResults.id))
      .limit(take)
      .all();
  },
  async batchesPage(c, lenderId, kind, after, take) {
    const conds = [eq(batches.lenderId, lenderId), olderThan(batches.submittedAt, batches.id, after.t, after.i)];
    if (kind === 'sent') conds.push(ne(batches.source, 'monitoring'));
    if (kind === 'monitoring') conds.push(eq(batches.source, 'monitoring'));
    return readerOf(c)
      .select()
      .from(batches)
      .where(and(...conds))
      .orderBy(desc(batches.submittedAt), desc(batches.id))
      .limit(take)
      .all();
  },
  async thresholdHits(c, batchId) {
    return thresholdHits(readerOf(c), batchId);
  },
  async latestResultOf(c, lenderId, aid) {
    return latestResultOf(readerOf(c), lenderId, aid) ?? undefined;
  },
  async latestResultsAmong(c, lenderId, aids) {
    return aids.length === 0 ? [] : latestResultsAmong(readerOf(c), lenderId, aids);
  },
  async exportPage(c, batchId, afterId, limit) {
    return exportPage(readerOf(c), batchId, afterId, limit);
  },
  async metadataKeysPage(c, batchId, afterSeq, limit) {
    return metadataKeysPage(readerOf(c), batchId, afterSeq, limit);
  },

  async eraseQueuedDetails(c, lenderId, aid) {
    eraseQueuedDetails(writerOf(c), lenderId, aid);
  },
  async waitingPayloads(c, lenderId) {
    return waitingPayloads(readerOf(c), lenderId);
  },
  async replacePayloadItems(c, batchId, items) {
    replacePayloadItems(writerOf(c), batchId, items);
  },
};
