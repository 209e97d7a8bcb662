// Providers' documented limits, through the real pipeline against the fake Plaid and Stripe servers: Plaid's five
// balance calls per Item per minute (a 429 waits for the next window without spending an attempt, and the sixth
// call of a minute is not made), a balance answer slower than the old 10 s timeout, Stripe 429s backed off without
// spending attempts, a pending refresh looked at with backoff, one request budget per Stripe key, and what the
// calls cost: the usage route and provider_calls_total.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { processBalances, MAX_READ_ATTEMPTS } from '../../../src/modules/balance-requests/processing';
import { writeProviderCalls } from '../../../src/modules/bank-data-connections/usage';
import { StripeClients } from '../../../src/adapters/processors/stripe-clients';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});

let n = 0;
async function setup(env: Record<string, string> = {}) {
  // The fake Stripe dates a balance by the real clock: the service's clock starts there too.
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, ...env }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const clientId = `budget_${++n}_${Date.now()}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  const p = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'sandbox' } });
  expect(p.status).toBe(201);
  const stripeKey = `rk_test_budgets${n}0000000000000000042`;
  const s = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: stripeKey } });
  expect(s.status).toBe(201);
  return { c, plaidId: p.body.id as string, stripeId: s.body.id as string, stripeKey };
}

const plaidLink = (token: string, account = 'acc_checking_0001') => ({ provider: 'plaid', access_token: token, account_id: account });

async function submit(c: TestContext, authorizers: unknown[]) {
  const r = await c.json('POST', '/v1/balance_requests', { body: { authorizers } });
  expect(r.status).toBe(201);
  return r.body.batch_id as string;
}

/** Runs the pipeline until the batch is completed, moving the clock `stepMs` after each tick. */
async function complete(c: TestContext, batchId: string, stepMs = 1_000, each?: () => void) {
  for (let i = 0; i < 2_000; i++) {
    await processBalances(c.rt);
    const s = await c.json('GET', `/v1/balance_requests/${batchId}`);
    if (s.body.status === 'completed') return;
    each?.();
    c.clock.advance(stepMs);
    await Bun.sleep(5);
  }
  throw new Error(`batch ${batchId} did not complete`);
}

const balances = async (c: TestContext, batchId: string) => (await c.json('GET', `/v1/balances?batchId=${batchId}`)).body.balances as Record<string, unknown>[];
const item = async (c: TestContext, batchId: string) =>
  (await c.rows<{ attempts: number; next_attempt_at: number; waiting_since: number | null; state: string }>('SELECT attempts, next_attempt_at, waiting_since, state FROM batch_items WHERE batch_id = ?', batchId))[0]!;

describe('Plaid: five balance calls per Item per minute', () => {
  test('a 429 waits for the next minute without spending an attempt, again and again, and the read then succeeds', async () => {
    const { c } = await setup();
    const token = `access-sandbox-rate${n}`;
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 42, current: 50 }]);
    plaid.setItemRateLimit(5, 60_000, () => c.clock.now());
    try {
      // The lender's own application spent the Item's minute.
      plaid.spendItemCalls(token, 5);
      const batch = await submit(c, [bankAuthorizer('rate-1', { bank_link: plaidLink(token) })]);
      await processBalances(c.rt);
      expect(plaid.rateRefusals(token)).toBe(1);
      let it = await item(c, batch);
      expect(it).toMatchObject({ state: 'pending', attempts: 0 });
      expect(it.next_attempt_at - c.clock.now()).toBe(60_000);

      // Not asked again inside the minute.
      c.clock.advance(59_000);
      await processBalances(c.rt);
      expect(plaid.rateRefusals(token)).toBe(1);

      // More refusals than the read has attempts: each spent by the lender's own calls at the window's start.
      for (let round = 2; round <= MAX_READ_ATTEMPTS + 1; round++) {
        c.clock.advance(1_000);
        plaid.spendItemCalls(token, 5);
        await processBalances(c.rt);
        expect(plaid.rateRefusals(token)).toBe(round);
        it = await item(c, batch);
        expect(it).toMatchObject({ state: 'pending', attempts: 0 });
        c.clock.advance(59_000);
      }
      await complete(c, batch);
      expect((await balances(c, batch))[0]).toMatchObject({ balance: 42, balance_status_code: 0 });
    } finally {
      plaid.setItemRateLimit(null);
    }
  });

  test('six accounts of one Item: five calls in the minute, the sixth waits for the window instead of being refused', async () => {
    const { c } = await setup();
    const token = `access-sandbox-six${n}`;
    const accounts = Array.from({ length: 6 }, (_, i) => ({ account_id: `acc_six_000${i}`, available: 10 + i, current: 10 + i }));
    plaid.addItem(token, accounts);
    plaid.setItemRateLimit(5, 60_000, () => c.clock.now());
    try {
      const before = plaid.requests.length;
      const batch = await submit(
        c,
        accounts.map((a, i) => bankAuthorizer(`six-${i}`, { bank_link: plaidLink(token, a.account_id) })),
      );
      await complete(c, batch, 5_000);
      const got = await balances(c, batch);
      expect(got.map((b) => b.balance_status_code)).toEqual([0, 0, 0, 0, 0, 0]);
      expect(plaid.rateRefusals(token)).toBe(0);
      expect(plaid.requests.slice(before).filter((r) => r.path === '/accounts/balance/get')).toHaveLength(6);
      const items = await c.rows<{ attempts: number }>('SELECT attempts FROM batch_items WHERE batch_id = ?', batch);
      expect(items.every((i) => i.attempts === 0)).toBe(true);
    } finally {
      plaid.setItemRateLimit(null);
    }
  });

  test('a balance answered after longer than the old 10 s timeout is read (times scaled by PROVIDER_TIME_SCALE=0.1)', async () => {
    // At a tenth: the old timeout would be 1 s, the balance call's is 4 s; Plaid answers in 2 s.
    const { c } = await setup({ PROVIDER_TIME_SCALE: '0.1' });
    const token = `access-sandbox-slow${n}`;
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 7, current: 7 }]);
    plaid.setItemLatency(token, 2_000);
    try {
      const batch = await submit(c, [bankAuthorizer('slow-1', { bank_link: plaidLink(token) })]);
      await complete(c, batch);
      expect((await balances(c, batch))[0]).toMatchObject({ balance: 7, balance_status_code: 0 });
      expect((await item(c, batch)).attempts).toBe(0);
    } finally {
      plaid.setItemLatency(token, null);
    }
  });
});

describe('Stripe Financial Connections', () => {
  test('429s back off (1, 1, 2, 4 … s) and the read succeeds, no attempt spent however many come', async () => {
    const { c, stripeKey } = await setup();
    const fca = `fca_1Budget429${n}`;
    stripe.control.addFcAccount(stripeKey, { id: fca, available: 12_34, current: 12_34 });
    stripe.control.setRefreshDelay(0);
    const batch = await submit(c, [bankAuthorizer('s429-1', { bank_link: { provider: 'stripe', account: fca } })]);
    const refusals = MAX_READ_ATTEMPTS + 3;
    stripe.control.failNext(refusals, 429);
    const waits: number[] = [];
    await processBalances(c.rt);
    for (let i = 0; i < refusals - 1; i++) {
      const it = await item(c, batch);
      expect(it).toMatchObject({ state: 'pending', attempts: 0 });
      waits.push(it.next_attempt_at - c.clock.now());
      c.clock.advance(it.next_attempt_at - c.clock.now());
      await processBalances(c.rt);
    }
    expect(waits).toEqual([1_000, 1_000, 2_000, 4_000, 8_000]);
    await complete(c, batch);
    expect((await balances(c, batch))[0]).toMatchObject({ balance: 12.34, balance_status_code: 0 });
    expect((await item(c, batch)).attempts).toBe(0);
  });

  test('a refresh pending 30 s is looked at with backoff: at most 10 retrieves, then read', async () => {
    const { c, stripeKey } = await setup();
    const fca = `fca_1BudgetPending${n}`;
    stripe.control.addFcAccount(stripeKey, { id: fca, available: 55_00, current: 60_00 });
    stripe.control.setRefreshDelay(30_000, () => c.clock.now());
    try {
      const batch = await submit(c, [bankAuthorizer('pend-1', { bank_link: { provider: 'stripe', account: fca } })]);
      await complete(c, batch, 500);
      expect((await balances(c, batch))[0]).toMatchObject({ balance: 55, balance_status_code: 0 });
      expect(stripe.control.refreshes(fca)).toBe(1);
      expect(stripe.control.retrieves(fca)).toBeLessThanOrEqual(10);
      // Looked at every second, it was 31 retrieves or more.
      expect(stripe.control.retrieves(fca)).toBeGreaterThanOrEqual(2);
    } finally {
      stripe.control.setRefreshDelay(0);
    }
  });

  test('payments and Financial Connections calls with one key share 25 requests a second: none refused for rate', async () => {
    const key = `rk_test_sharedbudget${Date.now()}`;
    for (let i = 0; i < 30; i++) stripe.control.addFcAccount(key, { id: `fca_1Shared${i}x${Date.now()}`, available: 1, current: 1 });
    stripe.control.setRateLimit(25);
    try {
      // Two clients of the key, as the payment processor and the bank-data source each hold one.
      const payments = new StripeClients({ apiUrl: stripe.url }).of(key);
      const reads = new StripeClients({ apiUrl: stripe.url }).of(key);
      const calls = [
        ...Array.from({ length: 30 }, () => payments.balance.retrieve()),
        ...Array.from({ length: 30 }, () => reads.financialConnections.accounts.list({ limit: 1 })),
      ];
      await Promise.all(calls);
      expect(stripe.control.rateLimited(key)).toBe(0);
    } finally {
      stripe.control.setRateLimit(null);
    }
  });
});

describe('what the calls cost', () => {
  test('usage by endpoint and day, written or not yet, tenant-scoped; 400 for a bad month; provider_calls_total', async () => {
    const { c, plaidId, stripeId, stripeKey } = await setup();
    const token = `access-sandbox-usage${n}`;
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 1, current: 1 }]);
    const fca = `fca_1BudgetUsage${n}`;
    stripe.control.addFcAccount(stripeKey, { id: fca, available: 1_00, current: 1_00 });
    stripe.control.setRefreshDelay(0);
    const day1 = new Date(c.clock.now()).toISOString().slice(0, 10);
    const month = day1.slice(0, 7);
    const b1 = await submit(c, [bankAuthorizer('use-1', { bank_link: plaidLink(token) }), bankAuthorizer('use-2', { bank_link: { provider: 'stripe', account: fca } })]);
    await complete(c, b1);
    // Counted and not yet written: shown all the same.
    const unwritten = await c.json('GET', `/v1/bank_data_connections/${plaidId}/usage?month=${month}`);
    expect(unwritten.status).toBe(200);
    expect(unwritten.body).toMatchObject({ connection_id: plaidId, provider: 'plaid', month, total_calls: 1, endpoints: [{ endpoint: '/accounts/balance/get', calls: 1 }], days: [{ date: day1, endpoint: '/accounts/balance/get', calls: 1 }] });
    await writeProviderCalls(c.rt);
    const written = await c.json('GET', `/v1/bank_data_connections/${plaidId}/usage?month=${month}`);
    expect(written.body).toEqual(unwritten.body);

    // A read the next day, past the account's read window.
    c.clock.advance(86_400_000);
    const day2 = new Date(c.clock.now()).toISOString().slice(0, 10);
    const b2 = await submit(c, [bankAuthorizer('use-3', { bank_link: plaidLink(token) })]);
    await complete(c, b2);
    const both = await c.json('GET', `/v1/bank_data_connections/${plaidId}/usage?month=${day2.slice(0, 7)}`);
    expect(both.body.days.filter((d: { date: string }) => d.date === day2)).toEqual([{ date: day2, endpoint: '/accounts/balance/get', calls: 1 }]);

    const s = await c.json('GET', `/v1/bank_data_connections/${stripeId}/usage?month=${month}`);
    expect(s.body.provider).toBe('stripe');
    const endpoints = Object.fromEntries(s.body.endpoints.map((e: { endpoint: string; calls: number }) => [e.endpoint, e.calls]));
    expect(endpoints['GET /v1/financial_connections/accounts/{id}']).toBeGreaterThanOrEqual(1);
    expect(endpoints['POST /v1/financial_connections/accounts/{id}/refresh']).toBe(1);
    expect(s.body.total_calls).toBe(s.body.endpoints.reduce((t: number, e: { calls: number }) => t + e.calls, 0));

    // An empty month is an empty answer.
    expect((await c.json('GET', `/v1/bank_data_connections/${plaidId}/usage?month=2001-01`)).body).toMatchObject({ total_calls: 0, endpoints: [], days: [] });
    // Another lender's connection is not found; a month not as YYYY-MM is refused.
    const other = c.newLender();
    expect((await c.json('GET', `/v1/bank_data_connections/${plaidId}/usage?month=${month}`, { key: other.key })).status).toBe(404);
    for (const bad of ['2026-13', '2026-1', 'june', '2026-06-01']) {
      expect((await c.json('GET', `/v1/bank_data_connections/${plaidId}/usage?month=${bad}`)).status).toBe(400);
    }

    const metrics = await (await c.request('GET', '/metrics', { key: null })).text();
    expect(metrics).toContain(`provider_calls_total{lender="${c.lender.id}",provider="plaid",endpoint="/accounts/balance/get"} 2`);
    expect(metrics).toContain(`provider_calls_total{lender="${c.lender.id}",provider="stripe",endpoint="POST /v1/financial_connections/accounts/{id}/refresh"} 1`);
    // Never a secret, a token or an account in a label.
    expect(metrics).not.toContain(token);
    expect(metrics).not.toContain(fca);
  });
});
