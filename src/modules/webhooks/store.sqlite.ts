import { and, asc, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { webhookDeliveries, webhookEndpoints, webhookSecrets } from '../../../db/schema';
import type { Db } from '../../platform/db';
import { LeaseQueue } from '../../platform/lease-queue';
import { olderThan } from '../../platform/pagination';
import { listOf, lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import { CUT_SHORT, SENDING } from './store-shared';
import type { DeliveryListFilter, DueRow, NewDelivery, WebhookStore } from './store';

// The outbox's raw prepared statements, each on a measured hot path (bun run bench webhooks: 2,000
// deliveries enqueued in one transaction, then sent at thousands per second). bun:sqlite caches each by its text.

/** One delivery into the outbox, inside the transaction of the change that causes it. */
const insertDelivery = (db: Db, v: NewDelivery) =>
  db.$client
    .query(
      `INSERT INTO webhook_deliveries (id, lender_id, type, target_url, payload, state, attempts, created_at, next_attempt_at, lease_until)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, 0)`,
    )
    .run(v.id, v.lenderId, v.type, v.url, v.body, v.now, v.now);

function insertDeliveries(db: Db, deliveries: NewDelivery[]): void {
  for (const d of deliveries) insertDelivery(db, d);
}

/** Due deliveries, oldest first, leaving out those a run already holds (a JSON array of ids, bound as ?3). */
const dueDeliveries = (db: Db, due: string, now: number, limit: number, excludeJson: string) =>
  db.$client
    .query<DueRow, [number, number, string]>(
      `SELECT id, lender_id AS lenderId, type, target_url AS targetUrl, payload, attempts, first_attempt_at AS firstAttemptAt
         FROM webhook_deliveries
        WHERE ${due} AND id NOT IN (SELECT value FROM json_each(?3))
        ORDER BY next_attempt_at LIMIT ?2`,
    )
    .all(now, limit, excludeJson);

/**
 * Every attempt is recorded beside its delivery, opened before the request leaves (in the claim's
 * transaction, so it costs no commit of its own) and completed when the answer is recorded: a crash
 * mid-send leaves the row, never a gap in the log.
 */
const openAttempt = (db: Db, deliveryId: string, at: number): number =>
  db.$client
    .query<{ id: number }, [string, number, string]>(
      'INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms) VALUES (?, ?, NULL, ?, 0) RETURNING id',
    )
    .get(deliveryId, at, SENDING)!.id;

const completeAttempt = (db: Db, v: { id: number; at: number; statusCode: number | null; error: string | null; durationMs: number }) =>
  db.$client
    .query('UPDATE webhook_attempts SET attempted_at = ?, status_code = ?, error = ?, duration_ms = ? WHERE id = ?')
    .run(v.at, v.statusCode, v.error, v.durationMs, v.id);

/** An attempt opened at the claim whose request never left (the run stopped first). */
const dropAttempt = (db: Db, id: number) => db.$client.query('DELETE FROM webhook_attempts WHERE id = ?').run(id);

/**
 * At start: attempts a stopped process left open are said to have been cut short. Only the deliveries it
 * still held (a lease) can have one, so the scan stays on the delivery index.
 */
const closeCutShortAttempts = (db: Db) =>
  db.$client
    .query(
      `UPDATE webhook_attempts SET error = ?1
        WHERE error = ?2 AND delivery_id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND lease_until > 0)`,
    )
    .run(CUT_SHORT, SENDING).changes;

/** A lender's endpoints (at most ten), read for each event pushed. */
const endpointTargets = (db: Db, lenderId: string) =>
  db.$client.query<{ url: string; eventTypes: string }, [string]>('SELECT url, event_types AS eventTypes FROM webhook_endpoints WHERE lender_id = ?').all(lenderId);

const deliveryRows = (db: Db, f: DeliveryListFilter) => {
  const conds = [eq(webhookDeliveries.lenderId, f.lenderId)];
  if (f.status) conds.push(eq(webhookDeliveries.state, f.status));
  if (f.type) conds.push(eq(webhookDeliveries.type, f.type));
  if (f.after) conds.push(olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, f.after.c, f.after.i));
  return db
    .select()
    .from(webhookDeliveries)
    .where(and(...conds))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(f.take)
    .all();
};

const endpointRows = (db: Db, lenderId: string) =>
  db.select().from(webhookEndpoints).where(eq(webhookEndpoints.lenderId, lenderId)).orderBy(asc(webhookEndpoints.createdAt)).all();

/** What a claim of deliveries is given: its lease, and the deliveries a run already holds (left out). */
interface DeliveryClaim {
  leaseMs: number;
  exclude: string[];
}
type DeliveryQueue = LeaseQueue<typeof webhookDeliveries, DueRow, DeliveryClaim>;
const queues = new WeakMap<Db, DeliveryQueue>();

/** The delivery queue of a database, one per connection (its finalizing statements are cached). */
function deliveryQueue(db: Db): DeliveryQueue {
  let q = queues.get(db);
  if (!q) {
    q = new LeaseQueue<typeof webhookDeliveries, DueRow, DeliveryClaim>(db, webhookDeliveries, {
      leaseMs: (claim) => claim.leaseMs,
      pick: ({ db, want, now, due, input, lease }) => {
        const rows = dueDeliveries(db, due, now, want, listOf(input.exclude));
        // Each claimed delivery's attempt row is written in the claim's transaction, before any request leaves.
        for (const r of rows) r.attemptId = openAttempt(db, r.id, now);
        lease(rows);
      },
    });
    queues.set(db, q);
  }
  return q;
}

export const sqliteWebhookStore: WebhookStore = {
  async currentSecret(c, lenderId) {
    return readerOf(c)
      .select({ secretSealed: webhookSecrets.secretSealed, createdAt: webhookSecrets.createdAt })
      .from(webhookSecrets)
      .where(and(eq(webhookSecrets.lenderId, lenderId), isNull(webhookSecrets.expiresAt)))
      .get();
  },
  async previousSecretExpiry(c, lenderId, now) {
    const row = readerOf(c)
      .select({ expiresAt: webhookSecrets.expiresAt })
      .from(webhookSecrets)
      .where(and(eq(webhookSecrets.lenderId, lenderId), gt(webhookSecrets.expiresAt, now)))
      .orderBy(desc(webhookSecrets.expiresAt))
      .get();
    return row?.expiresAt ?? null;
  },
  async signingSecrets(c, lenderId, now) {
    return readerOf(c)
      .select({ sealed: webhookSecrets.secretSealed })
      .from(webhookSecrets)
      .where(and(eq(webhookSecrets.lenderId, lenderId), or(isNull(webhookSecrets.expiresAt), gt(webhookSecrets.expiresAt, now))))
      // Ids are time-ordered: a secret made in the same millisecond as the one it replaced still comes first.
      .orderBy(desc(webhookSecrets.createdAt), desc(webhookSecrets.id))
      .all()
      .map((r) => r.sealed);
  },
  async serializeSecrets(c, lenderId) {
    await lockFor(c, 'webhook-secret', lenderId);
  },
  async addSecret(c, secret) {
    writerOf(c)
      .insert(webhookSecrets)
      .values({ ...secret, expiresAt: null })
      .run();
  },
  async expireCurrentSecret(c, lenderId, expiresAt) {
    writerOf(c)
      .update(webhookSecrets)
      .set({ expiresAt })
      .where(and(eq(webhookSecrets.lenderId, lenderId), isNull(webhookSecrets.expiresAt)))
      .run();
  },

  async enqueueDeliveries(c, deliveries) {
    insertDeliveries(writerOf(c), deliveries);
  },
  async listDeliveries(c, f) {
    return deliveryRows(readerOf(c), f);
  },
  async countPendingDeliveries(c) {
    const row = readerOf(c)
      .select({ n: sql<number>`count(*)` })
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.state, 'pending'))
      .get();
    return row?.n ?? 0;
  },

  async claimDueDeliveries(c, want, now, leaseMs, exclude) {
    return deliveryQueue(c.deps.db).claim(c, want, now, { leaseMs, exclude });
  },
  async recordAttempts(c, records) {
    const db = writerOf(c);
    const queue = deliveryQueue(c.deps.db);
    for (const r of records) {
      if (!r.sent) {
        if (r.attemptId !== undefined) dropAttempt(db, r.attemptId);
        queue.finish(c, r, { state: 'pending' });
        continue;
      }
      completeAttempt(db, { id: r.attemptId ?? openAttempt(db, r.id, r.attempt.at), ...r.attempt });
      queue.finish(c, r, {
        state: r.state,
        attempts: r.attempts,
        nextAttemptAt: r.nextAttemptAt,
        set: {
          lastAttemptAt: r.attempt.at,
          firstAttemptAt: r.firstAttemptAt,
          lastStatusCode: r.attempt.statusCode,
          lastError: r.attempt.error,
          finishedAt: r.finishedAt,
        },
      });
    }
  },
  async releaseDeliveryLeases(c, prefix) {
    closeCutShortAttempts(writerOf(c));
    return deliveryQueue(c.deps.db).release(c, prefix);
  },

  async listEndpoints(c, lenderId) {
    return endpointRows(readerOf(c), lenderId);
  },
  async countEndpoints(c, lenderId) {
    return readerOf(c).select({ id: webhookEndpoints.id }).from(webhookEndpoints).where(eq(webhookEndpoints.lenderId, lenderId)).all().length;
  },
  async serializeEndpoints(c, lenderId) {
    await lockFor(c, 'webhook-endpoints', lenderId);
  },
  async addEndpoint(c, row) {
    writerOf(c).insert(webhookEndpoints).values(row).run();
  },
  async deleteEndpoint(c, lenderId, id) {
    const gone = writerOf(c)
      .delete(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.lenderId, lenderId)))
      .returning({ id: webhookEndpoints.id })
      .all();
    return gone.length > 0;
  },
  async endpointTargets(c, lenderId) {
    return endpointTargets(readerOf(c), lenderId);
  },
};
