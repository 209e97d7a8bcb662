// Pay cycles learned from a linked account's transactions: read by the pay-history job after enrollment, from
// the fake Plaid (/transactions/sync), the fake Stripe (Financial Connections transactions after a refresh), an
// HTTP bank-data provider (POST /transactions) and the sandbox's pay-pattern accounts; failures retried, then
// given up; the page bound; and the stored deposits erased with the borrower.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { signedIn } from '../../helpers/portal';
import { TransactionsUpdateStatus } from 'plaid';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { patternTransactions } from '../../fakes/pay-pattern';
import { readDueHistories, HISTORY_INCOMPLETE_RECHECK_MS, HISTORY_MAX_ATTEMPTS, HISTORY_PENDING_POLL_MS } from '../../../src/modules/pay-cycles/history';
import { HISTORY_MAX_PAGES } from '../../../src/adapters/bank-data';

const D = 86_400_000;
// Monday 16 November 2026, 09:00 UTC; paid every other Friday: 6 and 20 November.
const NOW = '2026-11-16T09:00:00.000Z';
const plaid = startFakePlaid();
const stripe = startFakeStripe();
const STRIPE_KEY = 'rk_test_payhistory0000000000000042';
const contexts: TestContext[] = [];
const servers: { stop(force?: boolean): void }[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  servers.forEach((s) => s.stop(true));
  plaid.stop();
  stripe.stop();
});

let n = 0;
async function setup(env: Record<string, string> = {}) {
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, ...env }, { clockAt: NOW });
  contexts.push(c);
  const clientId = `client_hist_${++n}_${Date.now()}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  return { c, clientId };
}

async function connectPlaid(c: TestContext, clientId: string) {
  const r = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'sandbox' } });
  expect(r.status).toBe(201);
}

/** Enrolled for more than any balance holds, so monitoring goes on and nothing is debited. */
async function enroll(c: TestContext, aid: string, over: Record<string, unknown> = {}, outcome: 'enrolled' | 'updated' = 'enrolled') {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: 9_000_000, ...over })] } });
  expect(r.status).toBe(207);
  expect(r.body.results[0].outcome).toBe(outcome);
}

const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;

/** The reading of an enrollment as stored: due time, attempts and outcome. */
function reading(c: TestContext, aid: string) {
  return c.sql
    .query<{ dueAt: number | null; attempts: number; outcome: string | null; id: string }, [string]>(
      `SELECT h.due_at AS dueAt, h.attempts, h.outcome, e.id FROM pay_history h JOIN enrollments e ON e.id = h.enrollment_id WHERE e.authorizer_unique_id = ?`,
    )
    .get(aid);
}

/** Runs the pay-history job until the enrollment's reading is no longer due, moving the clock `stepMs` each time. */
async function readHistory(c: TestContext, aid: string, stepMs = 1_000) {
  for (let i = 0; i < 100; i++) {
    await readDueHistories(c.rt);
    const r = reading(c, aid);
    if (r && r.dueAt === null) return r;
    c.clock.advance(stepMs);
    await Bun.sleep(10);
  }
  throw new Error(`the transaction reading of ${aid} did not end`);
}

describe('Plaid', () => {
  test('a borrower paid biweekly on Fridays, linked through the fake Plaid server with 90 days of transactions, shows biweekly, the right next payday and a next_read_at within a day of it', async () => {
    const { c, clientId } = await setup();
    await connectPlaid(c, clientId);
    plaid.addItem('access-sandbox-hist1', [{ account_id: 'acc_hist_0001', available: 75, current: 75 }]);
    plaid.addTransactions('access-sandbox-hist1', 'acc_hist_0001', { everyDays: 14, payday: '2026-11-06', payCents: 1_500_00, until: c.clock.now() });
    const before = plaid.requests.length;
    await enroll(c, 'plaid-friday', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-hist1', account_id: 'acc_hist_0001' } });
    // Nothing is read from Plaid inside the enrollment request.
    expect(plaid.requests.slice(before).filter((r) => r.path === '/transactions/sync')).toHaveLength(0);

    expect((await readHistory(c, 'plaid-friday')).outcome).toBe('credits');
    await cycle(c);
    const v = await view(c, 'plaid-friday');
    expect(v.pay_cycle).toMatchObject({ frequency: 'biweekly', next_payday: '2026-11-20', source: 'transactions' });
    expect(v.pay_cycle.confidence).toBeGreaterThanOrEqual(0.8);
    expect(Math.abs(Date.parse(v.next_read_at) - Date.parse('2026-11-20T00:00:00Z'))).toBeLessThanOrEqual(D);
    // The enrollment list shows the same.
    const listed = (await c.json('GET', '/v1/payment_enrollments')).body.enrollments.find((e: { authorizer_unique_id: string }) => e.authorizer_unique_id === 'plaid-friday');
    expect(listed.pay_cycle).toEqual(v.pay_cycle);
    expect(listed.next_read_at).toBe(v.next_read_at);
    // And the portal's borrower page.
    const page = await (await signedIn(c)).get('/portal/payments/borrowers/plaid-friday');
    expect(page.text).toContain('biweekly, next payday 2026-11-20');
    expect(page.text).toContain('from transactions');

    // The request as Plaid takes it: /transactions/sync from the start for the account, 500 a page, the last 91
    // days, the credentials in the body.
    const asked = plaid.requests.slice(before).filter((r) => r.path === '/transactions/sync');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.status).toBe(200);
    expect(asked[0]!.body).toMatchObject({ access_token: 'access-sandbox-hist1', count: 500, options: { account_id: 'acc_hist_0001', days_requested: 91 } });
    expect(asked[0]!.body.cursor).toBeUndefined();
    // Only the income is kept: one row per payday (the debits are not stored).
    const stored = c.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM pay_history_deposits WHERE enrollment_id = ?').get(reading(c, 'plaid-friday')!.id)!.n;
    expect(stored).toBe(patternTransactions({ everyDays: 14, payday: '2026-11-06', payCents: 1, until: c.clock.now() }).filter((t) => t.amountCents > 0).length);
    expect(stored).toBeGreaterThanOrEqual(6);
    const logs = c.logs.join('');
    expect(logs).not.toContain(`secret-${clientId}`);
    expect(logs).not.toContain('access-sandbox-hist1');
  });

  test('a Plaid failure is retried with backoff and then read; one failing every time is given up, leaving the balance-based cycle', async () => {
    const { c, clientId } = await setup();
    await connectPlaid(c, clientId);
    plaid.addItem('access-sandbox-hist2', [{ account_id: 'acc_hist_0002', available: 75, current: 75 }]);
    plaid.addTransactions('access-sandbox-hist2', 'acc_hist_0002', { everyDays: 7, payday: '2026-11-13', payCents: 640_00, until: c.clock.now() });
    await enroll(c, 'plaid-retry', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-hist2', account_id: 'acc_hist_0002' } });
    plaid.failNextTransactions(2);
    await readDueHistories(c.rt);
    expect(reading(c, 'plaid-retry')).toMatchObject({ attempts: 1, outcome: null });
    // Not asked again before its backoff.
    await readDueHistories(c.rt);
    expect(reading(c, 'plaid-retry')!.attempts).toBe(1);
    expect((await readHistory(c, 'plaid-retry', 60_000)).outcome).toBe('credits');
    expect((await view(c, 'plaid-retry')).pay_cycle).toMatchObject({ frequency: 'weekly', next_payday: '2026-11-20', source: 'transactions' });
    const warned = c.logs.filter((l) => l.includes('transaction history could not be read'));
    expect(warned).toHaveLength(2);
    for (const l of warned) {
      expect(l).not.toContain('access-sandbox-hist2');
      expect(l).not.toContain('plaid-retry');
      expect(l).not.toContain(`secret-${clientId}`);
    }

    plaid.addItem('access-sandbox-hist3', [{ account_id: 'acc_hist_0003', available: 75, current: 75 }]);
    plaid.setTransactionsProduct('access-sandbox-hist3', 'consented');
    await enroll(c, 'plaid-down', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-hist3', account_id: 'acc_hist_0003' } });
    plaid.failNextTransactions(1_000);
    try {
      expect((await readHistory(c, 'plaid-down', 3_600_000)).outcome).toBe('gave_up');
    } finally {
      plaid.failNextTransactions(0);
    }
    expect(c.logs.filter((l) => l.includes('transaction history could not be read'))).toHaveLength(2 + HISTORY_MAX_ATTEMPTS);
    await cycle(c);
    expect((await view(c, 'plaid-down')).pay_cycle).toMatchObject({ frequency: 'unknown', source: 'balances' });
  });

  test('an Item whose Transactions product is neither billed nor consented to is never asked for transactions (that would start the product, billed monthly); the cycle stays learned from balances', async () => {
    const { c, clientId } = await setup();
    await connectPlaid(c, clientId);
    plaid.addItem('access-sandbox-notx', [{ account_id: 'acc_notx_0001', available: 75, current: 75 }]);
    plaid.setTransactionsProduct('access-sandbox-notx', 'none');
    const before = plaid.requests.length;
    await enroll(c, 'plaid-notx', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-notx', account_id: 'acc_notx_0001' } });
    const r = await readHistory(c, 'plaid-notx');
    expect(r.outcome).not.toBe('credits');
    const asked = plaid.requests.slice(before).filter((q) => q.body.access_token === 'access-sandbox-notx').map((q) => q.path);
    expect(asked).toContain('/item/get');
    expect(asked).not.toContain('/transactions/sync');
    expect(asked).not.toContain('/transactions/get');
    await cycle(c);
    expect((await view(c, 'plaid-notx')).pay_cycle).toMatchObject({ source: 'balances' });
    // Consented to (not yet billed): read.
    plaid.setTransactionsProduct('access-sandbox-notx', 'consented');
    const again = plaid.requests.length;
    await enroll(c, 'plaid-notx-2', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-notx', account_id: 'acc_notx_0001' } });
    await readHistory(c, 'plaid-notx-2');
    expect(plaid.requests.slice(again).some((q) => q.path === '/transactions/sync' && q.body.access_token === 'access-sandbox-notx')).toBe(true);
  });

  test('a source that never stops paging is read to the page bound and no further', async () => {
    const { c, clientId } = await setup();
    await connectPlaid(c, clientId);
    plaid.addItem('access-sandbox-endless', [{ account_id: 'acc_hist_0004', available: 75, current: 75 }]);
    plaid.setEndlessTransactions('access-sandbox-endless', 'acc_hist_0004');
    const before = plaid.requests.length;
    await enroll(c, 'plaid-endless', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-endless', account_id: 'acc_hist_0004' } });
    expect((await readHistory(c, 'plaid-endless')).outcome).toBe('credits');
    const pages = plaid.requests.slice(before).filter((r) => r.path === '/transactions/sync');
    expect(pages).toHaveLength(HISTORY_MAX_PAGES);
    // Each page asked from the cursor the one before gave.
    expect(pages.map((p) => p.body.cursor)).toEqual([undefined, ...Array.from({ length: HISTORY_MAX_PAGES - 1 }, (_, i) => `c${(i + 1) * 500}`)]);
  });

  test('a history Plaid is still pulling (INITIAL_UPDATE_COMPLETE, about 30 days) is learned from now and read again, and the cycle learned again once it is complete', async () => {
    const { c, clientId } = await setup();
    await connectPlaid(c, clientId);
    const token = 'access-sandbox-partial1';
    plaid.addItem(token, [{ account_id: 'acc_hist_0005', available: 75, current: 75 }]);
    plaid.addTransactions(token, 'acc_hist_0005', { everyDays: 14, payday: '2026-11-06', payCents: 1_500_00, until: c.clock.now() });
    plaid.setSyncStatus(token, TransactionsUpdateStatus.NotReady);
    await enroll(c, 'plaid-partial', { bank_link: { provider: 'plaid', access_token: token, account_id: 'acc_hist_0005' } });
    // Nothing pulled yet: waited on, not read as "no history".
    await readDueHistories(c.rt);
    expect(reading(c, 'plaid-partial')).toMatchObject({ outcome: null, attempts: 0 });
    expect(reading(c, 'plaid-partial')!.dueAt).not.toBeNull();

    // The first 30 days: two paydays, learned from, and the reading stays due.
    plaid.setSyncStatus(token, TransactionsUpdateStatus.InitialUpdateComplete);
    c.clock.advance(HISTORY_INCOMPLETE_RECHECK_MS);
    await readDueHistories(c.rt);
    const partial = reading(c, 'plaid-partial')!;
    expect(partial.outcome).toBeNull();
    expect(partial.dueAt).toBe(c.clock.now() + HISTORY_INCOMPLETE_RECHECK_MS);
    const deposits = () => c.sql.query<{ n: number }, [string]>('SELECT COUNT(*) AS n FROM pay_history_deposits WHERE enrollment_id = ?').get(partial.id)!.n;
    const early = deposits();

    // Complete: read again at its time, every payday of the window kept, the reading ended.
    plaid.setSyncStatus(token, TransactionsUpdateStatus.HistoricalUpdateComplete);
    c.clock.advance(HISTORY_INCOMPLETE_RECHECK_MS);
    await readDueHistories(c.rt);
    expect(reading(c, 'plaid-partial')).toMatchObject({ outcome: 'credits', dueAt: null });
    expect(deposits()).toBeGreaterThan(early);
    expect((await view(c, 'plaid-partial')).pay_cycle).toMatchObject({ frequency: 'biweekly', source: 'transactions' });
  });
});

describe('Stripe Financial Connections', () => {
  test('a transactions refresh still pending is asked about again later, then the transactions are listed page by page', async () => {
    const { c } = await setup();
    expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: STRIPE_KEY } })).status).toBe(201);
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_hist0001', available: 75_00, current: 75_00 });
    // Weekly on Fridays, with a debit every day: more than one page of 100.
    stripe.control.setFcTransactions('fca_hist0001', { everyDays: 7, payday: '2026-11-13', payCents: 720_00, debitEveryDays: 1, until: c.clock.now() });
    stripe.control.setRefreshDelay(300);
    try {
      await enroll(c, 'stripe-weekly', { bank_link: { provider: 'stripe', account: 'fca_hist0001' } });
      await readDueHistories(c.rt);
      // The refresh was asked for and is pending: the reading is due again, not failed.
      expect(reading(c, 'stripe-weekly')).toMatchObject({ attempts: 0, outcome: null });
      expect(reading(c, 'stripe-weekly')!.dueAt).not.toBeNull();
      expect(stripe.control.transactionLists('fca_hist0001')).toBe(0);
      // Not looked at again at once.
      await readDueHistories(c.rt);
      expect(stripe.requests.filter((r) => r.path === '/v1/financial_connections/accounts/fca_hist0001')).toHaveLength(1);
      expect((await readHistory(c, 'stripe-weekly', HISTORY_PENDING_POLL_MS)).outcome).toBe('credits');
    } finally {
      stripe.control.setRefreshDelay(0);
    }
    // Subscribed to transactions (which starts the first refresh; Stripe refreshes about daily after it): no
    // refresh asked for of its own.
    const subscribe = stripe.requests.filter((r) => r.path === '/v1/financial_connections/accounts/fca_hist0001/subscribe');
    expect(subscribe.map((r) => r.params.features)).toEqual([['transactions']]);
    expect(stripe.requests.filter((r) => r.path === '/v1/financial_connections/accounts/fca_hist0001/refresh')).toHaveLength(0);
    expect(stripe.control.subscriptions('fca_hist0001')).toEqual(['transactions']);
    const lists = stripe.requests.filter((r) => r.path === '/v1/financial_connections/transactions');
    expect(lists.length).toBeGreaterThanOrEqual(2);
    expect(lists[0]!.params).toMatchObject({ account: 'fca_hist0001', limit: '100' });
    expect(lists[1]!.params.starting_after).toEqual(expect.stringMatching(/^fctxn_/));
    expect((await view(c, 'stripe-weekly')).pay_cycle).toMatchObject({ frequency: 'weekly', next_payday: '2026-11-20', source: 'transactions' });

    // Read again a day later (a re-send): the subscription's refresh is read, nothing subscribed or refreshed again.
    c.clock.advance(86_400_000);
    await enroll(c, 'stripe-weekly', { bank_link: { provider: 'stripe', account: 'fca_hist0001' } }, 'updated');
    expect((await readHistory(c, 'stripe-weekly', HISTORY_PENDING_POLL_MS)).outcome).toBe('credits');
    expect(stripe.requests.filter((r) => /fca_hist0001\/(subscribe|refresh)$/.test(r.path))).toHaveLength(1);
  });

  test('an account without the transactions permission has no history: the cycle stays learned from balances', async () => {
    const { c } = await setup();
    expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: STRIPE_KEY } })).status).toBe(201);
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_hist0002', available: 75_00, current: 75_00, permissions: ['balances', 'payment_method'] });
    await enroll(c, 'stripe-no-tx', { bank_link: { provider: 'stripe', account: 'fca_hist0002' } });
    expect((await readHistory(c, 'stripe-no-tx')).outcome).toBe('transactions_not_permitted');
    await cycle(c);
    expect((await view(c, 'stripe-no-tx')).pay_cycle).toMatchObject({ source: 'balances' });
  });
});

describe('the HTTP bank-data provider', () => {
  test('POST {BANK_DATA_URL}/transactions, paged by page_token; a provider without it (404) leaves the balance-based cycle', async () => {
    const seen: { auth: string | null; body: Record<string, unknown> }[] = [];
    const txs = patternTransactions({ everyDays: 14, payday: '2026-11-06', payCents: 1_250_00, until: NOW.slice(0, 10) });
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname;
        const body = (await req.json()) as Record<string, unknown>;
        if (path === '/balance') return Response.json({ balance_status_code: 0, balance: 75 });
        if (path !== '/transactions') return new Response('not found', { status: 404 });
        seen.push({ auth: req.headers.get('authorization'), body });
        if (body.account_number !== '000222333') return new Response('no transactions here', { status: 404 });
        const half = Math.ceil(txs.length / 2);
        const page = body.page_token === 'second' ? txs.slice(half) : txs.slice(0, half);
        // A credit outside the days asked for is not kept.
        if (body.page_token === 'second') page.push({ date: '2025-01-03', amountCents: 1_250_00, name: 'OLD PAYROLL' });
        return Response.json({
          transactions: page.map((t) => ({ date: t.date, amount: t.amountCents / 100, description: t.name })),
          next_page_token: body.page_token === 'second' ? null : 'second',
        });
      },
    });
    servers.push(server);
    const { c } = await setup({ BANK_DATA_PROVIDER: 'http', BANK_DATA_URL: `http://127.0.0.1:${server.port}`, BANK_DATA_TOKEN: 'bank-token-hist' });
    // The bridge's reads are not validation evidence: this lender keeps its own, outside the service.
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { require_account_validation: false } })).status).toBe(200);
    await enroll(c, 'http-friday', { account_number: '000222333' });
    await enroll(c, 'http-none', { account_number: '000444555' });
    expect((await readHistory(c, 'http-friday')).outcome).toBe('credits');
    expect((await readHistory(c, 'http-none')).outcome).toBe('transactions_not_offered');
    const paydays = txs.filter((t) => t.amountCents > 0).length;
    expect(c.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM pay_history_deposits WHERE enrollment_id = ?').get(reading(c, 'http-friday')!.id)!.n).toBe(paydays);
    const mine = seen.filter((s) => s.body.account_number === '000222333');
    expect(mine.map((s) => s.body.page_token)).toEqual([null, 'second']);
    expect(mine[0]).toMatchObject({ auth: 'Bearer bank-token-hist', body: { authorizer_unique_id: 'http-friday', routing_number: '110000000', start_date: '2026-08-18', end_date: '2026-11-16' } });
    await cycle(c);
    expect((await view(c, 'http-friday')).pay_cycle).toMatchObject({ frequency: 'biweekly', next_payday: '2026-11-20', source: 'transactions' });
    expect((await view(c, 'http-none')).pay_cycle).toMatchObject({ source: 'balances' });
  });
});

describe('the sandbox provider', () => {
  test('a pay-pattern account (9997…) answers its history; other accounts have none; a re-send wants it again; erasure removes the deposits', async () => {
    const { c } = await setup();
    await enroll(c, 'sbx-friday', { account_number: '9997201500' });
    await enroll(c, 'sbx-plain', { account_number: '0001234567' });
    expect((await readHistory(c, 'sbx-friday')).outcome).toBe('credits');
    expect((await readHistory(c, 'sbx-plain')).outcome).toBe('no_transactions');
    expect((await view(c, 'sbx-friday')).pay_cycle).toMatchObject({ frequency: 'biweekly', next_payday: '2026-11-20', source: 'transactions' });
    expect((await view(c, 'sbx-plain')).pay_cycle).toBeNull();

    const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('sbx-friday', { account_number: '9997201500', collectable_amount: 8_000_000 })] } });
    expect(r.body.results[0].outcome).toBe('updated');
    expect(reading(c, 'sbx-friday')!.dueAt).toBe(c.clock.now());

    const id = reading(c, 'sbx-friday')!.id;
    const count = () => c.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM pay_history_deposits WHERE enrollment_id = ?').get(id)!.n;
    expect(count()).toBeGreaterThan(0);
    const erased = await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['sbx-friday'] } });
    expect(erased.status).toBe(200);
    expect(count()).toBe(0);
    expect(reading(c, 'sbx-friday')).toBeNull();
    // Nothing is read for an erased borrower.
    expect((await readDueHistories(c.rt)).read).toBe(0);
  });
});
