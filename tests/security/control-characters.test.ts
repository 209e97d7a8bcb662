// engine: both
// One identifier rule on both engines: a NUL or another control character in a path or query parameter is a
// 400 naming it, on every API route and portal page. PostgreSQL refuses a NUL in text outright, so such a
// request once answered 500 there (29 of 7,323 requests of a schema fuzz) where SQLite found nothing.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { signedIn } from '../helpers/portal';

const c = createTestContext();
afterAll(() => c.close());

const BAD = ['%00', '%1B', '%7F', 'a%00b'];
type Route = { method: string; path: string; query: string[] };

/** Every route of the app, with the names of the query parameters its schema declares. */
function routes(): Route[] {
  return c.app.routes
    .filter((r) => !r.path.startsWith('/docs') && r.path !== '/healthz' && r.path !== '/readyz' && r.path !== '/metrics' && r.path !== '*')
    .map((r) => {
      const schema = (r.hooks as { query?: { properties?: Record<string, unknown> } }).query;
      return { method: r.method, path: r.path, query: Object.keys(schema?.properties ?? {}) };
    });
}

describe('control characters in path and query parameters', () => {
  test('every API route: refused (400 naming the parameter), never a 500', async () => {
    const seen: string[] = [];
    const failures: string[] = [];
    for (const r of routes().filter((x) => x.path.startsWith('/v1/'))) {
      for (const bad of BAD) {
        const targets = [
          ...(r.path.includes(':') ? [r.path.replace(/:[^/]+/g, bad)] : []),
          ...r.query.map((q) => `${r.path.replace(/:[^/]+/g, 'x')}?${q}=${bad}`),
        ];
        for (const target of targets) {
          const body = r.method === 'GET' || r.method === 'DELETE' ? undefined : {};
          const res = await c.request(r.method, target, body === undefined ? {} : { body });
          seen.push(`${r.method} ${target}`);
          // 400 naming the parameter; a request refused for another reason first (a body of the wrong type: 415) is refused all the same.
          if (res.status !== 400 && res.status !== 415) failures.push(`${r.method} ${target}: ${res.status}`);
        }
      }
    }
    expect(seen.length).toBeGreaterThan(100);
    expect(failures).toEqual([]);
  });

  test('every portal page: refused, never a 500', async () => {
    const portal = await signedIn(c);
    const failures: string[] = [];
    let seen = 0;
    for (const r of routes().filter((x) => x.path.startsWith('/portal') && x.method === 'GET')) {
      const targets = [
        ...(r.path.includes(':') ? [r.path.replace(/:[^/]+/g, '%00')] : []),
        ...[...r.query, 'find', 'q', 'state'].map((q) => `${r.path.replace(/:[^/]+/g, 'x')}?${q}=%00`),
      ];
      for (const target of targets) {
        const res = await portal.get(target);
        seen++;
        if (res.status >= 500) failures.push(`GET ${target}: ${res.status}`);
      }
    }
    expect(seen).toBeGreaterThan(20);
    expect(failures).toEqual([]);
  });

  test('every credential field refuses control, format and surrogate characters, never echoing the value', async () => {
    const bad = ['\u0000', '\u001b', '\u202e', '\ud800', '\u00a0', ' '];
    const bodies = (x: string) =>
      [
        ['/v1/bank_data_connections', { provider: 'plaid', client_id: 'client_ctl', secret: `sec${x}ret-0001`, environment: 'sandbox' }],
        ['/v1/bank_data_connections', { provider: 'stripe', api_key: `rk_test_abc${x}def000000000` }],
        ['/v1/payment_connections', { api_key: `sbx_ctl_0000000000${x}0001`, rail_scope: 'ach' }],
      ] as const;
    for (const x of bad) {
      for (const [path, body] of bodies(x)) {
        const r = await c.json('POST', path, { body });
        expect(r.status).toBe(400);
        // The connection's body is one of two shapes (by provider): its refusal names the body; a key's names the field.
        if (path === '/v1/payment_connections') expect(JSON.stringify(r.body.error.details.errors)).toContain('api_key');
        expect(JSON.stringify(r.body)).not.toContain(x === ' ' ? 'def000' : x);
      }
    }
  });
});
