// engine: both
import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';
import { displayPrefix, issueKey, revokeKey } from '../../src/modules/lenders/service';
import { transaction } from '../../src/platform/context';

const ctx = useTestContext();

const AUTHORIZER = { authorizer_unique_id: 'a1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' };

function expectUnauthorized(r: { status: number; body: any; res: Response }) {
  expect(r.status).toBe(401);
  expect(r.body.status).toBe('error');
  expect(r.body.status_code).toBe(401);
  expect(r.body.error.code).toBe('UNAUTHORIZED');
  expect(typeof r.body.error.message).toBe('string');
  expect(r.body.error.timestamp).toMatch(/Z$/);
  expect(r.res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  expect(r.res.headers.get('content-type')).toContain('application/json');
}

describe('authentication', () => {
  test('no Authorization header → 401', async () => {
    expectUnauthorized(await ctx.json('GET', '/v1/webhooks/secret', { key: null }));
  });

  test('Basic scheme → 401', async () => {
    const basic = 'Basic ' + Buffer.from(`user:${ctx.lender.key}`).toString('base64');
    expectUnauthorized(await ctx.json('GET', '/v1/webhooks/secret', { key: null, headers: { authorization: basic } }));
  });

  test('a valid key under a scheme other than Bearer → 401', async () => {
    expectUnauthorized(await ctx.json('GET', '/v1/webhooks/secret', { key: null, headers: { authorization: `Token ${ctx.lender.key}` } }));
  });

  test('the scheme is case-insensitive: bearer and BEARER work', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const r = await ctx.json('GET', '/v1/webhooks/secret', { key: null, headers: { authorization: `${scheme} ${ctx.lender.key}` } });
      expect(r.status).toBe(200);
    }
  });

  test('Bearer with no token → 401', async () => {
    expectUnauthorized(await ctx.json('GET', '/v1/webhooks/secret', { key: null, headers: { authorization: 'Bearer' } }));
    expectUnauthorized(await ctx.json('GET', '/v1/webhooks/secret', { key: null, headers: { authorization: 'Bearer ' } }));
  });

  test('Bearer with two tokens → 401', async () => {
    expectUnauthorized(
      await ctx.json('GET', '/v1/webhooks/secret', { key: null, headers: { authorization: `Bearer ${ctx.lender.key} ${ctx.lender.key}` } }),
    );
  });

  test('malformed keys → 401', async () => {
    for (const key of [
      'nope',
      'drs_live_short',
      'drs_test_' + 'a'.repeat(32),
      'drs_live_' + 'a'.repeat(33),
      'drs_live_' + 'a'.repeat(31) + '!',
      ctx.lender.key.slice(0, -1),
    ]) {
      expectUnauthorized(await ctx.json('GET', '/v1/webhooks/secret', { key }));
    }
  });

  test('unknown well-formed key → 401', async () => {
    expectUnauthorized(await ctx.json('GET', '/v1/webhooks/secret', { key: 'drs_live_' + 'A'.repeat(32) }));
  });

  test('an unknown key is told to check the key, a missing header to send one', async () => {
    const unknown = await ctx.json('GET', '/v1/webhooks/secret', { key: 'drs_live_' + 'Q'.repeat(32) });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.suggestion).not.toContain('Send the header');
    const missing = await ctx.json('GET', '/v1/webhooks/secret', { key: null });
    expect(missing.body.error.suggestion).toContain('Authorization: Bearer');
  });

  test('a valid key works', async () => {
    const r = await ctx.json('GET', '/v1/webhooks/secret');
    expect(r.status).toBe(200);
    expect(r.body.secret).toMatch(/^whsec_/);
  });

  test('a revoked key → 401, while the lender’s other key keeps working', async () => {
    const other = ctx.newLender();
    const second = await transaction({ deps: ctx.rt }, (tx) => issueKey(tx, other.id, ctx.clock.now()));
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: other.key })).status).toBe(200);
    expect(await revokeKey(ctx.rt, displayPrefix(other.key), ctx.clock.now())).toBe(true);
    const revoked = await ctx.json('GET', '/v1/webhooks/secret', { key: other.key });
    expectUnauthorized(revoked);
    // The header was sent: the answer says the key was revoked and what to use instead, not to send a header.
    expect(revoked.body.error.message).toBe('This API key was revoked');
    expect(revoked.body.error.suggestion).not.toContain('Send the header');
    expect(revoked.body.error.suggestion).toContain('create one');
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: second })).status).toBe(200);
    // Revoking again finds no live key with that prefix.
    expect(await revokeKey(ctx.rt, displayPrefix(other.key), ctx.clock.now())).toBe(false);
  });

  // Nothing under /v1 is told without a valid key (not even that a route exists or what its body looks
  // like), and an unauthenticated body is not read at all.
  test('without a valid key, a /v1 POST is 401 whatever its body', async () => {
    const cases: { raw: string; type?: string }[] = [
      { raw: JSON.stringify({ authorizers: 'not-an-array' }), type: 'application/json' },
      { raw: JSON.stringify({ authorizers: [AUTHORIZER], surprise: 1 }), type: 'application/json' },
      { raw: '{"authorizers": [', type: 'application/json' },
      { raw: 'hello', type: 'text/plain' },
    ];
    for (const c of cases) {
      for (const key of [null, 'drs_live_' + 'Z'.repeat(32)]) {
        const r = await ctx.json('POST', '/v1/balance_requests', { key, raw: c.raw, headers: c.type ? { 'content-type': c.type } : {} });
        expect({ case: c.raw, status: r.status, code: r.body?.error?.code }).toEqual({ case: c.raw, status: 401, code: 'UNAUTHORIZED' });
      }
    }
  });
});

describe('tenancy', () => {
  test('another lender’s batch reads as 404; the owner sees it', async () => {
    const a = ctx.newLender();
    const b = ctx.newLender();
    const submit = await ctx.json('POST', '/v1/balance_requests', { key: a.key, body: { authorizers: [AUTHORIZER] } });
    expect(submit.status).toBe(201);
    const batchId = submit.body.batch_id as string;
    expect(batchId).toMatch(/^[0-9a-f-]{36}$/);

    const own = await ctx.json('GET', `/v1/balance_requests/${batchId}`, { key: a.key });
    expect(own.status).toBe(200);
    expect(own.body.batch_id).toBe(batchId);

    const foreign = await ctx.json('GET', `/v1/balance_requests/${batchId}`, { key: b.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('RESOURCE_NOT_FOUND');
    expect(JSON.stringify(foreign.body)).not.toContain('a1');

    const foreignResults = await ctx.json('GET', `/v1/balances?batchId=${batchId}`, { key: b.key });
    expect(foreignResults.status).toBe(404);
    expect(foreignResults.body.error.code).toBe('RESOURCE_NOT_FOUND');
  });
});

describe('last_used_at', () => {
  test('is null until the key is used, then set to the request time', async () => {
    const l = ctx.newLender();
    const lastUsed = () =>
      (ctx.sql.query('SELECT last_used_at AS t FROM api_keys WHERE lender_id = ?').get(l.id) as { t: number | null }).t;
    expect(lastUsed()).toBeNull();
    ctx.clock.advance(1000);
    const at = ctx.clock.now();
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: l.key })).status).toBe(200);
    expect(lastUsed()).toBe(at);
  });

  test('a failed authentication does not touch last_used_at of any key', async () => {
    const l = ctx.newLender();
    await ctx.json('GET', '/v1/webhooks/secret', { key: l.key.slice(0, -1) + (l.key.endsWith('A') ? 'B' : 'A') });
    const row = ctx.sql.query('SELECT last_used_at AS t FROM api_keys WHERE lender_id = ?').get(l.id) as { t: number | null };
    expect(row.t).toBeNull();
  });
});
