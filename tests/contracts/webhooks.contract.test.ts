import { afterAll, expect, test } from 'bun:test';
import { contract } from './contract';
import { enqueue, startReceiver, verifyWithLibrary } from '../modules/webhooks/support';
import { deliverDueWebhooks, releaseDeliveryLeases, DELIVERY_LEASE_MS } from '../../src/modules/webhooks/jobs';
import { ROTATION_OVERLAP_MS } from '../../src/modules/webhooks/service';
import { pushToEndpoints, MAX_ENDPOINTS } from '../../src/modules/webhooks/endpoints';
import { CUT_SHORT, SENDING, type AttemptRecord, type DueRow, type NewDelivery } from '../../src/modules/webhooks/store';
import { DAY_MS } from '../../src/platform/clock';
import { newId } from '../../src/platform/ids';

const receiver = startReceiver();
afterAll(() => receiver.stop());

/** What a run records of a delivery it sent: the attempt, and the delivery's state after it. */
function sentRecord(
  d: DueRow,
  at: number,
  outcome: { state: 'pending' | 'delivered' | 'failed'; statusCode?: number | null; error?: string | null; nextAttemptAt?: number | null },
): AttemptRecord {
  return {
    id: d.id,
    leaseToken: d.leaseToken,
    attemptId: d.attemptId,
    sent: true,
    attempt: { at, statusCode: outcome.statusCode ?? null, error: outcome.error ?? null, durationMs: 12 },
    state: outcome.state,
    attempts: d.attempts + 1,
    nextAttemptAt: outcome.nextAttemptAt ?? null,
    firstAttemptAt: d.firstAttemptAt ?? at,
    finishedAt: outcome.state === 'pending' ? null : at,
  };
}

contract('webhooks', (t) => {
  const { ctx, store, storeCtx } = t;
  const open = (sealed: string) => ctx.rt.vault.open(sealed);

  interface Attempt {
    attempted_at: number;
    status_code: number | null;
    error: string | null;
    duration_ms: number;
  }
  const attemptsOf = (id: string) =>
    ctx.rows<Attempt>('SELECT attempted_at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = ? ORDER BY id', id);
  const deliveryOf = async (lenderId: string, id: string) =>
    (await store.listDeliveries(storeCtx, { lenderId, after: null, take: 1000 })).find((d) => d.id === id);

  /**
   * The claim queue is shared by every lender: before a test claims, whatever earlier tests left pending is
   * claimed (far ahead of the clock, so a retry or a lease still standing is taken too) and recorded failed.
   */
  async function settleAll(): Promise<void> {
    const far = ctx.clock.now() + 365 * DAY_MS;
    const left = await t.inTx((tx) => store.claimDueDeliveries(tx, 10_000, far, 1, []));
    if (left.length > 0) await t.inTx((tx) => store.recordAttempts(tx, left.map((d) => sentRecord(d, far, { state: 'failed', error: 'settled' }))));
    expect(await store.countPendingDeliveries(storeCtx)).toBe(0);
  }

  test('a secret is made on first use, rotated with an overlap, and stops signing when the overlap ends', async () => {
    const lender = ctx.newLender();
    expect(await store.currentSecret(storeCtx, lender.id)).toBeUndefined();
    expect(await store.previousSecretExpiry(storeCtx, lender.id, ctx.clock.now())).toBeNull();
    expect(await store.signingSecrets(storeCtx, lender.id, ctx.clock.now())).toEqual([]);

    const first = await ctx.json('GET', '/v1/webhooks/secret', { key: lender.key });
    expect(first.status).toBe(200);
    const current = await store.currentSecret(storeCtx, lender.id);
    expect(current!.createdAt).toBe(ctx.clock.now());
    expect(open(current!.secretSealed)).toBe(first.body.secret);
    expect(await store.signingSecrets(storeCtx, lender.id, ctx.clock.now())).toEqual([current!.secretSealed]);
    // Read again, the same secret: a first use makes one.
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: lender.key })).body.secret).toBe(first.body.secret);

    ctx.clock.advance(1_000);
    const rotatedAt = ctx.clock.now();
    const rotated = await ctx.json('POST', '/v1/webhooks/secret/rotate', { key: lender.key });
    expect(rotated.status).toBe(201);
    const next = await store.currentSecret(storeCtx, lender.id);
    expect(next).toMatchObject({ createdAt: rotatedAt });
    expect(open(next!.secretSealed)).toBe(rotated.body.secret);
    const expiresAt = rotatedAt + ROTATION_OVERLAP_MS;
    expect(await store.previousSecretExpiry(storeCtx, lender.id, rotatedAt)).toBe(expiresAt);
    // Newest first: the new secret, then the previous one while it still signs.
    expect((await store.signingSecrets(storeCtx, lender.id, expiresAt - 1)).map(open)).toEqual([rotated.body.secret, first.body.secret]);
    expect(await store.previousSecretExpiry(storeCtx, lender.id, expiresAt - 1)).toBe(expiresAt);
    // At its expiry it signs no more.
    expect((await store.signingSecrets(storeCtx, lender.id, expiresAt)).map(open)).toEqual([rotated.body.secret]);
    expect(await store.previousSecretExpiry(storeCtx, lender.id, expiresAt)).toBeNull();
  });

  test('secrets made in one millisecond still come newest first; a rotation rolled back leaves the secret as it was', async () => {
    const lender = ctx.newLender();
    const made = [];
    // Three in the same millisecond: first use, then two rotations.
    made.push((await ctx.json('GET', '/v1/webhooks/secret', { key: lender.key })).body.secret);
    for (let i = 0; i < 2; i++) made.push((await ctx.json('POST', '/v1/webhooks/secret/rotate', { key: lender.key })).body.secret);
    const now = ctx.clock.now();
    expect((await store.signingSecrets(storeCtx, lender.id, now)).map(open)).toEqual([...made].reverse());
    expect(await store.previousSecretExpiry(storeCtx, lender.id, now)).toBe(now + ROTATION_OVERLAP_MS);

    const before = await store.currentSecret(storeCtx, lender.id);
    await expect(
      t.inTx(async (tx) => {
        await store.serializeSecrets(tx, lender.id);
        await store.expireCurrentSecret(tx, lender.id, now + 5);
        await store.addSecret(tx, { id: newId(), lenderId: lender.id, secretSealed: ctx.rt.vault.seal('whsec_never'), createdAt: now });
        expect(open((await store.currentSecret(tx, lender.id))!.secretSealed)).toBe('whsec_never');
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await store.currentSecret(storeCtx, lender.id)).toEqual(before);
    expect(await store.signingSecrets(storeCtx, lender.id, now)).toHaveLength(3);

    // Expiring a lender's current secret when it has none changes nothing.
    const none = ctx.newLender();
    await t.inTx((tx) => store.expireCurrentSecret(tx, none.id, now));
    expect(await store.signingSecrets(storeCtx, none.id, now)).toEqual([]);
  });

  test("a lender's endpoints: oldest first, counted, at most ten, its own to delete; targets name url and types", async () => {
    const lender = ctx.newLender();
    const other = ctx.newLender();
    const add = (key: string, path: string, types: string[], description?: string) =>
      ctx.json('POST', '/v1/webhook_endpoints', { key, body: { url: receiver.url(path), event_types: types, ...(description ? { description } : {}) } });
    expect(await store.countEndpoints(storeCtx, lender.id)).toBe(0);
    expect(await store.listEndpoints(storeCtx, lender.id)).toEqual([]);
    expect(await store.endpointTargets(storeCtx, lender.id)).toEqual([]);

    const a = await add(lender.key, '/a', ['PAYMENT_EVENT', 'PAYMENT_SCHEDULED'], 'ops');
    expect(a.status).toBe(201);
    ctx.clock.advance(1_000);
    // Two more in one millisecond: listed in the order they were made.
    const b = await add(lender.key, '/b', ['ENROLLMENT_BLOCKED']);
    const c = await add(lender.key, '/c', ['PAYMENT_EVENT']);
    await add(other.key, '/other', ['PAYMENT_EVENT']);

    const listed = await store.listEndpoints(storeCtx, lender.id);
    expect(listed.map((e) => e.id)).toEqual([a.body.id, b.body.id, c.body.id]);
    expect(listed[0]).toEqual({
      id: a.body.id,
      lenderId: lender.id,
      url: receiver.url('/a'),
      eventTypes: JSON.stringify(['PAYMENT_EVENT', 'PAYMENT_SCHEDULED']),
      description: 'ops',
      createdAt: ctx.clock.now() - 1_000,
    });
    expect(listed[1]!.description).toBeNull();
    expect(await store.countEndpoints(storeCtx, lender.id)).toBe(3);
    const targets = await store.endpointTargets(storeCtx, lender.id);
    expect(targets.map((x) => x.url).sort()).toEqual(['/a', '/b', '/c'].map((p) => receiver.url(p)).sort());
    expect(targets.find((x) => x.url === receiver.url('/b'))).toEqual({ url: receiver.url('/b'), eventTypes: '["ENROLLMENT_BLOCKED"]' });

    // Another lender's endpoint is not this lender's to delete.
    expect(await t.inTx((tx) => store.deleteEndpoint(tx, other.id, a.body.id))).toBe(false);
    expect((await ctx.json('DELETE', `/v1/webhook_endpoints/${b.body.id}`, { key: lender.key })).status).toBe(204);
    expect(await t.inTx((tx) => store.deleteEndpoint(tx, lender.id, b.body.id))).toBe(false);
    expect((await store.listEndpoints(storeCtx, lender.id)).map((e) => e.id)).toEqual([a.body.id, c.body.id]);

    // An endpoint added in a transaction that rolls back is not there.
    await expect(
      t.inTx(async (tx) => {
        await store.serializeEndpoints(tx, lender.id);
        await store.addEndpoint(tx, { ...listed[0]!, id: newId(), url: receiver.url('/never') });
        expect(await store.countEndpoints(tx, lender.id)).toBe(3);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await store.countEndpoints(storeCtx, lender.id)).toBe(2);

    for (let i = 2; i < MAX_ENDPOINTS; i++) expect((await add(lender.key, `/more${i}`, ['PAYMENT_EVENT'])).status).toBe(201);
    expect(await store.countEndpoints(storeCtx, lender.id)).toBe(MAX_ENDPOINTS);
    expect((await add(lender.key, '/eleventh', ['PAYMENT_EVENT'])).status).toBe(409);
    expect(await store.countEndpoints(storeCtx, lender.id)).toBe(MAX_ENDPOINTS);
    expect(await store.countEndpoints(storeCtx, other.id)).toBe(1);
  });

  test('the outbox: deliveries stored as enqueued, listed newest first, filtered and paged; a rolled-back enqueue is not there', async () => {
    await settleAll();
    const lender = ctx.newLender();
    const first = await enqueue(ctx, receiver.url('/first'), { lenderId: lender.id });
    ctx.clock.advance(1_000);
    // Pushed to the lender's endpoints subscribed to the type, in the caller's transaction.
    await ctx.json('POST', '/v1/webhook_endpoints', { key: lender.key, body: { url: receiver.url('/pay'), event_types: ['PAYMENT_EVENT'] } });
    await ctx.json('POST', '/v1/webhook_endpoints', { key: lender.key, body: { url: receiver.url('/blocked'), event_types: ['ENROLLMENT_BLOCKED'] } });
    await t.inTx((tx) => pushToEndpoints(tx, ctx.clock.now(), lender.id, 'PAYMENT_EVENT', { payment_event: { id: 'pe_1' } }));
    const pushed = (await store.listDeliveries(storeCtx, { lenderId: lender.id, type: 'PAYMENT_EVENT', after: null, take: 10 }))[0]!;
    expect(pushed).toMatchObject({ lenderId: lender.id, type: 'PAYMENT_EVENT', targetUrl: receiver.url('/pay'), state: 'pending' });
    expect(JSON.parse(pushed.payload)).toEqual({ event_uuid: pushed.id, type: 'PAYMENT_EVENT', payment_event: { id: 'pe_1' } });

    // Three in one millisecond, enqueued in one call.
    ctx.clock.advance(1_000);
    const now = ctx.clock.now();
    const batch: NewDelivery[] = ['x', 'y', 'z'].map((n) => ({
      id: newId(),
      lenderId: lender.id,
      type: 'BALANCE_THRESHOLD_ALERT',
      url: receiver.url(`/${n}`),
      body: JSON.stringify({ n }),
      now,
    }));
    await t.inTx((tx) => store.enqueueDeliveries(tx, batch));
    await t.inTx((tx) => store.enqueueDeliveries(tx, []));
    expect(await store.countPendingDeliveries(storeCtx)).toBe(5);

    const all = await store.listDeliveries(storeCtx, { lenderId: lender.id, after: null, take: 100 });
    // Newest first; in one millisecond, the greater id first.
    const sameMs = batch.map((d) => d.id).sort().reverse();
    expect(all.map((d) => d.id)).toEqual([...sameMs, pushed.id, first]);
    expect(all.find((d) => d.id === batch[0]!.id)).toEqual({
      id: batch[0]!.id,
      lenderId: lender.id,
      type: 'BALANCE_THRESHOLD_ALERT',
      targetUrl: receiver.url('/x'),
      payload: '{"n":"x"}',
      state: 'pending',
      attempts: 0,
      createdAt: now,
      firstAttemptAt: null,
      lastAttemptAt: null,
      nextAttemptAt: now,
      leaseUntil: 0,
      leaseToken: null,
      lastStatusCode: null,
      lastError: null,
      finishedAt: null,
    });

    // Pages by position (created_at, id): each row once, in the same order.
    const page1 = await store.listDeliveries(storeCtx, { lenderId: lender.id, after: null, take: 2 });
    const last = page1[1]!;
    const page2 = await store.listDeliveries(storeCtx, { lenderId: lender.id, after: { c: last.createdAt, i: last.id }, take: 10 });
    expect([...page1, ...page2].map((d) => d.id)).toEqual(all.map((d) => d.id));
    expect(await store.listDeliveries(storeCtx, { lenderId: lender.id, type: 'BALANCE_BATCH_COMPLETED', after: null, take: 10 })).toHaveLength(1);
    expect(await store.listDeliveries(storeCtx, { lenderId: lender.id, status: 'delivered', after: null, take: 10 })).toEqual([]);
    expect(await store.listDeliveries(storeCtx, { lenderId: ctx.newLender().id, after: null, take: 10 })).toEqual([]);
    // The API pages the same rows.
    const api = await ctx.json('GET', '/v1/webhooks/deliveries?limit=3', { key: lender.key });
    expect(api.status).toBe(200);
    expect(api.body.deliveries.map((d: { id: string }) => d.id)).toEqual(all.slice(0, 3).map((d) => d.id));
    expect(api.body.has_more).toBe(true);

    await expect(
      t.inTx(async (tx) => {
        await store.enqueueDeliveries(tx, [{ ...batch[0]!, id: newId() }]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await store.listDeliveries(storeCtx, { lenderId: lender.id, after: null, take: 100 })).toHaveLength(5);
    expect(await store.countPendingDeliveries(storeCtx)).toBe(5);
    await settleAll();
  });

  test('a claim takes due deliveries oldest first, up to its number, leaving out those excluded, leased or not yet due', async () => {
    await settleAll();
    const lender = ctx.newLender();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(await enqueue(ctx, receiver.url(`/q${i}`), { lenderId: lender.id }));
      ctx.clock.advance(10);
    }
    const now = ctx.clock.now();
    expect(await t.inTx((tx) => store.claimDueDeliveries(tx, 0, now, 1_000, []))).toEqual([]);

    // A claim rolled back leases nothing and leaves no attempt behind.
    await expect(
      t.inTx(async (tx) => {
        expect(await store.claimDueDeliveries(tx, 10, now, 1_000, [])).toHaveLength(4);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await attemptsOf(ids[0]!)).toEqual([]);

    const claimed = await t.inTx((tx) => store.claimDueDeliveries(tx, 2, now, 1_000, [ids[0]!]));
    expect(claimed.map((d) => d.id)).toEqual([ids[1], ids[2]]);
    const d = claimed[0]!;
    expect(d).toMatchObject({
      lenderId: lender.id,
      type: 'BALANCE_BATCH_COMPLETED',
      targetUrl: receiver.url('/q1'),
      attempts: 0,
      firstAttemptAt: null,
    });
    expect(JSON.parse(d.payload).event_uuid).toBe(d.id);
    expect(typeof d.attemptId).toBe('number');
    expect(typeof d.leaseToken).toBe('string');
    expect(claimed[1]!.leaseToken).toBe(d.leaseToken);
    // An attempt is open for each claimed delivery before any request leaves.
    expect(await attemptsOf(d.id)).toEqual([{ attempted_at: now, status_code: null, error: SENDING, duration_ms: 0 }]);
    expect(await deliveryOf(lender.id, d.id)).toMatchObject({ state: 'pending', leaseUntil: now + 1_000, leaseToken: d.leaseToken });

    // Held by a lease: the next claim takes the rest, oldest first.
    const rest = await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now + 999, 1_000, []));
    expect(rest.map((r) => r.id)).toEqual([ids[0], ids[3]]);
    expect(rest[0]!.leaseToken).not.toBe(d.leaseToken);
    expect(await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now + 999, 1_000, []))).toEqual([]);
    // Once the first lease runs out, its deliveries are due again, taken under a new claim.
    const again = await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now + 1_000, 1_000, []));
    expect(again.map((r) => r.id)).toEqual([ids[1], ids[2]]);
    expect(again[0]!.attemptId).not.toBe(d.attemptId);

    // A delivery whose next attempt is later is not due before it.
    await t.inTx((tx) =>
      store.recordAttempts(tx, [sentRecord(again[0]!, now + 1_000, { state: 'pending', statusCode: 500, nextAttemptAt: now + 5_000 })]),
    );
    expect(await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now + 4_999, 1_000, [ids[2]!, ids[0]!, ids[3]!]))).toEqual([]);
    const retried = await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now + 5_000, 1_000, [ids[2]!, ids[0]!, ids[3]!]));
    expect(retried.map((r) => ({ id: r.id, attempts: r.attempts, firstAttemptAt: r.firstAttemptAt }))).toEqual([
      { id: ids[1], attempts: 1, firstAttemptAt: now + 1_000 },
    ]);
    await settleAll();
  });

  test('recorded attempts: delivered and failed are final, a retry waits, an unsent claim is released as it was', async () => {
    await settleAll();
    const lender = ctx.newLender();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(await enqueue(ctx, receiver.url(`/r${i}`), { lenderId: lender.id }));
      ctx.clock.advance(10);
    }
    const now = ctx.clock.now();
    const [ok, gone, busy, unsent] = await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now, DELIVERY_LEASE_MS, []));
    const at = now + 50;
    const { createdAt: unsentCreated } = (await deliveryOf(lender.id, unsent!.id))!;
    await t.inTx((tx) =>
      store.recordAttempts(tx, [
        sentRecord(ok!, at, { state: 'delivered', statusCode: 200 }),
        sentRecord(gone!, at, { state: 'failed', statusCode: 410 }),
        sentRecord(busy!, at, { state: 'pending', statusCode: 503, error: 'busy', nextAttemptAt: at + 2_000 }),
        { id: unsent!.id, leaseToken: unsent!.leaseToken, attemptId: unsent!.attemptId, sent: false },
      ]),
    );

    expect(await deliveryOf(lender.id, ok!.id)).toMatchObject({
      state: 'delivered',
      attempts: 1,
      firstAttemptAt: at,
      lastAttemptAt: at,
      lastStatusCode: 200,
      lastError: null,
      finishedAt: at,
      leaseUntil: 0,
      leaseToken: null,
    });
    expect(await attemptsOf(ok!.id)).toEqual([{ attempted_at: at, status_code: 200, error: null, duration_ms: 12 }]);
    expect(await deliveryOf(lender.id, gone!.id)).toMatchObject({ state: 'failed', lastStatusCode: 410, finishedAt: at, leaseUntil: 0 });
    expect(await deliveryOf(lender.id, busy!.id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      nextAttemptAt: at + 2_000,
      lastStatusCode: 503,
      lastError: 'busy',
      finishedAt: null,
      leaseUntil: 0,
      leaseToken: null,
    });
    // Never sent: no attempt, and the delivery as it was before the claim, due at once.
    expect(await attemptsOf(unsent!.id)).toEqual([]);
    expect(await deliveryOf(lender.id, unsent!.id)).toMatchObject({
      state: 'pending',
      attempts: 0,
      nextAttemptAt: unsentCreated,
      firstAttemptAt: null,
      lastAttemptAt: null,
      leaseUntil: 0,
      leaseToken: null,
    });
    expect(await store.countPendingDeliveries(storeCtx)).toBe(2);
    const due = await t.inTx((tx) => store.claimDueDeliveries(tx, 10, at, DELIVERY_LEASE_MS, []));
    expect(due.map((d) => d.id)).toEqual([unsent!.id]);

    // A record of a claim that no longer holds its delivery changes nothing of it: recorded twice, the first
    // outcome stands.
    await t.inTx((tx) => store.recordAttempts(tx, [sentRecord(ok!, at + 100, { state: 'pending', statusCode: 500, nextAttemptAt: at + 200 })]));
    expect(await deliveryOf(lender.id, ok!.id)).toMatchObject({ state: 'delivered', attempts: 1, lastStatusCode: 200, finishedAt: at, nextAttemptAt: null });

    // A sent record with no attempt opened at the claim adds its attempt.
    const bare = sentRecord(due[0]!, at + 10, { state: 'delivered', statusCode: 204 });
    await t.inTx((tx) => store.recordAttempts(tx, [{ ...bare, attemptId: undefined }]));
    const bareAttempts = await attemptsOf(unsent!.id);
    expect(bareAttempts.filter((a) => a.status_code === 204)).toEqual([{ attempted_at: at + 10, status_code: 204, error: null, duration_ms: 12 }]);
    expect(await deliveryOf(lender.id, unsent!.id)).toMatchObject({ state: 'delivered', attempts: 1, lastStatusCode: 204 });
    expect(await t.inTx((tx) => store.recordAttempts(tx, []))).toBeUndefined();
    await settleAll();
  });

  test('a claim whose lease ran out and was taken over records its attempt only; the new holder sets the state', async () => {
    await settleAll();
    const lender = ctx.newLender();
    const id = await enqueue(ctx, receiver.url('/slow'), { lenderId: lender.id });
    const now = ctx.clock.now();
    const [stale] = await t.inTx((tx) => store.claimDueDeliveries(tx, 1, now, 1_000, []));
    const [holder] = await t.inTx((tx) => store.claimDueDeliveries(tx, 1, now + 1_000, 1_000, []));
    expect(holder!.id).toBe(id);

    await t.inTx((tx) => store.recordAttempts(tx, [sentRecord(stale!, now + 1_500, { state: 'delivered', statusCode: 200 })]));
    // The stale claim's attempt is on record; the delivery is still the new holder's.
    expect(await deliveryOf(lender.id, id)).toMatchObject({ state: 'pending', attempts: 0, leaseToken: holder!.leaseToken, leaseUntil: now + 2_000 });
    expect((await attemptsOf(id))[0]).toEqual({ attempted_at: now + 1_500, status_code: 200, error: null, duration_ms: 12 });

    await t.inTx((tx) => store.recordAttempts(tx, [sentRecord(holder!, now + 1_600, { state: 'failed', statusCode: 410 })]));
    expect(await deliveryOf(lender.id, id)).toMatchObject({ state: 'failed', attempts: 1, lastStatusCode: 410, leaseToken: null, leaseUntil: 0 });
    expect((await attemptsOf(id)).map((a) => a.status_code)).toEqual([200, 410]);
  });

  test("at start this process's leases are let go, their open attempts marked cut short, the deliveries due at once", async () => {
    await settleAll();
    const lender = ctx.newLender();
    expect(await releaseDeliveryLeases(ctx.rt)).toBe(0);
    const ids = [await enqueue(ctx, receiver.url('/s0'), { lenderId: lender.id }), await enqueue(ctx, receiver.url('/s1'), { lenderId: lender.id })];
    const now = ctx.clock.now();
    const held = await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now, DELIVERY_LEASE_MS, []));
    expect(held.map((d) => d.id).sort()).toEqual([...ids].sort());
    // One of them already recorded: only the one still held is let go.
    await t.inTx((tx) => store.recordAttempts(tx, [sentRecord(held[0]!, now, { state: 'delivered', statusCode: 200 })]));

    expect(await releaseDeliveryLeases(ctx.rt)).toBe(1);
    const released = held[1]!;
    expect(await attemptsOf(released.id)).toEqual([{ attempted_at: now, status_code: null, error: CUT_SHORT, duration_ms: 0 }]);
    expect(await attemptsOf(held[0]!.id)).toEqual([{ attempted_at: now, status_code: 200, error: null, duration_ms: 12 }]);
    expect(await deliveryOf(lender.id, released.id)).toMatchObject({ state: 'pending', leaseUntil: 0, leaseToken: null, attempts: 0 });
    const again = await t.inTx((tx) => store.claimDueDeliveries(tx, 10, now, DELIVERY_LEASE_MS, []));
    expect(again.map((d) => d.id)).toEqual([released.id]);
    // The claim that was let go records its attempt, not the state.
    await t.inTx((tx) => store.recordAttempts(tx, [sentRecord(released, now + 5, { state: 'delivered', statusCode: 200 })]));
    expect(await deliveryOf(lender.id, released.id)).toMatchObject({ state: 'pending', leaseToken: again[0]!.leaseToken });
    await settleAll();
  });

  test("the delivery job sends a due delivery signed with the lender's secret, made on first use, and records it delivered", async () => {
    await settleAll();
    receiver.reset();
    const lender = ctx.newLender();
    const id = await enqueue(ctx, receiver.url('/job'), { lenderId: lender.id });
    expect(await store.countPendingDeliveries(storeCtx)).toBe(1);
    const run = await deliverDueWebhooks(ctx.rt);
    expect(run.attempted).toBe(1);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([id]);
    expect(await store.countPendingDeliveries(storeCtx)).toBe(0);
    // Made on first use by the run, and what the request verifies with.
    const secret = await store.currentSecret(storeCtx, lender.id);
    expect(verifyWithLibrary(open(secret!.secretSealed), receiver.requests[0]!)).toEqual(JSON.parse(receiver.requests[0]!.body));
    const listed = await ctx.json('GET', '/v1/webhooks/deliveries?status=delivered', { key: lender.key });
    expect(listed.body.deliveries).toEqual([
      expect.objectContaining({ id, state: 'delivered', attempts: 1, last_status_code: 200, last_error: null, next_attempt_at: null }),
    ]);
    expect((await attemptsOf(id)).map((a) => [a.status_code, a.error])).toEqual([[200, null]]);
  });
});
