// The portal's Fraud alerts page through the real app: the queue of open alerts as GET /v1/fraud_alerts lists
// them, filtered by rule and state; an alert's page with its figures and dispositions; the form that records a
// disposition by the signed-in user (a hold cleared, the debit then sent), a second final one refused on the
// page; another lender's alert is not found.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { enrollBorrower, ownAccount } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { signedIn, type PortalClient } from '../../helpers/portal';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';

const c = createTestContext({ SANDBOX_SETTLEMENT_MS: '60000', MONITOR_READ_INTERVAL_MS: '3600000' }, { clockAt: '2026-11-25T12:00:00.000Z' });
afterAll(() => c.close());

let p: PortalClient;
let email: string;
// A shared account under another name (an alert), and a first debit to an unvalidated account held by the policy.
const ready = (async () => {
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_portal_fraud_000001', rail_scope: 'ach', is_default: true } })).status).toBe(201);
  expect((await c.json('PATCH', '/v1/collection_policy', { body: { require_account_validation: false } })).status).toBe(200);
  expect((await c.json('PUT', '/v1/fraud_monitoring/policy', { body: { rules: { first_debit_unvalidated: { action: 'hold' } } } })).status).toBe(200);
  const enroll = async (b: Record<string, unknown>) => expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [b] } })).status).toBe(207);
  await enroll(enrollBorrower('pf-ada', { account_number: ownAccount(1), collectable_amount: 9_000_000 }));
  await enroll(enrollBorrower('pf-grace', { account_number: ownAccount(1), first_name: 'Grace', last_name: 'Hopper', collectable_amount: 9_000_000 }));
  await enroll(enrollBorrower('pf-held', { routing_number: '110000039', account_number: ownAccount(2), collectable_amount: 10000 }));
  await cycle(c);
  email = `fraud-${crypto.randomUUID().slice(0, 8)}@example.test`;
  p = await signedIn(c, { email });
})();
const alertOf = async (rule: string) => (await c.json('GET', `/v1/fraud_alerts?rule=${rule}`)).body.alerts[0] as { id: string; state: string; payment_id: string | null };

describe('/portal/payments/fraud-alerts', () => {
  test('signed out it sends to sign-in; signed in it is in the navigation, and lists the open alerts, newest first', async () => {
    await ready;
    const r = await c.request('GET', '/portal/payments/fraud-alerts', { key: null });
    expect(`${r.status} ${r.headers.get('location')}`).toBe('303 /portal/login');
    const page = await p.get('/portal/payments/fraud-alerts');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Fraud alerts</h1>');
    expect(page.text).toContain('<a href="/portal/payments/fraud-alerts" aria-current="page">Fraud alerts</a>');
    const [held, shared] = [await alertOf('first_debit_unvalidated'), await alertOf('shared_account')];
    for (const a of [held, shared]) expect(page.text).toContain(`href="/portal/payments/fraud-alerts/${a.id}"`);
    expect(page.text).toContain('<strong>holds the debits</strong>');
    const byRule = await p.get('/portal/payments/fraud-alerts?rule=shared_account');
    expect(byRule.text).toContain(shared.id);
    expect(byRule.text).not.toContain(held.id);
    expect((await p.get('/portal/payments/fraud-alerts?state=cleared')).text).toContain('No alert here.');
    expect((await p.get('/portal/payments/fraud-alerts?state=nonsense')).status).toBe(400);
  });

  test('an alert’s page and its form: cleared by the signed-in user, the held debit then sent; a second final one refused on the page', async () => {
    await ready;
    const held = await alertOf('first_debit_unvalidated');
    const page = await p.get(`/portal/payments/fraud-alerts/${held.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('first_debit_unvalidated (version 1)');
    expect(page.text).toContain(`action="/portal/payments/fraud-alerts/${held.id}/disposition"`);
    // Without the session's token: refused, nothing recorded.
    expect((await p.post(`/portal/payments/fraud-alerts/${held.id}/disposition`, { disposition: 'cleared' }, { csrf: null })).status).toBe(403);
    expect((await p.post(`/portal/payments/fraud-alerts/${held.id}/disposition`, { disposition: 'maybe' })).status).toBe(400);
    const done = await p.post(`/portal/payments/fraud-alerts/${held.id}/disposition`, { disposition: 'cleared', note: 'statement on file' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('Recorded: cleared.');
    expect(done.text).not.toContain(`action="/portal/payments/fraud-alerts/${held.id}/disposition"`);
    const api = (await c.json('GET', `/v1/fraud_alerts/${held.id}`)).body;
    expect(api).toMatchObject({ state: 'cleared', holds: false, dispositions: [{ disposition: 'cleared', note: 'statement on file', disposed_by: `portal:${email}` }] });
    c.clock.advance(20 * 60_000);
    await dispatchPayments(c.rt);
    expect((await c.rows<{ firstAttemptAt: number | null }>('SELECT first_attempt_at AS firstAttemptAt FROM payments WHERE id = ?', held.payment_id!))[0]!.firstAttemptAt).not.toBeNull();
    const again = await p.post(`/portal/payments/fraud-alerts/${held.id}/disposition`, { disposition: 'confirmed_fraud' });
    expect(again.status).toBe(409);
    expect(again.text).toContain('already disposed of');
  });

  test('the year’s report downloaded as the API’s CSV; a year it refuses is its 400 as a page', async () => {
    await ready;
    const page = await p.get('/portal/payments/fraud-alerts');
    expect(page.text).toContain('action="/portal/payments/fraud-report.csv"');
    expect(page.text).toContain('<option value="2026">2026</option>');
    const csv = await p.get('/portal/payments/fraud-report.csv?year=2026');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename=fraud-monitoring-report-2026.csv');
    const api = await c.request('GET', '/v1/fraud_monitoring/report?year=2026&format=csv');
    // The same figures but the moment each was made.
    const withoutTime = (t: string) => t.replace(/report,,generated_at,[^\r]*\r\n/, '');
    expect(withoutTime(csv.text)).toBe(withoutTime(await api.text()));
    expect((await p.get('/portal/payments/fraud-report.csv?year=2099')).status).toBe(400);
  });

  test('another lender’s alert is not found', async () => {
    await ready;
    const shared = await alertOf('shared_account');
    const other = c.newLender();
    const stranger = await signedIn(c, { lenderId: other.id });
    expect((await stranger.get(`/portal/payments/fraud-alerts/${shared.id}`)).status).toBe(404);
    expect((await stranger.post(`/portal/payments/fraud-alerts/${shared.id}/disposition`, { disposition: 'cleared' })).status).toBe(404);
    expect((await c.json('GET', `/v1/fraud_alerts/${shared.id}`)).body.state).toBe('open');
  });
});
