import { and, asc, count, desc, eq, gt, inArray, lt, ne, sql } from 'drizzle-orm';
import { balanceResults, batchItems, batchPayloads, batches } from '../../../db/schema-pg';
import type { BatchStatus } from '../../../db/schema/enums';
import { transaction } from '../../platform/context';
import { olderThan } from '../../platform/pagination';
import { LeaseQueue, type PickStrategy } from '../../platform/lease-queue.pg';
import type { PgDb, PgHandle } from '../../platform/pg';
import { listOf, lockFor, num, numOrNull, readerOf, rows, writerOf } from '../../platform/sql/pg';
import type { QueuedAuthorizer } from './payload';
import { BACKLOG_LOCK, ITEM_LEASE_MS, MIN_BATCH_CHUNK } from './store-shared';
import type { BalanceStore, CachedResponse, ClaimedItem, CountedBatch, ExportRow, LatestResultOf, NewBatch, OpenBatch, ResultRow, StoredPayload, ThresholdHit } from './store';

// The balance pipeline's SQL on PostgreSQL: the same statements as store.sqlite.ts, with what SQLite's single
// writer gave for free made explicit, since transactions here run side by side under READ COMMITTED:
// - a lender's accepts (the request path and the on-demand runs and reads) take the lender's backlog lock
//   before they count its pending authorizers, so two at once cannot both squeeze under the bound, and an
//   identical body sent twice at once makes one batch: the second finds the first's answer;
// - a claim leases rows it has locked with FOR UPDATE SKIP LOCKED (the queue of platform/lease-queue.pg.ts),
//   so two claimers never take the same row;
// - a batch is started under its row lock, and erasing a borrower locks the lender's waiting batches first,
//   so an erasure never misses the queue rows of a batch started at the same moment;
// - a flush locks its reads' rows, then its batches' counters and their lenders' backlog, each in one order,
//   before it writes them, so two flushes never each wait for the other.
// Bulk writes (a batch's queue rows, a flush's results and finishes) are one statement each over unnest()ed
// arrays bound as parameters. Raw results give int8 as strings: those columns go through num().

/** The bytes of the clear copy left once a batch is started: the empty packed list. */
const EMPTY_ITEMS = new TextEncoder().encode('[]');

async function findCachedResponse(db: PgDb, lenderId: string, bodyHash: string, since: number): Promise<CachedResponse | undefined> {
  const [hit] = await rows<CachedResponse>(
    db,
    sql`SELECT status_code AS "statusCode", response_body AS "responseBody" FROM idempotency_keys
         WHERE lender_id = ${lenderId} AND body_hash = ${bodyHash} AND created_at > ${since}`,
  );
  return hit;
}

/**
 * A new batch (pending) and its whole payload, two rows whatever its size, and the answer kept for an
 * identical body when there is one: one statement (the payload's foreign key is checked at its end).
 */
async function insertBatchRows(db: PgDb, v: NewBatch, payload: StoredPayload, replay: { bodyHash: string; responseBody: string } | null = null): Promise<void> {
  const batch = sql`INSERT INTO batches (id, lender_id, source, schedule_id, status, webhook_url, creator, submitted_at, total_authorizers, total_processed)
                    VALUES (${v.id}, ${v.lenderId}, ${v.source}, ${v.scheduleId}, 'pending', ${v.webhookUrl}, ${v.creator}, ${v.now}, ${v.total}, 0)
                    RETURNING id`;
  const items = sql`INSERT INTO batch_payloads (batch_id, sealed, items) SELECT b.id, ${payload.sealed}::text, ${payload.items}::bytea FROM b`;
  await db.execute(
    replay
      ? sql`WITH b AS (${batch}), p AS (${items})
            INSERT INTO idempotency_keys (lender_id, body_hash, status_code, response_body, created_at)
            SELECT ${v.lenderId}::text, ${replay.bodyHash}::text, 201, ${replay.responseBody}::text, ${v.now}::bigint FROM b
            ON CONFLICT (lender_id, body_hash) DO UPDATE SET status_code = 201, response_body = excluded.response_body, created_at = excluded.created_at`
      : sql`WITH b AS (${batch}) ${items}`,
  );
}

/**
 * What an accept checks under the lender's backlog lock, in one read: an identical body's answer since `since`
 * (none without a hash), and the lender's authorizers waiting.
 */
async function acceptChecks(db: PgDb, lenderId: string, bodyHash: string | null, since: number): Promise<{ hit: CachedResponse | undefined; pending: number }> {
  const [row] = await rows<{ statusCode: number | null; responseBody: string | null; pending: unknown }>(
    db,
    sql`SELECT h.status_code AS "statusCode", h.response_body AS "responseBody",
               (SELECT COALESCE(MAX(pending), 0) FROM balance_backlog WHERE lender_id = ${lenderId}) AS pending
          FROM (SELECT 1) AS one
          LEFT JOIN idempotency_keys h ON h.lender_id = ${lenderId} AND h.body_hash = ${bodyHash}::text AND h.created_at > ${since}`,
  );
  const hit = row!.statusCode === null ? undefined : { statusCode: row!.statusCode, responseBody: row!.responseBody! };
  return { hit, pending: num(row!.pending) };
}

/** Authorizers accepted and not yet checked, of one lender (one row of balance_backlog) or of all. */
async function pendingAuthorizers(db: PgDb, lenderId: string | null): Promise<number> {
  const [row] = await rows<{ n: unknown }>(
    db,
    lenderId === null
      ? sql`SELECT COALESCE(SUM(pending), 0) AS n FROM balance_backlog`
      : sql`SELECT COALESCE(MAX(pending), 0) AS n FROM balance_backlog WHERE lender_id = ${lenderId}`,
  );
  return num(row!.n);
}

/** Batches with work left, oldest first. */
const openBatches = (db: PgDb) =>
  rows<OpenBatch>(db, sql`SELECT id, lender_id AS "lenderId", status FROM batches WHERE status IN ('pending', 'processing') ORDER BY submitted_at, id`);

/** A claimed row as a raw query returns it (int8 as text). */
interface RawClaimed extends Omit<ClaimedItem, 'id' | 'waitingSince' | 'leaseToken'> {
  id: string | number;
  waitingSince: string | number | null;
}

const claimedItem = (r: RawClaimed): Omit<ClaimedItem, 'leaseToken'> => ({ ...r, id: num(r.id), waitingSince: numOrNull(r.waitingSince) });

/** What a claim returns of each item it leases. */
const CLAIMED_COLUMNS = sql`id, batch_id AS "batchId", lender_id AS "lenderId", seq, authorizer_unique_id AS "authorizerUniqueId",
  payment_type AS "paymentType", routing_number AS "routingNumber", phone, zip, attempts, waiting_since AS "waitingSince"`;

/**
 * The fair claim, as on SQLite: an equal share per lender with work, then per batch within a lender, in two
 * passes (the fair share, then the leftover to batches that have more), the starting lender and batch rotated
 * from one claim to the next. In one transaction; each batch's share is one statement that locks and leases
 * up to its count of the batch's due items in request order (the queue's lease: rows another claim holds
 * locked are passed over, so no row is leased by two claims, and a row leased and committed is no longer due).
 */
function fairShares(turn: () => number): PickStrategy<Omit<ClaimedItem, 'leaseToken'>> {
  return async ({ db, want, due, lease }) => {
    const t = turn();
    const active = (await openBatches(db)).filter((b) => b.status === 'processing');
    const claimed: Omit<ClaimedItem, 'leaseToken'>[] = [];
    if (active.length === 0) return claimed;
    const byLender = new Map<string, string[]>();
    for (const b of active) {
      const list = byLender.get(b.lenderId) ?? [];
      list.push(b.id);
      byLender.set(b.lenderId, list);
    }
    const lenders = [...byLender.values()];
    for (let pass = 0; pass < 2 && claimed.length < want; pass++) {
      const perLender = Math.max(1, Math.ceil((want - claimed.length) / lenders.length));
      for (let li = 0; li < lenders.length && claimed.length < want; li++) {
        const batchIds = lenders[(li + t) % lenders.length]!;
        let lenderBudget = perLender;
        const perBatch = Math.max(MIN_BATCH_CHUNK, Math.ceil(perLender / batchIds.length));
        for (let bi = 0; bi < batchIds.length && lenderBudget > 0 && claimed.length < want; bi++) {
          const batchId = batchIds[(bi + t) % batchIds.length]!;
          const limit = Math.min(perBatch, lenderBudget, want - claimed.length);
          const leased = await lease<RawClaimed>(sql`SELECT id FROM batch_items WHERE ${due} AND batch_id = ${batchId} ORDER BY seq LIMIT ${limit}`, CLAIMED_COLUMNS);
          const items = leased.map(claimedItem).sort((a, b) => a.seq - b.seq);
          claimed.push(...items);
          lenderBudget -= items.length;
        }
      }
    }
    return claimed;
  };
}

const queues = new WeakMap<PgHandle, LeaseQueue<typeof batchItems, Omit<ClaimedItem, 'leaseToken'>>>();

/** The balance-read queue of a pool, one per pool: where its claims start their rotation (as store.sqlite.ts keeps one per connection). */
function itemQueue(pg: PgHandle): LeaseQueue<typeof batchItems, Omit<ClaimedItem, 'leaseToken'>> {
  let queue = queues.get(pg);
  if (!queue) {
    let turn = 0;
    queue = new LeaseQueue(batchItems, { leaseMs: ITEM_LEASE_MS, statements: 'several', pick: fairShares(() => turn++) });
    queues.set(pg, queue);
  }
  return queue;
}

/** A batch's queue rows, one per item in request order (seq from 0), in one statement. */
async function insertItems(db: PgDb, batchId: string, lenderId: string, items: QueuedAuthorizer[]): Promise<void> {
  if (items.length === 0) return;
  await db.execute(
    sql`INSERT INTO batch_items (batch_id, lender_id, seq, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents)
        SELECT ${batchId}, ${lenderId}, u.o - 1, u.aid, u.type, u.routing, u.phone, u.zip, u.meta, u.threshold
          FROM unnest(${listOf(items.map((a) => a.id))}::text[], ${listOf(items.map((a) => a.type))}::text[], ${listOf(items.map((a) => a.routing))}::text[],
                      ${listOf(items.map((a) => a.phone))}::text[], ${listOf(items.map((a) => a.zip))}::text[],
                      ${listOf(items.map((a) => (a.meta ? JSON.stringify(a.meta) : null)))}::text[], ${listOf(items.map((a) => a.threshold))}::bigint[])
               WITH ORDINALITY AS u(aid, type, routing, phone, zip, meta, threshold, o)
         ORDER BY u.o`,
  );
}

/** Results recorded, one per item (a unique item_id makes a second impossible), in the order given. */
async function recordResults(db: PgDb, rs: ResultRow[]): Promise<boolean[]> {
  if (rs.length === 0) return [];
  const col = <T>(f: (r: ResultRow) => T) => listOf(rs.map(f));
  const inserted = await rows<{ itemId: string | number }>(
    db,
    sql`INSERT INTO balance_results (item_id, batch_id, lender_id, authorizer_unique_id, balance_cents, status_code, export_status, institution, recorded_at, balance_kind, balance_as_of, detail)
        SELECT item_id, batch_id, lender_id, aid, cents, code, export_status, institution, at, kind, as_of, detail
          FROM unnest(${col((r) => r.itemId)}::bigint[], ${col((r) => r.batchId)}::text[], ${col((r) => r.lenderId)}::text[], ${col((r) => r.aid)}::text[],
                      ${col((r) => r.cents)}::bigint[], ${col((r) => r.code)}::integer[], ${col((r) => r.exportStatus)}::text[], ${col((r) => r.institution)}::text[],
                      ${col((r) => r.at)}::bigint[], ${col((r) => r.kind)}::text[], ${col((r) => r.asOf)}::bigint[], ${col((r) => r.detail)}::text[])
               WITH ORDINALITY AS u(item_id, batch_id, lender_id, aid, cents, code, export_status, institution, at, kind, as_of, detail, o)
         ORDER BY u.o
        ON CONFLICT (item_id) DO NOTHING
        RETURNING item_id AS "itemId"`,
  );
  const fresh = new Set(inserted.map((r) => num(r.itemId)));
  // An item given twice in one call is recorded by its first row, as one INSERT OR IGNORE after the other does.
  return rs.map((r) => fresh.delete(r.itemId));
}

/** Adds n to a batch's processed count: the batch, and whether that made it complete (0 or 1, as on SQLite). */
async function bumpProcessed(db: PgDb, batchId: string, n: number): Promise<CountedBatch | undefined> {
  const [row] = await rows<CountedBatch>(
    db,
    sql`UPDATE batches SET total_processed = total_processed + ${n}
         WHERE id = ${batchId}
         RETURNING id, lender_id AS "lenderId", source, schedule_id AS "scheduleId", webhook_url AS "webhookUrl",
                   (total_processed >= total_authorizers AND status <> 'completed')::int AS completed`,
  );
  return row;
}

interface RawExportRow extends Omit<ExportRow, 'rid' | 'cents' | 'at' | 'asOf'> {
  rid: string | number;
  cents: string | number | null;
  at: string | number;
  asOf: string | number | null;
}

/** One export chunk: a batch's results after `afterId` with their items' details. */
async function exportPage(db: PgDb, batchId: string, afterId: number, limit: number): Promise<ExportRow[]> {
  const page = await rows<RawExportRow>(
    db,
    sql`SELECT r.id AS rid, r.authorizer_unique_id AS aid, r.batch_id AS "batchId", r.institution, i.phone, i.zip,
               r.balance_cents AS cents, r.export_status AS status, b.creator, r.recorded_at AS at, r.balance_as_of AS "asOf", i.metadata
          FROM balance_results r
          JOIN batch_items i ON i.id = r.item_id
          JOIN batches b ON b.id = r.batch_id
         WHERE r.batch_id = ${batchId} AND r.id > ${afterId}
         ORDER BY r.id LIMIT ${limit}`,
  );
  return page.map((r) => ({ ...r, rid: num(r.rid), cents: numOrNull(r.cents), at: num(r.at), asOf: numOrNull(r.asOf) }));
}

/** The distinct metadata keys of one slice of a batch's items with metadata after `afterSeq`, and its last seq. */
async function metadataKeysPage(db: PgDb, batchId: string, afterSeq: number, limit: number): Promise<{ keys: string[]; last: number | null }> {
  const [row] = await rows<{ last: number | null }>(
    db,
    sql`SELECT MAX(seq) AS last FROM (SELECT seq FROM batch_items WHERE batch_id = ${batchId} AND seq > ${afterSeq} AND metadata IS NOT NULL ORDER BY seq LIMIT ${limit}) s`,
  );
  const last = row!.last;
  if (last === null) return { keys: [], last: null };
  const keys = await rows<{ key: string }>(
    db,
    sql`SELECT DISTINCT k.key FROM batch_items i
          CROSS JOIN LATERAL json_object_keys(CASE WHEN json_typeof(i.metadata::json) = 'object' THEN i.metadata::json ELSE '{}'::json END) AS k(key)
         WHERE i.batch_id = ${batchId} AND i.seq > ${afterSeq} AND i.seq <= ${last} AND i.metadata IS NOT NULL`,
  );
  return { keys: keys.map((r) => r.key), last };
}

interface RawHit extends Omit<ThresholdHit, 'cents' | 'threshold'> {
  cents: string | number;
  threshold: string | number;
}

/** Threshold hits of a batch, in request order. */
async function thresholdHits(db: PgDb, batchId: string): Promise<ThresholdHit[]> {
  const hits = await rows<RawHit>(
    db,
    sql`SELECT r.authorizer_unique_id AS aid, r.institution, r.balance_cents AS cents, i.threshold_cents AS threshold
          FROM balance_results r JOIN batch_items i ON i.id = r.item_id
         WHERE r.batch_id = ${batchId} AND i.threshold_cents IS NOT NULL AND r.balance_cents IS NOT NULL AND r.balance_cents >= i.threshold_cents
         ORDER BY i.seq`,
  );
  return hits.map((h) => ({ ...h, cents: num(h.cents), threshold: num(h.threshold) }));
}

export const pgBalanceStore: BalanceStore = {
  readsPerClaim: 128,
  async cachedResponse(c, lenderId, bodyHash, since) {
    return findCachedResponse(readerOf(c), lenderId, bodyHash, since);
  },
  acceptBatch(c, a) {
    // One transaction a request (there is no shared commit to join here): under the lender's backlog lock,
    // which every accept of the lender takes before it reads, the replay entry of an identical body accepted
    // meanwhile is seen, and the count cannot change until this one commits.
    // Three statements: the lock, the checks, the rows.
    return transaction(c, async (tx) => {
      await lockFor(tx, BACKLOG_LOCK, a.batch.lenderId);
      const db = writerOf(tx);
      const { hit, pending } = await acceptChecks(db, a.batch.lenderId, a.replay?.bodyHash ?? null, a.replay?.since ?? 0);
      if (hit) return { kind: 'replay' as const, hit };
      if (pending + a.batch.total > a.maxPending) return { kind: 'over_backlog' as const, pending };
      await insertBatchRows(db, a.batch, a.payload, a.replay);
      return { kind: 'accepted' as const };
    });
  },
  async serializeBacklog(c, lenderId) {
    await lockFor(c, BACKLOG_LOCK, lenderId);
  },
  async insertBatch(c, batch, payload) {
    await insertBatchRows(writerOf(c), batch, payload);
  },
  async pendingAuthorizers(c, lenderId) {
    return pendingAuthorizers(readerOf(c), lenderId);
  },
  async dropExpiredIdempotency(c, before, limit) {
    // Entries another cleanup is deleting are left to it.
    const gone = await rows<{ one: number }>(
      writerOf(c),
      sql`DELETE FROM idempotency_keys WHERE (lender_id, body_hash) IN
            (SELECT lender_id, body_hash FROM idempotency_keys WHERE created_at < ${before} ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING 1 AS one`,
    );
    return gone.length;
  },

  async openBatches(c) {
    return openBatches(readerOf(c));
  },
  async claimDueReads(c, want, now) {
    return itemQueue(c.deps.pg!).claim(c, want, now);
  },
  async lockReads(c, ids) {
    if (ids.length === 0) return;
    await writerOf(c).execute(sql`SELECT id FROM batch_items WHERE id = ANY(${listOf(ids)}::bigint[]) ORDER BY id FOR UPDATE`);
  },
  async finishReads(c, finishes) {
    // The finishes of one shape (which columns they set) in one UPDATE. A read finished twice in one call ends
    // as on SQLite, where each finish runs after the other: the first made under the claim holding it wins
    // (it lets the claim go), and a later one no longer holds it. So a read's second finish is applied only
    // after its first, in a round of its own; a call that names each read once is one round, as before.
    const rounds: (typeof finishes)[number][][] = [];
    const times = new Map<number, number>();
    for (const f of finishes) {
      const n = times.get(f.id) ?? 0;
      times.set(f.id, n + 1);
      (rounds[n] ??= []).push(f);
    }
    for (const round of rounds) await itemQueue(c.deps.pg!).finishAll(c, round);
  },
  async releaseReadLeases(c, prefix) {
    // Only this replica's own: another replica's claim may be alive, and is taken over when its lease runs out.
    return itemQueue(c.deps.pg!).release(c, prefix);
  },
  async batchStatus(c, batchId) {
    const [row] = await rows<{ status: BatchStatus }>(readerOf(c), sql`SELECT status FROM batches WHERE id = ${batchId}`);
    return row?.status ?? null;
  },
  async lockWaitingBatch(c, batchId) {
    // Held until the transaction ends: a second starter waits, then finds it started; an erasure that locked
    // it first is waited for, so the payload read next is the scrubbed one.
    const [row] = await rows<{ id: string }>(writerOf(c), sql`SELECT id FROM batches WHERE id = ${batchId} AND status = 'pending' FOR UPDATE`);
    return row !== undefined;
  },
  async waitingItems(c, batchId) {
    const [row] = await readerOf(c).select({ items: batchPayloads.items }).from(batchPayloads).where(eq(batchPayloads.batchId, batchId));
    return row?.items;
  },
  async startBatch(c, batchId, lenderId, items) {
    const db = writerOf(c);
    await insertItems(db, batchId, lenderId, items);
    await db.update(batches).set({ status: 'processing' }).where(eq(batches.id, batchId));
    // The clear part of the payload now lives in the queue rows; the copy goes (the empty packed list).
    await db.update(batchPayloads).set({ items: EMPTY_ITEMS }).where(eq(batchPayloads.batchId, batchId));
  },
  async sealedPayload(c, batchId) {
    const [row] = await readerOf(c).select({ sealed: batchPayloads.sealed }).from(batchPayloads).where(eq(batchPayloads.batchId, batchId));
    return row?.sealed;
  },
  async recordResults(c, rs) {
    return recordResults(writerOf(c), rs);
  },
  async lockBatches(c, batchIds) {
    if (batchIds.length === 0) return;
    // The batches in id order, then their lenders' backlog rows (which their triggers move) in lender order:
    // every flush takes what it moves in the same order, whatever order it then counts in.
    const db = writerOf(c);
    const locked = await rows<{ lenderId: string }>(db, sql`SELECT lender_id AS "lenderId" FROM batches WHERE id = ANY(${listOf(batchIds)}::text[]) ORDER BY id FOR UPDATE`);
    const lenders = [...new Set(locked.map((r) => r.lenderId))];
    await db.execute(sql`SELECT lender_id FROM balance_backlog WHERE lender_id = ANY(${listOf(lenders)}::text[]) ORDER BY lender_id FOR UPDATE`);
  },
  async countProcessed(c, batchId, n) {
    return bumpProcessed(writerOf(c), batchId, n);
  },
  async completeBatch(c, batchId, at) {
    await writerOf(c).update(batches).set({ status: 'completed', completedAt: at }).where(eq(batches.id, batchId));
  },

  async batchOf(c, lenderId, batchId) {
    const [b] = await readerOf(c)
      .select()
      .from(batches)
      .where(and(eq(batches.id, batchId), eq(batches.lenderId, lenderId)));
    return b;
  },
  async ownedBatchIds(c, lenderId, batchIds) {
    if (batchIds.length === 0) return [];
    const owned = await readerOf(c)
      .select({ id: batches.id })
      .from(batches)
      .where(and(eq(batches.lenderId, lenderId), inArray(batches.id, batchIds)));
    return owned.map((r) => r.id);
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
      .limit(take);
  },
  async resultCountsByStatus(c, batchId) {
    return readerOf(c)
      .select({ status: balanceResults.exportStatus, n: count() })
      .from(balanceResults)
      .where(eq(balanceResults.batchId, batchId))
      .groupBy(balanceResults.exportStatus);
  },
  async historyCount(c, lenderId, aid) {
    const [row] = await readerOf(c)
      .select({ n: count() })
      .from(balanceResults)
      .where(and(eq(balanceResults.lenderId, lenderId), eq(balanceResults.authorizerUniqueId, aid)));
    return row!.n;
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
      .limit(take);
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
      .limit(take);
  },
  async thresholdHits(c, batchId) {
    return thresholdHits(readerOf(c), batchId);
  },
  async latestResultOf(c, lenderId, aid) {
    const [row] = await readerOf(c)
      .select({ balanceKind: balanceResults.balanceKind, balanceAsOf: balanceResults.balanceAsOf, detail: balanceResults.detail })
      .from(balanceResults)
      .where(and(eq(balanceResults.lenderId, lenderId), eq(balanceResults.authorizerUniqueId, aid)))
      .orderBy(desc(balanceResults.id))
      .limit(1);
    return row;
  },
  async latestResultsAmong(c, lenderId, aids) {
    if (aids.length === 0) return [];
    // One probe of the history index per authorizer (as latestResultOf), whatever the table's statistics say.
    const found = await rows<LatestResultOf>(
      readerOf(c),
      sql`SELECT j.aid, r."balanceKind", r."balanceAsOf", r.detail FROM unnest(${listOf(aids)}::text[]) AS j(aid)
            CROSS JOIN LATERAL (SELECT balance_kind AS "balanceKind", balance_as_of AS "balanceAsOf", detail FROM balance_results
                                 WHERE lender_id = ${lenderId} AND authorizer_unique_id = j.aid ORDER BY id DESC LIMIT 1) r`,
    );
    return found.map((r) => ({ ...r, balanceAsOf: numOrNull(r.balanceAsOf) }));
  },
  async exportPage(c, batchId, afterId, limit) {
    return exportPage(readerOf(c), batchId, afterId, limit);
  },
  async metadataKeysPage(c, batchId, afterSeq, limit) {
    return metadataKeysPage(readerOf(c), batchId, afterSeq, limit);
  },

  async eraseQueuedDetails(c, lenderId, aid) {
    // The rows locked in id order, as a flush locks them.
    await writerOf(c).execute(
      sql`UPDATE batch_items SET phone = NULL, zip = NULL, metadata = NULL
           WHERE id IN (SELECT id FROM batch_items WHERE lender_id = ${lenderId} AND authorizer_unique_id = ${aid} ORDER BY id FOR UPDATE)`,
    );
  },
  async waitingPayloads(c, lenderId) {
    // Inside a transaction the waiting batches are locked (in id order) until it ends: none of them starts
    // meanwhile from the list read here, and one that started first is no longer waiting when read.
    const lock = c.tx ? sql` ORDER BY b.id FOR UPDATE OF b` : sql``;
    return rows<{ batchId: string; items: Uint8Array }>(
      readerOf(c),
      sql`SELECT p.batch_id AS "batchId", p.items FROM batch_payloads p JOIN batches b ON b.id = p.batch_id
           WHERE b.lender_id = ${lenderId} AND b.status = 'pending'${lock}`,
    );
  },
  async replacePayloadItems(c, batchId, items) {
    await writerOf(c).update(batchPayloads).set({ items }).where(eq(batchPayloads.batchId, batchId));
  },
};

