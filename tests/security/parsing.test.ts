// The edges of parsing, as attacks: paths that do not decode, JSON that is too deep, values that break
// string conversion, and messages that must never carry what was sent. Each would be a 500, a stall or a
// leak without its guard.
import { PROVIDER_WEBHOOKS } from '../../src/http/gate';
import { afterAll, describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { startFakePlaid } from '../fakes/plaid-server';
import { JSON_MAX_DEPTH, nestsDeeperThan } from '../../src/http/body';

// Plaid stands outside: a bank-data connection's credentials are checked there.
const plaid = startFakePlaid();
afterAll(() => plaid.stop());
plaid.addClient('parsing_client', 'parsing-secret');
const ctx = useTestContext({ PLAID_API_URL: plaid.url });
const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('malformed percent-encoding in the path', () => {
  test('→ 400 BAD_REQUEST naming the path, on any route, with or without a key', async () => {
    for (const path of ['/v1/balance_requests/%zz', '/v1/monitoring/authorizers/%FF/history', '/v1/monitoring/schedules/%E0%A4%A', '/docs/assets/%FF', '/nowhere/%zz']) {
      for (const key of [undefined, null]) {
        const r = await ctx.json('GET', path, { key });
        expect(r.status).toBe(400);
        expect(r.body.error.code).toBe('BAD_REQUEST');
        expect(r.body.error.message).toMatch(/percent-encoding/);
        expect(r.body.error.details.errors[0].path).toBe('path');
        expect(r.res.headers.get('x-request-id')).toMatch(REQUEST_ID);
      }
    }
  });

  test('well-formed encodings still reach their route', async () => {
    const r = await ctx.json('GET', '/v1/monitoring/authorizers/loan%2D1%C3%A9/history');
    expect(r.status).toBe(200);
    expect(r.body.authorizer_unique_id).toBe('loan-1é');
  });
});

// A valid body for every JSON route; a route added without a row here fails the first test below.
const sched = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', { body: { name: 'parsing', interval_days: 7, authorizers: [bankAuthorizer('p-0')] } });
const conn = await ctx.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_parsing_0000000000001', rail_scope: 'both', is_default: true } });
const JSON_ROUTES: Record<string, { path: string; body: unknown }> = {
  'POST /v1/balance_requests': {
    path: '/v1/balance_requests',
    body: { authorizers: [bankAuthorizer('p-1', { metadata: { k: 'v' }, phone_number: '2025550143', date_of_birth: { day: 1, month: 2, year: 1990 }, address: { zip_code: '02139' } })], webhook_url: 'http://127.0.0.1:9/h' },
  },
  'POST /v1/monitoring/scheduled_balance_request': {
    path: '/v1/monitoring/scheduled_balance_request',
    body: { name: 'p', interval_days: 7, time_of_day: '09:00', webhook: 'http://127.0.0.1:9/h', threshold_amount: 10, authorizers: [bankAuthorizer('p-2', { threshold_amount: 5, metadata: { k: 1 } })] },
  },
  'PATCH /v1/monitoring/schedules/:id': { path: `/v1/monitoring/schedules/${sched.body.schedule_id}`, body: { name: 'p2', interval_days: 3, time_of_day: '10:00', expires_at: '2026-12-10' } },
  'PATCH /v1/monitoring/schedules/:id/authorizers': { path: `/v1/monitoring/schedules/${sched.body.schedule_id}/authorizers`, body: { authorizer_unique_ids: ['nobody'] } },
  'POST /v1/payment_connections': { path: '/v1/payment_connections', body: { api_key: 'sbx_parsing_0000000000002', rail_scope: 'ach', label: 'L' } },
  'PATCH /v1/payment_connections/:id': { path: `/v1/payment_connections/${conn.body.id}`, body: { label: 'Renamed' } },
  'POST /v1/webhook_endpoints': { path: '/v1/webhook_endpoints', body: { url: 'https://127.0.0.1:9/hook', event_types: ['PAYMENT_EVENT'], description: 'ops' } },
  'POST /v1/bank_data_connections': { path: '/v1/bank_data_connections', body: { provider: 'plaid', client_id: 'parsing_client', secret: 'parsing-secret', environment: 'sandbox' } },
  'PATCH /v1/collection_policy': { path: '/v1/collection_policy', body: { cfpb_covered: true, max_reinitiations: 1, reinitiation_amount: 'current' } },
  'POST /v1/payment_enrollments': { path: '/v1/payment_enrollments', body: { borrowers: [enrollBorrower('p-3', { metadata: { k: 'v' } })] } },
  'DELETE /v1/payment_enrollments': { path: '/v1/payment_enrollments', body: { authorizer_unique_ids: ['p-3'] } },
  'DELETE /v1/persisted_authorizers': { path: '/v1/persisted_authorizers', body: { authorizer_unique_ids: ['p-3'] } },
  'POST /v1/payment_enrollments/:authorizer_unique_id/rights_notice': {
    path: '/v1/payment_enrollments/p-3/rights_notice',
    body: { sent_at: '2026-11-20T10:00:00.000Z', channel: 'mail', evidence_ref: 'cert-1' },
  },
  'PUT /v1/fraud_monitoring/policy': { path: '/v1/fraud_monitoring/policy', body: { rules: { velocity: { action: 'hold', settings: { max_debits: 2 } } }, notes: 'n', changed_by: 'p' } },
  'POST /v1/fraud_alerts/:id/disposition': { path: '/v1/fraud_alerts/no-such-alert/disposition', body: { disposition: 'needs_info', note: 'n', disposed_by: 'p' } },
  'POST /v1/fraud_monitoring/reviews': { path: '/v1/fraud_monitoring/reviews', body: { reviewed_on: '2026-01-05', reviewer: 'p', notes: 'n', policy_version: 0 } },
};

// The providers' webhooks read their raw body only once its signature verifies (a call without one is a 401
// before any of it is parsed): tests/modules/bank-data-webhooks/webhooks.test.ts.
const jsonRoutes = () =>
  ctx.app.routes
    .filter((r) => !r.path.startsWith(PROVIDER_WEBHOOKS))
    .filter((r) => {
      const parse = (r.hooks as { parse?: { fn?: { mediaType?: string } }[] }).parse;
      return Array.isArray(parse) && parse.some((p) => p.fn?.mediaType === 'application/json');
    })
    .map((r) => `${r.method} ${r.path}`);

/** Every path into a JSON value (the root included). */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (v === null || typeof v !== 'object') return [at];
  return [at, ...Object.entries(v).flatMap(([k, x]) => paths(x, [...at, Array.isArray(v) ? Number(k) : k]))];
}
function replaced(v: any, at: (string | number)[], x: unknown): any {
  if (at.length === 0) return x;
  const copy = Array.isArray(v) ? [...v] : { ...v };
  copy[at[0]!] = replaced(v[at[0]!], at.slice(1), x);
  return copy;
}
const sendRaw = (method: string, path: string, raw: string) => ctx.json(method, path, { raw, headers: { 'content-type': 'application/json' } });

describe('every JSON route', () => {
  test('has a valid body in the table', () => {
    expect(jsonRoutes().sort()).toEqual(Object.keys(JSON_ROUTES).sort());
  });

  // Values whose string conversion throws ({"toString": 1}) or that look like object internals: each one,
  // in place of every field, is a 400 or an accepted request, never a 500; and no 400 repeats the value.
  const MARK = 867511224;
  const POISON = ['{"toString":M}', '{"valueOf":M}', '{"toString":M,"valueOf":M}', '{"constructor":M}', '{"__proto__":M}', '[{"toString":M}]', '{"toJSON":M}'].map((p) => p.replaceAll('M', String(MARK)));
  const SLOT = 'SLOT-2f4e9c';
  test('a value whose string conversion throws is a 400, never a 500, in any field', async () => {
    for (const [route, row] of Object.entries(JSON_ROUTES)) {
      const method = route.split(' ')[0]!;
      for (const at of paths(row.body)) {
        for (const x of POISON) {
          const raw = JSON.stringify(replaced(row.body, at, SLOT)).replace(`"${SLOT}"`, x);
          const r = await sendRaw(method, row.path, raw);
          expect({ route, at: at.join('/'), status: r.status }).toEqual({ route, at: at.join('/'), status: r.status < 500 ? r.status : -1 });
          if (r.status === 400) expect(JSON.stringify(r.body)).not.toContain(String(MARK));
        }
      }
    }
  });

  test('the exact body from the field report is a 400 on every route', async () => {
    const raw = '{"authorizers":[{"authorizer_unique_id":"a","ssn":{"toString":1}}]}';
    for (const [route, row] of Object.entries(JSON_ROUTES)) {
      const r = await sendRaw(route.split(' ')[0]!, row.path, raw);
      expect({ route, status: r.status }).toEqual({ route, status: 400 });
      expect(r.body.error.code).toBe('BAD_REQUEST');
    }
  });

  // "Quickly" is measured against the same route's answer to a flat value of the same length (33,333 empty
  // arrays in one array, in the same place), timed alternately so a busy machine slows both alike; the
  // cheaper of three runs of each. A refusal that walked the nesting with work growing faster than its depth
  // would take seconds at 50,000 levels, hundreds of times the flat value's milliseconds.
  test(`JSON nested ${JSON_MAX_DEPTH + 1} levels or more is a 400 before validation, quickly; ${JSON_MAX_DEPTH} levels is not refused for depth`, async () => {
    const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    const timed = async (method: string, path: string, raw: string) => {
      const t0 = performance.now();
      const r = await sendRaw(method, path, raw);
      return { r, ms: performance.now() - t0 };
    };
    for (const [route, row] of Object.entries(JSON_ROUTES)) {
      const method = route.split(' ')[0]!;
      // A 50,000-level metadata value (or, where there is no metadata, a 50,000-level body), and the flat
      // value in its place.
      const hasMetadata = JSON.stringify(row.body).includes('"metadata"');
      const put = (value: string) => (hasMetadata ? JSON.stringify(row.body).replace(/"metadata":\{[^}]*\}/, `"metadata":{"k":${value}}`) : value);
      const raw = put(deep(50_000));
      const flat = put(`[${Array(33_333).fill('[]').join(',')}]`);
      expect(flat.length).toBe(raw.length);
      let deepMs = Infinity;
      let flatMs = Infinity;
      for (let i = 0; i < 3; i++) {
        const d = await timed(method, row.path, raw);
        expect({ route, status: d.r.status }).toEqual({ route, status: 400 });
        expect(d.r.body.error.message).toContain(`deeper than ${JSON_MAX_DEPTH} levels`);
        const f = await timed(method, row.path, flat);
        expect({ route, status: f.r.status }).toEqual({ route, status: f.r.status < 500 ? f.r.status : -1 });
        deepMs = Math.min(deepMs, d.ms);
        flatMs = Math.min(flatMs, f.ms);
      }
      // 0.3 to 1.8 measured with the machine busy.
      expect(deepMs / flatMs, `${route}: ${deepMs.toFixed(1)} ms deep, ${flatMs.toFixed(1)} ms flat`).toBeLessThan(20);
    }
    // Exactly at the bound the body is read and judged by its fields (400 for its shape, not its depth).
    const r = await sendRaw('PATCH', JSON_ROUTES['PATCH /v1/monitoring/schedules/:id']!.path, `{"name":${deep(JSON_MAX_DEPTH - 1)}}`);
    expect(r.status).toBe(400);
    expect(r.body.error.message).not.toContain('deeper');
  });

  test('nestsDeeperThan counts objects and arrays together, and its own walk cannot overflow', () => {
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
    let v: unknown = 1;
    for (let i = 0; i < 200_000; i++) v = [v];
    expect(nestsDeeperThan(v, JSON_MAX_DEPTH)).toBe(true);
  });
});

describe('a 400 never repeats the value sent', () => {
  test('schema-validated bodies name the path and what was expected, in words', async () => {
    const path = JSON_ROUTES['PATCH /v1/monitoring/schedules/:id']!.path;
    const cases: [unknown, string, RegExp][] = [
      [{ name: { toString: 867511224 } }, '/name', /^Expected text of 1 to 255 characters of well-formed Unicode without control characters$/],
      [{ interval_days: 'MARKER-867511224' }, '/interval_days', /^Expected an integer from 1 to 30$/],
      [{ time_of_day: ['MARKER-867511224'] }, '/time_of_day', /^Expected a string/],
      [{ surprise: 'MARKER-867511224' }, '/surprise', /./],
    ];
    for (const [body, at, message] of cases) {
      const r = await ctx.json('PATCH', path, { body });
      expect(r.status).toBe(400);
      const problem = r.body.error.details.errors.find((e: { path: string }) => e.path === at);
      expect(problem?.message).toMatch(message);
      expect(JSON.stringify(r.body)).not.toMatch(/867511224|should be one of|'string'/);
    }
  });

  test('batch ids that are not UUIDs are named by position', async () => {
    const r = await ctx.json('GET', '/v1/balances/csv?batch_ids=MARKER-867511224&batch_ids=00000000-0000-7000-8000-000000000000');
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain('value 1 of 2');
    expect(JSON.stringify(r.body)).not.toContain('867511224');
  });

  test('a metadata key that breaks the rule, or an unknown field of any length, is not repeated in full', async () => {
    const longKey = 'K'.repeat(10_000);
    const r1 = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('p-9', { metadata: { [`${longKey}!`]: 'v' } })] } });
    expect(r1.status).toBe(400);
    expect(r1.body.error.details.errors[0].path).toBe('/authorizers/0/metadata');
    expect(JSON.stringify(r1.body)).not.toContain('KKKKKKKK');
    const r2 = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('p-10')], [longKey]: 1 } });
    expect(r2.status).toBe(400);
    expect(JSON.stringify(r2.body).length).toBeLessThan(2000);
  });

  test('a CSV the parser cannot read is described in the service’s words, not with a cell of it', async () => {
    const form = new FormData();
    form.append('file', new Blob(['authorizer_unique_id,ssn\nMARK"867511224",1\n'], { type: 'text/csv' }), 'a.csv');
    const r = await ctx.json('POST', '/v1/balance_requests/csv', { form });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain('row 2');
    expect(JSON.stringify(r.body)).not.toContain('867511224');
  });
});
