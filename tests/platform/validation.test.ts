// Every route that takes a JSON body checks it against its TypeBox schema before its service runs, and every
// documented error of that check comes back in the one envelope: 400 naming the path (never the value), 413,
// 415. The services receive the schema's type; what they are handed is what the schema allows.
import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { JSON_LIMIT_BYTES } from '../../src/http/body';

const ctx = useTestContext();
const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MARK = 'MARK-5551212';

function expectEnvelope(r: { status: number; body: any; res: Response }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.body.status).toBe('error');
  expect(r.body.status_code).toBe(status);
  expect(r.body.error.code).toBe(code);
  expect(r.body.error.message.length).toBeGreaterThan(0);
  expect(r.body.documentation_url).toMatch(/\/docs#[a-z-]+$/);
  expect(r.res.headers.get('x-request-id')).toMatch(REQUEST_ID);
  expect(JSON.stringify(r.body)).not.toContain(MARK);
}

const sched = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', { body: { name: 'typed', interval_days: 7, authorizers: [bankAuthorizer('t-0')] } });
const conn = await ctx.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_typed_00000000000000001', rail_scope: 'both', is_default: true } });

/** Per route: a required field to leave out, and a nested field given a value of the wrong type (with its path). */
const ROUTES: { route: string; path: string; valid: Record<string, unknown>; required?: string; wrong: [string[], unknown] }[] = [
  { route: 'POST', path: '/v1/balance_requests', valid: { authorizers: [bankAuthorizer('t-1')] }, required: 'authorizers', wrong: [['authorizers', '0', 'ssn'], 123456789] },
  {
    route: 'POST',
    path: '/v1/monitoring/scheduled_balance_request',
    valid: { name: 'typed-2', interval_days: 7, authorizers: [bankAuthorizer('t-2')] },
    required: 'name',
    wrong: [['authorizers', '0', 'threshold_amount'], MARK],
  },
  { route: 'PATCH', path: `/v1/monitoring/schedules/${sched.body.schedule_id}`, valid: { interval_days: 3 }, wrong: [['interval_days'], MARK] },
  { route: 'PATCH', path: `/v1/monitoring/schedules/${sched.body.schedule_id}/authorizers`, valid: { authorizer_unique_ids: ['nobody'] }, required: 'authorizer_unique_ids', wrong: [['authorizer_unique_ids', '0'], 7] },
  { route: 'POST', path: '/v1/payment_connections', valid: { api_key: 'sbx_typed_00000000000000002', rail_scope: 'ach' }, required: 'api_key', wrong: [['rail_scope'], MARK] },
  { route: 'PATCH', path: `/v1/payment_connections/${conn.body.id}`, valid: { label: 'Typed' }, wrong: [['is_default'], MARK] },
  { route: 'POST', path: '/v1/payment_enrollments', valid: { borrowers: [enrollBorrower('t-3')] }, required: 'borrowers', wrong: [['borrowers', '0', 'authorizer_unique_id'], 42] },
  { route: 'DELETE', path: '/v1/payment_enrollments', valid: { authorizer_unique_ids: ['t-3'] }, required: 'authorizer_unique_ids', wrong: [['authorizer_unique_ids'], MARK] },
  { route: 'DELETE', path: '/v1/persisted_authorizers', valid: { authorizer_unique_ids: ['t-3'] }, required: 'authorizer_unique_ids', wrong: [['authorizer_unique_ids'], MARK] },
  { route: 'PATCH', path: '/v1/collection_policy', valid: { cfpb_covered: true }, wrong: [['max_reinitiations'], MARK] },
];

function withValue(v: any, at: string[], x: unknown): any {
  if (at.length === 0) return x;
  const copy = Array.isArray(v) ? [...v] : { ...v };
  copy[at[0]!] = withValue(v[at[0]!], at.slice(1), x);
  return copy;
}

describe('every JSON body route answers its documented errors in the envelope', () => {
  for (const { route, path, valid, required, wrong } of ROUTES) {
    const name = `${route} ${path.replace(/[0-9a-f-]{36}/, ':id')}`;

    test(`${name}: a body that is not an object, an unknown field, a missing field, a wrong type → 400 naming the path`, async () => {
      const notObject = await ctx.json(route, path, { body: [MARK] });
      expectEnvelope(notObject, 400, 'BAD_REQUEST');
      expect(notObject.body.error.details.errors).toEqual([{ path: '/', message: 'Expected an object' }]);

      const unknown = await ctx.json(route, path, { body: { ...valid, surprise: MARK } });
      expectEnvelope(unknown, 400, 'BAD_REQUEST');
      expect(unknown.body.error.details.errors).toContainEqual({ path: '/surprise', message: 'Unknown field surprise' });

      if (required) {
        const { [required]: _gone, ...rest } = valid;
        const missing = await ctx.json(route, path, { body: rest });
        expectEnvelope(missing, 400, 'BAD_REQUEST');
        expect(missing.body.error.details.errors).toEqual([{ path: `/${required}`, message: `${required} is required` }]);
        expect(missing.body.error.message).toBe(`Invalid request body: /${required} ${required} is required`);
      }

      const typed = await ctx.json(route, path, { body: withValue(valid, wrong[0], wrong[1]) });
      expectEnvelope(typed, 400, 'BAD_REQUEST');
      expect(typed.body.error.details.errors[0].path).toBe(`/${wrong[0].join('/')}`);
      expect(typed.body.error.details.errors[0].message).toMatch(/^Expected /);
    });

    test(`${name}: not JSON → 400, another media type → 415, too large → 413`, async () => {
      const broken = await ctx.json(route, path, { raw: '{"a":', headers: { 'content-type': 'application/json' } });
      expectEnvelope(broken, 400, 'BAD_REQUEST');
      const text = await ctx.json(route, path, { raw: JSON.stringify(valid), headers: { 'content-type': 'text/plain' } });
      expectEnvelope(text, 415, 'UNSUPPORTED_MEDIA_TYPE');
      const big = await ctx.json(route, path, { raw: JSON.stringify({ ...valid, pad: 'x'.repeat(4 * JSON_LIMIT_BYTES) }), headers: { 'content-type': 'application/json' } });
      expectEnvelope(big, 413, 'PAYLOAD_TOO_LARGE');
    });
  }
});

describe('messages in the service’s words', () => {
  test('a list of the wrong size is named by its field', async () => {
    const borrowers = await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [] } });
    expect(borrowers.body.error.details.errors).toEqual([{ path: '/borrowers', message: 'Expected an array of 1 to 1000 borrowers' }]);
    const authorizers = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: MARK } });
    expect(authorizers.body.error.details.errors).toEqual([{ path: '/authorizers', message: 'Expected an array of 1 to 1000 authorizers' }]);
  });

  test('a change of a processor key that sends merchant_ref says why it is refused', async () => {
    const r = await ctx.json('PATCH', `/v1/payment_connections/${conn.body.id}`, { body: { merchant_ref: 'other' } });
    expectEnvelope(r, 400, 'BAD_REQUEST');
    expect(r.body.error.details.errors).toEqual([{ path: '/merchant_ref', message: 'merchant_ref is fixed when a key is created; create a new key for another tag' }]);
  });
});

describe('what the whole-request schema leaves to each item', () => {
  test('an enrollment borrower that breaks a field rule fails alone (207); the request is not refused', async () => {
    const r = await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('item-bad', { collectable_amount: MARK }), enrollBorrower('item-ok')] } });
    expect(r.status).toBe(207);
    expect(r.body.results[0]).toMatchObject({ authorizer_unique_id: 'item-bad', outcome: 'failed', reason: 'tokenization_failed', message: 'collectable_amount: Expected an integer from 1 to 10000000' });
    expect(r.body.results[1]).toEqual({ authorizer_unique_id: 'item-ok', outcome: 'enrolled' });
    expect(JSON.stringify(r.body)).not.toContain(MARK);
  });

  test('a balance authorizer that breaks a rule (not a shape) fails alone in failed_authorizers', async () => {
    const r = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('rule-bad', { ssn: '12' }), bankAuthorizer('rule-ok')] } });
    expect(r.status).toBe(201);
    expect(r.body.failed_authorizers).toEqual([{ authorizer_unique_id: 'rule-bad', error: 'ssn must have 9 digits', account_type: 'ACCOUNT_NUMBER', row_number: 1 }]);
  });

  test('metadata: the bounds of keys and values, and a key never repeated back', async () => {
    const send = (metadata: unknown) => ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('meta', { metadata })] } });
    const badKey = await send({ [`${MARK}!`]: 1 });
    expectEnvelope(badKey, 400, 'BAD_REQUEST');
    expect(badKey.body.error.details.errors).toEqual([{ path: '/authorizers/0/metadata', message: 'Expected metadata keys of 1 to 64 letters, digits, dots, dashes or underscores' }]);
    const longValue = await send({ note: 'v'.repeat(1001) });
    expectEnvelope(longValue, 400, 'BAD_REQUEST');
    expect(longValue.body.error.details.errors[0].path).toBe('/authorizers/0/metadata/note');
  });
});
