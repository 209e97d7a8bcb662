// engine: both
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, useTestContext } from '../helpers/context';
import { JSON_LIMIT_BYTES } from '../../src/http/body';

const ctx = useTestContext();

const AUTHORIZER = { authorizer_unique_id: 'a1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' };
const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The shared error envelope, with the code and status it must carry. */
function expectEnvelope(r: { status: number; body: any; res: Response }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.res.headers.get('content-type')).toContain('application/json');
  expect(r.body.status).toBe('error');
  expect(r.body.status_code).toBe(status);
  expect(r.body.error.code).toBe(code);
  expect(typeof r.body.error.message).toBe('string');
  expect(r.body.error.message.length).toBeGreaterThan(0);
  expect(r.body.error.timestamp).toBe(new Date(ctx.clock.now()).toISOString());
  expect(r.body.documentation_url).toMatch(/\/docs#[a-z-]+$/);
  expect(r.res.headers.get('x-request-id')).toMatch(REQUEST_ID);
}

function expectValidationErrors(body: any) {
  const errors = body.error.details?.errors;
  expect(Array.isArray(errors)).toBe(true);
  expect(errors.length).toBeGreaterThan(0);
  for (const e of errors) {
    expect(typeof e.path).toBe('string');
    expect(typeof e.message).toBe('string');
    expect(e.message.length).toBeGreaterThan(0);
  }
  return errors as { path: string; message: string }[];
}

describe('validation → 400 BAD_REQUEST, never 422', () => {
  test('authorizers not an array', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: 'not-an-array' } });
    expectEnvelope(r, 400, 'BAD_REQUEST');
    const errors = expectValidationErrors(r.body);
    expect(errors.some((e) => e.path.includes('authorizers'))).toBe(true);
  });

  test('empty authorizers array', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [] } });
    expectEnvelope(r, 400, 'BAD_REQUEST');
    expectValidationErrors(r.body);
  });

  test('missing body field', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', { body: {} });
    expectEnvelope(r, 400, 'BAD_REQUEST');
    expectValidationErrors(r.body);
  });

  test('unknown top-level field', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [AUTHORIZER], surprise: true } });
    expectEnvelope(r, 400, 'BAD_REQUEST');
    const errors = expectValidationErrors(r.body);
    expect(errors.some((e) => e.path.includes('surprise') || e.message.includes('surprise'))).toBe(true);
    // Nothing was created.
    expect((ctx.sql.query('SELECT COUNT(*) AS n FROM batches').get() as { n: number }).n).toBe(0);
  });

  test('query parameter limit=0 on GET /v1/balances', async () => {
    const r = await ctx.json('GET', '/v1/balances?batchId=00000000-0000-7000-8000-000000000000&limit=0');
    expect(r.status).not.toBe(422);
    expectEnvelope(r, 400, 'BAD_REQUEST');
    const errors = expectValidationErrors(r.body);
    // The failing parameter is named, and the message says it is the query, not the body.
    expect(errors[0]!.path).toBe('/limit');
    expect(r.body.error.message).toContain('query');
    expect(r.body.error.message).not.toContain('body');
  });

  test('query parameter limit=101 and limit=abc', async () => {
    for (const limit of ['101', 'abc', '1.5']) {
      const r = await ctx.json('GET', `/v1/balances?batchId=00000000-0000-7000-8000-000000000000&limit=${limit}`);
      expectEnvelope(r, 400, 'BAD_REQUEST');
      expect(expectValidationErrors(r.body).some((e) => e.path === '/limit')).toBe(true);
    }
  });

  test('missing required query parameter names it', async () => {
    const r = await ctx.json('GET', '/v1/balances');
    expectEnvelope(r, 400, 'BAD_REQUEST');
    const errors = expectValidationErrors(r.body);
    expect(errors.some((e) => e.path.includes('batchId'))).toBe(true);
  });
});

describe('body parsing', () => {
  test('malformed JSON → 400', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', { raw: '{"authorizers": [', headers: { 'content-type': 'application/json' } });
    expectEnvelope(r, 400, 'BAD_REQUEST');
    // The parser's own message, not a generic one.
    expect(r.body.error.message).toContain('JSON');
  });

  test('text/plain → 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', {
      raw: JSON.stringify({ authorizers: [AUTHORIZER] }),
      headers: { 'content-type': 'text/plain' },
    });
    expectEnvelope(r, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('no content type → 415', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', { raw: new TextEncoder().encode(JSON.stringify({ authorizers: [AUTHORIZER] })) });
    expectEnvelope(r, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('content-length over 2 MB → 413 PAYLOAD_TOO_LARGE', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', {
      raw: '{}',
      headers: { 'content-type': 'application/json', 'content-length': String(JSON_LIMIT_BYTES + 1) },
    });
    expectEnvelope(r, 413, 'PAYLOAD_TOO_LARGE');
    expect(r.body.error.details?.limit_bytes).toBe(JSON_LIMIT_BYTES);
  });

  test('an actual body over 2 MB → 413 PAYLOAD_TOO_LARGE', async () => {
    const big = JSON.stringify({ authorizers: [{ ...AUTHORIZER, first_name: 'x'.repeat(JSON_LIMIT_BYTES) }] });
    const r = await ctx.json('POST', '/v1/balance_requests', { raw: big, headers: { 'content-type': 'application/json' } });
    expectEnvelope(r, 413, 'PAYLOAD_TOO_LARGE');
  });

  test('application/json with charset is accepted', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', {
      raw: JSON.stringify({ authorizers: [{ ...AUTHORIZER, authorizer_unique_id: 'charset-1' }] }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(r.status).toBe(201);
  });
});

describe('routing', () => {
  test('unknown /v1 route with a valid key → 404', async () => {
    const r = await ctx.json('GET', '/v1/no-such-thing');
    expectEnvelope(r, 404, 'RESOURCE_NOT_FOUND');
  });

  test('unknown /v1 route without a key → 401 (existence is not disclosed)', async () => {
    const r = await ctx.json('GET', '/v1/no-such-thing', { key: null });
    expectEnvelope(r, 401, 'UNAUTHORIZED');
    const bad = await ctx.json('GET', '/v1/no-such-thing', { key: 'drs_live_' + '0'.repeat(32) });
    expectEnvelope(bad, 401, 'UNAUTHORIZED');
  });

  test('unknown route outside /v1 → 404 without a key', async () => {
    const r = await ctx.json('GET', '/no-such-thing', { key: null });
    expectEnvelope(r, 404, 'RESOURCE_NOT_FOUND');
  });

  test('wrong method → 405 with Allow', async () => {
    const r = await ctx.json('DELETE', '/v1/webhooks/secret');
    expectEnvelope(r, 405, 'METHOD_NOT_ALLOWED');
    expect(r.res.headers.get('allow')).toBe('GET');

    const put = await ctx.json('PUT', '/v1/balance_requests', { body: {} });
    expectEnvelope(put, 405, 'METHOD_NOT_ALLOWED');
    expect(put.res.headers.get('allow')).toContain('POST');
  });

  test('wrong method on a parameterised path → 405 listing every method of it', async () => {
    const r = await ctx.json('PUT', '/v1/monitoring/schedules/00000000-0000-7000-8000-000000000000');
    expectEnvelope(r, 405, 'METHOD_NOT_ALLOWED');
    const allow = (r.res.headers.get('allow') ?? '').split(/,\s*/).sort();
    expect(allow).toEqual(['DELETE', 'GET', 'PATCH']);
  });

  test('wrong method under /v1 without a key → 401', async () => {
    const r = await ctx.json('DELETE', '/v1/webhooks/secret', { key: null });
    expectEnvelope(r, 401, 'UNAUTHORIZED');
    expect(r.res.headers.get('allow')).toBeNull();
  });
});

describe('rate limit', () => {
  const limited = createTestContext({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '2' });
  afterAll(() => limited.close());

  test('past the burst → 429 RATE_LIMITED with Retry-After; refills with time; per key', async () => {
    expect((await limited.json('GET', '/v1/monitoring/schedules')).status).toBe(200);
    expect((await limited.json('GET', '/v1/monitoring/schedules')).status).toBe(200);
    const r = await limited.json('GET', '/v1/monitoring/schedules');
    expect(r.status).toBe(429);
    expect(r.body.status).toBe('error');
    expect(r.body.status_code).toBe(429);
    expect(r.body.error.code).toBe('RATE_LIMITED');
    expect(r.res.headers.get('retry-after')).toBe('1');
    expect(r.res.headers.get('x-request-id')).toMatch(REQUEST_ID);

    // Another key has its own bucket.
    const other = limited.newLender();
    expect((await limited.json('GET', '/v1/monitoring/schedules', { key: other.key })).status).toBe(200);

    // One second later one token is back, and only one.
    limited.clock.advance(1000);
    expect((await limited.json('GET', '/v1/monitoring/schedules')).status).toBe(200);
    expect((await limited.json('GET', '/v1/monitoring/schedules')).status).toBe(429);
  });

  test('requests without a valid key are 401, not counted against anyone', async () => {
    const r = await limited.json('GET', '/v1/monitoring/schedules', { key: null });
    expect(r.status).toBe(401);
  });
});

describe('internal errors', () => {
  test('a real failure (dropped table) → 500 INTERNAL_ERROR with a request id and no internals', async () => {
    const broken = createTestContext();
    try {
      broken.sql.exec('DROP TABLE webhook_secrets');
      const r = await broken.json('GET', '/v1/webhooks/secret');
      expect(r.status).toBe(500);
      expect(r.body.status).toBe('error');
      expect(r.body.status_code).toBe(500);
      expect(r.body.error.code).toBe('INTERNAL_ERROR');
      const requestId = r.res.headers.get('x-request-id');
      expect(requestId).toMatch(REQUEST_ID);
      expect(r.body.error.details).toEqual({ request_id: requestId });
      expect(r.body.error.message).toContain(requestId!);
      const text = JSON.stringify(r.body);
      for (const leak of ['webhook_secrets', 'no such table', 'SQLite', 'sqlite', 'at ', '.ts', 'stack', 'Error:']) {
        expect(text).not.toContain(leak);
      }
      // The log has the cause and the same request id, so an operator can find it.
      const logged = broken.logs.join('');
      expect(logged).toContain('unhandled error');
      expect(logged).toContain(requestId!);
    } finally {
      broken.close();
    }
  });

  test('a closed database → an envelope, not a crash (503 for a PostgreSQL pool out of reach, 500 for a closed SQLite handle)', async () => {
    const broken = createTestContext();
    try {
      if (broken.rt.pg) await broken.rt.pg.close();
      else broken.sql.close();
      const r = await broken.json('GET', '/v1/monitoring/schedules');
      // A closed pool is the database out of reach: the client is told to send again. A closed SQLite handle is
      // a fault of the process itself, not an outage.
      expect(r.status).toBe(broken.rt.pg ? 503 : 500);
      expect(r.body.error.code).toBe(broken.rt.pg ? 'SERVICE_UNAVAILABLE' : 'INTERNAL_ERROR');
      if (broken.rt.pg) expect(r.res.headers.get('retry-after')).toBe('5');
      expect(r.body.error.details.request_id).toBe(r.res.headers.get('x-request-id'));
    } finally {
      broken.close();
    }
  });
});

describe('X-Request-Id', () => {
  test('every response carries a distinct one', async () => {
    const responses = await Promise.all([
      ctx.request('GET', '/healthz', { key: null }),
      ctx.request('GET', '/readyz', { key: null }),
      ctx.request('GET', '/metrics', { key: null }),
      ctx.request('GET', '/docs/json', { key: null }),
      ctx.request('GET', '/v1/monitoring/schedules'),
      ctx.request('POST', '/v1/balance_requests', { body: { authorizers: [{ ...AUTHORIZER, authorizer_unique_id: 'rid-1' }] } }),
      ctx.request('GET', '/v1/monitoring/schedules', { key: null }),
      ctx.request('GET', '/nowhere', { key: null }),
      ctx.request('DELETE', '/healthz', { key: null }),
      ctx.request('POST', '/v1/balance_requests', { body: { authorizers: 1 } }),
    ]);
    const ids = responses.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(REQUEST_ID);
    expect(new Set(ids).size).toBe(ids.length);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 201, 401, 404, 405, 400]);
  });
});

describe('validation messages say what was expected, in words, never the value sent', () => {
  test('query enums, integer ranges and body types', async () => {
    const s = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', { body: { name: 'msg', interval_days: 7, authorizers: [AUTHORIZER] } });
    const cases: [string, string, unknown, RegExp][] = [
      ['GET', '/v1/webhooks/deliveries?status=bogus', undefined, /Expected one of pending, delivered, failed/],
      ['GET', '/v1/monitoring/schedules?status=NOPE', undefined, /Expected one of ACTIVE, COMPLETED, DISABLED/],
      ['GET', '/v1/balances?batchId=x&limit=987654', undefined, /Expected an integer from 1 to 100/],
      ['PATCH', `/v1/monitoring/schedules/${s.body.schedule_id}`, { interval_days: 31 }, /Expected an integer from 1 to 30/],
      ['PATCH', `/v1/monitoring/schedules/${s.body.schedule_id}`, { name: 867511224 }, /Expected text of 1 to 255 characters/],
      ['POST', '/v1/balance_requests', { authorizers: [{ ...AUTHORIZER, ssn: 867511224 }] }, /Expected a string of at most 11 characters/],
    ];
    for (const [method, path, body, message] of cases) {
      const r = await ctx.json(method, path, body === undefined ? {} : { body });
      expect(r.status).toBe(400);
      expect(r.body.error.details.errors[0].message).toMatch(message);
      const text = JSON.stringify(r.body);
      expect(text).not.toMatch(/867511224|987654|bogus|NOPE|'string'/);
    }
  });
});
