// The contract with Plaid and Stripe, checked with their official SDKs: each SDK is pointed at its fake and
// makes the call the service makes; the service's own request must be one the SDK itself sends (same path,
// same body fields, credentials in the body for Plaid), and the fake's answers must be ones the SDK reads.
import { afterAll, describe, expect, test } from 'bun:test';
import { Configuration, PlaidApi, PlaidErrorType, type AccountsBalanceGetRequest, type PlaidError } from 'plaid';
import Stripe from 'stripe';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { PlaidSource, plaidErrorResult } from '../../../src/adapters/bank-data/plaid';
import { StripeFcSource, accountResult, REFRESH_POLL_MS } from '../../../src/adapters/bank-data/stripe-fc';
import { CredentialsRefused, RELINK_REQUIRED } from '../../../src/adapters/bank-data/linked';
import { TransientProviderError } from '../../../src/adapters/bank-data/types';
import { STRIPE_API_VERSION } from '../../../src/adapters/processors/stripe';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
afterAll(() => {
  plaid.stop();
  stripe.stop();
});
plaid.addClient('contract_client', 'contract-secret-0001');
plaid.addItem('access-sandbox-contract', [{ account_id: 'acc_contract_01', available: 12.34, current: 20 }]);
const creds = { provider: 'plaid' as const, clientId: 'contract_client', secret: 'contract-secret-0001', environment: 'sandbox' as const };

describe('Plaid: the service and the plaid SDK send the same request', () => {
  test('/accounts/balance/get: same path, same body fields, credentials in the body; the SDK reads the fake’s answer', async () => {
    const sdk = new PlaidApi(new Configuration({ basePath: plaid.url }));
    const now = Date.now();
    const request: AccountsBalanceGetRequest = {
      client_id: creds.clientId,
      secret: creds.secret,
      access_token: 'access-sandbox-contract',
      options: { account_ids: ['acc_contract_01'], min_last_updated_datetime: new Date(now - 24 * 3_600_000).toISOString() },
    };
    const before = plaid.requests.length;
    const answer = await sdk.accountsBalanceGet(request);
    expect(answer.data.accounts[0]!.balances.available).toBe(12.34);
    const bySdk = plaid.requests[before]!;

    const read = await new PlaidSource({ apiUrl: plaid.url }).read(creds, { provider: 'plaid', accessToken: 'access-sandbox-contract', accountId: 'acc_contract_01' }, now);
    expect(read).toMatchObject({ kind: 'balance', balanceCents: 1234, balanceKind: 'available' });
    const byService = plaid.requests[before + 1]!;

    expect(byService.path).toBe(bySdk.path);
    expect(byService.body).toEqual(bySdk.body);
    expect(byService.headers['content-type']).toContain('application/json');
    expect(byService.headers['plaid-version']).toBe(bySdk.headers['plaid-version']!);
    expect(bySdk.headers['content-type']).toContain('application/json');
    // The service never puts the secret anywhere but the body.
    expect(JSON.stringify(byService.headers)).not.toContain(creds.secret);
  });

  test('/institutions/get: the check of the credentials is a request the SDK sends too', async () => {
    const sdk = new PlaidApi(new Configuration({ basePath: plaid.url }));
    const before = plaid.requests.length;
    await sdk.institutionsGet({ client_id: creds.clientId, secret: creds.secret, count: 1, offset: 0, country_codes: ['US' as never] });
    await new PlaidSource({ apiUrl: plaid.url }).verify(creds);
    const [bySdk, byService] = plaid.requests.slice(before);
    expect(byService!.path).toBe(bySdk!.path);
    expect(byService!.body).toEqual(bySdk!.body);
    await expect(new PlaidSource({ apiUrl: plaid.url }).verify({ ...creds, secret: 'wrong' })).rejects.toBeInstanceOf(CredentialsRefused);
  });

  test('the fake’s errors are Plaid’s error object as the SDK surfaces it, and the service maps them', async () => {
    plaid.addItem('access-sandbox-err', [{ account_id: 'acc_contract_01', available: 1, current: 1 }]);
    plaid.setItemError('access-sandbox-err', 'ITEM_LOGIN_REQUIRED');
    const sdk = new PlaidApi(new Configuration({ basePath: plaid.url }));
    const e = await sdk.accountsBalanceGet({ client_id: creds.clientId, secret: creds.secret, access_token: 'access-sandbox-err' }).catch((x) => x);
    const data = e.response.data as PlaidError;
    expect(data.error_code).toBe('ITEM_LOGIN_REQUIRED');
    expect(data.error_type).toBe(PlaidErrorType.ItemError);
    const source = new PlaidSource({ apiUrl: plaid.url });
    const link = { provider: 'plaid' as const, accessToken: 'access-sandbox-err', accountId: 'acc_contract_01' };
    expect(await source.read(creds, link, Date.now())).toEqual({ kind: 'failed', statusCode: 9000, detail: RELINK_REQUIRED });
    plaid.failNext(1);
    await expect(source.read(creds, link, Date.now())).rejects.toBeInstanceOf(TransientProviderError);
  });

  test('the mapping of Plaid errors', () => {
    const f = (status: number, error_type: string, error_code: string) => {
      try {
        return plaidErrorResult(status, { error_type, error_code });
      } catch (e) {
        return e instanceof TransientProviderError ? 'retry' : 'thrown';
      }
    };
    expect(f(400, 'ITEM_ERROR', 'ITEM_LOGIN_REQUIRED')).toEqual({ kind: 'failed', statusCode: 9000, detail: RELINK_REQUIRED });
    expect(f(429, 'RATE_LIMIT_EXCEEDED', 'ACCOUNTS_BALANCE_GET_LIMIT')).toBe('retry');
    expect(f(400, 'RATE_LIMIT_EXCEEDED', 'RATE_LIMIT')).toBe('retry');
    expect(f(400, 'ITEM_ERROR', 'PRODUCT_NOT_READY')).toBe('retry');
    expect(f(400, 'INSTITUTION_ERROR', 'INSTITUTION_DOWN')).toBe('retry');
    expect(f(500, 'API_ERROR', 'INTERNAL_SERVER_ERROR')).toBe('retry');
    expect(f(400, 'ITEM_ERROR', 'NO_ACCOUNTS')).toEqual({ kind: 'failed', statusCode: 3200, detail: 'account_closed' });
    // The id is no longer valid (a new one can appear once the borrower picks accounts again): a relink, not closed.
    expect(f(400, 'INVALID_INPUT', 'INVALID_ACCOUNT_ID')).toEqual({ kind: 'failed', statusCode: 9000, detail: 'relink_required' });
    // "Do not create new ACH transfers for the account": revoked, which no debit follows.
    expect(f(400, 'ITEM_ERROR', 'USER_ACCOUNT_REVOKED')).toEqual({ kind: 'failed', statusCode: 9000, detail: 'account_revoked' });
    expect(f(400, 'ITEM_ERROR', 'USER_PERMISSION_REVOKED')).toEqual({ kind: 'failed', statusCode: 9000, detail: 'account_revoked' });
    expect(f(400, 'INSTITUTION_ERROR', 'INSTITUTION_NOT_SUPPORTED')).toEqual({ kind: 'failed', statusCode: 3300, detail: null });
    expect(f(400, 'INVALID_INPUT', 'INVALID_API_KEYS')).toEqual({ kind: 'failed', statusCode: 9000, detail: 'connection_refused' });
    expect(f(400, 'INVALID_REQUEST', 'SOMETHING_NEW')).toEqual({ kind: 'failed', statusCode: 9000, detail: null });
  });
});

describe('Stripe Financial Connections: the service’s requests are the SDK’s', () => {
  const key = 'rk_test_contractfc000000000000001';
  stripe.control.addFcAccount(key, { id: 'fca_1Contract0001', available: 555_00, current: 600_00 });

  test('retrieve then refresh with features[]=balance, as the SDK sends them; the SDK reads the fake’s account', async () => {
    const sdk = new Stripe(key, {
      apiVersion: STRIPE_API_VERSION,
      maxNetworkRetries: 0,
      telemetry: false,
      host: '127.0.0.1',
      port: new URL(stripe.url).port,
      protocol: 'http',
    });
    const before = stripe.requests.length;
    await sdk.financialConnections.accounts.retrieve('fca_1Contract0001');
    const refreshed = await sdk.financialConnections.accounts.refresh('fca_1Contract0001', { features: ['balance'] });
    expect(refreshed.balance_refresh?.status).toBe('succeeded');
    expect(refreshed.balance?.cash?.available?.usd).toBe(555_00);
    const bySdk = stripe.requests.slice(before);

    // Long enough after that refresh that it is no longer fresh: the service asks for a new one.
    const later = Date.now() + 60 * 60_000;
    const read = await new StripeFcSource({ apiUrl: stripe.url }).read({ provider: 'stripe', apiKey: key }, { provider: 'stripe', account: 'fca_1Contract0001' }, later);
    expect(read).toMatchObject({ kind: 'balance', balanceCents: 555_00, balanceKind: 'available' });
    const byService = stripe.requests.slice(before + bySdk.length);
    expect(byService.map((r) => [r.method, r.path, r.params, r.stripeVersion])).toEqual(bySdk.map((r) => [r.method, r.path, r.params, r.stripeVersion]));
  });

  test('how an account reads: relink, no permission, pending, next_refresh_available_at', () => {
    const now = Date.UTC(2026, 10, 21, 12);
    const s = Math.floor(now / 1000);
    const base = {
      id: 'fca_x',
      status: 'active',
      permissions: ['balances'],
      balance: { as_of: s - 30, type: 'cash', cash: { available: { usd: 100 } }, current: { usd: 120 } },
      balance_refresh: { status: 'succeeded', last_attempted_at: s - 30, next_refresh_available_at: null },
    } as unknown as Stripe.FinancialConnections.Account;
    expect(accountResult({ ...base, status: 'inactive' }, now, false)).toEqual({ kind: 'failed', statusCode: 9000, detail: RELINK_REQUIRED });
    expect(accountResult({ ...base, status: 'disconnected' }, now, false)).toEqual({ kind: 'failed', statusCode: 9000, detail: RELINK_REQUIRED });
    expect(accountResult({ ...base, permissions: ['payment_method'] }, now, false)).toMatchObject({ kind: 'failed', statusCode: 3300 });
    expect(accountResult(base, now, false)).toEqual({ kind: 'balance', balanceCents: 100, balanceKind: 'available', asOf: (s - 30) * 1000, health: { health: 'ok', expiresAt: null } });
    const pending = { ...base, balance_refresh: { status: 'pending', last_attempted_at: s, next_refresh_available_at: null } } as Stripe.FinancialConnections.Account;
    expect(accountResult(pending, now, false)).toEqual({ kind: 'pending', retryAt: now + REFRESH_POLL_MS });
    // Stale, and Stripe allows no refresh for ten more minutes: a failed one waits until then.
    const stale = { ...base, balance_refresh: { status: 'failed', last_attempted_at: s - 3600, next_refresh_available_at: s + 600 } } as Stripe.FinancialConnections.Account;
    expect(accountResult(stale, now, false)).toEqual({ kind: 'pending', retryAt: (s + 600) * 1000 });
    // ... a succeeded one answers its balance with its own time.
    const staleOk = { ...base, balance_refresh: { status: 'succeeded', last_attempted_at: s - 3600, next_refresh_available_at: s + 600 } } as Stripe.FinancialConnections.Account;
    expect(accountResult(staleOk, now, false)).toMatchObject({ kind: 'balance', asOf: (s - 30) * 1000 });
    // Stale with a refresh allowed: null, the caller asks for one.
    expect(accountResult({ ...base, balance_refresh: { status: 'succeeded', last_attempted_at: s - 3600, next_refresh_available_at: null } } as Stripe.FinancialConnections.Account, now, false)).toBeNull();
    const currentOnly = { ...base, balance: { ...base.balance!, cash: { available: null } } } as Stripe.FinancialConnections.Account;
    expect(accountResult(currentOnly, now, false)).toMatchObject({ kind: 'balance', balanceCents: 120, balanceKind: 'current' });
  });
});
