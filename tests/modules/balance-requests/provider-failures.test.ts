// A failing provider says where it is: every bank-data or processor call that fails is one log line (provider,
// endpoint, status or error, attempt, lender id; no secret, token or account) and a labelled counter
// (bank_data_calls_total, processor_calls_total) by how it ended; a read through a link is exported under the
// provider's institution name, not the routing directory's.
import { afterAll, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { SANDBOX_INSTITUTION, startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { processBalances, MAX_READ_ATTEMPTS } from '../../../src/modules/balance-requests/processing';
import { readCsv } from '../../../src/platform/csv';
import { PlaidErrorType } from 'plaid';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});

let n = 0;
/** A service whose lender has a Plaid connection at `plaidAt`, a fake that answers until the test stops it. */
async function withPlaid(plaidAt: ReturnType<typeof startFakePlaid>) {
  const c = createTestContext({ PLAID_API_URL: plaidAt.url, STRIPE_API_URL: stripe.url }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const clientId = `client_fail_${++n}_${Date.now()}`;
  plaidAt.addClient(clientId, `secret-${clientId}`);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'sandbox' } })).status).toBe(201);
  return { c, clientId };
}

async function complete(c: TestContext, authorizers: unknown[]): Promise<string> {
  const r = await c.json('POST', '/v1/balance_requests', { body: { authorizers } });
  expect(r.status).toBe(201);
  const batchId = r.body.batch_id as string;
  for (let i = 0; i < 200; i++) {
    await processBalances(c.rt);
    if ((await c.json('GET', `/v1/balance_requests/${batchId}`)).body.status === 'completed') return batchId;
    // Past each retry's backoff.
    c.clock.advance(60_000);
  }
  throw new Error(`batch ${batchId} did not complete`);
}

const logLines = (c: TestContext) =>
  c.logs
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const metricsOf = async (c: TestContext) => (await c.request('GET', '/metrics', { key: null })).text();

test('Plaid unreachable: each attempt is one log line with provider, endpoint, error, attempt and lender, and counted; the read ends RETRY_LIMIT', async () => {
  const down = startFakePlaid();
  const { c, clientId } = await withPlaid(down);
  down.addItem('access-sandbox-down1', [{ account_id: 'acc_checking_0001', available: 5, current: 5 }]);
  down.stop();
  const batchId = await complete(c, [bankAuthorizer('unreachable-1', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-down1', account_id: 'acc_checking_0001' } })]);
  const csv = readCsv(await (await c.request('GET', `/v1/balances/csv?batch_ids=${batchId}`)).text());
  expect(csv.rows[0]!.cells[6]).toBe('RETRY_LIMIT');

  const failed = logLines(c).filter((l) => l.msg === 'bank-data call failed');
  expect(failed).toHaveLength(MAX_READ_ATTEMPTS);
  expect(failed.map((l) => l.attempt)).toEqual(Array.from({ length: MAX_READ_ATTEMPTS }, (_, i) => i + 1));
  for (const l of failed) {
    expect(l).toMatchObject({ provider: 'plaid', endpoint: '/accounts/balance/get', outcome: 'unreachable', lender_id: c.lender.id });
    expect(typeof l.error).toBe('string');
    expect(l.http_status).toBeUndefined();
  }
  const logs = c.logs.join('');
  expect(logs).not.toContain(`secret-${clientId}`);
  expect(logs).not.toContain('access-sandbox-down1');
  expect(await metricsOf(c)).toContain(`bank_data_calls_total{provider="plaid",endpoint="/accounts/balance/get",outcome="unreachable"} ${MAX_READ_ATTEMPTS}`);
});

test('Plaid answering 500 then well: the failures are logged with their status and counted apart from the call that worked', async () => {
  const { c } = await withPlaid(plaid);
  plaid.addItem('access-sandbox-flaky1', [{ account_id: 'acc_checking_0001', available: 7, current: 7 }]);
  plaid.failNext(2, { status: 500, type: PlaidErrorType.ApiError, code: 'INTERNAL_SERVER_ERROR' });
  const batchId = await complete(c, [bankAuthorizer('flaky-1', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-flaky1', account_id: 'acc_checking_0001' } })]);
  expect((await c.json('GET', `/v1/balances?batchId=${batchId}`)).body.balances[0]).toMatchObject({ balance: 7, balance_status_code: 0 });
  const failed = logLines(c).filter((l) => l.msg === 'bank-data call failed');
  expect(failed.map((l) => [l.http_status, l.outcome, l.attempt])).toEqual([
    [500, 'server_error', 1],
    [500, 'server_error', 2],
  ]);
  const metrics = await metricsOf(c);
  expect(metrics).toContain('bank_data_calls_total{provider="plaid",endpoint="/accounts/balance/get",outcome="server_error"} 2');
  expect(metrics).toContain('bank_data_calls_total{provider="plaid",endpoint="/accounts/balance/get",outcome="ok"} 1');
});

test("a read through a Plaid or Stripe link is exported under the provider's institution; one by routing number under the directory's", async () => {
  const { c } = await withPlaid(plaid);
  const stripeKey = 'rk_test_provider_failures_inst0042';
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: stripeKey } })).status).toBe(201);
  stripe.control.addFcAccount(stripeKey, { id: 'fca_1ProviderInst42', available: 3_00, current: 3_00 });
  plaid.addItem('access-sandbox-inst1', [{ account_id: 'acc_checking_0001', available: 12, current: 12 }]);
  const batchId = await complete(c, [
    bankAuthorizer('inst-linked', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-inst1', account_id: 'acc_checking_0001' } }),
    bankAuthorizer('inst-stripe', { bank_link: { provider: 'stripe', account: 'fca_1ProviderInst42' } }),
    bankAuthorizer('inst-routing'),
  ]);
  const csv = readCsv(await (await c.request('GET', `/v1/balances/csv?batch_ids=${batchId}`)).text());
  const institution = Object.fromEntries(csv.rows.map((r) => [r.cells[0], r.cells[2]]));
  expect(institution['inst-linked']).toBe(SANDBOX_INSTITUTION.name);
  expect(institution['inst-stripe']).toBe('StripeBank');
  expect(institution['inst-routing']).not.toBe(SANDBOX_INSTITUTION.name);
  expect(institution['inst-routing']!.length).toBeGreaterThan(0);
});

test('a processor call that fails is one log line and counted by processor, endpoint and outcome; the key is never logged', async () => {
  const c = createTestContext({ STRIPE_API_URL: stripe.url });
  contexts.push(c);
  const key = 'sk_test_provider_failures_000042';
  stripe.control.failNext(1, 503);
  const r = await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'ach', is_default: true } });
  expect(r.status).toBeGreaterThanOrEqual(500);
  const failed = logLines(c).filter((l) => l.msg === 'processor call failed');
  expect(failed).toHaveLength(1);
  expect(failed[0]).toMatchObject({ provider: 'stripe', outcome: 'server_error', http_status: 503, lender_id: c.lender.id });
  expect(String(failed[0]!.endpoint)).toMatch(/^GET \/v1\//);
  expect(c.logs.join('')).not.toContain(key);
  expect(await metricsOf(c)).toMatch(/processor_calls_total\{processor="stripe",endpoint="GET \/v1\/[^"]*",outcome="server_error"\} 1/);
  // Asked again with the processor well: registered, and the call counted as ok.
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'ach', is_default: true } })).status).toBe(201);
  expect(await metricsOf(c)).toMatch(/processor_calls_total\{processor="stripe",endpoint="GET \/v1\/[^"]*",outcome="ok"\} 1/);
});
