// Failed authentication as an attack: one address sending bad keys is held to a budget (429 with
// Retry-After once it is spent, before any key is looked at), other addresses are untouched, and the log
// gets at most one line a second per address, carrying the count, instead of a line per request.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../helpers/context';
import { AUTH_FAILURE_BURST } from '../../src/http/gate';
import { RateLimiter, SampledLog } from '../../src/http/rate-limit';

const WRONG_KEY = 'drs_live_' + 'W'.repeat(32);
let ctx: TestContext;
let base: string;

beforeAll(() => {
  // Behind a proxy on loopback, so each test client can have its own address (X-Forwarded-For).
  ctx = createTestContext({ TRUST_PROXY: 'loopback' });
  ctx.app.listen({ hostname: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${ctx.app.server!.port}`;
});
afterAll(async () => {
  await ctx.app.stop(true);
  ctx.close();
});

const call = (client: string, key: string | null) =>
  fetch(`${base}/v1/monitoring/schedules`, {
    headers: { 'x-forwarded-for': client, 'x-forwarded-proto': 'https', ...(key ? { authorization: `Bearer ${key}` } : {}) },
  });

const failureLines = (client: string) =>
  ctx.logs
    .join('')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'authentication failed' && l.client === client);

describe('failed authentication per client address', () => {
  const attacker = '198.51.100.10';
  const bystander = '198.51.100.20';

  test(`${AUTH_FAILURE_BURST} failures are 401; after that 429 RATE_LIMITED with Retry-After, even with a valid key`, async () => {
    const statuses: number[] = [];
    for (let i = 0; i < AUTH_FAILURE_BURST + 30; i++) {
      const res = await call(attacker, i % 2 === 0 ? WRONG_KEY : null);
      statuses.push(res.status);
      if (res.status === 429) {
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
        const body = (await res.json()) as any;
        expect(body.error.code).toBe('RATE_LIMITED');
        expect(body.error.message).toContain('failed authentications');
      } else await res.text();
    }
    expect(statuses.slice(0, AUTH_FAILURE_BURST)).toEqual(Array(AUTH_FAILURE_BURST).fill(401));
    expect(statuses.slice(AUTH_FAILURE_BURST)).toEqual(Array(30).fill(429));
    // Refused before the key is looked at: a valid key from this address waits as well.
    expect((await call(attacker, ctx.lender.key)).status).toBe(429);
  });

  test('another address is not affected: its bad key is a 401, its valid key a 200', async () => {
    expect((await call(bystander, WRONG_KEY)).status).toBe(401);
    expect((await call(bystander, ctx.lender.key)).status).toBe(200);
  });

  test('the budget refills with time: one failure a second', async () => {
    ctx.clock.advance(2_000);
    expect((await call(attacker, ctx.lender.key)).status).toBe(200);
    expect((await call(attacker, WRONG_KEY)).status).toBe(401);
    expect((await call(attacker, WRONG_KEY)).status).toBe(401);
    expect((await call(attacker, WRONG_KEY)).status).toBe(429);
  });

  test('the log has at most one line per address a second, with the count of refusals it stands for', async () => {
    const lines = failureLines(attacker);
    // Two seconds of (fake) time passed: the first refusal, then one line for everything since.
    expect(lines.length).toBeLessThanOrEqual(3);
    const refused = AUTH_FAILURE_BURST + 30 + 1 + 3;
    expect(lines.reduce((n, l) => n + l.refused, 0)).toBeGreaterThanOrEqual(refused - AUTH_FAILURE_BURST);
    expect(lines[0].refused).toBe(1);
    expect(lines[0].level).toBe('warn');
    // No per-request line for the refusals (the successful requests still have theirs).
    const requestLines = ctx.logs.join('').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
    expect(requestLines.filter((l) => l.status === 401 || l.status === 429)).toEqual([]);
    expect(requestLines.filter((l) => l.status === 200).length).toBeGreaterThanOrEqual(2);
    // The refusals are still counted in the metrics.
    const metrics = await (await fetch(`${base}/metrics`, { headers: { 'x-forwarded-for': '127.0.0.1' } })).text();
    expect(metrics).toMatch(/^http_requests_total\{method="GET",route="unmatched",status="429"\} [1-9]/m);
  });
});

describe('the buckets stay bounded in memory', () => {
  test('a limiter keeps at most its key count, dropping full buckets first', () => {
    const limiter = new RateLimiter(1, 5, 100);
    for (let i = 0; i < 1000; i++) limiter.spend(`10.0.${i >> 8}.${i & 255}`, 0);
    expect(limiter.size).toBeLessThanOrEqual(100);
  });

  test('a sampled log keeps at most its key count', () => {
    let lines = 0;
    const log = new SampledLog(1000, () => lines++, 50);
    for (let i = 0; i < 500; i++) log.note(`k${i}`, i * 2000);
    expect(lines).toBe(500);
    expect((log as unknown as { last: Map<string, unknown> }).last.size).toBeLessThanOrEqual(50);
  });
});
