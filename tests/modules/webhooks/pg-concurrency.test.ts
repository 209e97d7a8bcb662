// engine: postgres
// The webhooks' check-then-write rules on PostgreSQL, where transactions run side by side under READ COMMITTED
// (on SQLite one writer at a time made them hold by themselves): 20 callers at once, each in a transaction of
// its own on a connection of its own.
// - at most ten endpoints per lender: 20 creations at once make ten and refuse ten;
// - the signing secret created on first read: 20 first reads at once make one secret and all see it, and 20
//   rotations at once leave one current secret;
// - the delivery claim: 20 claims at once never take one delivery twice, and every claimed delivery has its
//   attempt row opened.
// Besides, the store's other statements are run once against the real server (the outbox's writes and reads,
// recording attempts, releasing leases at start).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { lenders, webhookAttempts, webhookDeliveries, webhookEndpoints, webhookSecrets } from '../../../db/schema-pg';
import type { Ctx, Deps } from '../../../src/deps';
import { createEndpoint, MAX_ENDPOINTS } from '../../../src/modules/webhooks/endpoints';
import { readSecret, rotateSecret } from '../../../src/modules/webhooks/service';
import { CUT_SHORT, SENDING, type DueRow, type NewDelivery } from '../../../src/modules/webhooks/store';
import { FakeClock } from '../../../src/platform/clock';
import { transaction } from '../../../src/platform/context';
import { replicaPrefix } from '../../../src/platform/lease-token';
import { Conflict } from '../../../src/platform/errors';
import { newId } from '../../../src/platform/ids';
import { openPg, type PgHandle } from '../../../src/platform/pg';
import { generateVaultKey, Vault } from '../../../src/platform/vault';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;

if (!onPostgres) {
  test('PostgreSQL: not applicable without DATABASE_URL=postgres://… (the webhooks store on SQLite is covered by the other tests here)', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  let database: ReturnType<typeof freshPgDatabase>;
  let pg: PgHandle;
  let deps: Deps;
  const clock = new FakeClock(Date.UTC(2026, 5, 1, 12));

  beforeAll(() => {
    database = freshPgDatabase();
    // More connections than callers: each transaction holds one, so all 20 are open at once.
    pg = openPg(database.url, { max: CALLERS + 5 });
    deps = {
      ...pgStoreDeps(pg),
      clock,
      vault: new Vault(generateVaultKey()),
      config: { webhookAllowPrivateTargets: false },
    } as unknown as Deps;
  });
  afterAll(async () => {
    await pg.close();
    database.drop();
  });

  async function newLender(): Promise<Ctx> {
    const lender = { id: newId(), name: `lender ${newId()}`, debitCardApproved: false };
    await pg.db.insert(lenders).values({ ...lender, createdAt: clock.now() });
    return { deps, lender } as Ctx;
  }

  const count = async (query: ReturnType<typeof sql>): Promise<number> => {
    const [row] = (await pg.db.execute(query)) as unknown as { n: number }[];
    return row!.n;
  };

  describe('at most ten endpoints per lender', () => {
    test(`${CALLERS} creations at once: exactly ${MAX_ENDPOINTS} made, the others refused with a conflict`, async () => {
      const ctx = await newLender();
      const results = await Promise.allSettled(
        Array.from({ length: CALLERS }, (_, i) =>
          createEndpoint({ ctx, input: { url: `https://93.184.215.14/hooks/${i}`, event_types: ['PAYMENT_EVENT'] } }),
        ),
      );
      const made = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(made.length).toBe(MAX_ENDPOINTS);
      expect(refused.length).toBe(CALLERS - MAX_ENDPOINTS);
      for (const r of refused) expect(r.reason).toBeInstanceOf(Conflict);
      expect(await count(sql`SELECT count(*)::int AS n FROM ${webhookEndpoints} WHERE lender_id = ${ctx.lender.id}`)).toBe(MAX_ENDPOINTS);
      expect(await ctx.deps.stores.webhooks.countEndpoints(ctx, ctx.lender.id)).toBe(MAX_ENDPOINTS);
    });

    test('another lender is not held up by the first one’s bound', async () => {
      const [a, b] = [await newLender(), await newLender()];
      const results = await Promise.allSettled(
        Array.from({ length: CALLERS }, (_, i) =>
          createEndpoint({ ctx: i % 2 ? a : b, input: { url: `https://93.184.215.14/hooks/${i}`, event_types: ['PAYMENT_EVENT'] } }),
        ),
      );
      expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
      expect(await a.deps.stores.webhooks.countEndpoints(a, a.lender.id)).toBe(CALLERS / 2);
      expect(await b.deps.stores.webhooks.countEndpoints(b, b.lender.id)).toBe(CALLERS / 2);
    });
  });

  describe('the signing secret, created on first read', () => {
    test(`${CALLERS} first reads at once: one current secret, and every caller is given it`, async () => {
      const ctx = await newLender();
      const read = await Promise.all(Array.from({ length: CALLERS }, () => readSecret({ ctx })));
      expect(new Set(read.map((r) => r.secret)).size).toBe(1);
      expect(await count(sql`SELECT count(*)::int AS n FROM ${webhookSecrets} WHERE lender_id = ${ctx.lender.id}`)).toBe(1);
      const current = await ctx.deps.stores.webhooks.currentSecret(ctx, ctx.lender.id);
      expect(deps.vault.open(current!.secretSealed)).toBe(read[0]!.secret);
    });

    test(`${CALLERS} rotations at once: one current secret, the last one made; every other one expiring`, async () => {
      const ctx = await newLender();
      await readSecret({ ctx });
      const rotated = await Promise.all(Array.from({ length: CALLERS }, () => rotateSecret({ ctx })));
      expect(new Set(rotated.map((r) => r.secret)).size).toBe(CALLERS);
      expect(await count(sql`SELECT count(*)::int AS n FROM ${webhookSecrets} WHERE lender_id = ${ctx.lender.id} AND expires_at IS NULL`)).toBe(1);
      expect(await count(sql`SELECT count(*)::int AS n FROM ${webhookSecrets} WHERE lender_id = ${ctx.lender.id}`)).toBe(CALLERS + 1);
      const current = deps.vault.open((await ctx.deps.stores.webhooks.currentSecret(ctx, ctx.lender.id))!.secretSealed);
      expect(rotated.map((r) => r.secret)).toContain(current);
      // All of them sign during the overlap, the current one first.
      const signing = await ctx.deps.stores.webhooks.signingSecrets(ctx, ctx.lender.id, clock.now());
      expect(signing.length).toBe(CALLERS + 1);
      expect(deps.vault.open(signing[0]!)).toBe(current);
    });
  });

  describe('the delivery queue', () => {
    // A claim takes any lender's due deliveries: each test starts with an empty outbox.
    beforeEach(async () => {
      await pg.db.execute(sql`DELETE FROM ${webhookAttempts}`);
      await pg.db.execute(sql`DELETE FROM ${webhookDeliveries}`);
    });

    const deliveriesOf = (lenderId: string, n: number, now: number): NewDelivery[] =>
      Array.from({ length: n }, (_, i) => ({
        id: newId(),
        lenderId,
        type: 'BALANCE_BATCH_COMPLETED' as const,
        url: `https://93.184.215.14/hooks/${i}`,
        body: JSON.stringify({ n: i, text: 'quotes " and commas, braces {} and NULL' }),
        now: now + i,
      }));

    test(`${CALLERS} claims at once: no delivery claimed twice, each claimed one with its attempt opened`, async () => {
      const ctx = await newLender();
      const now = clock.now();
      const total = 150;
      await transaction({ deps }, (tx) => tx.deps.stores.webhooks.enqueueDeliveries(tx, deliveriesOf(ctx.lender.id, total, now - 10_000)));
      const claims = await Promise.all(
        Array.from({ length: CALLERS }, () => transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 10, now, 30_000, []))),
      );
      const ids = claims.flat().map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      // 20 × 10 asked for, 150 due: every one taken, once.
      expect(ids.length).toBe(total);
      for (const claim of claims) {
        // Each claim oldest first.
        const times = claim.map((r) => JSON.parse(r.payload).n as number);
        expect(times).toEqual([...times].sort((a, b) => a - b));
      }
      const attempts = (await pg.db.execute(
        sql`SELECT delivery_id AS "deliveryId", id::float8 AS id, error FROM ${webhookAttempts} WHERE delivery_id IN (SELECT id FROM ${webhookDeliveries} WHERE lender_id = ${ctx.lender.id})`,
      )) as unknown as { deliveryId: string; id: number; error: string }[];
      expect(attempts.length).toBe(total);
      expect(attempts.every((a) => a.error === SENDING)).toBe(true);
      const attemptOf = new Map(attempts.map((a) => [a.deliveryId, a.id]));
      for (const r of claims.flat()) expect(r.attemptId).toBe(attemptOf.get(r.id)!);
      // Leased: nothing is due until the lease runs out.
      expect(await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 10, now, 30_000, []))).toEqual([]);
    });

    test('a claim leaves out what it is told to, and what is not yet due', async () => {
      const ctx = await newLender();
      const now = clock.now() + 3_600_000;
      const [a, b, later] = deliveriesOf(ctx.lender.id, 3, now - 100);
      later!.now = now + 1;
      await transaction({ deps }, (tx) => tx.deps.stores.webhooks.enqueueDeliveries(tx, [a!, b!, later!]));
      const claimed = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 10, now, 30_000, [a!.id]));
      expect(claimed.map((r) => r.id)).toEqual([b!.id]);
      const row: DueRow = claimed[0]!;
      expect(row).toMatchObject({ lenderId: ctx.lender.id, type: 'BALANCE_BATCH_COMPLETED', targetUrl: b!.url, payload: b!.body, attempts: 0, firstAttemptAt: null });
      expect(typeof row.attemptId).toBe('number');
    });

    test('a claim taken over after its lease ran out records its attempt, not the delivery state; its open attempt is cut short', async () => {
      const ctx = await newLender();
      const now = clock.now() + 5_400_000;
      const [d] = deliveriesOf(ctx.lender.id, 1, now - 100);
      await transaction({ deps }, (tx) => tx.deps.stores.webhooks.enqueueDeliveries(tx, [d!]));
      const [first] = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 10, now, 1_000, []));
      // Its lease runs out (its replica stopped or stalled): another claim takes the delivery over.
      const [second] = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 10, now + 1_000, 30_000, []));
      expect(second!.id).toBe(first!.id);
      expect(second!.leaseToken).not.toBe(first!.leaseToken);
      const errorOf = async (attemptId: number) =>
        ((await pg.db.execute(sql`SELECT error FROM ${webhookAttempts} WHERE id = ${attemptId}`)) as unknown as { error: string | null }[])[0]!.error;
      expect(await errorOf(first!.attemptId!)).toBe(CUT_SHORT);
      expect(await errorOf(second!.attemptId!)).toBe(SENDING);
      const attempt = { at: now + 5, statusCode: 503, error: 'HTTP 503', durationMs: 12 };
      // The stale claim's answer comes back: its attempt is kept, the retry it would schedule is not.
      await transaction({ deps }, (tx) =>
        tx.deps.stores.webhooks.recordAttempts(tx, [
          { id: d!.id, leaseToken: first!.leaseToken, attemptId: first!.attemptId, sent: true, attempt, state: 'pending', attempts: 1, nextAttemptAt: now + 60_000, firstAttemptAt: now + 5, finishedAt: null },
        ]),
      );
      const [mid] = await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, after: null, take: 10 });
      expect(mid).toMatchObject({ state: 'pending', attempts: 0, leaseUntil: now + 1_000 + 30_000 });
      // The holder's answer stands.
      await transaction({ deps }, (tx) =>
        tx.deps.stores.webhooks.recordAttempts(tx, [
          { id: d!.id, leaseToken: second!.leaseToken, attemptId: second!.attemptId, sent: true, attempt: { ...attempt, statusCode: 200, error: null }, state: 'delivered', attempts: 1, nextAttemptAt: null, firstAttemptAt: now + 5, finishedAt: now + 6 },
        ]),
      );
      const [done] = await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, after: null, take: 10 });
      expect(done).toMatchObject({ state: 'delivered', attempts: 1, leaseUntil: 0, lastStatusCode: 200 });
      expect(await errorOf(first!.attemptId!)).toBe('HTTP 503');
    });

    test('recording attempts: delivered, retried, failed, never sent; final states never move back', async () => {
      const ctx = await newLender();
      const now = clock.now() + 7_200_000;
      const ds = deliveriesOf(ctx.lender.id, 4, now - 100);
      await transaction({ deps }, (tx) => tx.deps.stores.webhooks.enqueueDeliveries(tx, ds));
      const claimed = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 10, now, 30_000, []));
      expect(claimed.map((r) => r.id)).toEqual(ds.map((d) => d.id));
      const [delivered, retried, failed, unsent] = claimed as [DueRow, DueRow, DueRow, DueRow];
      const attempt = (statusCode: number | null, error: string | null) => ({ at: now + 5, statusCode, error, durationMs: 12 });
      // One of them as if its claim had opened no attempt row: recording its attempt writes one.
      await pg.db.execute(sql`DELETE FROM ${webhookAttempts} WHERE id = ${failed.attemptId!}`);
      await transaction({ deps }, (tx) =>
        tx.deps.stores.webhooks.recordAttempts(tx, [
          { id: delivered.id, leaseToken: delivered.leaseToken, attemptId: delivered.attemptId, sent: true, attempt: attempt(200, null), state: 'delivered', attempts: 1, nextAttemptAt: null, firstAttemptAt: now + 5, finishedAt: now + 6 },
          { id: retried.id, leaseToken: retried.leaseToken, attemptId: retried.attemptId, sent: true, attempt: attempt(503, 'HTTP 503'), state: 'pending', attempts: 1, nextAttemptAt: now + 60_000, firstAttemptAt: now + 5, finishedAt: null },
          // An attempt recorded without one opened at the claim gets its row all the same.
          { id: failed.id, leaseToken: failed.leaseToken, sent: true, attempt: attempt(410, 'HTTP 410'), state: 'failed', attempts: 1, nextAttemptAt: null, firstAttemptAt: now + 5, finishedAt: now + 6 },
          { id: unsent.id, leaseToken: unsent.leaseToken, attemptId: unsent.attemptId, sent: false },
        ]),
      );
      const rows = await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, after: null, take: 10 });
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(delivered.id)).toMatchObject({ state: 'delivered', attempts: 1, lastStatusCode: 200, lastError: null, leaseUntil: 0, nextAttemptAt: null, finishedAt: now + 6, firstAttemptAt: now + 5, lastAttemptAt: now + 5 });
      expect(byId.get(retried.id)).toMatchObject({ state: 'pending', attempts: 1, lastStatusCode: 503, lastError: 'HTTP 503', leaseUntil: 0, nextAttemptAt: now + 60_000 });
      expect(byId.get(failed.id)).toMatchObject({ state: 'failed', lastStatusCode: 410, leaseUntil: 0 });
      expect(byId.get(unsent.id)).toMatchObject({ state: 'pending', attempts: 0, leaseUntil: 0, nextAttemptAt: unsent && ds[3]!.now, lastAttemptAt: null });
      const attempts = (await pg.db.execute(
        sql`SELECT delivery_id AS "deliveryId", status_code AS "statusCode", error, duration_ms::int AS "durationMs" FROM ${webhookAttempts}
             WHERE delivery_id = ANY(${sql.param(ds.map((d) => d.id))}::text[]) ORDER BY id`,
      )) as unknown as { deliveryId: string; statusCode: number | null; error: string | null; durationMs: number }[];
      expect(attempts).toEqual([
        { deliveryId: delivered.id, statusCode: 200, error: null, durationMs: 12 },
        { deliveryId: retried.id, statusCode: 503, error: 'HTTP 503', durationMs: 12 },
        { deliveryId: failed.id, statusCode: 410, error: 'HTTP 410', durationMs: 12 },
      ]);
      // A late record of a delivery already delivered (a lapsed lease) keeps its final state.
      await transaction({ deps }, (tx) =>
        tx.deps.stores.webhooks.recordAttempts(tx, [
          { id: delivered.id, leaseToken: delivered.leaseToken, sent: true, attempt: attempt(503, 'HTTP 503'), state: 'pending', attempts: 2, nextAttemptAt: now + 60_000, firstAttemptAt: now + 5, finishedAt: null },
          { id: failed.id, leaseToken: failed.leaseToken, sent: false },
        ]),
      );
      const after = await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, after: null, take: 10 });
      expect(after.find((r) => r.id === delivered.id)).toMatchObject({ state: 'delivered', attempts: 1 });
      expect(after.find((r) => r.id === failed.id)).toMatchObject({ state: 'failed' });
    });

    test('at start, the attempts a stopped process left open are cut short and its leases released', async () => {
      const ctx = await newLender();
      const now = clock.now() + 10_800_000;
      const ds = deliveriesOf(ctx.lender.id, 3, now - 100);
      await transaction({ deps }, (tx) => tx.deps.stores.webhooks.enqueueDeliveries(tx, ds));
      const claimed = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 2, now, 30_000, []));
      expect(claimed.length).toBe(2);
      // Another replica starting leaves a live claim alone: nothing released, its attempts still being sent.
      expect(await transaction({ deps }, (tx) => tx.deps.stores.webhooks.releaseDeliveryLeases(tx, 'another-replica/', now))).toBe(0);
      const open = (await pg.db.execute(
        sql`SELECT error FROM ${webhookAttempts} WHERE delivery_id = ANY(${sql.param(claimed.map((r) => r.id))}::text[])`,
      )) as unknown as { error: string }[];
      expect(open.map((e) => e.error)).toEqual([SENDING, SENDING]);
      // This replica restarted under its id: its own claims let go.
      const released = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.releaseDeliveryLeases(tx, replicaPrefix(), now));
      expect(released).toBeGreaterThanOrEqual(2);
      const errors = (await pg.db.execute(
        sql`SELECT error FROM ${webhookAttempts} WHERE delivery_id = ANY(${sql.param(claimed.map((r) => r.id))}::text[])`,
      )) as unknown as { error: string }[];
      expect(errors.map((e) => e.error)).toEqual([CUT_SHORT, CUT_SHORT]);
      // Due again at once.
      const again = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, 10, now, 30_000, []));
      expect(again.map((r) => r.id)).toEqual(ds.map((d) => d.id));
    });

    test('the outbox listing: newest first, filtered, in keyset pages; the pending count', async () => {
      const ctx = await newLender();
      const now = clock.now() - 86_400_000;
      // Two deliveries in the same millisecond: the id breaks the tie, as on SQLite.
      const ds = deliveriesOf(ctx.lender.id, 5, now);
      ds[4]!.now = ds[3]!.now;
      await transaction({ deps }, (tx) => tx.deps.stores.webhooks.enqueueDeliveries(tx, ds));
      const expected = [...ds].sort((a, b) => b.now - a.now || (a.id < b.id ? 1 : -1)).map((d) => d.id);
      const first = await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, after: null, take: 3 });
      const last = first.at(-1)!;
      const second = await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, after: { c: last.createdAt, i: last.id }, take: 3 });
      expect([...first, ...second].map((r) => r.id)).toEqual(expected);
      expect(typeof first[0]!.createdAt).toBe('number');
      expect(await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, status: 'delivered', after: null, take: 3 })).toEqual([]);
      expect((await ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId: ctx.lender.id, type: 'BALANCE_BATCH_COMPLETED', after: null, take: 9 })).length).toBe(5);
      expect(await ctx.deps.stores.webhooks.countPendingDeliveries(ctx)).toBeGreaterThanOrEqual(5);
    });
  });

  test('endpoints: listed oldest first, targets, deleted by their lender only', async () => {
    const ctx = await newLender();
    const other = await newLender();
    const made: { id: string }[] = [];
    for (let i = 0; i < 3; i++) {
      made.push(await createEndpoint({ ctx, input: { url: `https://93.184.215.14/e/${i}`, event_types: ['PAYMENT_EVENT'], description: `#${i}` } }));
    }
    const listed = await ctx.deps.stores.webhooks.listEndpoints(ctx, ctx.lender.id);
    expect(listed.map((e) => e.id)).toEqual(made.map((e) => e.id));
    expect(listed[0]).toMatchObject({ url: 'https://93.184.215.14/e/0', description: '#0', eventTypes: '["PAYMENT_EVENT"]', createdAt: clock.now() });
    expect(await ctx.deps.stores.webhooks.endpointTargets(ctx, ctx.lender.id)).toHaveLength(3);
    expect(await transaction(other, (tx) => tx.deps.stores.webhooks.deleteEndpoint(tx, other.lender.id, made[0]!.id))).toBe(false);
    expect(await transaction(ctx, (tx) => tx.deps.stores.webhooks.deleteEndpoint(tx, ctx.lender.id, made[0]!.id))).toBe(true);
    expect(await ctx.deps.stores.webhooks.countEndpoints(ctx, ctx.lender.id)).toBe(2);
  });

  test('a previous secret’s expiry is read back as a number', async () => {
    const ctx = await newLender();
    await readSecret({ ctx });
    const { previous_secret_expires_at } = await rotateSecret({ ctx });
    expect(await ctx.deps.stores.webhooks.previousSecretExpiry(ctx, ctx.lender.id, clock.now())).toBe(Date.parse(previous_secret_expires_at));
  });
}
