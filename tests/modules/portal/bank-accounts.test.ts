// The portal's Bank accounts page through the real app: the lender's accounts as GET /v1/bank_accounts gives
// them (last four, state, since, codes, borrowers), filtered by state and paged; an account's page with its
// borrowers linked to theirs; another lender's account is not found; a borrower id with markup and bidi
// controls is shown as text; the month's ACH report downloaded as the API's CSV, a bad month a page.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower, ownAccount } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { signedIn, type PortalClient } from '../../helpers/portal';
import { borrowerHref } from '../../../src/modules/portal/pages/borrowers';

const SETTLE = 60_000;
/** A borrower id a lender may send: markup, quotes and a bidi control. */
const HOSTILE = '<script>alert(1)</script>"\'&\u202Etxt';
const escapeHtml = (x: string) => x.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
/** As the page shows it: escaped, the bidi control written out. */
const SHOWN = escapeHtml(HOSTILE).replace('\u202E', '[U+202E]');
const SHARED = '0005550001';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

/** Rows of the page's first table: each row's cells, markup kept. */
const rowsOf = (html: string) =>
  [...(/<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '').matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => [...m[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((x) => x[1]!));
const hrefs = (html: string, prefix: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&#39;/g, "'").replace(/&amp;/g, '&')).filter((h) => h.startsWith(prefix));

describe('/portal/payments/bank-accounts', () => {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: '3600000' });
  contexts.push(c);
  let p: PortalClient;
  // Four borrowers on one account, the first returned R10 (the account unauthorized); 51 more, each on an
  // account of its own, that are never debited (their amounts are above their balances).
  const ready = (async () => {
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_portal_accounts_00001', rail_scope: 'ach', is_default: true } })).status).toBe(201);
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { require_account_validation: false } })).status).toBe(200);
    const shared = ['on-shared-1', 'on-shared-2', 'on-shared-3', HOSTILE].map((aid, i) => enrollBorrower(aid, { account_number: SHARED, collectable_amount: i === 0 ? 42594 : 9_000_000 }));
    const alone = Array.from({ length: 51 }, (_, i) => enrollBorrower(`alone-${String(i).padStart(2, '0')}`, { account_number: ownAccount(i + 1), collectable_amount: 9_000_000 }));
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [...shared, ...alone] } })).status).toBe(207);
    await cycle(c);
    await dispatchAndSettle(c, SETTLE);
    p = await signedIn(c);
  })();
  const sharedAccount = async () => (await c.json('GET', '/v1/payment_enrollments/on-shared-1')).body.bank_account_id as string;

  test('signed out it sends to sign-in; signed in it is in the navigation, marked as the page', async () => {
    await ready;
    for (const path of ['/portal/payments/bank-accounts', `/portal/payments/bank-accounts/${await sharedAccount()}`, '/portal/payments/ach-report.csv?month=2026-11']) {
      const r = await c.request('GET', path, { key: null });
      expect(`${path} ${r.status} ${r.headers.get('location')}`).toBe(`${path} 303 /portal/login`);
    }
    const page = await p.get('/portal/payments/bank-accounts');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Bank accounts</h1>');
    expect(page.text).toContain('<a href="/portal/payments/bank-accounts" aria-current="page">Bank accounts</a>');
  });

  test('the list: each account as the API shows it, 50 a page, the next page behind its link', async () => {
    await ready;
    const api = (await c.json('GET', '/v1/bank_accounts?limit=100')).body.bank_accounts as { id: string; last4: string; state: string; return_codes: string[]; enrollment_count: number }[];
    expect(api).toHaveLength(52);
    const first = await p.get('/portal/payments/bank-accounts');
    const rows = rowsOf(first.text);
    expect(rows).toHaveLength(50);
    // Row by row, in the API's order (by id): the link to the account, its last four, state, codes and borrowers.
    rows.forEach((cells, i) => {
      const a = api[i]!;
      expect(cells[0]).toBe(`<a href="/portal/payments/bank-accounts/${a.id}">…${a.last4}</a>`);
      expect([cells[1], cells[3], cells[4]]).toEqual([a.state, a.return_codes.join(', ') || '—', String(a.enrollment_count)]);
      expect(cells[2]).toMatch(/^<time datetime="2026-11-21T/);
    });
    const next = hrefs(first.text, '/portal/payments/bank-accounts?');
    expect(next).toHaveLength(1);
    const second = await p.get(next[0]!);
    expect(rowsOf(second.text).map((r) => r[0])).toEqual(api.slice(50).map((a) => `<a href="/portal/payments/bank-accounts/${a.id}">…${a.last4}</a>`));
    expect(hrefs(second.text, '/portal/payments/bank-accounts?')).toEqual([]);
    // The shared account: unauthorized by the R10, four borrowers, the first three linked to their pages.
    const shared = await sharedAccount();
    const row = [...rowsOf(first.text), ...rowsOf(second.text)].find((r) => r[0]!.includes(shared))!;
    expect([row[1], row[3], row[4]]).toEqual(['unauthorized', 'R10', '4']);
    const [a1, a2, a3] = [HOSTILE, 'on-shared-1', 'on-shared-2'].sort();
    expect(row[5]).toBe(`${[a1, a2, a3].map((aid) => `<a href="${escapeHtml(borrowerHref(aid!))}">${escapeHtml(aid!).replace('\u202E', '[U+202E]')}</a>`).join(', ')} and 1 more`);
  });

  test('filtered by state, the filter kept on the next page; a state that is none is refused as a page', async () => {
    await ready;
    const unauthorized = await p.get('/portal/payments/bank-accounts?state=unauthorized');
    expect(rowsOf(unauthorized.text).map((r) => r[1])).toEqual(['unauthorized']);
    expect(unauthorized.text).toMatch(/<option value="unauthorized" selected(="")?>unauthorized<\/option>/);
    expect(rowsOf((await p.get('/portal/payments/bank-accounts?state=deceased')).text)).toEqual([]);
    expect((await p.get('/portal/payments/bank-accounts?state=deceased')).text).toContain('No account is in this state.');
    const ok = await p.get('/portal/payments/bank-accounts?state=ok');
    expect(rowsOf(ok.text)).toHaveLength(50);
    const next = hrefs(ok.text, '/portal/payments/bank-accounts?')[0]!;
    expect(next).toContain('state=ok');
    expect(rowsOf((await p.get(next)).text).map((r) => r[1])).toEqual(['ok']);
    const bad = await p.get('/portal/payments/bank-accounts?state=closed');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('role="alert"');
  });

  test('an account’s page: its facts, its borrowers linked to their pages, the hostile id as text', async () => {
    await ready;
    const id = await sharedAccount();
    const api = (await c.json('GET', `/v1/bank_accounts/${id}`)).body;
    const r = await p.get(`/portal/payments/bank-accounts/${id}`);
    expect(r.status).toBe(200);
    expect(r.text).toContain(`<h1>Bank account …${api.last4}</h1>`);
    expect(r.text).toContain('<th scope="row">State</th><td>unauthorized: its holder said a debit was not authorized');
    expect(r.text).toContain('<th scope="row">Return codes</th><td>R10</td>');
    expect(r.text).toContain(`<th scope="row">Set by the return of</th><td><code>${api.state_reference}</code></td>`);
    expect(r.text).toContain(`<time datetime="${api.state_since}">`);
    const borrowers = hrefs(r.text, '/portal/payments/borrowers/');
    expect(borrowers.sort()).toEqual(['on-shared-1', 'on-shared-2', 'on-shared-3', HOSTILE].map((aid) => borrowerHref(aid)).sort());
    // Each link opens exactly that borrower's page.
    for (const href of borrowers) expect((await p.get(href)).status).toBe(200);
    expect(r.text).toContain(SHOWN);
    expect(r.text).not.toContain('<script>alert(1)');
    expect(r.text).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    // Never the number.
    expect(r.text).not.toContain(SHARED);
  });

  test('another lender’s account, and one that does not exist, are not found', async () => {
    await ready;
    const id = await sharedAccount();
    const other = c.newLender('Other lender');
    const theirs = await signedIn(c, { lenderId: other.id });
    const r = await theirs.get(`/portal/payments/bank-accounts/${id}`);
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toContain('text/html');
    expect(r.text).toContain('Bank account not found');
    expect(r.text).not.toContain('R10');
    expect(rowsOf((await theirs.get('/portal/payments/bank-accounts')).text)).toEqual([]);
    expect((await p.get('/portal/payments/bank-accounts/no-such-account')).status).toBe(404);
    expect((await p.get('/portal/payments/bank-accounts/100%25')).status).toBe(404);
  });

  test('the ACH report: the last 12 months offered, the file the API’s CSV; a bad or future month a page', async () => {
    await ready;
    const page = (await p.get('/portal/payments/bank-accounts')).text;
    expect(page).toContain('<form method="get" action="/portal/payments/ach-report.csv" aria-label="Download the monthly ACH report">');
    const months = [...page.matchAll(/<option value="(\d{4}-\d{2})">([^<]+)<\/option>/g)].map((m) => [m[1], m[2]]);
    expect(months).toHaveLength(12);
    expect(months[0]).toEqual(['2026-11', 'November 2026 (so far)']);
    expect(months[1]).toEqual(['2026-10', 'October 2026']);
    expect(months[11]).toEqual(['2025-12', 'December 2025']);
    const file = await c.request('GET', '/portal/payments/ach-report.csv?month=2026-11', { key: null, headers: { cookie: p.cookie } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(file.headers.get('content-disposition')).toBe('attachment; filename=ach-report-2026-11.csv');
    const text = await file.text();
    const api = await (await c.request('GET', '/v1/reports/ach?month=2026-11&format=csv')).text();
    expect(text).toBe(api);
    expect(text).toContain('accounts_blocked,,by_state.unauthorized,1\r\n');
    for (const bad of ['2026-12', '2026-13', 'x', '']) {
      const r = await p.get(`/portal/payments/ach-report.csv?month=${bad}`);
      expect(`${bad}: ${r.status} ${r.headers.get('content-type')}`).toBe(`${bad}: 400 text/html; charset=utf-8`);
      expect(r.text).toContain('role="alert"');
      expect(r.text).toContain('month');
    }
    // Another lender's file is its own.
    const other = c.newLender('Another');
    const theirs = await signedIn(c, { lenderId: other.id });
    const their = await c.request('GET', '/portal/payments/ach-report.csv?month=2026-11', { key: null, headers: { cookie: theirs.cookie } });
    expect(await their.text()).toContain('accounts_blocked,,count,0\r\n');
  });
});

describe('a Notification of Change on the account page', () => {
  test('under review it is listed with an Apply button; applying it from the page applies it once, and a second time is refused', async () => {
    const c = createTestContext();
    contexts.push(c);
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { apply_notifications_of_change: 'review' } })).status).toBe(200);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('noc-1', { account_number: '0005550002' })] } })).status).toBe(207);
    const form = new FormData();
    form.append('file', new Blob(['authorizer_unique_id,change_code,corrected_data\nnoc-1,C01,0005559999\n'], { type: 'text/csv' }), 'noc.csv');
    expect((await c.json('POST', '/v1/payment_results/uploads', { form })).body).toMatchObject({ notifications_of_change: 1 });
    const id = (await c.json('GET', '/v1/payment_enrollments/noc-1')).body.bank_account_id as string;
    const changeId = (await c.json('GET', `/v1/bank_accounts/${id}`)).body.pending_change_id as string;
    const p = await signedIn(c);
    const before = await p.get(`/portal/payments/bank-accounts/${id}`);
    expect(before.text).toContain('Notifications of Change');
    expect(before.text).toContain('…0002 → …9999');
    expect(before.text).toContain('Apply C01');
    expect(before.text).toContain('Debits held for a change');
    // Without the form's token nothing is applied.
    expect((await p.post(`/portal/payments/bank-accounts/${id}/changes/${changeId}/apply`, {}, { csrf: null })).status).toBe(403);
    expect((await c.json('GET', `/v1/bank_accounts/${id}`)).body.pending_change_id).toBe(changeId);
    const applied = await p.post(`/portal/payments/bank-accounts/${id}/changes/${changeId}/apply`, {});
    expect(applied.status).toBe(200);
    expect(applied.text).toContain('C01 applied');
    expect(applied.text).not.toContain('Apply C01');
    expect((await c.json('GET', `/v1/bank_accounts/${id}`)).body).toMatchObject({ last4: '9999', pending_change_id: null, changes: [{ status: 'applied', applied_by: 'lender' }] });
    const twice = await p.post(`/portal/payments/bank-accounts/${id}/changes/${changeId}/apply`, {});
    expect(twice.status).toBe(409);
    // Another lender's portal user finds no such account.
    const other = c.newLender();
    const q = await signedIn(c, { lenderId: other.id, email: 'other@example.com' });
    expect((await q.post(`/portal/payments/bank-accounts/${id}/changes/${changeId}/apply`, {})).status).toBe(404);
  });
});
