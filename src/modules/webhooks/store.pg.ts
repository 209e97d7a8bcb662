import { and, asc, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { webhookDeliveries, webhookEndpoints, webhookSecrets } from '../../../db/schema-pg';
import { olderThan } from '../../platform/pagination';
import { listOf, lockFor, num, numOrNull, readerOf, rows, writerOf } from '../../platform/sql/pg';
import type { AttemptRecord, DueRow, WebhookStore } from './store';
import { CUT_SHORT, SENDING } from './store-shared';
import { LeaseQueue } from '../../platform/lease-queue.pg';

// The webhooks store on PostgreSQL. Transactions run side by side here, so what SQLite's single writer gave
// for free is said outright:
// - a lender's endpoints are counted and added under the lender's advisory lock (serializeEndpoints), so ten
//   is a bound and not a hope;
// - a lender's first secret is looked for again and created under the lender's advisory lock
//   (serializeSecrets), so two first uses make one secret and both sign with it;
// - a claim takes due deliveries FOR UPDATE SKIP LOCKED in the statement that leases them (the queue of
//   platform/lease-queue.pg.ts), so two claimers never take the same delivery and neither waits for the other;
// - a claimed delivery's outcome is recorded only while it is still pending: a recorded final state never
//   goes back.


interface ClaimedRaw {
  id: string;
  attempt_id: string | number;
  lender_id: string;
  type: DueRow['type'];
  target_url: string;
  payload: string;
  attempts: number;
  first_attempt_at: string | number | null;
}

/** What a claim of deliveries is given: its lease, and the deliveries a run already holds (left out). */
interface DeliveryClaim {
  leaseMs: number;
  exclude: string[];
}

/**
 * The outbox as a queue. A claim is one statement: the due deliveries, oldest first, that no other claim holds
 * (SKIP LOCKED: a delivery another transaction is leasing right now is passed over, not waited for, and once
 * that one commits its lease makes it no longer due), leased, each with its attempt row opened before any
 * request leaves. A delivery taken over from a claim whose lease ran out (its replica stopped) has that
 * claim's attempt, left open, marked cut short.
 */
const deliveryQueue = new LeaseQueue(webhookDeliveries, {
  leaseMs: (claim: DeliveryClaim) => claim.leaseMs,
  statements: 'one',
  pick: async ({ db, want, now, due, input, leasing }) => {
    const pick = sql`SELECT id FROM webhook_deliveries WHERE ${due} AND id <> ALL(${listOf(input.exclude)}::text[]) ORDER BY next_attempt_at, id LIMIT ${want}`;
    const claimed = await rows<ClaimedRaw>(
      db,
      sql`
      WITH ${leasing(pick, sql`id, lender_id, type, target_url, payload, attempts, first_attempt_at, next_attempt_at`)},
      opened AS (
        INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms)
        SELECT id, ${now}, NULL, ${SENDING}, 0 FROM leased ORDER BY next_attempt_at, id
        RETURNING id, delivery_id
      ),
      closed AS (
        UPDATE webhook_attempts SET error = ${CUT_SHORT}
         WHERE error = ${SENDING} AND delivery_id IN (SELECT id FROM leased)
      )
      SELECT l.id, o.id AS attempt_id, l.lender_id, l.type, l.target_url, l.payload, l.attempts, l.first_attempt_at
        FROM leased l JOIN opened o ON o.delivery_id = l.id
       ORDER BY l.next_attempt_at, l.id`,
    );
    return claimed.map(
      (r): Omit<DueRow, 'leaseToken'> => ({
        id: r.id,
        attemptId: num(r.attempt_id),
        lenderId: r.lender_id,
        type: r.type,
        targetUrl: r.target_url,
        payload: r.payload,
        attempts: r.attempts,
        firstAttemptAt: numOrNull(r.first_attempt_at),
      }),
    );
  },
});

export const pgWebhookStore: WebhookStore = {
  async currentSecret(c, lenderId) {
    const [row] = await readerOf(c)
      .select({ secretSealed: webhookSecrets.secretSealed, createdAt: webhookSecrets.createdAt })
      .from(webhookSecrets)
      .where(and(eq(webhookSecrets.lenderId, lenderId), isNull(webhookSecrets.expiresAt)))
      .limit(1);
    return row;
  },
  async previousSecretExpiry(c, lenderId, now) {
    const [row] = await readerOf(c)
      .select({ expiresAt: webhookSecrets.expiresAt })
      .from(webhookSecrets)
      .where(and(eq(webhookSecrets.lenderId, lenderId), gt(webhookSecrets.expiresAt, now)))
      .orderBy(desc(webhookSecrets.expiresAt))
      .limit(1);
    return row?.expiresAt ?? null;
  },
  async signingSecrets(c, lenderId, now) {
    const found = await readerOf(c)
      .select({ sealed: webhookSecrets.secretSealed })
      .from(webhookSecrets)
      .where(and(eq(webhookSecrets.lenderId, lenderId), or(isNull(webhookSecrets.expiresAt), gt(webhookSecrets.expiresAt, now))))
      // Ids are time-ordered: a secret made in the same millisecond as the one it replaced still comes first.
      .orderBy(desc(webhookSecrets.createdAt), desc(webhookSecrets.id));
    return found.map((r) => r.sealed);
  },
  async serializeSecrets(c, lenderId) {
    await lockFor(c, 'webhook-secret', lenderId);
  },
  async addSecret(c, secret) {
    await writerOf(c)
      .insert(webhookSecrets)
      .values({ ...secret, expiresAt: null });
  },
  async expireCurrentSecret(c, lenderId, expiresAt) {
    await writerOf(c)
      .update(webhookSecrets)
      .set({ expiresAt })
      .where(and(eq(webhookSecrets.lenderId, lenderId), isNull(webhookSecrets.expiresAt)));
  },

  async enqueueDeliveries(c, deliveries) {
    if (deliveries.length === 0) return;
    // One statement whatever the count: a run's events can put thousands into the outbox in one transaction.
    await writerOf(c).execute(sql`
      INSERT INTO webhook_deliveries (id, lender_id, type, target_url, payload, state, attempts, created_at, next_attempt_at, lease_until)
      SELECT id, lender_id, type, target_url, payload, 'pending', 0, now, now, 0
        FROM unnest(${listOf(deliveries.map((d) => d.id))}::text[], ${listOf(deliveries.map((d) => d.lenderId))}::text[],
                    ${listOf(deliveries.map((d) => d.type))}::text[], ${listOf(deliveries.map((d) => d.url))}::text[],
                    ${listOf(deliveries.map((d) => d.body))}::text[], ${listOf(deliveries.map((d) => d.now))}::bigint[])
             AS v(id, lender_id, type, target_url, payload, now)`);
  },
  async listDeliveries(c, f) {
    const conds = [eq(webhookDeliveries.lenderId, f.lenderId)];
    if (f.status) conds.push(eq(webhookDeliveries.state, f.status));
    if (f.type) conds.push(eq(webhookDeliveries.type, f.type));
    if (f.after) conds.push(olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, f.after.c, f.after.i));
    return readerOf(c)
      .select()
      .from(webhookDeliveries)
      .where(and(...conds))
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
      .limit(f.take);
  },
  async countPendingDeliveries(c) {
    const [row] = await rows<{ n: number }>(readerOf(c), sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'pending'`);
    return row?.n ?? 0;
  },

  async claimDueDeliveries(c, want, now, leaseMs, exclude) {
    if (want <= 0) return [];
    return deliveryQueue.claim(c, want, now, { leaseMs, exclude });
  },
  async recordAttempts(c, records) {
    if (records.length === 0) return;
    const db = writerOf(c);
    // The last record of a delivery is what stands, as when they are applied one after the other.
    const last = new Map<string, AttemptRecord>();
    for (const r of records) last.set(r.id, r);
    const unsent = [...last.values()].filter((r) => !r.sent);
    const sent = [...last.values()].filter((r): r is Extract<AttemptRecord, { sent: true }> => r.sent);
    // Every attempt id a record names: a delivery claimed twice over in one list keeps only its last outcome,
    // yet each attempt opened for it is dealt with.
    const dropped = records.filter((r) => !r.sent && r.attemptId !== undefined).map((r) => r.attemptId!);

    if (dropped.length > 0) await db.execute(sql`DELETE FROM webhook_attempts WHERE id = ANY(${listOf(dropped)}::bigint[])`);
    // Released as it was: still pending, due when it was (while this claim holds it).
    await deliveryQueue.finishAll(
      c,
      unsent.map((r) => ({ id: r.id, leaseToken: r.leaseToken, finish: { state: 'pending' } })),
      { whilePending: true },
    );
    const sentRecords = records.filter((r): r is Extract<AttemptRecord, { sent: true }> => r.sent);
    const opened = sentRecords.filter((r) => r.attemptId !== undefined);
    const unopened = sentRecords.filter((r) => r.attemptId === undefined);
    if (opened.length > 0) {
      await db.execute(sql`
        UPDATE webhook_attempts a
           SET attempted_at = v.at, status_code = v.status_code, error = v.error, duration_ms = v.duration_ms
          FROM unnest(${listOf(opened.map((r) => r.attemptId!))}::bigint[], ${listOf(opened.map((r) => r.attempt.at))}::bigint[],
                      ${listOf(opened.map((r) => r.attempt.statusCode))}::int[], ${listOf(opened.map((r) => r.attempt.error))}::text[],
                      ${listOf(opened.map((r) => r.attempt.durationMs))}::bigint[])
               AS v(id, at, status_code, error, duration_ms)
         WHERE a.id = v.id`);
    }
    if (unopened.length > 0) {
      await db.execute(sql`
        INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms)
        SELECT delivery_id, at, status_code, error, duration_ms
          FROM unnest(${listOf(unopened.map((r) => r.id))}::text[], ${listOf(unopened.map((r) => r.attempt.at))}::bigint[],
                      ${listOf(unopened.map((r) => r.attempt.statusCode))}::int[], ${listOf(unopened.map((r) => r.attempt.error))}::text[],
                      ${listOf(unopened.map((r) => r.attempt.durationMs))}::bigint[]) WITH ORDINALITY
               AS v(delivery_id, at, status_code, error, duration_ms, n)
         ORDER BY n`);
    }
    // Only while still pending and still held by this claim: a delivery's recorded final state never moves
    // back, and a claim whose lease lapsed and was taken again records its attempt, not its state.
    await deliveryQueue.finishAll(
      c,
      sent.map((r) => ({
        id: r.id,
        leaseToken: r.leaseToken,
        finish: {
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
        },
      })),
      { whilePending: true },
    );
  },
  async releaseDeliveryLeases(c, prefix, now) {
    const db = writerOf(c);
    // Only the deliveries still held (a lease) can have an attempt left open, so the scan stays on them: this
    // replica's own from before a restart, and any whose lease ran out (its holder is gone). An attempt of a
    // live replica is being sent right now and is left alone.
    await db.execute(sql`
      UPDATE webhook_attempts SET error = ${CUT_SHORT}
       WHERE error = ${SENDING} AND delivery_id IN (
         SELECT id FROM webhook_deliveries
          WHERE state = 'pending' AND lease_until > 0 AND (starts_with(lease_token, ${prefix}) OR lease_until <= ${now}))`);
    return deliveryQueue.release(c, prefix);
  },

  async listEndpoints(c, lenderId) {
    return readerOf(c)
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.lenderId, lenderId))
      .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id));
  },
  async countEndpoints(c, lenderId) {
    const [row] = await rows<{ n: number }>(readerOf(c), sql`SELECT count(*)::int AS n FROM webhook_endpoints WHERE lender_id = ${lenderId}`);
    return row?.n ?? 0;
  },
  async serializeEndpoints(c, lenderId) {
    await lockFor(c, 'webhook-endpoints', lenderId);
  },
  async addEndpoint(c, row) {
    await writerOf(c).insert(webhookEndpoints).values(row);
  },
  async deleteEndpoint(c, lenderId, id) {
    const gone = await writerOf(c)
      .delete(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.lenderId, lenderId)))
      .returning({ id: webhookEndpoints.id });
    return gone.length > 0;
  },
  async endpointTargets(c, lenderId) {
    return readerOf(c)
      .select({ url: webhookEndpoints.url, eventTypes: webhookEndpoints.eventTypes })
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.lenderId, lenderId));
  },
};
