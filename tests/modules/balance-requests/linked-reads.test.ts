// Balances of linked accounts: authorizers with a bank_link read through the lender's bank-data connection at
// the fake Plaid and fake Stripe servers, through the real pipeline: available or current with its kind and
// the provider's time, a pending Stripe refresh waited on, relink (once per link) and closed accounts, rate
// limits and outages retried, the per-lender limit of reads in flight, and the link never shown.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { startReceiver, verifyWithLibrary, type Receiver } from '../webhooks/support';
import { processBalances, MAX_READ_ATTEMPTS } from '../../../src/modules/balance-requests/processing';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { readCsv } from '../../../src/platform/csv';
import { PlaidErrorType } from 'plaid';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
const STRIPE_KEY = 'rk_test_linkedreads00000000000042';
const contexts: TestContext[] = [];
const receivers: Receiver[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  receivers.forEach((r) => r.stop());
  plaid.stop();
  stripe.stop();
});

let n = 0;
/** A lender with a Plaid connection (its own client) and a Stripe one. */
async function setup(env: Record<string, string> = {}) {
  // The fake Stripe server dates a balance by the real clock, and a time ahead of the service's is refused: the service's clock starts there too.
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, ...env }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const clientId = `client_${++n}_${Date.now()}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'sandbox' } })).status).toBe(201);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: STRIPE_KEY } })).status).toBe(201);
  return { c, clientId };
}

const plaidLink = (token: string, account = 'acc_checking_0001') => ({ provider: 'plaid', access_token: token, account_id: account });
const stripeLink = (fca: string) => ({ provider: 'stripe', account: fca });

async function submit(c: TestContext, authorizers: unknown[]) {
  const r = await c.json('POST', '/v1/balance_requests', { body: { authorizers } });
  expect(r.status).toBe(201);
  return r.body as { batch_id: string; failed_authorizers: { authorizer_unique_id: string; error: string }[] };
}

/** Runs the pipeline until the batch is completed, moving the clock past each retry's backoff. */
async function complete(c: TestContext, batchId: string, stepMs = 1_000) {
  for (let i = 0; i < 200; i++) {
    await processBalances(c.rt);
    const s = await c.json('GET', `/v1/balance_requests/${batchId}`);
    if (s.body.status === 'completed') return;
    c.clock.advance(stepMs);
    await Bun.sleep(20);
  }
  throw new Error(`batch ${batchId} did not complete`);
}

const balances = async (c: TestContext, batchId: string) => (await c.json('GET', `/v1/balances?batchId=${batchId}`)).body.balances as Record<string, unknown>[];
const byId = (rows: Record<string, unknown>[]) => Object.fromEntries(rows.map((r) => [r.authorizer_unique_id as string, r]));

describe('Plaid-linked authorizers', () => {
  test('available when present, else current; kind and as_of in results and history; the request as the SDK sends it', async () => {
    const { c, clientId } = await setup();
    plaid.addItem('access-sandbox-aaa1', [{ account_id: 'acc_checking_0001', available: 1234.56, current: 1300, last_updated_datetime: '2026-11-21T11:59:00Z' }]);
    plaid.addItem('access-sandbox-aaa2', [{ account_id: 'acc_checking_0001', available: null, current: 88.1 }]);
    const before = plaid.requests.length;
    const { batch_id } = await submit(c, [bankAuthorizer('p-avail', { bank_link: plaidLink('access-sandbox-aaa1') }), bankAuthorizer('p-current', { bank_link: plaidLink('access-sandbox-aaa2') })]);
    await complete(c, batch_id);
    const got = byId(await balances(c, batch_id));
    expect(got['p-avail']).toMatchObject({ balance: 1234.56, balance_status_code: 0, balance_kind: 'available', as_of: '2026-11-21T11:59:00.000Z' });
    // Plaid gave no time for this one: the time of the read.
    expect(got['p-current']).toMatchObject({ balance: 88.1, balance_status_code: 0, balance_kind: 'current', as_of: expect.any(String) });
    const hist = await c.json('GET', '/v1/monitoring/authorizers/p-avail/history');
    expect(hist.body.history[0]).toMatchObject({ status: 'success', balance_amount: 1234.56, balance_kind: 'available', as_of: '2026-11-21T11:59:00.000Z' });

    const reads = plaid.requests.slice(before).filter((r) => r.path === '/accounts/balance/get');
    expect(reads).toHaveLength(2);
    for (const r of reads) {
      expect(Object.keys(r.body).sort()).toEqual(['access_token', 'client_id', 'options', 'secret']);
      expect(r.body.client_id).toBe(clientId);
      // A cached balance only when newer than a day (an institution without real-time balances).
      expect(r.body.options).toEqual({ account_ids: ['acc_checking_0001'], min_last_updated_datetime: new Date(c.clock.now() - 24 * 3_600_000).toISOString() });
      expect(r.headers['plaid-version']).toBe('2020-09-14');
    }
    // The connection says when it was last read through; the logs hold neither secret nor token.
    const conns = (await c.json('GET', '/v1/bank_data_connections')).body.connections;
    expect(conns.find((x: { provider: string }) => x.provider === 'plaid').last_read_at).not.toBeNull();
    const logs = c.logs.join('');
    expect(logs).not.toContain(`secret-${clientId}`);
    expect(logs).not.toContain('access-sandbox-aaa1');
  });

  test('rate limits and outages are retried with backoff and then read; past the limit the item ends RETRY_LIMIT', async () => {
    const { c } = await setup();
    plaid.addItem('access-sandbox-rl1', [{ account_id: 'acc_checking_0001', available: 10, current: 10 }]);
    plaid.failNext(2, { status: 429, type: PlaidErrorType.RateLimitExceeded, code: 'ACCOUNTS_BALANCE_GET_LIMIT' });
    const a = await submit(c, [bankAuthorizer('rl-1', { bank_link: plaidLink('access-sandbox-rl1') })]);
    await complete(c, a.batch_id);
    expect((await balances(c, a.batch_id))[0]).toMatchObject({ balance: 10, balance_status_code: 0 });

    // Past the link's read window: the account is asked again rather than answered with the read above.
    c.clock.advance(60_000);
    plaid.failNext(MAX_READ_ATTEMPTS, { status: 400, type: PlaidErrorType.InstitutionError, code: 'INSTITUTION_DOWN' });
    const b = await submit(c, [bankAuthorizer('down-1', { bank_link: plaidLink('access-sandbox-rl1') })]);
    await complete(c, b.batch_id);
    expect((await balances(c, b.batch_id))[0]).toMatchObject({ balance: null, balance_status_code: 9000 });
    const csv = readCsv(await (await c.request('GET', `/v1/balances/csv?batch_ids=${b.batch_id}`)).text());
    expect(csv.rows[0]!.cells[6]).toBe('RETRY_LIMIT');
  });

  test('a closed account (NO_ACCOUNTS) is 3200 ACCOUNT_CLOSED; an account id the Item no longer has (INVALID_ACCOUNT_ID) needs a relink, not closed', async () => {
    const { c } = await setup();
    plaid.addItem('access-sandbox-cl1', [{ account_id: 'acc_checking_0001', available: 1, current: 1 }]);
    plaid.setItemError('access-sandbox-cl1', 'NO_ACCOUNTS');
    plaid.addItem('access-sandbox-cl2', [{ account_id: 'acc_other_0002', available: 1, current: 1 }]);
    const { batch_id } = await submit(c, [bankAuthorizer('cl-1', { bank_link: plaidLink('access-sandbox-cl1') }), bankAuthorizer('cl-2', { bank_link: plaidLink('access-sandbox-cl2') })]);
    await complete(c, batch_id);
    const got = byId(await balances(c, batch_id));
    expect(got['cl-1']).toMatchObject({ balance_status_code: 3200 });
    // Plaid: "the account was removed at the bank or the id is no longer valid (a new one can appear after the
    // user re-selects accounts)": the borrower is asked to link again.
    expect(got['cl-2']).toMatchObject({ balance_status_code: 9000 });
    const history = await c.json('GET', '/v1/monitoring/authorizers/cl-2/history');
    expect(history.body.history[0].error_message).toContain('relink_required');
    const csv = readCsv(await (await c.request('GET', `/v1/balances/csv?batch_ids=${batch_id}`)).text());
    // Rows in the order the results were recorded, which reads in flight together do not fix.
    expect(Object.fromEntries(csv.rows.map((r) => [r.cells[0], r.cells[6]]))).toEqual({ 'cl-1': 'ACCOUNT_CLOSED', 'cl-2': 'RETRIEVAL_FAILED' });
  });

  test('at most BANK_LINK_CONCURRENCY reads in flight per lender and provider, every item read once', async () => {
    const { c, clientId } = await setup({ BALANCE_CONCURRENCY: '16' });
    plaid.setLatency(40);
    try {
      const authorizers = Array.from({ length: 24 }, (_, i) => {
        plaid.addItem(`access-sandbox-cc${i}`, [{ account_id: 'acc_checking_0001', available: i, current: i }]);
        return bankAuthorizer(`cc-${i}`, { bank_link: plaidLink(`access-sandbox-cc${i}`) });
      });
      const before = plaid.requests.length;
      const { batch_id } = await submit(c, authorizers);
      await complete(c, batch_id);
      const flight = plaid.inFlight(clientId);
      expect(flight.max).toBe(4);
      const reads = plaid.requests.slice(before).filter((r) => r.path === '/accounts/balance/get');
      expect(new Set(reads.map((r) => r.body.access_token)).size).toBe(24);
      expect(reads).toHaveLength(24);
    } finally {
      plaid.setLatency(0);
    }
  });
});

describe('Stripe Financial Connections-linked authorizers', () => {
  test('a refresh still pending is waited on, then read; available in cents, as_of Stripe’s', async () => {
    const { c } = await setup();
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_1Pending001', available: 4321_00, current: 5000_00 });
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_1Current002', available: null, current: 77_25 });
    stripe.control.setRefreshDelay(300);
    try {
      const { batch_id } = await submit(c, [bankAuthorizer('s-1', { bank_link: stripeLink('fca_1Pending001') }), bankAuthorizer('s-2', { bank_link: stripeLink('fca_1Current002') })]);
      await processBalances(c.rt);
      // Both refreshes are still running: nothing recorded, nothing failed.
      expect((await c.json('GET', `/v1/balance_requests/${batch_id}`)).body.total_processed).toBe(0);
      await complete(c, batch_id);
      const got = byId(await balances(c, batch_id));
      expect(got['s-1']).toMatchObject({ balance: 4321, balance_status_code: 0, balance_kind: 'available', as_of: expect.any(String) });
      expect(got['s-2']).toMatchObject({ balance: 77.25, balance_status_code: 0, balance_kind: 'current' });
      // One refresh each: a pending one is looked at again, not asked for again.
      expect(stripe.control.refreshes('fca_1Pending001')).toBe(1);
      const refreshes = stripe.requests.filter((r) => r.path === '/v1/financial_connections/accounts/fca_1Pending001/refresh');
      expect(refreshes[0]!.params).toEqual({ features: ['balance'] });
    } finally {
      stripe.control.setRefreshDelay(0);
    }
  });

  test('an unknown account is 3400', async () => {
    const { c } = await setup();
    const { batch_id } = await submit(c, [bankAuthorizer('s-missing', { bank_link: stripeLink('fca_1DoesNotExist') })]);
    await complete(c, batch_id);
    expect((await balances(c, batch_id))[0]).toMatchObject({ balance_status_code: 3400 });
  });
});

describe('relink', () => {
  test('ITEM_LOGIN_REQUIRED and a disconnected account: 9000 relink_required, RETRIEVAL_FAILED, one event per link; a new link reads', async () => {
    const { c } = await setup();
    const r = startReceiver();
    receivers.push(r);
    expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url(), event_types: ['BANK_LINK_RELINK_REQUIRED'] } })).status).toBe(201);
    plaid.addItem('access-sandbox-login1', [{ account_id: 'acc_checking_0001', available: 5, current: 5 }]);
    plaid.setItemError('access-sandbox-login1', 'ITEM_LOGIN_REQUIRED');
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_1Disconnect01' });
    stripe.control.setFcStatus('fca_1Disconnect01', 'disconnected');

    const first = await submit(c, [bankAuthorizer('rl-plaid', { bank_link: plaidLink('access-sandbox-login1') }), bankAuthorizer('rl-stripe', { bank_link: stripeLink('fca_1Disconnect01') })]);
    await complete(c, first.batch_id);
    const got = byId(await balances(c, first.batch_id));
    expect(got['rl-plaid']).toMatchObject({ balance: null, balance_status_code: 9000 });
    expect(got['rl-stripe']).toMatchObject({ balance: null, balance_status_code: 9000 });
    const hist = await c.json('GET', '/v1/monitoring/authorizers/rl-plaid/history');
    expect(hist.body.history[0].error_message).toContain('relink_required');
    const csv = readCsv(await (await c.request('GET', `/v1/balances/csv?batch_ids=${first.batch_id}`)).text());
    expect(csv.rows.map((row) => row.cells[6])).toEqual(['RETRIEVAL_FAILED', 'RETRIEVAL_FAILED']);

    // The same links again: not asked again, not told again.
    const plaidReads = () => plaid.requests.filter((q) => q.body.access_token === 'access-sandbox-login1').length;
    const asked = plaidReads();
    const second = await submit(c, [bankAuthorizer('rl-plaid', { bank_link: plaidLink('access-sandbox-login1') }), bankAuthorizer('rl-stripe', { bank_link: stripeLink('fca_1Disconnect01') })]);
    await complete(c, second.batch_id);
    expect(plaidReads()).toBe(asked);
    expect((await c.json('GET', '/v1/monitoring/authorizers/rl-stripe/history')).body.history[0].error_message).toContain('relink_required');

    await deliverDueWebhooks(c.rt);
    await r.waitFor(2);
    await Bun.sleep(50);
    expect(r.requests).toHaveLength(2);
    const secret = (await c.json('GET', '/v1/webhooks/secret')).body.secret;
    const events = r.requests.map((q) => verifyWithLibrary(secret, q) as Record<string, unknown>);
    expect(events.map((e) => e.type)).toEqual(['BANK_LINK_RELINK_REQUIRED', 'BANK_LINK_RELINK_REQUIRED']);
    expect(events.map((e) => e.bank_link).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      { provider: 'plaid', account_last4: '0001' },
      { provider: 'stripe', account: 'fca_1Disconnect01' },
    ]);
    expect(r.requests.map((q) => q.body).join('')).not.toContain('access-sandbox-login1');

    // The borrower linked again: a new access token is read.
    plaid.addItem('access-sandbox-login2', [{ account_id: 'acc_checking_0001', available: 42, current: 42 }]);
    const third = await submit(c, [bankAuthorizer('rl-plaid', { bank_link: plaidLink('access-sandbox-login2') })]);
    await complete(c, third.batch_id);
    expect((await balances(c, third.batch_id))[0]).toMatchObject({ balance: 42, balance_status_code: 0 });
  });
});

describe('accepting a bank_link', () => {
  test('a link whose provider has no connection fails that authorizer alone, with the reason', async () => {
    const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url });
    contexts.push(c);
    const res = await submit(c, [bankAuthorizer('no-conn', { bank_link: stripeLink('fca_1NoConnection') }), bankAuthorizer('plain')]);
    expect(res.failed_authorizers).toHaveLength(1);
    expect(res.failed_authorizers[0]).toMatchObject({ authorizer_unique_id: 'no-conn' });
    expect(res.failed_authorizers[0]!.error).toContain('no Stripe bank-data connection');
  });

  test('a malformed link is a 400 naming the field; account and routing numbers stay required', async () => {
    const { c } = await setup();
    const bad = await c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('bad', { bank_link: { provider: 'stripe', account: 'acct_123' } })] } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('bank_link');
    const noAccount = await submit(c, [bankAuthorizer('ok'), { authorizer_unique_id: 'no-acct', ssn: '123456789', bank_link: stripeLink('fca_1Whatever') }]);
    expect(noAccount.failed_authorizers[0]!.error).toContain('account_number');
  });

  test('the CSV takes bank_link_ columns; a wrong combination fails its row alone', async () => {
    const { c } = await setup();
    plaid.addItem('access-sandbox-csv1', [{ account_id: 'acc_checking_0001', available: 19.99, current: 20 }]);
    const csv =
      'authorizer_unique_id,ssn,account_number,routing_number,bank_link_provider,bank_link_access_token,bank_link_account_id,bank_link_account\n' +
      'csv-1,123456789,0001234567,110000000,plaid,access-sandbox-csv1,acc_checking_0001,\n' +
      'csv-2,123456789,0001234567,110000000,,access-sandbox-csv1,,\n' +
      'csv-3,123456789,0001234567,110000000,stripe,access-sandbox-csv1,,fca_1X\n';
    const form = new FormData();
    form.append('file', new File([csv], 'b.csv', { type: 'text/csv' }));
    const r = await c.json('POST', '/v1/balance_requests/csv', { form });
    expect(r.status).toBe(201);
    expect(r.body.failed_authorizers.map((f: { authorizer_unique_id: string }) => f.authorizer_unique_id)).toEqual(['csv-2', 'csv-3']);
    expect(r.body.failed_authorizers[0].error).toContain('bank_link_provider');
    await complete(c, r.body.batch_id);
    expect((await balances(c, r.body.batch_id))[0]).toMatchObject({ authorizer_unique_id: 'csv-1', balance: 19.99, balance_kind: 'available' });
  });

  test('the access token is sealed: not in any answer, nor in the database file', async () => {
    const { c } = await setup();
    plaid.addItem('access-sandbox-sealedtoken', [{ account_id: 'acc_checking_0001', available: 1, current: 1 }]);
    const { batch_id } = await submit(c, [bankAuthorizer('sealed', { bank_link: plaidLink('access-sandbox-sealedtoken') })]);
    await complete(c, batch_id);
    const answers = [await c.json('GET', `/v1/balances?batchId=${batch_id}`), await c.json('GET', `/v1/balance_requests/${batch_id}`), await c.json('GET', '/v1/monitoring/authorizers/sealed/history')];
    for (const a of answers) expect(JSON.stringify(a.body)).not.toContain('access-sandbox-sealedtoken');
    expect(c.storedInClear(batch_id)).toBe(true);
    expect(c.storedInClear('access-sandbox-sealedtoken')).toBe(false);
  });
});

describe('claims that lapse while waiting for the lender’s limit', () => {
  test('items waiting behind a slow lender past their lease are given back and read once each, never twice', async () => {
    const { c, clientId } = await setup({ BANK_LINK_CONCURRENCY: '1' });
    plaid.setLatency(60);
    try {
      const authorizers = Array.from({ length: 6 }, (_, i) => {
        plaid.addItem(`access-sandbox-lapse${i}`, [{ account_id: 'acc_checking_0001', available: i, current: i }]);
        return bankAuthorizer(`lapse-${i}`, { bank_link: plaidLink(`access-sandbox-lapse${i}`) });
      });
      const before = plaid.requests.length;
      const { batch_id } = await submit(c, authorizers);
      const run = processBalances(c.rt);
      // The first read is under way; every claim lapses (the lease is 120 s) while the rest wait their turn.
      while (plaid.inFlight(clientId).now === 0) await Bun.sleep(5);
      c.clock.advance(121_000);
      await run;
      await complete(c, batch_id);
      const reads = plaid.requests.slice(before).filter((r) => r.path === '/accounts/balance/get').map((r) => r.body.access_token as string);
      expect(reads.sort()).toEqual(authorizers.map((_, i) => `access-sandbox-lapse${i}`).sort());
      expect((await balances(c, batch_id)).map((b) => b.balance_status_code)).toEqual([0, 0, 0, 0, 0, 0]);
    } finally {
      plaid.setLatency(0);
    }
  });
});
