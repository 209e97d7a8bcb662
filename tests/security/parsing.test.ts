// The edges of parsing, as attacks: paths that do not decode, JSON that is too deep, values that break
// string conversion, and messages that must never carry what was sent. Each would be a 500, a stall or a
// leak without its guard.
import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';

const ctx = useTestContext();
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
