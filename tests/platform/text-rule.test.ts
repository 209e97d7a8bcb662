// One text rule for every free-text field: well-formed Unicode without control characters, at the field's
// own length. A lone surrogate would be stored as U+FFFD (the label would come back changed); NUL, ESC and
// CR LF would reach pages, exports and logs. Each is a 400 naming the field, nothing is stored, and the value
// is never repeated back; a surrogate pair (an emoji) and a bidirectional mark are text and accepted.
import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { signedIn } from '../helpers/portal';
import { createUser } from '../../src/modules/portal/users';
import { isText } from '../../src/platform/fields';

const ctx = useTestContext();
const BAD: [name: string, value: string][] = [
  ['a lone surrogate', 'zqv\ud800text'],
  ['NUL', 'zqv\u0000text'],
  ['ESC', 'zqv\u001b[2Jtext'],
  ['CR LF', 'zqv\r\ntext'],
  ['a C1 control', 'zqv\u0085text'],
];
const GOOD = 'Ops \u{1F600} \u202Eok\u202C';

/** JSON text as a client sends it: JSON.stringify writes a lone surrogate as the escape \ud800. */
const send = (method: string, path: string, body: unknown) => ctx.json(method, path, { raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

function expectRefused(r: { status: number; body: any }, path: string) {
  expect(r.status).toBe(400);
  expect(r.body.error.code).toBe('BAD_REQUEST');
  const problem = r.body.error.details.errors.find((e: { path: string }) => e.path === path);
  expect(problem?.message, path).toMatch(/characters of well-formed Unicode without control characters/);
  expect(JSON.stringify(r.body)).not.toContain('zqv');
}

const connectionId = (await send('POST', '/v1/payment_connections', { api_key: 'sbx_text_rule_000000001', rail_scope: 'both', is_default: true })).body.id as string;
const scheduleId = (await send('POST', '/v1/monitoring/scheduled_balance_request', { name: 'text rule', interval_days: 7, authorizers: [bankAuthorizer('tr-1')] })).body
  .schedule_id as string;

interface Case {
  field: string;
  request: (v: string) => Promise<{ status: number; body: any }>;
  path: string;
  stored: () => unknown;
  lines?: boolean;
}

const CASES: Case[] = [
  {
    field: 'processor key label (create)',
    request: (v) => send('POST', '/v1/payment_connections', { api_key: 'sbx_text_rule_000000002', rail_scope: 'ach', label: v }),
    path: '/label',
    stored: () => ctx.sql.query('SELECT label FROM payment_connections ORDER BY label').all(),
  },
  {
    field: 'processor key label (relabel)',
    request: (v) => send('PATCH', `/v1/payment_connections/${connectionId}`, { label: v }),
    path: '/label',
    stored: () => ctx.sql.query('SELECT label FROM payment_connections ORDER BY label').all(),
  },
  {
    field: 'schedule name (create)',
    request: (v) => send('POST', '/v1/monitoring/scheduled_balance_request', { name: v, interval_days: 7, authorizers: [bankAuthorizer('tr-2')] }),
    path: '/name',
    stored: () => ctx.sql.query('SELECT name FROM schedules ORDER BY name').all(),
  },
  {
    field: 'schedule name (update)',
    request: (v) => send('PATCH', `/v1/monitoring/schedules/${scheduleId}`, { name: v }),
    path: '/name',
    stored: () => ctx.sql.query('SELECT name FROM schedules ORDER BY name').all(),
  },
  {
    field: 'webhook endpoint description',
    request: (v) => send('POST', '/v1/webhook_endpoints', { url: 'https://93.184.215.14/hooks', event_types: ['PAYMENT_EVENT'], description: v }),
    path: '/description',
    stored: () => ctx.sql.query('SELECT description FROM webhook_endpoints').all(),
  },
  {
    field: 'metadata value',
    request: (v) => send('POST', '/v1/balance_requests', { authorizers: [bankAuthorizer('tr-3', { metadata: { note: v } })] }),
    path: '/authorizers/0/metadata/note',
    stored: () => ctx.sql.query('SELECT COUNT(*) AS n FROM batches').get(),
    // A metadata value may hold several lines (a note): tabs and line breaks are its one exception.
    lines: true,
  },
  {
    field: 'an authorizer’s name',
    request: (v) => send('POST', '/v1/balance_requests', { authorizers: [bankAuthorizer('tr-4', { first_name: v })] }),
    path: '/authorizers/0/first_name',
    stored: () => ctx.sql.query('SELECT COUNT(*) AS n FROM batches').get(),
  },
  {
    field: 'an authorizer’s address line',
    request: (v) => send('POST', '/v1/monitoring/scheduled_balance_request', { name: `addr ${crypto.randomUUID()}`, interval_days: 7, authorizers: [bankAuthorizer('tr-5', { address: { city: v } })] }),
    path: '/authorizers/0/address/city',
    stored: () => ctx.sql.query('SELECT COUNT(*) AS n FROM schedules').get(),
  },
];

describe('the text rule on every free-text field', () => {
  for (const c of CASES) {
    test(`${c.field}: refused naming the field, nothing stored; an emoji and a bidi mark are accepted`, async () => {
      for (const [name, value] of BAD) {
        if (c.lines && name === 'CR LF') continue;
        const before = c.stored();
        const r = await c.request(value);
        expect({ case: name, status: r.status }).toEqual({ case: name, status: 400 });
        expectRefused(r, c.path);
        expect(c.stored()).toEqual(before);
      }
      const ok = await c.request(GOOD + crypto.randomUUID().slice(0, 4));
      expect(ok.status).toBeLessThan(300);
      if (c.lines) expect((await c.request(`line one\r\nline two\tafter a tab ${crypto.randomUUID()}`)).status).toBeLessThan(300);
    });
  }

  test('an enrolled borrower’s name and authorization reference: the borrower fails alone, naming the field', async () => {
    for (const [name, value] of BAD) {
      const r = await send('POST', '/v1/payment_enrollments', {
        borrowers: [enrollBorrower('tr-fine'), enrollBorrower('tr-name', { last_name: value }), enrollBorrower('tr-auth', { authorization: { obtained_at: '2026-11-01T00:00:00Z', reference: value } })],
      });
      expect(r.status).toBe(207);
      const [fine, badName, badAuth] = r.body.results as { outcome: string; message?: string }[];
      expect({ case: name, outcomes: [fine!.outcome, badName!.outcome, badAuth!.outcome] }).toEqual({ case: name, outcomes: [fine!.outcome === 'enrolled' ? 'enrolled' : 'updated', 'failed', 'failed'] });
      expect(badName!.message).toBe('last_name: Expected text of at most 255 characters of well-formed Unicode without control characters');
      expect(badAuth!.message).toBe('authorization/reference: Expected text of 1 to 255 characters of well-formed Unicode without control characters');
      expect(JSON.stringify(r.body)).not.toContain('zqv');
      expect((await ctx.json('GET', '/v1/payment_enrollments/tr-name')).status).toBe(404);
      expect((await ctx.json('GET', '/v1/payment_enrollments/tr-auth')).status).toBe(404);
    }
  });

  test('the portal’s endpoint form and a dashboard user’s display name follow it too', async () => {
    const p = await signedIn(ctx);
    const before = ctx.sql.query('SELECT COUNT(*) AS n FROM webhook_endpoints').get();
    const page = await p.post('/portal/developers/endpoints', { url: 'https://93.184.215.14/portal-hook', event_types: 'PAYMENT_EVENT', description: 'zqv\u001btext' });
    expect(page.status).toBe(400);
    expect(page.text).toContain('well-formed Unicode without control characters');
    expect(ctx.sql.query('SELECT COUNT(*) AS n FROM webhook_endpoints').get()).toEqual(before);
    for (const [, value] of BAD) {
      await expect(createUser(ctx.rt, { lenderId: ctx.lender.id, email: `u-${crypto.randomUUID().slice(0, 6)}@example.test`, displayName: value, password: 'a long enough password', now: ctx.clock.now() })).rejects.toThrow(
        /well-formed Unicode without control characters/,
      );
    }
  });

  test('isText: the length first, then the characters', () => {
    expect(isText('a'.repeat(255), 255)).toBe(true);
    expect(isText('a'.repeat(256), 255)).toBe(false);
    expect(isText('', 255, 1)).toBe(false);
    expect(isText('\u{1F600}', 2)).toBe(true);
    expect(isText('\ud800', 2)).toBe(false);
    expect(isText('\udc00\ud800', 2)).toBe(false);
    expect(isText('tab\there', 255)).toBe(false);
  });
});
