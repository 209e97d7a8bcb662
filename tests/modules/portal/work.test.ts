// The portal as a place to work, through the real app: a schedule run now and a borrower read now from their
// pages, through the API's own services and bounds.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { signedIn } from '../../helpers/portal';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
const fresh = (env: Record<string, string> = {}) => {
  const c = createTestContext({ MONITOR_READ_INTERVAL_MS: '3600000', ...env }, { clockAt: '2026-11-21T12:00:00.000Z' });
  contexts.push(c);
  return c;
};
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/&#39;|&#x27;/g, "'").replace(/\s+/g, ' ');

describe('doing things now from the portal', () => {
  test('a schedule page runs the schedule now: the run is a batch of the schedule, and the page links it', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const s = await c.json('POST', '/v1/monitoring/scheduled_balance_request', { body: { name: 'nightly', interval_days: 1, authorizers: [bankAuthorizer('p-1')] } });
    const page = await p.get(`/portal/monitoring/${s.body.schedule_id}`);
    expect(page.text).toContain(`action="/portal/monitoring/${s.body.schedule_id}/run"`);
    const r = await p.post(`/portal/monitoring/${s.body.schedule_id}/run`, {});
    expect(r.status).toBe(200);
    const batch = c.rt.sqlite.query<{ id: string }, [string]>('SELECT id FROM batches WHERE schedule_id = ?').get(s.body.schedule_id)!;
    expect(text(r.text)).toContain(`Run started: 1 authorizer in batch ${batch.id}`);
    expect(r.text).toContain(`href="/portal/balance-checks/${batch.id}"`);
    // A second run while the first is in progress is refused on the page, with the API's reason.
    const again = await p.post(`/portal/monitoring/${s.body.schedule_id}/run`, {});
    expect(text(again.text)).toContain('Not run: A run of this schedule is still in progress');
    // Without the form's token, nothing runs.
    expect((await p.post(`/portal/monitoring/${s.body.schedule_id}/run`, {}, { csrf: null })).status).toBe(403);
    expect(c.rt.sqlite.query('SELECT COUNT(*) AS n FROM batches').get()).toEqual({ n: 1 });
  });

  test('a borrower page reads the balance now; a borrower no longer monitored has no button', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('read-me', { account_number: '0000012345' }), enrollBorrower('gone')] } });
    queueDueReads(c.rt);
    await processBalances(c.rt);
    await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['gone'] } });
    expect((await p.get('/portal/payments/borrowers/read-me')).text).toContain('Read balance now');
    expect((await p.get('/portal/payments/borrowers/gone')).text).not.toContain('Read balance now');
    c.clock.advance(60_000);
    const r = await p.post('/portal/payments/borrowers/read-me/read', {});
    expect(r.status).toBe(200);
    expect(text(r.text)).toContain('Balance read queued');
    await processBalances(c.rt);
    const view = (await c.json('GET', '/v1/payment_enrollments/read-me')).body;
    expect(view.last_read.at).toBe(new Date(c.clock.now()).toISOString());
    const refused = await p.post('/portal/payments/borrowers/gone/read', {});
    expect(text(refused.text)).toContain('Not read: The borrower is removed');
    expect((await p.post('/portal/payments/borrowers/nobody/read', {})).status).toBe(404);
  });
});

async function uploadBalanceCsv(c: TestContext, cookie: string, csv: string) {
  const pageHtml = await (await c.request('GET', '/portal/balance-checks', { key: null, headers: { cookie } })).text();
  const form = new FormData();
  form.append('_csrf', /name="_csrf" value="([^"]+)"/.exec(pageHtml)![1]!);
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'balances.csv');
  const res = await c.request('POST', '/portal/balance-checks', { key: null, form, headers: { cookie } });
  return { status: res.status, text: await res.text() };
}

describe('balance batches in the portal', () => {
  const HEADER = 'authorizer_unique_id,ssn,account_number,routing_number';

  test('a CSV upload lists each row that failed with its reason, as the API does; the batch is linked', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const r = await uploadBalanceCsv(c, p.cookie, `${HEADER}\nok-1,123456789,0001234567,110000000\nbad-ssn,12,0001234567,110000000\nbad-routing,123456789,0001234567,110000001\n`);
    expect(r.status).toBe(200);
    const t = text(r.text);
    expect(t).toContain('2 rows failed validation (listed below)');
    const api = await c.json('POST', '/v1/balance_requests/csv', { form: (() => { const f = new FormData(); f.append('file', new Blob([`${HEADER}\nok-2,123456789,0001234567,110000000\nbad-ssn,12,0001234567,110000000\nbad-routing,123456789,0001234567,110000001\n`], { type: 'text/csv' }), 'b.csv'); return f; })() });
    for (const f of api.body.failed_authorizers as { row_number: number; authorizer_unique_id: string; error: string }[]) {
      expect(r.text).toContain(`<td>${f.row_number}</td><td>${f.authorizer_unique_id}</td>`);
      expect(t).toContain(f.error);
    }
    const batch = c.rt.sqlite.query<{ id: string }, []>("SELECT id FROM batches WHERE creator IS NOT NULL").get()!;
    expect(r.text).toContain(`href="/portal/balance-checks/${batch.id}"`);
  });

  test('every row refused: the page still names each row and why', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const r = await uploadBalanceCsv(c, p.cookie, `${HEADER}\nbad-1,12,0001234567,110000000\nbad-2,123456789,,110000000\n`);
    const t = text(r.text);
    expect(t).toContain('No authorizer in the request passed validation');
    expect(r.text).toContain('<td>2</td><td>bad-1</td>');
    expect(r.text).toContain('<td>3</td><td>bad-2</td>');
  });

  test('a batch page: counts by status, the results paged, the export; the list links it; another lender’s is 404', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const authorizers = [
      ...Array.from({ length: 55 }, (_, i) => bankAuthorizer(`ok-${String(i).padStart(2, '0')}`)),
      bankAuthorizer('closed', { account_number: '99993200' }),
      bankAuthorizer('nomatch', { account_number: '99993400' }),
    ];
    const sent = await c.json('POST', '/v1/balance_requests', { body: { authorizers } });
    const id = sent.body.batch_id as string;
    expect((await p.get('/portal/balance-checks')).text).toContain(`href="/portal/balance-checks/${id}"`);
    const waiting = text((await p.get(`/portal/balance-checks/${id}`)).text);
    expect(waiting).toContain('Waiting to be checked 57');
    while ((await c.json('GET', `/v1/balance_requests/${id}`)).body.status !== 'completed') await processBalances(c.rt);
    const html = (await p.get(`/portal/balance-checks/${id}`)).text;
    const t = text(html);
    expect(t).toContain('Balance read SUCCESS 55');
    expect(t).toContain('Account closed ACCOUNT_CLOSED 1');
    expect(t).toContain('No match NO_MATCH 1');
    expect(t).toContain('Checked 57 of 57');
    expect(html).toContain(`href="/portal/balance-checks/export?batch_ids=${id}"`);
    expect(html.match(/<tr><td>ok-\d\d<\/td>/g)).toHaveLength(50);
    const next = /href="(\/portal\/balance-checks\/[^"]+next_page_token=[^"]+)"/.exec(html)![1]!.replace(/&amp;/g, '&');
    const second = (await p.get(next)).text;
    expect(second.match(/<tr><td>ok-\d\d<\/td>/g)).toHaveLength(5);
    expect(second).toContain('<td>closed</td>');
    expect(text(second)).toContain('3200 Account closed');
    const other = c.newLender();
    const theirs = await signedIn(c, { lenderId: other.id });
    expect((await theirs.get(`/portal/balance-checks/${id}`)).status).toBe(404);
  });
});
