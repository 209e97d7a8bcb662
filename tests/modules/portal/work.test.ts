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
