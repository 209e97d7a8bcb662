import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { loadConfig, type Config } from '../../src/config';
import { httpsAllowed, isLoopback, resolveClient } from '../../src/http/https';
import { createTestContext, type TestContext } from '../helpers/context';

const cfg = (env: Record<string, string> = {}): Config => loadConfig({ DATABASE_PATH: ':memory:', ...env });
const req = (headers: Record<string, string> = {}) => new Request('http://service.example/v1/balances', { headers });

describe('isLoopback', () => {
  test('loopback addresses', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopback(a)).toBe(true);
  });
  test('everything else', () => {
    for (const a of ['10.0.0.1', '192.168.1.5', '::ffff:10.0.0.1', '2001:db8::1', '0.0.0.0', '128.0.0.1', '', null, undefined, '127.0.0.1.evil']) {
      expect(isLoopback(a)).toBe(false);
    }
  });
});

describe('httpsAllowed', () => {
  test('plain HTTP from loopback is allowed', () => {
    expect(httpsAllowed(cfg(), req(), '127.0.0.1')).toBe(true);
    expect(httpsAllowed(cfg(), req(), '::1')).toBe(true);
    expect(httpsAllowed(cfg(), req(), '::ffff:127.0.0.1')).toBe(true);
  });

  test('in-process requests (no remote address) are local', () => {
    expect(httpsAllowed(cfg(), req(), null)).toBe(true);
    expect(httpsAllowed(cfg({ TRUST_PROXY: 'loopback' }), req({ 'x-forwarded-proto': 'http' }), null)).toBe(true);
  });

  test('plain HTTP from a non-loopback address is refused', () => {
    expect(httpsAllowed(cfg(), req(), '10.1.2.3')).toBe(false);
    expect(httpsAllowed(cfg(), req(), '203.0.113.9')).toBe(false);
    expect(httpsAllowed(cfg(), req(), '2001:db8::1')).toBe(false);
  });

  test('X-Forwarded-Proto is ignored without TRUST_PROXY', () => {
    expect(httpsAllowed(cfg(), req({ 'x-forwarded-proto': 'https' }), '10.1.2.3')).toBe(false);
    // ...and cannot turn a loopback request away either.
    expect(httpsAllowed(cfg(), req({ 'x-forwarded-proto': 'http' }), '127.0.0.1')).toBe(true);
  });

  test('ALLOW_INSECURE_HTTP allows plain HTTP from anywhere', () => {
    const c = cfg({ ALLOW_INSECURE_HTTP: 'true' });
    expect(httpsAllowed(c, req(), '10.1.2.3')).toBe(true);
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'http' }), '10.1.2.3')).toBe(true);
  });

  test('with TLS configured every request is HTTPS', () => {
    const c = cfg({ TLS_CERT_FILE: '/etc/tls/cert.pem', TLS_KEY_FILE: '/etc/tls/key.pem' });
    expect(httpsAllowed(c, req(), '10.1.2.3')).toBe(true);
  });

  test('X-Forwarded-Proto is believed only from a listed proxy', () => {
    const c = cfg({ TRUST_PROXY: '10.0.0.0/8' });
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'https' }), '10.1.2.3')).toBe(true);
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'HTTPS' }), '10.1.2.3')).toBe(true);
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'http' }), '10.1.2.3')).toBe(false);
    // A client that is not a listed proxy cannot claim HTTPS.
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'https' }), '203.0.113.9')).toBe(false);
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'https' }), '::ffff:203.0.113.9')).toBe(false);
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'https' }), '::ffff:10.0.0.7')).toBe(true);
  });

  test('a chain: the value the nearest proxy set (the rightmost) decides', () => {
    const c = cfg({ TRUST_PROXY: '10.0.0.0/8' });
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'http, https' }), '10.1.2.3')).toBe(true);
    // A client sending "https" through a proxy that appends "http" is still plain HTTP.
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'https, http' }), '10.1.2.3')).toBe(false);
  });

  test('TRUST_PROXY=loopback: forwarded plain HTTP is refused although the proxy connects from loopback', () => {
    const c = cfg({ TRUST_PROXY: 'loopback' });
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'http' }), '127.0.0.1')).toBe(false);
    expect(httpsAllowed(c, req({ 'x-forwarded-proto': 'http' }), '::1')).toBe(false);
  });

  test('behind a same-host proxy without X-Forwarded-Proto the forwarded client address decides, not the proxy’s', () => {
    const c = cfg({ TRUST_PROXY: 'loopback' });
    expect(httpsAllowed(c, req({ 'x-forwarded-for': '203.0.113.9' }), '127.0.0.1')).toBe(false);
    expect(httpsAllowed(c, req({ 'x-forwarded-for': '127.0.0.1' }), '127.0.0.1')).toBe(true);
    // A listed proxy that names no client: the client is unknown, so not local.
    expect(httpsAllowed(c, req(), '127.0.0.1')).toBe(false);
  });
});

describe('resolveClient', () => {
  const c = cfg({ TRUST_PROXY: 'loopback,10.0.0.0/8' });

  test('a peer that is not a listed proxy is the client; its forwarded headers are ignored', () => {
    expect(resolveClient(c, req({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'https' }), '203.0.113.9')).toEqual({ address: '203.0.113.9', forwardedProto: null, viaProxy: false });
    expect(resolveClient(cfg(), req({ 'x-forwarded-for': '127.0.0.1' }), '127.0.0.1').address).toBe('127.0.0.1');
  });

  test('X-Forwarded-For is read from the right, past every trusted proxy', () => {
    // The client can write anything on the left; the address our nearest untrusted hop reported is the one taken.
    expect(resolveClient(c, req({ 'x-forwarded-for': '127.0.0.1, 198.51.100.7, 10.0.0.5' }), '127.0.0.1').address).toBe('198.51.100.7');
    expect(resolveClient(c, req({ 'x-forwarded-for': '198.51.100.7' }), '10.2.3.4').address).toBe('198.51.100.7');
    expect(resolveClient(c, req({ 'x-forwarded-for': '[2001:db8::7]:443' }), '::1').address).toBe('2001:db8::7');
    expect(resolveClient(c, req({ 'x-forwarded-for': '198.51.100.7:5555' }), '::1').address).toBe('198.51.100.7');
    // Only trusted hops: the leftmost of them is the client.
    expect(resolveClient(c, req({ 'x-forwarded-for': '127.0.0.1, 10.0.0.5' }), '127.0.0.1').address).toBe('127.0.0.1');
    // Not an address: unknown.
    expect(resolveClient(c, req({ 'x-forwarded-for': 'unknown' }), '127.0.0.1').address).toBeNull();
    expect(resolveClient(c, req(), '127.0.0.1')).toEqual({ address: null, forwardedProto: null, viaProxy: true });
  });
});

describe('HTTPS policy over a real server (TRUST_PROXY=loopback)', () => {
  let ctx: TestContext;
  let base: string;

  beforeAll(() => {
    ctx = createTestContext({ TRUST_PROXY: 'loopback' });
    ctx.app.listen({ hostname: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${ctx.app.server!.port}`;
  });
  afterAll(async () => {
    await ctx.app.stop(true);
    ctx.close();
  });

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(base + path, { headers: { authorization: `Bearer ${ctx.lender.key}`, ...headers } });

  test('X-Forwarded-Proto: http → 403 HTTPS_REQUIRED envelope', async () => {
    const res = await get('/v1/monitoring/schedules', { 'x-forwarded-proto': 'http' });
    expect(res.status).toBe(403);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const body = (await res.json()) as any;
    expect(body.status).toBe('error');
    expect(body.status_code).toBe(403);
    expect(body.error.code).toBe('HTTPS_REQUIRED');
  });

  test('refused before authentication: no key, plain HTTP → 403, not 401', async () => {
    const res = await fetch(base + '/v1/monitoring/schedules', { headers: { 'x-forwarded-proto': 'http' } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe('HTTPS_REQUIRED');
  });

  test('X-Forwarded-Proto: https passes', async () => {
    const res = await get('/v1/monitoring/schedules', { 'x-forwarded-proto': 'https' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).schedules).toEqual([]);
  });

  test('a loopback client named by the proxy passes; a remote one, or none named, is refused', async () => {
    expect((await get('/v1/monitoring/schedules', { 'x-forwarded-for': '127.0.0.1' })).status).toBe(200);
    expect((await get('/v1/monitoring/schedules', { 'x-forwarded-for': '203.0.113.9' })).status).toBe(403);
    expect((await get('/v1/monitoring/schedules')).status).toBe(403);
  });

  test('/metrics behind a same-host proxy: the forwarded client decides, not the proxy’s loopback address', async () => {
    const metrics = (headers: Record<string, string>) => fetch(base + '/metrics', { headers });
    const remote = await metrics({ 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' });
    expect(remote.status).toBe(403);
    expect(((await remote.json()) as any).error.code).toBe('FORBIDDEN');
    // A client that puts 127.0.0.1 on the left of the header is still the address the proxy saw.
    expect((await metrics({ 'x-forwarded-for': '127.0.0.1, 203.0.113.9', 'x-forwarded-proto': 'https' })).status).toBe(403);
    expect((await metrics({ 'x-forwarded-proto': 'https' })).status).toBe(403);
    expect((await metrics({ 'x-forwarded-for': '127.0.0.1' })).status).toBe(200);
  });

  test('a refused request is still logged and counted (reqId, route, status 403)', async () => {
    const res = await get('/v1/monitoring/schedules', { 'x-forwarded-proto': 'http' });
    expect(res.status).toBe(403);
    const reqId = res.headers.get('x-request-id')!;
    // Logged as the response goes out: wait for the line (the deadline only ends a test that would hang).
    const deadline = Date.now() + 20_000;
    while (!ctx.logs.join('').includes(reqId) && Date.now() < deadline) await Bun.sleep(5);
    const line = ctx.logs
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => l.reqId === reqId);
    expect(line).toMatchObject({ msg: 'request', method: 'GET', status: 403, reqId });
    const metrics = await (await fetch(base + '/metrics', { headers: { 'x-forwarded-for': '127.0.0.1' } })).text();
    expect(metrics).toMatch(/^http_requests_total\{method="GET",route="[^"]*",status="403"\} [1-9]/m);
  });

  test('/healthz answers whatever the protocol', async () => {
    const res = await get('/healthz', { 'x-forwarded-proto': 'http' });
    expect(res.status).toBe(200);
  });
});

describe('/metrics with METRICS_TOKEN behind a proxy', () => {
  let ctx: TestContext;
  let base: string;
  beforeAll(() => {
    ctx = createTestContext({ TRUST_PROXY: 'loopback', METRICS_TOKEN: 'metrics-token-1' });
    ctx.app.listen({ hostname: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${ctx.app.server!.port}`;
  });
  afterAll(async () => {
    await ctx.app.stop(true);
    ctx.close();
  });

  test('a remote client reads metrics with the token (any case of the scheme), not without or with a wrong one', async () => {
    const remote = { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' };
    expect((await fetch(base + '/metrics', { headers: { ...remote, authorization: 'Bearer metrics-token-1' } })).status).toBe(200);
    expect((await fetch(base + '/metrics', { headers: { ...remote, authorization: 'bearer metrics-token-1' } })).status).toBe(200);
    expect((await fetch(base + '/metrics', { headers: { ...remote, authorization: 'Bearer metrics-token-2' } })).status).toBe(403);
    expect((await fetch(base + '/metrics', { headers: remote })).status).toBe(403);
  });
});
