// engine: both
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { networkInterfaces } from 'node:os';
import { createTestContext, useTestContext, type TestContext } from '../helpers/context';
import { Metrics } from '../../src/platform/metrics';

const TOKEN = 'metrics-token-for-tests';

/** A non-internal IPv4 address of this machine, to reach a server from a non-loopback address. */
function externalIPv4(): string | null {
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) if (i.family === 'IPv4' && !i.internal) return i.address;
  }
  return null;
}

/** A counter sample's value from Prometheus text, or null when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    const inner = line.slice(name.length + 1, line.indexOf('}'));
    const have = Object.fromEntries(inner.split(',').map((kv) => {
      const [k, v] = kv.split('=');
      return [k, JSON.parse(v!)];
    }));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(line.slice(line.indexOf('}') + 1).trim());
  }
  return null;
}

/**
 * Request metrics are recorded after the response is sent; poll the exposition until a series shows (the
 * deadline only ends a test that would otherwise hang).
 */
async function metricsWhen(ctx: TestContext, name: string, labels: Record<string, string>): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const text = await (await ctx.request('GET', '/metrics', { key: null })).text();
    if (sample(text, name, labels) !== null || Date.now() > deadline) return text;
    await Bun.sleep(5);
  }
}

describe('GET /metrics in process (app.handle counts as local)', () => {
  const ctx = useTestContext();

  test('Prometheus text with http_requests_total after a request', async () => {
    expect((await ctx.json('GET', '/v1/monitoring/schedules')).status).toBe(200);
    expect((await ctx.json('GET', '/v1/monitoring/schedules', { key: null })).status).toBe(401);
    await metricsWhen(ctx, 'http_requests_total', { route: '/v1/monitoring/schedules', status: '200' });
    await metricsWhen(ctx, 'http_requests_total', { status: '401' });
    const res = await ctx.request('GET', '/metrics', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const text = await res.text();
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/v1/monitoring/schedules', status: '200' })).toBe(1);
    // A refused request is counted too (its route label may be the pattern or "unmatched").
    expect(sample(text, 'http_requests_total', { method: 'GET', status: '401' })).toBe(1);
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/v1\/monitoring\/schedules"[^}]*\} [12]$/m);
    // Labels are route patterns, never raw paths with ids in them.
    await ctx.json('GET', '/v1/balance_requests/00000000-0000-7000-8000-000000000000');
    const after = await metricsWhen(ctx, 'http_requests_total', { route: '/v1/balance_requests/:batch_id' });
    expect(after).not.toContain('00000000-0000-7000-8000-000000000000');
    expect(sample(after, 'http_requests_total', { method: 'GET', route: '/v1/balance_requests/:batch_id', status: '404' })).toBe(1);
  });

  test('no API key is needed, and the metrics carry no secrets', async () => {
    const res = await ctx.request('GET', '/metrics', { key: null });
    const text = await res.text();
    expect(text).not.toContain('drs_live_');
    expect(text).not.toContain(ctx.lender.key);
  });

  test('a fresh Metrics has its own registry (no cross-test leakage)', async () => {
    const a = new Metrics({ defaults: false });
    const b = new Metrics({ defaults: false });
    a.httpRequests.inc({ method: 'GET', route: '/x', status: '200' });
    expect(await b.registry.metrics()).not.toContain('route="/x"');
    expect(await a.registry.metrics()).toContain('route="/x"');
  });
});

describe('GET /metrics over a real server', () => {
  const external = externalIPv4();
  let ctx: TestContext;
  let strict: TestContext;
  let port: number;
  let strictPort: number;

  beforeAll(() => {
    // ALLOW_INSECURE_HTTP so the HTTPS rule does not answer first; the metrics rule is what is tested.
    ctx = createTestContext({ METRICS_TOKEN: TOKEN, ALLOW_INSECURE_HTTP: 'true' });
    ctx.app.listen({ hostname: '0.0.0.0', port: 0 });
    port = ctx.app.server!.port!;
    strict = createTestContext({ METRICS_TOKEN: TOKEN });
    strict.app.listen({ hostname: '0.0.0.0', port: 0 });
    strictPort = strict.app.server!.port!;
  });
  afterAll(async () => {
    await ctx.app.stop(true);
    await strict.app.stop(true);
    ctx.close();
    strict.close();
  });

  test('this machine has a non-loopback IPv4 address', () => {
    expect(external).not.toBeNull();
  });

  test('answers loopback without a token', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('http_requests_total');
  });

  test('refuses a non-loopback client without the token (403 FORBIDDEN)', async () => {
    const res = await fetch(`http://${external}:${port}/metrics`);
    expect(res.status).toBe(403);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe('FORBIDDEN');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('refuses a non-loopback client with a wrong token', async () => {
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer`, TOKEN, `Basic ${TOKEN}`]) {
      const res = await fetch(`http://${external}:${port}/metrics`, { headers: { authorization } });
      expect(res.status).toBe(403);
    }
  });

  test('answers a non-loopback client with Authorization: Bearer <METRICS_TOKEN>', async () => {
    const res = await fetch(`http://${external}:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('# TYPE http_requests_total counter');
  });

  test('without ALLOW_INSECURE_HTTP a plain-HTTP client from outside is refused first (HTTPS_REQUIRED), token or not', async () => {
    const res = await fetch(`http://${external}:${strictPort}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe('HTTPS_REQUIRED');
    const api = await fetch(`http://${external}:${strictPort}/v1/monitoring/schedules`, {
      headers: { authorization: `Bearer ${strict.lender.key}` },
    });
    expect(api.status).toBe(403);
    expect(((await api.json()) as any).error.code).toBe('HTTPS_REQUIRED');
    // /healthz stays reachable for probes.
    expect((await fetch(`http://${external}:${strictPort}/healthz`)).status).toBe(200);
    // Loopback is fine.
    expect((await fetch(`http://127.0.0.1:${strictPort}/metrics`)).status).toBe(200);
  });

  test('without METRICS_TOKEN configured, no bearer value opens it from outside', async () => {
    const open = createTestContext({ ALLOW_INSECURE_HTTP: 'true' });
    open.app.listen({ hostname: '0.0.0.0', port: 0 });
    try {
      for (const authorization of ['Bearer null', 'Bearer ', 'Bearer undefined']) {
        const res = await fetch(`http://${external}:${open.app.server!.port}/metrics`, { headers: { authorization } });
        expect(res.status).toBe(403);
      }
    } finally {
      await open.app.stop(true);
      open.close();
    }
  });
});
