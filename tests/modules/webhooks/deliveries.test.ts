// GET /v1/webhooks/deliveries: newest first, paginated, filtered by status and type, showing what happened to
// each delivery; and one lender never sees another lender's deliveries (nor can page into them).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { authorizer, closedPort, deliveryRow, enqueue, startReceiver, verifyWithLibrary } from './support';

const ctx = createTestContext({ WEBHOOK_RETRY_BASE_MS: '1000' });
const other = ctx.newLender();
// The answer depends on the path, so each delivery's fate is known in advance.
const hook = startReceiver(0, (r) => {
  if (r.path.startsWith('/gone')) return new Response(null, { status: 410 });
  if (r.path.startsWith('/busy')) return new Response(null, { status: 503, headers: { 'retry-after': '120' } });
  return new Response('ok');
});
afterAll(() => {
  hook.stop();
  ctx.close();
});

interface Listed {
  id: string;
  type: string;
  target_url: string;
  created_at: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  state: 'pending' | 'delivered' | 'failed';
  finished_at: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

// Created one second apart, oldest first. Lender A: delivered, failed (410), pending (503), pending (refused),
// a threshold alert delivered, never attempted; lender B: one delivered.
const mine: { id: string; createdAt: number }[] = [];
let theirs = '';
let batchDelivery = '';
let refusedUrl = '';
let attemptAt = 0;

beforeAll(async () => {
  refusedUrl = `http://127.0.0.1:${closedPort()}/refused`;
  const plan: [string, 'BALANCE_BATCH_COMPLETED' | 'BALANCE_THRESHOLD_ALERT'][] = [
    [hook.url('/ok-1'), 'BALANCE_BATCH_COMPLETED'],
    [hook.url('/gone'), 'BALANCE_BATCH_COMPLETED'],
    [hook.url('/busy'), 'BALANCE_BATCH_COMPLETED'],
    [refusedUrl, 'BALANCE_BATCH_COMPLETED'],
    [hook.url('/ok-alert'), 'BALANCE_THRESHOLD_ALERT'],
  ];
  for (const [url, type] of plan) {
    mine.push({ id: await enqueue(ctx, url, { type, extra: type === 'BALANCE_THRESHOLD_ALERT' ? { alerts: [] } : {} }), createdAt: ctx.clock.now() });
    ctx.clock.advance(1_000);
  }
  // One real batch with a webhook_url, completed by the real pipeline.
  const sub = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [authorizer()], webhook_url: hook.url('/ok-batch') } });
  expect(sub.status).toBe(201);
  await processBalances(ctx.rt);
  batchDelivery = ctx.sql
    .query<{ id: string }, [string]>("SELECT id FROM webhook_deliveries WHERE payload LIKE '%' || ? || '%'")
    .get(sub.body.batch_id)!.id;
  mine.push({ id: batchDelivery, createdAt: ctx.clock.now() });
  ctx.clock.advance(1_000);
  theirs = await enqueue(ctx, hook.url('/ok-theirs'), { lenderId: other.id });
  ctx.clock.advance(1_000);
  attemptAt = ctx.clock.now();
  expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(7);
  // Enqueued after the run: never attempted.
  ctx.clock.advance(1_000);
  mine.push({ id: await enqueue(ctx, hook.url('/ok-later')), createdAt: ctx.clock.now() });
});

async function list(query = '', key?: string) {
  const res = await ctx.json('GET', `/v1/webhooks/deliveries${query}`, key ? { key } : {});
  expect(res.status).toBe(200);
  return res.body as { deliveries: Listed[]; has_more: boolean; next_page_token: string | null };
}

describe('GET /v1/webhooks/deliveries', () => {
  test('newest first, each entry showing what happened', async () => {
    const body = await list();
    expect(body.has_more).toBe(false);
    expect(body.next_page_token).toBeNull();
    expect(body.deliveries.map((d) => d.id)).toEqual([...mine].reverse().map((m) => m.id));
    const byId = new Map(body.deliveries.map((d) => [d.id, d]));
    const [ok1, gone, busy, refused, alert, batch, later] = mine.map((m) => byId.get(m.id)!);

    expect(ok1).toEqual({
      id: mine[0]!.id,
      type: 'BALANCE_BATCH_COMPLETED',
      target_url: hook.url('/ok-1'),
      created_at: iso(mine[0]!.createdAt),
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      last_attempt_at: iso(attemptAt),
      next_attempt_at: null,
      state: 'delivered',
      finished_at: iso(attemptAt),
    });
    expect(gone).toMatchObject({ state: 'failed', attempts: 1, last_status_code: 410, next_attempt_at: null, finished_at: iso(attemptAt) });
    expect(gone!.last_error).toContain('410');
    expect(busy).toMatchObject({
      state: 'pending',
      attempts: 1,
      last_status_code: 503,
      last_error: 'HTTP 503',
      next_attempt_at: iso(attemptAt + 120_000),
      finished_at: null,
    });
    expect(refused).toMatchObject({ state: 'pending', attempts: 1, last_status_code: null, last_error: 'connection refused', target_url: refusedUrl });
    expect(refused!.next_attempt_at).not.toBeNull();
    expect(alert).toMatchObject({ type: 'BALANCE_THRESHOLD_ALERT', state: 'delivered', last_status_code: 200 });
    expect(batch).toMatchObject({ type: 'BALANCE_BATCH_COMPLETED', state: 'delivered', target_url: hook.url('/ok-batch') });
    expect(later).toMatchObject({
      state: 'pending',
      attempts: 0,
      last_status_code: null,
      last_error: null,
      last_attempt_at: null,
      next_attempt_at: iso(mine[6]!.createdAt),
      finished_at: null,
    });
  });

  test('the id listed is the webhook-id the receiver got', async () => {
    const received = new Map(hook.requests.map((r) => [r.path, r.headers['webhook-id']]));
    const body = await list();
    const byTarget = new Map(body.deliveries.map((d) => [new URL(d.target_url).pathname, d.id]));
    expect(received.get('/ok-1')).toBe(byTarget.get('/ok-1'));
    expect(received.get('/ok-batch')).toBe(batchDelivery);
    expect(received.get('/gone')).toBe(byTarget.get('/gone'));
  });

  test('pages of 2 walk the whole list in order without repeats', async () => {
    const seen: string[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const page = await list(`?limit=2${token ? `&next_page_token=${encodeURIComponent(token)}` : ''}`);
      expect(page.deliveries.length).toBeLessThanOrEqual(2);
      seen.push(...page.deliveries.map((d) => d.id));
      expect(page.has_more).toBe(page.next_page_token !== null);
      token = page.next_page_token;
      pages++;
    } while (token && pages < 10);
    expect(pages).toBe(4);
    expect(seen).toEqual([...mine].reverse().map((m) => m.id));
  });

  test('the nextPageToken spelling works the same', async () => {
    const first = await list('?limit=3');
    const second = await list(`?limit=3&nextPageToken=${encodeURIComponent(first.next_page_token!)}`);
    expect([...first.deliveries, ...second.deliveries].map((d) => d.id)).toEqual([...mine].reverse().slice(0, 6).map((m) => m.id));
  });

  test('filter by status', async () => {
    const ids = (b: { deliveries: Listed[] }) => b.deliveries.map((d) => d.id);
    const [ok1, gone, busy, refused, alert, batch, later] = mine.map((m) => m.id);
    expect(ids(await list('?status=delivered'))).toEqual([batch, alert, ok1]);
    expect(ids(await list('?status=failed'))).toEqual([gone]);
    expect(ids(await list('?status=pending'))).toEqual([later, refused, busy]);
    for (const state of ['delivered', 'failed', 'pending']) {
      for (const d of (await list(`?status=${state}`)).deliveries) expect(d.state).toBe(state as Listed['state']);
    }
  });

  test('filter by type, alone and with status, paginated', async () => {
    const [, , , , alert] = mine.map((m) => m.id);
    expect((await list('?type=BALANCE_THRESHOLD_ALERT')).deliveries.map((d) => d.id)).toEqual([alert]);
    expect((await list('?type=BALANCE_THRESHOLD_ALERT&status=pending')).deliveries).toEqual([]);
    const completed = await list('?type=BALANCE_BATCH_COMPLETED&status=delivered&limit=1');
    expect(completed.deliveries.map((d) => d.id)).toEqual([batchDelivery]);
    expect(completed.has_more).toBe(true);
    const rest = await list(`?type=BALANCE_BATCH_COMPLETED&status=delivered&limit=1&next_page_token=${encodeURIComponent(completed.next_page_token!)}`);
    expect(rest.deliveries.map((d) => d.id)).toEqual([mine[0]!.id]);
    expect(rest.has_more).toBe(false);
  });

  test('a page token only works for the listing that issued it', async () => {
    const page = await list('?limit=1&status=delivered');
    const token = encodeURIComponent(page.next_page_token!);
    const wrongFilter = await ctx.json('GET', `/v1/webhooks/deliveries?limit=1&status=pending&next_page_token=${token}`);
    expect(wrongFilter.status).toBe(400);
    expect(wrongFilter.body.error.details.errors[0].path).toBe('next_page_token');
    const tampered = await ctx.json('GET', `/v1/webhooks/deliveries?next_page_token=${token.slice(0, -2)}xx`);
    expect(tampered.status).toBe(400);
  });

  test('bad query values are 400', async () => {
    for (const q of ['?status=blocked', '?type=SOMETHING_ELSE', '?limit=0', '?limit=101', '?limit=abc']) {
      const res = await ctx.json('GET', `/v1/webhooks/deliveries${q}`);
      expect(res.status, q).toBe(400);
    }
  });

  test('requires an API key', async () => {
    expect((await ctx.json('GET', '/v1/webhooks/deliveries', { key: null })).status).toBe(401);
  });
});

describe('one lender never sees another lender’s deliveries', () => {
  test('the other lender lists only its own', async () => {
    const body = await list('', other.key);
    expect(body.deliveries.map((d) => d.id)).toEqual([theirs]);
    expect(body.deliveries[0]).toMatchObject({ state: 'delivered', target_url: hook.url('/ok-theirs') });
    for (const q of ['?status=delivered', '?status=failed', '?status=pending', '?type=BALANCE_THRESHOLD_ALERT']) {
      for (const d of (await list(q, other.key)).deliveries) expect(d.id).toBe(theirs);
    }
    expect((await list('')).deliveries.map((d) => d.id)).not.toContain(theirs);
  });

  test("a page token from one lender's listing is refused for another", async () => {
    const page = await list('?limit=1');
    const res = await ctx.json('GET', `/v1/webhooks/deliveries?limit=1&next_page_token=${encodeURIComponent(page.next_page_token!)}`, {
      key: other.key,
    });
    expect(res.status).toBe(400);
  });

  test('a lender with no deliveries gets an empty list', async () => {
    const third = ctx.newLender();
    expect(await list('', third.key)).toEqual({ deliveries: [], has_more: false, next_page_token: null });
  });

  test("each lender's deliveries are signed with that lender's secret", async () => {
    const mineSecret = (await ctx.json('GET', '/v1/webhooks/secret')).body.secret as string;
    const theirSecret = (await ctx.json('GET', '/v1/webhooks/secret', { key: other.key })).body.secret as string;
    const theirReq = hook.requests.find((r) => r.path === '/ok-theirs')!;
    const myReq = hook.requests.find((r) => r.path === '/ok-1')!;
    expect(() => verifyWithLibrary(theirSecret, theirReq)).not.toThrow();
    expect(() => verifyWithLibrary(mineSecret, theirReq)).toThrow();
    expect(() => verifyWithLibrary(mineSecret, myReq)).not.toThrow();
    expect(() => verifyWithLibrary(theirSecret, myReq)).toThrow();
    expect(deliveryRow(ctx, theirs).lender_id).toBe(other.id);
  });
});
