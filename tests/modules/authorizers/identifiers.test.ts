// An authorizer_unique_id must be well-formed Unicode without control characters on every route that takes
// one: a lone UTF-16 surrogate would be stored as U+FFFD, after which the borrower could not be named again
// (a removal by the id as sent would answer unknown while collection went on).
import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';

const ctx = useTestContext();
const LONE = 'sur\ud800-1';
const CONTROL = 'ctl\u0007-1';
const PAIR = 'emoji-\u{1F600}';

/** The raw JSON text of a body, with the lone surrogate escaped as JSON allows (\ud800), as a client would send it. */
const send = (method: string, path: string, body: unknown) =>
  ctx.json(method, path, { raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

function expectRefused(r: { status: number; body: any }, path: string) {
  expect(r.status).toBe(400);
  expect(r.body.status).toBe('error');
  expect(r.body.error.code).toBe('BAD_REQUEST');
  const problem = r.body.error.details.errors.find((e: { path: string }) => e.path === path);
  expect(problem?.message).toMatch(/well-formed Unicode/);
  // The value is never repeated back.
  expect(JSON.stringify(r.body)).not.toContain('sur\\ud800');
  expect(JSON.stringify(r.body)).not.toContain('ctl\\u0007');
}

describe('a malformed identifier is a 400 naming the field', () => {
  for (const [name, id] of [
    ['a lone surrogate', LONE],
    ['a control character', CONTROL],
  ] as const) {
    test(`${name}: enrollment, nothing stored, the rest of the request not enrolled either`, async () => {
      const r = await send('POST', '/v1/payment_enrollments', { borrowers: [enrollBorrower('fine-1'), enrollBorrower(id)] });
      expectRefused(r, '/borrowers/1/authorizer_unique_id');
      expect((await ctx.json('GET', '/v1/payment_enrollments/fine-1')).status).toBe(404);
      const stored = ctx.sql.query("SELECT count(*) AS n FROM enrollments WHERE authorizer_unique_id LIKE 'sur%' OR authorizer_unique_id LIKE 'ctl%'").get() as { n: number };
      expect(stored.n).toBe(0);
    });

    test(`${name}: removal and erasure`, async () => {
      expectRefused(await send('DELETE', '/v1/payment_enrollments', { authorizer_unique_ids: ['fine-1', id] }), '/authorizer_unique_ids/1');
      expectRefused(await send('DELETE', '/v1/persisted_authorizers', { authorizer_unique_ids: [id] }), '/authorizer_unique_ids/0');
    });

    test(`${name}: balance request (JSON) and a schedule`, async () => {
      expectRefused(await send('POST', '/v1/balance_requests', { authorizers: [bankAuthorizer('fine-2'), bankAuthorizer(id)] }), '/authorizers/1/authorizer_unique_id');
      expectRefused(
        await send('POST', '/v1/monitoring/scheduled_balance_request', { name: `ids-${name}`, interval_days: 7, authorizers: [bankAuthorizer(id)] }),
        '/authorizers/0/authorizer_unique_id',
      );
    });
  }

  test('payment events and an enrollment read: the query or path parameter', async () => {
    // Percent-encoded UTF-16 surrogate bytes (CESU-8) and a control character.
    for (const q of ['sur%ED%A0%80-1', 'ctl%07-1', 'ctl%00']) {
      const events = await ctx.json('GET', `/v1/payment_events?authorizer_unique_id=${q}`);
      expect(events.status).toBe(400);
      expect(events.body.error.code).toBe('BAD_REQUEST');
      expect(JSON.stringify(events.body.error.details.errors)).toContain('authorizer_unique_id');
    }
    const read = await ctx.json('GET', '/v1/payment_enrollments/ctl%07-1');
    expect(read.status).toBe(400);
    expect(read.body.error.code).toBe('BAD_REQUEST');
    expect(JSON.stringify(read.body.error.details.errors)).toContain('authorizer_unique_id');
  });

  test('a balance CSV row with a control character in its identifier fails alone, without the identifier', async () => {
    const form = new FormData();
    form.append('file', new Blob([`authorizer_unique_id,ssn,account_number,routing_number\nctl\u0001x,123456789,0001234567,110000000\nok-csv,123456789,0001234567,110000000\n`], { type: 'text/csv' }), 'ids.csv');
    const r = await ctx.json('POST', '/v1/balance_requests/csv', { form });
    expect(r.status).toBe(201);
    expect(r.body.failed_authorizers).toHaveLength(1);
    expect(r.body.failed_authorizers[0]).toMatchObject({ authorizer_unique_id: null, row_number: 2 });
    expect(r.body.failed_authorizers[0].error).toMatch(/^authorizer_unique_id: .*well-formed Unicode/);
    expect(r.body.message).toContain('1 authorizer');
  });
});

describe('well-formed identifiers are taken as sent', () => {
  test('a surrogate pair (an emoji) enrolls, reads back, and is removed by the same id', async () => {
    const r = await send('POST', '/v1/payment_enrollments', { borrowers: [enrollBorrower(PAIR)] });
    expect(r.status).toBe(207);
    expect(r.body.results[0]).toEqual({ authorizer_unique_id: PAIR, outcome: 'enrolled' });
    const read = await ctx.json('GET', `/v1/payment_enrollments/${encodeURIComponent(PAIR)}`);
    expect(read.status).toBe(200);
    expect(read.body.authorizer_unique_id).toBe(PAIR);
    const events = await ctx.json('GET', `/v1/payment_events?authorizer_unique_id=${encodeURIComponent(PAIR)}`);
    expect(events.status).toBe(200);
    const removed = await send('DELETE', '/v1/payment_enrollments', { authorizer_unique_ids: [PAIR] });
    expect(removed.body.results).toEqual([{ authorizer_unique_id: PAIR, outcome: 'removed' }]);
  });

  test('a balance request with a surrogate pair and non-Latin letters is accepted', async () => {
    const r = await send('POST', '/v1/balance_requests', { authorizers: [bankAuthorizer(PAIR), bankAuthorizer('Zoë-Ωμέγα-1')] });
    expect(r.status).toBe(201);
    expect(r.body.failed_authorizers).toEqual([]);
  });
});

test('the balance history of an authorizer: a control character in the path is a 400, a well-formed id is read', async () => {
  const bad = await ctx.json('GET', '/v1/monitoring/authorizers/ctl%0A-1/history');
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('BAD_REQUEST');
  const ok = await ctx.json('GET', `/v1/monitoring/authorizers/${encodeURIComponent(PAIR)}/history`);
  expect(ok.status).toBe(200);
  expect(ok.body.authorizer_unique_id).toBe(PAIR);
});
