// A stateful fake of the part of Plaid the service uses, on 127.0.0.1: `/institutions/get` (to check a
// client_id and secret), `/accounts/balance/get` and `/transactions/get` (an account's transactions from a pay
// pattern, Plaid's sign: positive money out, negative money in; paged by count and offset). Its handlers take and answer the `plaid` package's own
// request and response types, so a shape the SDK would not send or could not read fails to compile. It checks
// client_id and secret in the body as Plaid does, answers errors in Plaid's error object, and gives tests a
// control surface: Items and their accounts, an Item needing login again, rate limits, outages, latency.
import {
  AccountType,
  CountryCode,
  ItemUpdateTypeEnum,
  ItemWithConsentFieldsUpdateTypeEnum,
  PlaidErrorType,
  Products,
  type AccountBase,
  type AccountsBalanceGetRequest,
  type AccountsGetRequest,
  type AccountsGetResponse,
  type IdentityGetResponse,
  type ItemGetRequest,
  type ItemGetResponse,
  type InstitutionsGetRequest,
  type InstitutionsGetResponse,
  type PlaidError,
  type Transaction,
  type TransactionsGetRequest,
  type TransactionsGetResponse,
  type TransactionsSyncRequest,
  type TransactionsSyncResponse,
  TransactionsUpdateStatus,
  TransactionPaymentChannelEnum,
} from 'plaid';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey as JoseKey, type JWK } from 'jose';
import { patternTransactions, type PayPattern } from './pay-pattern';

export interface PlaidRecordedRequest {
  path: string;
  /** Body as sent, for checking its shape against the SDK's (the secret is in it: tests only). */
  body: Record<string, unknown>;
  headers: Record<string, string>;
  status: number;
}

export interface FakePlaidAccount {
  account_id: string;
  available: number | null;
  current: number | null;
  last_updated_datetime?: string | null;
  /** depository by default; a credit account's `current` is the amount owed. */
  type?: AccountType;
  /** The names /identity/get gives for each of its owners (one owner per entry); none when absent. */
  owners?: string[][];
}

export interface FakePlaid {
  url: string;
  stop(): void;
  requests: PlaidRecordedRequest[];
  /** The client_id and secret Plaid knows (any environment). */
  addClient(clientId: string, secret: string): void;
  /** An Item and its accounts, reachable with its access token. */
  addItem(accessToken: string, accounts: FakePlaidAccount[]): void;
  /** The Item answers this error until cleared (`ITEM_LOGIN_REQUIRED`, `NO_ACCOUNTS`…); the same token heals when cleared. */
  setItemError(accessToken: string, code: string | null, type?: PlaidErrorType): void;
  /**
   * The Item's Transactions product: billed (as an Item with transactions added here is), consented to only, or
   * neither (then /transactions/get would start it, billed monthly).
   */
  setTransactionsProduct(accessToken: string, state: 'billed' | 'consented' | 'none'): void;
  /** The Item's consent ends at this time (ISO 8601), as /item/get says; null: no end. */
  setConsentExpiration(accessToken: string, at: string | null): void;
  /** The next n balance reads answer this (a 429 RATE_LIMIT_EXCEEDED by default). */
  failNext(n: number, error?: { status: number; type: PlaidErrorType; code: string }): void;
  /** The account's transactions: a pay pattern's, 90 days back from its `until` (default today). */
  addTransactions(accessToken: string, accountId: string, pattern: PayPattern): void;
  /** The account's transactions never end: every page is full and the total always one page more. */
  setEndlessTransactions(accessToken: string, accountId: string): void;
  /**
   * Where the Item's transactions stand (/transactions/sync's transactions_update_status): NOT_READY (none
   * yet), INITIAL_UPDATE_COMPLETE (only the last 30 days), HISTORICAL_UPDATE_COMPLETE (all; the default).
   */
  setSyncStatus(accessToken: string, status: TransactionsUpdateStatus): void;
  /** The next n transaction requests answer this (a 500 API_ERROR by default). */
  failNextTransactions(n: number, error?: { status: number; type: PlaidErrorType; code: string }): void;
  /** Every answer waits this long first; with `maxMs`, a time drawn between the two for each answer. */
  setLatency(ms: number, maxMs?: number): void;
  /** An Item's balance answers wait this long (in place of the latency above). */
  setItemLatency(accessToken: string, ms: number | null): void;
  /**
   * Plaid's ACCOUNTS_BALANCE_GET_LIMIT: at most `perWindow` balance calls per Item in any `windowMs` (by `now`, the
   * real clock unless a test's is given); one more is answered 429 RATE_LIMIT_EXCEEDED. null lifts it.
   */
  setItemRateLimit(perWindow: number | null, windowMs?: number, now?: () => number): void;
  /** Balance calls of the Item made elsewhere (the lender's own), counted in its window now. */
  spendItemCalls(accessToken: string, n: number): void;
  /** Every Item's first balance call finds `n` calls made elsewhere just before it (its minute spent by the lender's own). */
  spendBeforeFirstCall(n: number): void;
  /** Balance calls of the Item answered 429 for its rate limit. */
  rateRefusals(accessToken: string): number;
  /**
   * A webhook as Plaid sends it: the raw body and its Plaid-Verification token, signed with the fake's ES256 key
   * (whose public half /webhook_verification_key/get gives). `iat` (seconds) is now unless given; `signedBody` signs
   * another body than the one sent (a forgery); `alg` other than ES256 is signed with HS256.
   */
  signWebhook(body: Record<string, unknown>, opts?: { iat?: number; signedBody?: string; alg?: 'ES256' | 'HS256' }): Promise<{ raw: string; token: string }>;
  /** Plaid retires the webhook key: /webhook_verification_key/get gives its expired_at. */
  expireWebhookKey(): void;
  /** Balance reads in flight now, and the most seen at once (per client_id). */
  inFlight(clientId: string): { now: number; max: number };
}

/** The institution every fake Item is at (Plaid's own sandbox bank). */
export const SANDBOX_INSTITUTION = { id: 'ins_109508', name: 'First Platypus Bank' };

const err = (type: PlaidErrorType, code: string, message: string, status: number): PlaidError => ({
  error_type: type,
  error_code: code,
  error_message: message,
  display_message: null,
  request_id: crypto.randomUUID(),
  status,
});

/** The answer to an access token Plaid does not know. */
const unknownToken = () => ({ status: 400, body: err(PlaidErrorType.InvalidInput, 'INVALID_ACCESS_TOKEN', 'provided access token is in an invalid format', 400) });
/** The answer of an Item set to fail (setItemError). */
const itemFailing = (e: { code: string; type: PlaidErrorType }) => ({ status: 400, body: err(e.type, e.code, `the Item answers ${e.code}`, 400) });

function account(a: FakePlaidAccount): AccountBase {
  return {
    account_id: a.account_id,
    balances: {
      available: a.available,
      current: a.current,
      limit: null,
      iso_currency_code: 'USD',
      unofficial_currency_code: null,
      last_updated_datetime: a.last_updated_datetime ?? null,
    },
    mask: a.account_id.slice(-4),
    name: 'Checking',
    official_name: null,
    type: a.type ?? AccountType.Depository,
    subtype: null,
  };
}

export function startFakePlaid(): FakePlaid {
  const clients = new Map<string, string>();
  const items = new Map<string, { accounts: FakePlaidAccount[]; error: { code: string; type: PlaidErrorType } | null; consentEnds: string | null }>();
  const requests: PlaidRecordedRequest[] = [];
  let failing: { left: number; error: { status: number; type: PlaidErrorType; code: string } } = {
    left: 0,
    error: { status: 429, type: PlaidErrorType.RateLimitExceeded, code: 'ACCOUNTS_BALANCE_GET_LIMIT' },
  };
  let failingTx: { left: number; error: { status: number; type: PlaidErrorType; code: string } } = {
    left: 0,
    error: { status: 500, type: PlaidErrorType.ApiError, code: 'INTERNAL_SERVER_ERROR' },
  };
  /** Where each Item's transactions stand (by access token); complete when not set. */
  const syncStatus = new Map<string, TransactionsUpdateStatus>();
  /** The Transactions product of an Item (by access token): billed once transactions are added for it. */
  const txProduct = new Map<string, 'billed' | 'consented' | 'none'>();
  /** Transactions per `${access_token}\n${account_id}`, or 'endless'. */
  const histories = new Map<string, Transaction[] | 'endless'>();
  let latency = 0;
  const KID = 'fake-webhook-key-1';
  let signing: Promise<{ privateKey: JoseKey; jwk: JWK }> | null = null;
  let keyExpiredAt: number | null = null;
  const signingKey = () =>
    (signing ??= generateKeyPair('ES256', { extractable: true }).then(async (pair) => ({ privateKey: pair.privateKey, jwk: await exportJWK(pair.publicKey) })));
  let latencyMax = 0;
  const itemLatency = new Map<string, number>();
  let rateLimit: { perWindow: number; windowMs: number; now: () => number } | null = null;
  const itemCalls = new Map<string, number[]>();
  const refusals = new Map<string, number>();
  let spentBeforeFirst = 0;
  const called = new Set<string>();
  /** The Item's calls in its window, counted now: false when one more is over the limit. */
  const withinLimit = (token: string, spend = 1): boolean => {
    if (!rateLimit) return true;
    const now = rateLimit.now();
    const calls = (itemCalls.get(token) ?? []).filter((t) => t > now - rateLimit!.windowMs);
    itemCalls.set(token, calls);
    if (calls.length + spend > rateLimit.perWindow) return false;
    for (let i = 0; i < spend; i++) calls.push(now);
    return true;
  };
  const flight = new Map<string, { now: number; max: number }>();

  const answer = (rec: PlaidRecordedRequest, status: number, body: unknown) => {
    rec.status = status;
    return Response.json(body, { status });
  };

  function authenticate(b: { client_id?: string; secret?: string }): PlaidError | null {
    if (!b.client_id || !b.secret) return err(PlaidErrorType.InvalidRequest, 'MISSING_FIELDS', 'client_id and secret are required in the body', 400);
    if (clients.get(b.client_id) !== b.secret) return err(PlaidErrorType.InvalidInput, 'INVALID_API_KEYS', 'invalid client_id or secret provided', 400);
    return null;
  }

  function institutions(b: InstitutionsGetRequest): { status: number; body: InstitutionsGetResponse | PlaidError } {
    const refused = authenticate(b);
    if (refused) return { status: 400, body: refused };
    if (typeof b.count !== 'number' || typeof b.offset !== 'number' || !Array.isArray(b.country_codes)) {
      return { status: 400, body: err(PlaidErrorType.InvalidRequest, 'MISSING_FIELDS', 'count, offset and country_codes are required', 400) };
    }
    return {
      status: 200,
      body: {
        institutions: [{ institution_id: 'ins_109508', name: 'First Platypus Bank', products: [Products.Balance], country_codes: [CountryCode.Us], routing_numbers: ['011000138'], oauth: false }],
        total: 1,
        request_id: crypto.randomUUID(),
      },
    };
  }

  function balance(b: AccountsBalanceGetRequest): { status: number; body: AccountsGetResponse | PlaidError } {
    const refused = authenticate(b);
    if (refused) return { status: 400, body: refused };
    if (failing.left > 0) {
      failing.left--;
      const e = failing.error;
      return { status: e.status, body: err(e.type, e.code, 'the fake was told to fail this request', e.status) };
    }
    const item = items.get(b.access_token);
    if (!item) return unknownToken();
    if (spentBeforeFirst > 0 && !called.has(b.access_token)) withinLimit(b.access_token, spentBeforeFirst);
    called.add(b.access_token);
    if (!withinLimit(b.access_token)) {
      refusals.set(b.access_token, (refusals.get(b.access_token) ?? 0) + 1);
      return { status: 429, body: err(PlaidErrorType.RateLimitExceeded, 'ACCOUNTS_BALANCE_GET_LIMIT', 'rate limit exceeded for attempts to access this item', 429) };
    }
    if (item.error) return itemFailing(item.error);
    const wanted = b.options?.account_ids;
    const accounts = item.accounts.filter((a) => !wanted || wanted.includes(a.account_id));
    if (wanted && accounts.length < wanted.length) {
      return { status: 400, body: err(PlaidErrorType.InvalidInput, 'INVALID_ACCOUNT_ID', 'one or more of the account IDs is invalid', 400) };
    }
    return {
      status: 200,
      body: {
        accounts: accounts.map(account),
        item: {
          item_id: `item_${b.access_token.slice(-8)}`,
          institution_id: SANDBOX_INSTITUTION.id,
          institution_name: SANDBOX_INSTITUTION.name,
          webhook: null,
          error: null,
          available_products: [],
          billed_products: [Products.Auth],
          consent_expiration_time: null,
          update_type: ItemUpdateTypeEnum.Background,
        },
        request_id: crypto.randomUUID(),
      },
    };
  }

  const itemOf = (token: string, error: PlaidError | null, billed: Products[], consentEnds: string | null) => ({
    item_id: `item_${token.slice(-8)}`,
    institution_id: SANDBOX_INSTITUTION.id,
    institution_name: SANDBOX_INSTITUTION.name,
    webhook: null,
    error,
    available_products: [],
    billed_products: billed,
    consent_expiration_time: consentEnds,
    update_type: ItemUpdateTypeEnum.Background,
  });

  /** /item/get: free; the Item's error (an answer of 200 that carries it) and its consent's end. */
  function itemGet(b: ItemGetRequest): { status: number; body: ItemGetResponse | PlaidError } {
    const refused = authenticate(b);
    if (refused) return { status: 400, body: refused };
    const item = items.get(b.access_token);
    if (!item) return unknownToken();
    const error = item.error ? itemFailing(item.error).body : null;
    const tx = txProduct.get(b.access_token) ?? 'none';
    const billed = tx === 'billed' ? [Products.Auth, Products.Transactions] : [Products.Auth];
    const consented = tx === 'none' ? [Products.Auth] : [Products.Auth, Products.Transactions];
    const body: ItemGetResponse = {
      item: { ...itemOf(b.access_token, error, billed, item.consentEnds), consented_products: consented, update_type: ItemWithConsentFieldsUpdateTypeEnum.Background },
      request_id: crypto.randomUUID(),
    };
    return { status: 200, body };
  }

  /** /accounts/get: free; the Item's accounts without a live balance, or its error. */
  function accountsGet(b: AccountsGetRequest): { status: number; body: AccountsGetResponse | PlaidError } {
    const refused = authenticate(b);
    if (refused) return { status: 400, body: refused };
    const item = items.get(b.access_token);
    if (!item) return unknownToken();
    if (item.error) return itemFailing(item.error);
    const wanted = b.options?.account_ids;
    const accounts = item.accounts.filter((a) => !wanted || wanted.includes(a.account_id));
    return { status: 200, body: { accounts: accounts.map(account), item: itemOf(b.access_token, null, [Products.Auth], item.consentEnds), request_id: crypto.randomUUID() } };
  }

  /** /identity/get: the accounts with their owners' names (the Identity product). */
  function identityGet(b: AccountsGetRequest): { status: number; body: IdentityGetResponse | PlaidError } {
    const refused = authenticate(b);
    if (refused) return { status: 400, body: refused };
    const item = items.get(b.access_token);
    if (!item) return unknownToken();
    if (item.error) return itemFailing(item.error);
    const wanted = b.options?.account_ids;
    const accounts = item.accounts.filter((a) => !wanted || wanted.includes(a.account_id));
    const owners = (a: FakePlaidAccount) => (a.owners ?? []).map((names) => ({ names, addresses: [], emails: [], phone_numbers: [] }));
    return { status: 200, body: { accounts: accounts.map((a) => ({ ...account(a), owners: owners(a) }) as IdentityGetResponse['accounts'][number]), item: itemOf(b.access_token, null, [Products.Identity], item.consentEnds), request_id: crypto.randomUUID() } };
  }

  function transaction(accountId: string, i: number, date: string, amountCents: number, name: string): Transaction {
    return {
      account_id: accountId,
      // Plaid's sign: money out of the account is positive.
      amount: -amountCents / 100,
      iso_currency_code: 'USD',
      unofficial_currency_code: null,
      date,
      location: { address: null, city: null, region: null, postal_code: null, country: null, lat: null, lon: null, store_number: null },
      name,
      payment_meta: { reference_number: null, ppd_id: null, payee: null, by_order_of: null, payer: null, payment_method: null, payment_processor: null, reason: null },
      pending: false,
      pending_transaction_id: null,
      account_owner: null,
      transaction_id: `tx_${accountId}_${i}`,
      authorized_date: null,
      authorized_datetime: null,
      datetime: null,
      payment_channel: TransactionPaymentChannelEnum.Other,
      transaction_code: null,
    };
  }

  /**
   * /transactions/sync from a cursor the fake made ("c" and an offset into the account's transactions, newest
   * first): `count` at a time, has_more until the last page (never ending for an endless account).
   */
  function sync(b: TransactionsSyncRequest): { status: number; body: TransactionsSyncResponse | PlaidError } {
    const refused = authenticate(b);
    if (refused) return { status: 400, body: refused };
    if (failingTx.left > 0) {
      failingTx.left--;
      const e = failingTx.error;
      return { status: e.status, body: err(e.type, e.code, 'the fake was told to fail this request', e.status) };
    }
    const item = items.get(b.access_token);
    if (!item) return unknownToken();
    if (item.error) return itemFailing(item.error);
    const count = b.count ?? 100;
    if (count < 1 || count > 500) return { status: 400, body: err(PlaidErrorType.InvalidRequest, 'INVALID_FIELD', 'count must be 1 to 500', 400) };
    const offset = b.cursor ? Number(/^c(\d+)$/.exec(b.cursor)?.[1] ?? NaN) : 0;
    if (!Number.isInteger(offset)) return { status: 400, body: err(PlaidErrorType.InvalidInput, 'INVALID_FIELD', 'cursor is not one this Item gave', 400) };
    const status = syncStatus.get(b.access_token) ?? TransactionsUpdateStatus.HistoricalUpdateComplete;
    const ids = b.options?.account_id ? [b.options.account_id] : item.accounts.map((a) => a.account_id);
    let all: Transaction[] = [];
    let endless = false;
    for (const id of ids) {
      const h = histories.get(`${b.access_token}\n${id}`);
      if (h === 'endless') {
        endless = true;
        all = Array.from({ length: offset + count }, (_, i) => transaction(id, i, new Date().toISOString().slice(0, 10), -1_00, 'COFFEE'));
        break;
      }
      all.push(...(h ?? []));
    }
    all.sort((x, y) => y.date.localeCompare(x.date));
    if (status === TransactionsUpdateStatus.NotReady) all = [];
    if (status === TransactionsUpdateStatus.InitialUpdateComplete && all.length > 0) {
      // The first pull: about the last 30 days of the newest transaction.
      const from = new Date(Date.parse(`${all[0]!.date}T00:00:00Z`) - 30 * 86_400_000).toISOString().slice(0, 10);
      all = all.filter((t) => t.date >= from);
    }
    const page = all.slice(offset, offset + count);
    const next = offset + page.length;
    return {
      status: 200,
      body: {
        transactions_update_status: status,
        accounts: item.accounts.filter((a) => ids.includes(a.account_id)).map(account),
        added: page,
        modified: [],
        removed: [],
        next_cursor: `c${next}`,
        has_more: endless || next < all.length,
        request_id: crypto.randomUUID(),
      },
    };
  }

  function transactions(b: TransactionsGetRequest): { status: number; body: TransactionsGetResponse | PlaidError } {
    const refused = authenticate(b);
    if (refused) return { status: 400, body: refused };
    if (failingTx.left > 0) {
      failingTx.left--;
      const e = failingTx.error;
      return { status: e.status, body: err(e.type, e.code, 'the fake was told to fail this request', e.status) };
    }
    if (!/^\d{4}-\d{2}-\d{2}$/.test(b.start_date ?? '') || !/^\d{4}-\d{2}-\d{2}$/.test(b.end_date ?? '') || b.start_date > b.end_date) {
      return { status: 400, body: err(PlaidErrorType.InvalidRequest, 'INVALID_FIELD', 'start_date and end_date must be YYYY-MM-DD, start first', 400) };
    }
    const item = items.get(b.access_token);
    if (!item) return unknownToken();
    if (item.error) return itemFailing(item.error);
    const count = b.options?.count ?? 100;
    const offset = b.options?.offset ?? 0;
    if (count < 1 || count > 500 || offset < 0) return { status: 400, body: err(PlaidErrorType.InvalidRequest, 'INVALID_FIELD', 'count must be 1 to 500, offset 0 or more', 400) };
    const wanted = b.options?.account_ids ?? item.accounts.map((a) => a.account_id);
    let all: Transaction[] = [];
    let total = 0;
    for (const id of wanted) {
      const h = histories.get(`${b.access_token}\n${id}`);
      if (h === 'endless') {
        all = Array.from({ length: offset + count }, (_, i) => transaction(id, i, b.end_date, -1_00, 'COFFEE'));
        total = offset + 2 * count;
        break;
      }
      all.push(...(h ?? []).filter((t) => t.date >= b.start_date && t.date <= b.end_date));
      total = all.length;
    }
    // Newest first, as Plaid lists them.
    all.sort((x, y) => y.date.localeCompare(x.date));
    return {
      status: 200,
      body: {
        accounts: item.accounts.filter((a) => wanted.includes(a.account_id)).map(account),
        transactions: all.slice(offset, offset + count),
        total_transactions: total,
        item: {
          item_id: `item_${b.access_token.slice(-8)}`,
          institution_id: SANDBOX_INSTITUTION.id,
          institution_name: SANDBOX_INSTITUTION.name,
          webhook: null,
          error: null,
          available_products: [],
          billed_products: [Products.Transactions],
          consent_expiration_time: null,
          update_type: ItemUpdateTypeEnum.Background,
        },
        request_id: crypto.randomUUID(),
      },
    };
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      let body: Record<string, unknown> = {};
      try {
        body = (await req.json()) as Record<string, unknown>;
      } catch {
        /* answered below */
      }
      const rec: PlaidRecordedRequest = { path, body, headers: Object.fromEntries(req.headers), status: 0 };
      requests.push(rec);
      if (req.method !== 'POST') return answer(rec, 405, err(PlaidErrorType.InvalidRequest, 'INVALID_HTTP_METHOD', 'use POST', 405));
      const clientId = typeof body.client_id === 'string' ? body.client_id : '';
      const f = flight.get(clientId) ?? { now: 0, max: 0 };
      flight.set(clientId, f);
      f.now++;
      f.max = Math.max(f.max, f.now);
      try {
        const own = path === '/accounts/balance/get' && typeof body.access_token === 'string' ? itemLatency.get(body.access_token) : undefined;
        const wait = own ?? (latencyMax > latency ? latency + Math.random() * (latencyMax - latency) : latency);
        if (wait > 0) await Bun.sleep(wait);
        if (path === '/institutions/get') {
          const r = institutions(body as unknown as InstitutionsGetRequest);
          return answer(rec, r.status, r.body);
        }
        if (path === '/transactions/sync') {
          const r = sync(body as unknown as TransactionsSyncRequest);
          return answer(rec, r.status, r.body);
        }
        if (path === '/transactions/get') {
          const r = transactions(body as unknown as TransactionsGetRequest);
          return answer(rec, r.status, r.body);
        }
        if (path === '/webhook_verification_key/get') {
          const refused = authenticate(body as { client_id?: string; secret?: string });
          if (refused) return answer(rec, 400, refused);
          if (body.key_id !== KID) return answer(rec, 400, err(PlaidErrorType.InvalidInput, 'INVALID_WEBHOOK_VERIFICATION_KEY_ID', 'no such key', 400));
          const { jwk } = await signingKey();
          return answer(rec, 200, { key: { ...jwk, alg: 'ES256', use: 'sig', kid: KID, created_at: 1_700_000_000, expired_at: keyExpiredAt }, request_id: crypto.randomUUID() });
        }
        if (path === '/item/get') {
          const r = itemGet(body as unknown as ItemGetRequest);
          return answer(rec, r.status, r.body);
        }
        if (path === '/accounts/get') {
          const r = accountsGet(body as unknown as AccountsGetRequest);
          return answer(rec, r.status, r.body);
        }
        if (path === '/identity/get') {
          const r = identityGet(body as unknown as AccountsGetRequest);
          return answer(rec, r.status, r.body);
        }
        if (path === '/accounts/balance/get') {
          const r = balance(body as unknown as AccountsBalanceGetRequest);
          return answer(rec, r.status, r.body);
        }
        return answer(rec, 404, err(PlaidErrorType.InvalidRequest, 'UNKNOWN_ENDPOINT', `no such endpoint ${path}`, 404));
      } finally {
        f.now--;
      }
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    stop: () => server.stop(true),
    requests,
    addClient: (id, secret) => void clients.set(id, secret),
    addItem: (token, accounts) => void items.set(token, { accounts, error: null, consentEnds: null }),
    setConsentExpiration: (token, at) => {
      const item = items.get(token);
      if (!item) throw new Error(`fake Plaid: no Item ${token}`);
      item.consentEnds = at;
    },
    setItemError: (token, code, type = PlaidErrorType.ItemError) => {
      const item = items.get(token);
      if (!item) throw new Error(`fake Plaid: no Item ${token}`);
      item.error = code === null ? null : { code, type };
    },
    setTransactionsProduct: (token, state) => void txProduct.set(token, state),
    setSyncStatus: (token, status) => void syncStatus.set(token, status),
    addTransactions: (token, accountId, pattern) => {
      txProduct.set(token, 'billed');
      histories.set(`${token}\n${accountId}`, patternTransactions(pattern).map((t, i) => transaction(accountId, i, t.date, t.amountCents, t.name)));
    },
    setEndlessTransactions: (token, accountId) => {
      txProduct.set(token, 'billed');
      histories.set(`${token}\n${accountId}`, 'endless');
    },
    failNextTransactions: (n, error) => {
      failingTx = { left: n, error: error ?? failingTx.error };
    },
    failNext: (n, error) => {
      failing = { left: n, error: error ?? failing.error };
    },
    setLatency: (ms, maxMs) => {
      latency = ms;
      latencyMax = maxMs ?? ms;
    },
    setItemLatency: (token, ms) => void (ms === null ? itemLatency.delete(token) : itemLatency.set(token, ms)),
    setItemRateLimit: (perWindow, windowMs = 60_000, now = Date.now) => {
      rateLimit = perWindow === null ? null : { perWindow, windowMs, now };
    },
    spendItemCalls: (token, n) => void withinLimit(token, n),
    rateRefusals: (token) => refusals.get(token) ?? 0,
    spendBeforeFirstCall: (n) => {
      spentBeforeFirst = n;
    },
    inFlight: (clientId) => ({ ...(flight.get(clientId) ?? { now: 0, max: 0 }) }),
    signWebhook: async (body, opts = {}) => {
      const raw = JSON.stringify(body);
      const sha = new Bun.CryptoHasher('sha256').update(opts.signedBody ?? raw).digest('hex');
      const iat = opts.iat ?? Math.floor(Date.now() / 1000);
      const claims = new SignJWT({ request_body_sha256: sha }).setIssuedAt(iat);
      if (opts.alg === 'HS256') return { raw, token: await claims.setProtectedHeader({ alg: 'HS256', kid: KID }).sign(new TextEncoder().encode('a shared secret of 32 bytes ok!!')) };
      return { raw, token: await claims.setProtectedHeader({ alg: 'ES256', kid: KID }).sign((await signingKey()).privateKey) };
    },
    expireWebhookKey: () => {
      keyExpiredAt = Math.floor(Date.now() / 1000);
    },
  };
}
