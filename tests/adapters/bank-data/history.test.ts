// Transaction history at the edge of each source: the signs of Plaid (money out positive) and Stripe (money in
// positive), the HTTP contract's answer read strictly, and the sandbox's pay-pattern paydays.
import { describe, expect, test } from 'bun:test';
import type Stripe from 'stripe';
import { fromTransactionsBody, toTransactionsRequestBody } from '../../../src/adapters/bank-data/http-contract';
import { plaidCredits } from '../../../src/adapters/bank-data/plaid';
import { stripeCredits, transactionsState } from '../../../src/adapters/bank-data/stripe-fc';
import { SandboxBalanceProvider, payPatternPaydays } from '../../../src/adapters/bank-data/sandbox';
import { TransientProviderError } from '../../../src/adapters/bank-data/types';
import { RoutingDirectory } from '../../../src/adapters/routing/directory';
import { FakeClock } from '../../../src/platform/clock';

const day = (s: string) => Date.parse(`${s}T00:00:00Z`);

describe('Plaid', () => {
  test('negative amounts are money in: the posted credits of the account, in cents on their day', () => {
    const credits = plaidCredits(
      [
        { account_id: 'acc_1', amount: -1500.25, date: '2026-11-06', pending: false },
        { account_id: 'acc_1', amount: 42.17, date: '2026-11-07', pending: false },
        { account_id: 'acc_1', amount: -99, date: '2026-11-08', pending: true },
        { account_id: 'acc_other', amount: -700, date: '2026-11-06', pending: false },
        { account_id: 'acc_1', amount: -10, date: 'yesterday', pending: false },
      ],
      'acc_1',
    );
    expect(credits).toEqual([{ at: day('2026-11-06'), amountCents: 150_025 }]);
  });
});

describe('Stripe Financial Connections', () => {
  const tx = (over: Partial<Stripe.FinancialConnections.Transaction>) =>
    ({ id: 'fctxn_1', amount: 150_000, currency: 'usd', status: 'posted', transacted_at: Date.parse('2026-11-06T15:30:00Z') / 1000, ...over }) as Stripe.FinancialConnections.Transaction;

  test('positive amounts are money in: posted USD credits, on their UTC day', () => {
    expect(stripeCredits([tx({}), tx({ amount: -4_217 }), tx({ status: 'pending' }), tx({ currency: 'eur' })])).toEqual([{ at: day('2026-11-06'), amountCents: 150_000 }]);
  });

  test('the transactions refresh: asked for when absent or stale, pending waited on, a recent success listed, no permission no history', () => {
    const now = Date.parse('2026-11-16T09:00:00Z');
    const account = (over: Partial<Stripe.FinancialConnections.Account>) =>
      ({ status: 'active', permissions: ['balances', 'transactions'], transaction_refresh: null, ...over }) as Stripe.FinancialConnections.Account;
    const refresh = (status: 'pending' | 'succeeded' | 'failed', agoMs: number) => ({ id: 'fctxnref_1', status, last_attempted_at: (now - agoMs) / 1000, next_refresh_available_at: null });
    expect(transactionsState(account({}), now, false)).toBe('refresh');
    expect(transactionsState(account({ transaction_refresh: refresh('succeeded', 60_000) }), now, false)).toBe('list');
    expect(transactionsState(account({ transaction_refresh: refresh('succeeded', 3 * 86_400_000) }), now, false)).toBe('refresh');
    expect(transactionsState(account({ transaction_refresh: refresh('pending', 1_000) }), now, false)).toMatchObject({ kind: 'pending' });
    expect(() => transactionsState(account({ transaction_refresh: refresh('failed', 1_000) }), now, true)).toThrow(TransientProviderError);
    expect(transactionsState(account({ permissions: ['balances'] }), now, false)).toEqual({ kind: 'none', detail: 'transactions_not_permitted' });
    expect(transactionsState(account({ status: 'disconnected' }), now, false)).toEqual({ kind: 'none', detail: 'relink_required' });
  });
});

describe('the HTTP contract', () => {
  test('the request: the balance request with the days and the page token', () => {
    const body = toTransactionsRequestBody(
      { authorizerUniqueId: 'b-1', paymentType: 'ACCOUNT_NUMBER', routingNumber: '110000000', accountNumber: '0001234567', debitCardNumber: null },
      { from: day('2026-08-18'), to: day('2026-11-16') },
      null,
    );
    expect(body).toMatchObject({ authorizer_unique_id: 'b-1', account_number: '0001234567', start_date: '2026-08-18', end_date: '2026-11-16', page_token: null });
  });

  test('credits are positive dollars; debits skipped; the next page token passed on', () => {
    expect(fromTransactionsBody({ transactions: [{ date: '2026-11-06', amount: 1500 }, { date: '2026-11-07', amount: '-42.17' }, { date: '2026-11-08', amount: '0.29' }], next_page_token: 'p2' })).toEqual({
      credits: [
        { at: day('2026-11-06'), amountCents: 150_000 },
        { at: day('2026-11-08'), amountCents: 29 },
      ],
      nextPageToken: 'p2',
    });
    expect(fromTransactionsBody({ transactions: [] })).toEqual({ credits: [], nextPageToken: null });
  });

  test.each([
    ['not an object', []],
    ['no transactions', { next_page_token: null }],
    ['a transaction without a date', { transactions: [{ amount: 5 }] }],
    ['a date that is not a day', { transactions: [{ date: '11/06/2026', amount: 5 }] }],
    ['an amount that is not money', { transactions: [{ date: '2026-11-06', amount: 'lots' }] }],
    ['an empty page token', { transactions: [], next_page_token: '' }],
    ['a page token past its bound', { transactions: [], next_page_token: 'x'.repeat(1025) }],
  ])('%s: outside the contract', (_, body) => {
    expect(fromTransactionsBody(body)).toBeNull();
  });
});

describe('the sandbox', () => {
  test('pay-pattern paydays: every other Friday from 2 January 2026, the 1st and 16th, each paid the business day before', () => {
    expect(payPatternPaydays(2, day('2026-10-01'), day('2026-11-30')).map((d) => new Date(d).toISOString().slice(0, 10))).toEqual(['2026-10-09', '2026-10-23', '2026-11-06', '2026-11-20']);
    // 1 November 2026 is a Sunday: paid Friday 30 October; 16 November is a Monday.
    expect(payPatternPaydays(3, day('2026-10-20'), day('2026-11-20')).map((d) => new Date(d).toISOString().slice(0, 10))).toEqual(['2026-10-30', '2026-11-16']);
  });

  test('a pay-pattern account answers its paydays up to the sandbox’s today; another account has no history', async () => {
    const clock = new FakeClock(Date.parse('2026-11-16T09:00:00Z'));
    const sandbox = new SandboxBalanceProvider({ directory: new RoutingDirectory(), latencyMs: 0, clock });
    const req = (accountNumber: string) => ({ authorizerUniqueId: 'a', paymentType: 'ACCOUNT_NUMBER' as const, routingNumber: '110000000', accountNumber, debitCardNumber: null });
    const window = { from: day('2026-10-01'), to: day('2026-12-31') };
    expect(await sandbox.history(req('9997201500'), window)).toEqual({
      kind: 'credits',
      credits: ['2026-10-09', '2026-10-23', '2026-11-06'].map((d) => ({ at: day(d), amountCents: 150_000 })),
      truncated: false,
    });
    expect(await sandbox.history(req('0001234567'), window)).toEqual({ kind: 'none', detail: 'no_transactions' });
  });
});
