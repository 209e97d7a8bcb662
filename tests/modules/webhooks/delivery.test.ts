// The outbox and the delivery job against real receivers on 127.0.0.1: what a completed batch enqueues, what
// a receiver gets (verified with the `standardwebhooks` library), retries after 500 / timeout / connection
// refused with growing gaps and a stable webhook-id, the window, 410, redirects, Retry-After, bounded
// concurrency and re-claiming a delivery whose claimer died. Time for scheduling is the fake clock.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import {
  DELIVERY_LEASE_MS,
  WEBHOOK_CONCURRENCY,
  deliverDueWebhooks,
  releaseDeliveryLeases,
} from '../../../src/modules/webhooks/jobs';
import { enqueueWebhook, MAX_PAYLOAD_BYTES } from '../../../src/modules/webhooks/service';
import { transaction } from '../../../src/platform/context';
import { WEBHOOK_USER_AGENT as USER_AGENT } from '../../../src/adapters/webhooks/sender';
import {
  attemptRows,
  authorizer,
  closedPort,
  deliveryRow,
  enqueue,
  expectedSignature,
  hanging,
  signatureEntries,
  startReceiver,
  verifyWithLibrary,
  type Receiver,
} from './support';

const BASE_MS = 1_000;
const MAX_AGE_MS = 60_000;

const contexts: TestContext[] = [];
const receivers: Receiver[] = [];
afterAll(() => {
  for (const r of receivers) r.stop();
  for (const c of contexts) c.close();
});

/** A fresh app and database per test, so one test's pending rows never reach another test's receiver. */
function fresh(env: Record<string, string> = {}): TestContext {
  const ctx = createTestContext({ WEBHOOK_RETRY_BASE_MS: String(BASE_MS), WEBHOOK_MAX_AGE_MS: String(MAX_AGE_MS), ...env });
  contexts.push(ctx);
  return ctx;
}

function receiver(...args: Parameters<typeof startReceiver>): Receiver {
  const r = startReceiver(...args);
  receivers.push(r);
  return r;
}

/** Moves the fake clock to the delivery's next attempt and runs the job once. */
async function runAtNextAttempt(ctx: TestContext, id: string) {
  const next = deliveryRow(ctx, id).next_attempt_at;
  expect(next).not.toBeNull();
  ctx.clock.set(next!);
  return deliverDueWebhooks(ctx.rt);
}

/** The job does nothing a millisecond before the delivery is due. */
async function expectNotDueYet(ctx: TestContext, id: string) {
  const next = deliveryRow(ctx, id).next_attempt_at!;
  ctx.clock.set(next - 1);
  expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);
}

/** Gaps between consecutive attempts, from the attempt records. */
function gaps(ctx: TestContext, id: string): number[] {
  const at = attemptRows(ctx, id).map((a) => a.attempted_at);
  return at.slice(1).map((t, i) => t - at[i]!);
}

/** Gap n (1-based) is base * 2^(n-1) with ±20% jitter. */
function expectBackoffGaps(g: number[]) {
  g.forEach((gap, i) => {
    const nominal = BASE_MS * 2 ** i;
    expect(gap).toBeGreaterThanOrEqual(Math.floor(nominal * 0.8));
    expect(gap).toBeLessThanOrEqual(Math.ceil(nominal * 1.2));
    if (i > 0) expect(gap).toBeGreaterThan(g[i - 1]!);
  });
}

async function submitBatch(ctx: TestContext, webhookUrl?: string): Promise<string> {
  const res = await ctx.json('POST', '/v1/balance_requests', {
    body: { authorizers: [authorizer(), authorizer()], ...(webhookUrl ? { webhook_url: webhookUrl } : {}) },
  });
  expect(res.status).toBe(201);
  return res.body.batch_id as string;
}

function deliveriesOf(ctx: TestContext) {
  return ctx.sql
    .query<{ id: string; payload: string; type: string; target_url: string; state: string }, [string]>(
      'SELECT id, payload, type, target_url, state FROM webhook_deliveries WHERE lender_id = ? ORDER BY created_at',
    )
    .all(ctx.lender.id);
}

describe('BALANCE_BATCH_COMPLETED from a real batch', () => {
  test('the outbox row appears exactly when the batch completes, and only for batches with webhook_url', async () => {
    const ctx = fresh();
    const hook = receiver();
    const withHook = await submitBatch(ctx, hook.url('/batches'));
    const withoutHook = await submitBatch(ctx);
    // Submitted but not processed: nothing to send yet.
    expect(deliveriesOf(ctx)).toHaveLength(0);
    expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);

    await processBalances(ctx.rt);
    for (const id of [withHook, withoutHook]) {
      const status = await ctx.json('GET', `/v1/balance_requests/${id}`);
      expect(status.status).toBe(200);
      expect(status.body.status).toBe('completed');
    }
    const rows = deliveriesOf(ctx);
    expect(rows).toHaveLength(1);
    const payload = JSON.parse(rows[0]!.payload);
    expect(payload).toEqual({ event_uuid: rows[0]!.id, type: 'BALANCE_BATCH_COMPLETED', batch_id: withHook });
    expect(rows[0]).toMatchObject({ type: 'BALANCE_BATCH_COMPLETED', target_url: hook.url('/batches'), state: 'pending' });

    // Processing again (nothing left) does not enqueue a second notification for the same batch.
    await processBalances(ctx.rt);
    expect(deliveriesOf(ctx)).toHaveLength(1);
  });

  test('the receiver gets one signed POST that verifies with standardwebhooks; webhook-id is event_uuid', async () => {
    const ctx = fresh();
    const hook = receiver();
    const batchId = await submitBatch(ctx, hook.url('/batches?source=test'));
    await processBalances(ctx.rt);
    const secret = (await ctx.json('GET', '/v1/webhooks/secret')).body.secret as string;

    expect(await deliverDueWebhooks(ctx.rt)).toEqual({ attempted: 1 });
    expect(hook.requests).toHaveLength(1);
    const got = hook.requests[0]!;
    expect(got.method).toBe('POST');
    expect(got.path).toBe('/batches?source=test');
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['user-agent']).toBe(USER_AGENT);
    expect(got.headers.host).toBe(`127.0.0.1:${hook.port}`);

    // The receiver's own check, with the reference library; it returns the parsed payload.
    const payload = verifyWithLibrary(secret, got) as Record<string, unknown>;
    expect(payload).toEqual({ event_uuid: got.headers['webhook-id'], type: 'BALANCE_BATCH_COMPLETED', batch_id: batchId });
    expect(JSON.parse(got.body)).toEqual(payload);
    // And by hand, per the standard, so the check does not only compare the library with itself.
    expect(signatureEntries(got)).toEqual([expectedSignature(secret, got)]);
    // The timestamp is wall time (receivers compare it with their clocks), not the service's fake clock.
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);

    // A wrong secret or a changed body does not verify.
    const other = (await ctx.json('GET', '/v1/webhooks/secret', { key: ctx.newLender().key })).body.secret as string;
    expect(() => verifyWithLibrary(other, got)).toThrow();
    expect(() => verifyWithLibrary(secret, { ...got, body: got.body.replace(batchId, 'someone-else') })).toThrow();

    const row = deliveryRow(ctx, got.headers['webhook-id']!);
    expect(row).toMatchObject({ state: 'delivered', attempts: 1, last_status_code: 200, last_error: null, next_attempt_at: null });
    expect(row.finished_at).not.toBeNull();
    expect(attemptRows(ctx, row.id)).toMatchObject([{ status_code: 200, error: null }]);

    // Delivered is final: later runs send nothing.
    ctx.clock.advance(3_600_000);
    expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);
    expect(hook.requests).toHaveLength(1);
  });

  test('any 2xx is success', async () => {
    const ctx = fresh();
    const hook = receiver(0, (r) => new Response(null, { status: Number(r.path.slice(1)) }));
    const ids: string[] = [];
    for (const s of [200, 201, 202, 204, 299]) ids.push(await enqueue(ctx, hook.url(`/${s}`)));
    expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(5);
    for (const id of ids) expect(deliveryRow(ctx, id).state).toBe('delivered');
  });
});

describe('the outbox row belongs to the transaction that writes it', () => {
  test('a rolled-back change leaves no delivery behind', async () => {
    const ctx = fresh();
    const failing = () => transaction({ deps: ctx.rt }, async (tx) => {
      await enqueueWebhook({ ctx: tx, input: {
        lenderId: ctx.lender.id,
        type: 'BALANCE_BATCH_COMPLETED',
        url: 'http://127.0.0.1:9/never',
        payload: { event_uuid: crypto.randomUUID(), type: 'BALANCE_BATCH_COMPLETED', batch_id: 'b' },
      } });
      throw new Error('the state change failed');
    });
    await expect(failing()).rejects.toThrow('the state change failed');
    expect(deliveriesOf(ctx)).toHaveLength(0);
  });

  test('an oversized payload is refused and takes its transaction down with it', async () => {
    const ctx = fresh();
    const tx = () => transaction({ deps: ctx.rt }, async (t) => {
      await enqueue(ctx, 'http://127.0.0.1:9/first', {}, t.tx);
      await enqueueWebhook({ ctx: t, input: {
        lenderId: ctx.lender.id,
        type: 'BALANCE_THRESHOLD_ALERT',
        url: 'http://127.0.0.1:9/big',
        payload: { event_uuid: crypto.randomUUID(), blob: 'x'.repeat(MAX_PAYLOAD_BYTES) },
      } });
    });
    await expect(tx()).rejects.toThrow(/over/);
    expect(deliveriesOf(ctx)).toHaveLength(0);
  });
});

describe('retries: same webhook-id, growing gaps, every attempt recorded', () => {
  test('after 500s, until a 2xx', async () => {
    const ctx = fresh();
    const hook = receiver(0, (_r, i) => new Response(i < 3 ? 'boom' : 'ok', { status: i < 3 ? 500 : 200 }));
    const id = await enqueue(ctx, hook.url());
    const start = ctx.clock.now();

    expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(1);
    let row = deliveryRow(ctx, id);
    expect(row).toMatchObject({ state: 'pending', attempts: 1, last_status_code: 500, last_error: 'HTTP 500', first_attempt_at: start });
    for (let n = 2; n <= 4; n++) {
      await expectNotDueYet(ctx, id);
      expect((await runAtNextAttempt(ctx, id)).attempted).toBe(1);
    }
    row = deliveryRow(ctx, id);
    expect(row).toMatchObject({ state: 'delivered', attempts: 4, last_status_code: 200, last_error: null, first_attempt_at: start });

    expect(hook.requests).toHaveLength(4);
    expect(new Set(hook.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([id]));
    expect(new Set(hook.requests.map((r) => r.body)).size).toBe(1);
    const secret = (await ctx.json('GET', '/v1/webhooks/secret')).body.secret as string;
    for (const r of hook.requests) verifyWithLibrary(secret, r);

    expect(attemptRows(ctx, id).map((a) => [a.status_code, a.error])).toEqual([
      [500, 'HTTP 500'],
      [500, 'HTTP 500'],
      [500, 'HTTP 500'],
      [200, null],
    ]);
    expectBackoffGaps(gaps(ctx, id));
  });

  test('after connection refused, until the receiver comes up', async () => {
    const ctx = fresh();
    const port = closedPort();
    const id = await enqueue(ctx, `http://127.0.0.1:${port}/hook`);
    await deliverDueWebhooks(ctx.rt);
    for (let n = 2; n <= 3; n++) {
      await expectNotDueYet(ctx, id);
      await runAtNextAttempt(ctx, id);
    }
    expect(attemptRows(ctx, id).map((a) => [a.status_code, a.error])).toEqual([
      [null, 'connection refused'],
      [null, 'connection refused'],
      [null, 'connection refused'],
    ]);
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'pending', attempts: 3, last_status_code: null, last_error: 'connection refused' });

    const hook = receiver(port);
    await runAtNextAttempt(ctx, id);
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0]!.headers['webhook-id']).toBe(id);
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'delivered', attempts: 4, last_status_code: 200 });
    expectBackoffGaps(gaps(ctx, id));
  });

  test('after a receiver that does not answer within the timeout (WEBHOOK_TIMEOUT_MS, default 10 s)', async () => {
    const ctx = fresh({ WEBHOOK_TIMEOUT_MS: '500' });
    const hang = hanging();
    const hook = receiver(0, hang.handler);
    const id = await enqueue(ctx, hook.url());
    const started = performance.now();
    try {
      expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(1);
    } finally {
      hang.release();
    }
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);
    const [first] = attemptRows(ctx, id);
    expect(first).toMatchObject({ status_code: null, error: 'timeout after 500 ms' });
    expect(first!.duration_ms).toBeGreaterThanOrEqual(450);
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'pending', attempts: 1, last_error: 'timeout after 500 ms' });

    hook.handler = () => new Response('ok');
    await expectNotDueYet(ctx, id);
    await runAtNextAttempt(ctx, id);
    expect(hook.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'delivered', attempts: 2, last_status_code: 200 });
    expectBackoffGaps(gaps(ctx, id));
  }, 25_000);

  test(`retries stop ${'WEBHOOK_MAX_AGE_MS'} after the first attempt: state failed`, async () => {
    const ctx = fresh({ WEBHOOK_MAX_AGE_MS: '10000' });
    const hook = receiver(0, () => new Response('boom', { status: 500 }));
    const id = await enqueue(ctx, hook.url());
    const first = ctx.clock.now();
    await deliverDueWebhooks(ctx.rt);
    for (let i = 0; i < 10 && deliveryRow(ctx, id).state === 'pending'; i++) await runAtNextAttempt(ctx, id);

    // Gaps of ~1, 2, 4 s fit in 10 s; the next (~8 s) would end after it.
    const row = deliveryRow(ctx, id);
    expect(row).toMatchObject({ state: 'failed', attempts: 4, next_attempt_at: null, last_status_code: 500, first_attempt_at: first });
    expect(row.finished_at).not.toBeNull();
    const attempts = attemptRows(ctx, id);
    expect(attempts).toHaveLength(4);
    expect(attempts.at(-1)!.attempted_at).toBeLessThanOrEqual(first + 10_000);
    expectBackoffGaps(gaps(ctx, id));
    expect(hook.requests).toHaveLength(4);

    ctx.clock.advance(86_400_000);
    expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);
    expect(hook.requests).toHaveLength(4);
    const listed = await ctx.json('GET', '/v1/webhooks/deliveries?status=failed');
    expect(listed.body.deliveries).toMatchObject([{ id, state: 'failed', attempts: 4, last_status_code: 500, next_attempt_at: null }]);
  });

  test('410 Gone ends retries at once', async () => {
    const ctx = fresh();
    const hook = receiver(0, () => new Response(null, { status: 410 }));
    const id = await enqueue(ctx, hook.url());
    await deliverDueWebhooks(ctx.rt);
    const row = deliveryRow(ctx, id);
    expect(row).toMatchObject({ state: 'failed', attempts: 1, last_status_code: 410, next_attempt_at: null });
    expect(row.last_error).toContain('410');
    expect(row.finished_at).not.toBeNull();
    for (const step of [BASE_MS, MAX_AGE_MS / 2, MAX_AGE_MS]) {
      ctx.clock.advance(step);
      expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);
    }
    expect(hook.requests).toHaveLength(1);
  });
});

describe('redirects are not followed', () => {
  for (const status of [301, 302, 303, 307, 308]) {
    test(`${status} is a failed attempt and the Location is never contacted`, async () => {
      const ctx = fresh();
      const elsewhere = receiver();
      const hook = receiver(0, () => new Response(null, { status, headers: { location: elsewhere.url('/elsewhere') } }));
      const id = await enqueue(ctx, hook.url());
      await deliverDueWebhooks(ctx.rt);
      expect(hook.requests).toHaveLength(1);
      expect(elsewhere.requests).toHaveLength(0);
      const row = deliveryRow(ctx, id);
      expect(row).toMatchObject({ state: 'pending', attempts: 1, last_status_code: status, last_error: 'redirect not followed' });
      // Retried like any other failure, and still not followed.
      await runAtNextAttempt(ctx, id);
      expect(hook.requests).toHaveLength(2);
      expect(elsewhere.requests).toHaveLength(0);
      expectBackoffGaps(gaps(ctx, id));
    });
  }
});

describe('Retry-After on 429 and 503', () => {
  test('429 with Retry-After: 7 schedules the next attempt 7 s later instead of the backoff', async () => {
    const ctx = fresh();
    const hook = receiver(0, (_r, i) => (i === 0 ? new Response(null, { status: 429, headers: { 'retry-after': '7' } }) : new Response('ok')));
    const id = await enqueue(ctx, hook.url());
    const t0 = ctx.clock.now();
    await deliverDueWebhooks(ctx.rt);
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'pending', last_status_code: 429, next_attempt_at: t0 + 7_000 });
    await expectNotDueYet(ctx, id);
    await runAtNextAttempt(ctx, id);
    expect(hook.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
    expect(deliveryRow(ctx, id).state).toBe('delivered');
  });

  test('503 with Retry-After: 3 is honoured too', async () => {
    const ctx = fresh();
    const hook = receiver(0, (_r, i) => (i === 0 ? new Response(null, { status: 503, headers: { 'retry-after': '3' } }) : new Response('ok')));
    const id = await enqueue(ctx, hook.url());
    const t0 = ctx.clock.now();
    await deliverDueWebhooks(ctx.rt);
    expect(deliveryRow(ctx, id)).toMatchObject({ last_status_code: 503, next_attempt_at: t0 + 3_000 });
    await runAtNextAttempt(ctx, id);
    expect(deliveryRow(ctx, id).state).toBe('delivered');
  });

  test('a Retry-After on another status is ignored (plain backoff)', async () => {
    const ctx = fresh();
    const hook = receiver(0, () => new Response(null, { status: 500, headers: { 'retry-after': '30' } }));
    const id = await enqueue(ctx, hook.url());
    const t0 = ctx.clock.now();
    await deliverDueWebhooks(ctx.rt);
    const next = deliveryRow(ctx, id).next_attempt_at!;
    expect(next - t0).toBeGreaterThanOrEqual(BASE_MS * 0.8);
    expect(next - t0).toBeLessThanOrEqual(BASE_MS * 1.2);
    expect(hook.requests).toHaveLength(1);
  });

  test('Retry-After: 0 is honoured by the next run, never by sending again within the same run', async () => {
    const ctx = fresh();
    // Only the first answer is 429, so even a run that did loop would end; the count shows it.
    const hook = receiver(0, (_r, i) => (i === 0 ? new Response(null, { status: 429, headers: { 'retry-after': '0' } }) : new Response('ok')));
    const id = await enqueue(ctx, hook.url());
    const t0 = ctx.clock.now();
    expect(await deliverDueWebhooks(ctx.rt)).toEqual({ attempted: 1 });
    expect(hook.requests).toHaveLength(1);
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'pending', last_status_code: 429, next_attempt_at: t0 });
    expect(await deliverDueWebhooks(ctx.rt)).toEqual({ attempted: 1 });
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  test('a Retry-After reaching past the window is not overridden: no earlier retry, and the delivery fails', async () => {
    const ctx = fresh();
    const hook = receiver(0, () => new Response(null, { status: 429, headers: { 'retry-after': String(MAX_AGE_MS / 1000 + 60) } }));
    const id = await enqueue(ctx, hook.url());
    await deliverDueWebhooks(ctx.rt);
    ctx.clock.advance(MAX_AGE_MS * 3);
    await deliverDueWebhooks(ctx.rt);
    expect(hook.requests).toHaveLength(1);
    expect(deliveryRow(ctx, id)).toMatchObject({ state: 'failed', attempts: 1, last_status_code: 429, next_attempt_at: null });
  });
});

describe('claims', () => {
  test(`at most the given number of sends at once (and ${WEBHOOK_CONCURRENCY} by default); each delivery sent once`, async () => {
    const ctx = fresh();
    const hook = receiver(0, async () => {
      await Bun.sleep(25);
      return new Response('ok');
    });
    const first: string[] = [];
    for (let i = 0; i < 40; i++) first.push(await enqueue(ctx, hook.url()));
    expect(await deliverDueWebhooks(ctx.rt, { concurrency: 4 })).toEqual({ attempted: 40 });
    expect(hook.maxInFlight).toBe(4);
    expect(hook.requests.map((r) => r.headers['webhook-id']).sort()).toEqual([...first].sort());

    hook.reset(async () => {
      await Bun.sleep(25);
      return new Response('ok');
    });
    const second: string[] = [];
    for (let i = 0; i < 40; i++) second.push(await enqueue(ctx, hook.url()));
    expect(await deliverDueWebhooks(ctx.rt)).toEqual({ attempted: 40 });
    expect(hook.maxInFlight).toBeLessThanOrEqual(WEBHOOK_CONCURRENCY);
    expect(hook.maxInFlight).toBeGreaterThan(4);
    expect(hook.requests.map((r) => r.headers['webhook-id']).sort()).toEqual([...second].sort());
    for (const id of [...first, ...second]) expect(deliveryRow(ctx, id)).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  test('a claimed delivery is not sent twice while its claim lasts, and is sent again (same webhook-id) after the claim lapses', async () => {
    const ctx = fresh();
    const hang = hanging();
    const hook = receiver(0, (r, i) => (i === 0 ? hang.handler(r, i) : new Response('ok')));
    const id = await enqueue(ctx, hook.url());
    // The first claimer is stuck mid-delivery (as a process that died would be).
    const stuck = deliverDueWebhooks(ctx.rt);
    try {
      await hook.waitFor(1);
      expect(deliveryRow(ctx, id).lease_until).toBe(ctx.clock.now() + DELIVERY_LEASE_MS);
      ctx.clock.advance(DELIVERY_LEASE_MS - 1);
      expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);
      expect(hook.requests).toHaveLength(1);

      ctx.clock.advance(1);
      expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(1);
      expect(hook.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
      expect(hook.requests[1]!.body).toBe(hook.requests[0]!.body);
      expect(deliveryRow(ctx, id)).toMatchObject({ state: 'delivered', attempts: 1, last_status_code: 200 });
    } finally {
      hang.release(new Response('late'));
      await stuck;
    }
  });

  test('a run that outlasts the claim does not send again what it already sent (results are recorded before it claims more)', async () => {
    // One worker works through a 200 and then three receivers that each hold the request ~10 s (the fake
    // clock moves 10 s per hang, as the 10 s timeout would). After 30 s the run's claims have lapsed; when it
    // looks for more work it must not pick up the deliveries it has sent but not yet recorded.
    const ctx = fresh({ WEBHOOK_RETRY_BASE_MS: '60000', WEBHOOK_MAX_AGE_MS: '1800000' });
    const hang = hanging();
    const hook = receiver(0, (r, i) => (r.path === '/fast' ? new Response('ok') : hang.handler(r, i)));
    const fast = await enqueue(ctx, hook.url('/fast'));
    const slow: string[] = [];
    for (let i = 1; i <= 3; i++) {
      ctx.clock.advance(1);
      slow.push(await enqueue(ctx, hook.url(`/slow-${i}`)));
    }
    const run = deliverDueWebhooks(ctx.rt, { concurrency: 1 });
    try {
      for (let n = 2; n <= 4; n++) {
        await hook.waitFor(n);
        ctx.clock.advance(10_000);
        hang.release(new Response(null, { status: 503 }));
      }
    } finally {
      // Whatever the run does next is answered at once, so it cannot hang the test.
      hook.handler = (r) => new Response(null, { status: r.path === '/fast' ? 200 : 503 });
      hang.release(new Response(null, { status: 503 }));
    }
    await run;

    const sentTo = hook.requests.map((r) => r.path);
    expect(sentTo).toEqual(['/fast', '/slow-1', '/slow-2', '/slow-3']);
    expect(deliveryRow(ctx, fast)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(attemptRows(ctx, fast)).toHaveLength(1);
    for (const id of slow) {
      // One attempt each; the next one is a backoff (~60 s) away, not now.
      expect(attemptRows(ctx, id)).toHaveLength(1);
      expect(deliveryRow(ctx, id).attempts).toBe(1);
    }
  });

  test('releaseDeliveryLeases (run at start) makes a delivery a dead process had claimed due at once', async () => {
    const ctx = fresh();
    const hang = hanging();
    const hook = receiver(0, (r, i) => (i === 0 ? hang.handler(r, i) : new Response('ok')));
    const id = await enqueue(ctx, hook.url());
    const stuck = deliverDueWebhooks(ctx.rt);
    try {
      await hook.waitFor(1);
      expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);
      await releaseDeliveryLeases(ctx.rt);
      expect(deliveryRow(ctx, id).lease_until).toBe(0);
      expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(1);
      expect(hook.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
      expect(deliveryRow(ctx, id).state).toBe('delivered');
    } finally {
      hang.release(new Response('late'));
      await stuck;
    }
  });
});
