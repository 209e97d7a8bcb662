// The portal's Bank data page: the lender's bank-data connections added with the API's rules (checked at the
// fake Plaid and fake Stripe servers), the secret never shown, deleted after a confirmation, signed in only.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { signedIn } from '../../helpers/portal';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
plaid.addClient('portal_client', 'portal-secret-0000abcd');
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});
const fresh = () => {
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url });
  contexts.push(c);
  return c;
};

describe('/portal/payments/bank-data', () => {
  test('signed out it sends to sign-in; the page is in the navigation beside Processor keys', async () => {
    const c = fresh();
    expect((await c.request('GET', '/portal/payments/bank-data', { key: null })).headers.get('location')).toBe('/portal/login');
    const p = await signedIn(c);
    const page = await p.get('/portal/payments/bank-data');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Bank data');
    expect(page.text.indexOf('/portal/payments/connections')).toBeLessThan(page.text.indexOf('/portal/payments/bank-data'));
  });

  test('Plaid and Stripe added through the forms, as the API stores them; a refused secret is the page with the reason, nothing stored', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const refused = await p.post('/portal/payments/bank-data', { provider: 'plaid', client_id: 'portal_client', secret: 'not-the-secret', environment: 'sandbox' });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('role="alert"');
    expect(refused.text).toContain('refused');
    expect((await c.json('GET', '/v1/bank_data_connections')).body.connections).toEqual([]);

    const added = await p.post('/portal/payments/bank-data', { provider: 'plaid', client_id: 'portal_client', secret: 'portal-secret-0000abcd', environment: 'sandbox' });
    expect(added.status).toBe(200);
    expect(added.text).toContain('Added the Plaid connection.');
    expect(added.text).toContain('…abcd');
    expect(added.text).not.toContain('portal-secret-0000abcd');
    const stripeAdded = await p.post('/portal/payments/bank-data', { provider: 'stripe', api_key: 'rk_test_portalbankdata0000000009' });
    expect(stripeAdded.status).toBe(200);
    expect(stripeAdded.text).not.toContain('rk_test_portalbankdata0000000009');
    const list = (await c.json('GET', '/v1/bank_data_connections')).body.connections;
    expect(list.map((x: { provider: string }) => x.provider)).toEqual(['plaid', 'stripe']);

    // A second Plaid connection: the API's 409 message on the page.
    const twice = await p.post('/portal/payments/bank-data', { provider: 'plaid', client_id: 'portal_client', secret: 'portal-secret-0000abcd', environment: 'sandbox' });
    expect(twice.status).toBe(400);
    expect(twice.text).toContain('already exists');
  });

  test('deleted after its confirmation; another lender’s connection is not found', async () => {
    const c = fresh();
    const made = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: 'rk_test_portaldelete00000000000001' } });
    const p = await signedIn(c);
    const confirm = await p.get(`/portal/payments/bank-data/${made.body.id}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Delete connection');
    const other = c.newLender();
    const q = await signedIn(c, { lenderId: other.id });
    expect((await q.get(`/portal/payments/bank-data/${made.body.id}/delete`)).status).toBe(404);
    expect((await q.post(`/portal/payments/bank-data/${made.body.id}`, { action: 'delete' })).status).toBe(404);
    const done = await p.post(`/portal/payments/bank-data/${made.body.id}`, { action: 'delete' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('Connection deleted.');
    expect((await c.json('GET', '/v1/bank_data_connections')).body.connections).toEqual([]);
  });
});
