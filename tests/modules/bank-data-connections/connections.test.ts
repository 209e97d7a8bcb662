// /v1/bank_data_connections: credentials checked at the provider (the fake Plaid and fake Stripe servers),
// sealed at once and never shown, one per provider per lender, refusals storing nothing.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
plaid.addClient('client_one', 'plaid-secret-00001234');
const contexts: TestContext[] = [];
const fresh = () => {
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url });
  contexts.push(c);
  return c;
};
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});

const plaidBody = { provider: 'plaid', client_id: 'client_one', secret: 'plaid-secret-00001234', environment: 'sandbox' };
const stripeBody = { provider: 'stripe', api_key: 'rk_test_bankdata0000000000005678' };
const rows = (c: TestContext) => c.sql.query('SELECT provider, credentials_sealed, last4, deleted_at FROM bank_data_connections ORDER BY created_at').all() as { provider: string; credentials_sealed: string | null; last4: string; deleted_at: number | null }[];

describe('POST /v1/bank_data_connections', () => {
  test('Plaid: checked at Plaid with the credentials in the body, sealed, only secret_last4 shown', async () => {
    const c = fresh();
    const before = plaid.requests.length;
    const r = await c.json('POST', '/v1/bank_data_connections', { body: plaidBody });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ provider: 'plaid', environment: 'sandbox', secret_last4: '1234', key_last4: null, last_read_at: null });
    expect(JSON.stringify(r.body)).not.toContain('plaid-secret');
    const asked = plaid.requests.slice(before);
    expect(asked.map((q) => q.path)).toEqual(['/institutions/get']);
    expect(asked[0]!.body).toMatchObject({ client_id: 'client_one', secret: 'plaid-secret-00001234' });
    const [row] = rows(c);
    expect(row!.credentials_sealed).not.toContain('plaid-secret');
    expect(JSON.parse(c.rt.vault.open(row!.credentials_sealed!))).toEqual({ client_id: 'client_one', secret: 'plaid-secret-00001234' });
    expect(c.logs.join('')).not.toContain('plaid-secret');
  });

  test('Stripe: checked by listing Financial Connections accounts with the key; key_last4 shown', async () => {
    const c = fresh();
    const r = await c.json('POST', '/v1/bank_data_connections', { body: stripeBody });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ provider: 'stripe', environment: null, secret_last4: null, key_last4: '5678' });
    const asked = stripe.requests.filter((q) => q.key === stripeBody.api_key);
    expect(asked.map((q) => `${q.method} ${q.path}`)).toEqual(['GET /v1/financial_connections/accounts']);
  });

  test('a refused secret is a 400 naming the field, and nothing is stored', async () => {
    const c = fresh();
    const r = await c.json('POST', '/v1/bank_data_connections', { body: { ...plaidBody, secret: 'wrong-secret-9999' } });
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors[0].path).toBe('secret');
    expect(rows(c)).toEqual([]);
    const s = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: 'sk_test_refused_000000000000' } });
    expect(s.status).toBe(400);
    expect(rows(c)).toEqual([]);
  });

  test('a provider that cannot be reached is a 503, nothing stored', async () => {
    const down = createTestContext({ PLAID_API_URL: 'http://127.0.0.1:9', STRIPE_API_URL: stripe.url });
    contexts.push(down);
    const r = await down.json('POST', '/v1/bank_data_connections', { body: plaidBody });
    expect(r.status).toBe(503);
    expect(rows(down)).toEqual([]);
  });

  test('one per provider: a second Plaid connection is 409 naming the first; Stripe beside it is fine', async () => {
    const c = fresh();
    const first = await c.json('POST', '/v1/bank_data_connections', { body: plaidBody });
    const second = await c.json('POST', '/v1/bank_data_connections', { body: plaidBody });
    expect(second.status).toBe(409);
    expect(second.body.error.message).toContain(first.body.id);
    expect((await c.json('POST', '/v1/bank_data_connections', { body: stripeBody })).status).toBe(201);
    // Another lender has its own.
    const other = c.newLender();
    expect((await c.json('POST', '/v1/bank_data_connections', { body: plaidBody, key: other.key })).status).toBe(201);
  });

  test('bad shapes are 400 with the field: unknown provider, missing environment, a key that is not Stripe’s', async () => {
    const c = fresh();
    for (const body of [
      { provider: 'mx', api_key: 'x' },
      { provider: 'plaid', client_id: 'client_one', secret: 's' },
      { provider: 'stripe', api_key: 'pk_test_123456789' },
      { ...plaidBody, extra: 1 },
    ]) {
      const r = await c.json('POST', '/v1/bank_data_connections', { body });
      expect(r.status).toBe(400);
      expect(r.body.error.message.length).toBeGreaterThan(10);
    }
    expect(rows(c)).toEqual([]);
  });
});

describe('GET and DELETE /v1/bank_data_connections', () => {
  test('listed oldest first; delete erases the credentials; another lender’s is 404', async () => {
    const c = fresh();
    const p = await c.json('POST', '/v1/bank_data_connections', { body: plaidBody });
    c.clock.advance(1000);
    const s = await c.json('POST', '/v1/bank_data_connections', { body: stripeBody });
    const list = await c.json('GET', '/v1/bank_data_connections');
    expect(list.status).toBe(200);
    expect(list.body.connections.map((x: { id: string }) => x.id)).toEqual([p.body.id, s.body.id]);

    const other = c.newLender();
    expect((await c.json('DELETE', `/v1/bank_data_connections/${p.body.id}`, { key: other.key })).status).toBe(404);
    const del = await c.request('DELETE', `/v1/bank_data_connections/${p.body.id}`);
    expect(del.status).toBe(204);
    expect((await c.json('DELETE', `/v1/bank_data_connections/${p.body.id}`)).status).toBe(404);
    const plaidRow = rows(c).find((r) => r.provider === 'plaid')!;
    expect(plaidRow.credentials_sealed).toBeNull();
    expect(plaidRow.deleted_at).not.toBeNull();
    expect((await c.json('GET', '/v1/bank_data_connections')).body.connections.map((x: { id: string }) => x.id)).toEqual([s.body.id]);
    // A new one may be stored once the old one is gone.
    expect((await c.json('POST', '/v1/bank_data_connections', { body: plaidBody })).status).toBe(201);
  });

  test('the secret is nowhere in the database file in the clear', async () => {
    const c = fresh();
    await c.json('POST', '/v1/bank_data_connections', { body: plaidBody });
    expect(c.storedInClear('plaid')).toBe(true);
    expect(c.storedInClear('plaid-secret-00001234')).toBe(false);
  });
});
