import type { PlaidEnvironment } from '../../../db/schema/enums';
import { dollarsToCentsRounded } from '../../platform/money';
import { observed, type CallObserver } from '../../platform/provider-calls';
import { ACCOUNT_CLOSED, ACCOUNT_REVOKED, NOT_A_CASH_ACCOUNT, CredentialsRefused, institutionName, RELINK_REQUIRED, SourceUnavailable, type BankLink, type LinkCredentials, type LinkedReadResult, type LinkedSource, type LinkProbe, type OwnersResult, type PlaidWebhookKey, OWNERS_MAX, ownerNames } from './linked';
import { TransientProviderError, OTHER_ERROR_CODE, HISTORY_MAX_PAGES, boundedCredits, dayOfIso, isoDay, type HistoryCredit, type HistoryResult, type HistoryWindow } from './types';
import { IMPLAUSIBLE_BALANCE } from './plausible';
import { AnswerTooLarge, ANSWER_LIMIT_BYTES, ANSWER_TOO_LARGE, boundedText, PAGE_LIMIT_BYTES } from '../bounded-body';
import { PLAID_RATE_WINDOW_MS, PlaidItemBudget, plaidTimeoutMs } from './plaid-budget';

// Plaid Balance over plain HTTP: the request bodies are the ones the official `plaid` SDK sends
// (client_id and secret in the body, never in a header, a URL or a log line), the answers are read as its
// types describe them. PLAID_API_URL replaces Plaid's address for every environment (a fake in tests).

const HOSTS: Record<PlaidEnvironment, string> = {
  sandbox: 'https://sandbox.plaid.com',
  production: 'https://production.plaid.com',
};
/** Plaid's version header, as the SDK release the requests follow sends it. */
export const PLAID_VERSION = '2020-09-14';

/**
 * Error codes meaning the borrower must sign in at Link again before the Item can be read. INVALID_ACCOUNT_ID is
 * "the account id is no longer valid" (a new one can appear once the borrower picks accounts again), not closed.
 */
const RELINK_CODES = new Set(['ITEM_LOGIN_REQUIRED', 'ACCESS_NOT_GRANTED', 'ITEM_LOCKED', 'PENDING_DISCONNECT', 'INVALID_ACCOUNT_ID', 'ITEM_NOT_FOUND']);
/** The borrower revoked the account or the permission: "do not create new ACH transfers for the account". */
const REVOKED_CODES = new Set(['USER_ACCOUNT_REVOKED', 'USER_PERMISSION_REVOKED']);
/** The account is gone at the bank. */
const CLOSED_CODES = new Set(['NO_ACCOUNTS']);
/** How near its consent's end an Item is reported as expiring (Plaid's PENDING_EXPIRATION comes 7 days ahead). */
export const EXPIRING_WITHIN_MS = 7 * 86_400_000;
/** The institution offers no balance for the Item. */
const UNSUPPORTED_CODES = new Set(['INSTITUTION_NOT_SUPPORTED', 'PRODUCTS_NOT_SUPPORTED', 'INSTITUTION_NO_LONGER_SUPPORTED']);
/** Not now: rate limits, the institution or Plaid down, the product still being prepared. */
const TRANSIENT_CODES = new Set([
  'PRODUCT_NOT_READY',
  'INSTITUTION_DOWN',
  'INSTITUTION_NOT_RESPONDING',
  'INSTITUTION_NOT_AVAILABLE',
  'INSTITUTION_RATE_LIMIT',
  'INTERNAL_SERVER_ERROR',
  'PLANNED_MAINTENANCE',
]);

export interface PlaidErrorBody {
  error_type: string;
  error_code: string;
  error_message?: string;
}

function plaidError(body: unknown): PlaidErrorBody | null {
  if (typeof body !== 'object' || body === null) return null;
  const b = body as Record<string, unknown>;
  return typeof b.error_type === 'string' && typeof b.error_code === 'string' ? (b as unknown as PlaidErrorBody) : null;
}

/** How a Plaid error reads as a balance status (the table of "What each provider answer becomes" in docs/bank-data.md). */
export function plaidErrorResult(status: number, e: PlaidErrorBody | null, rateWindowMs = PLAID_RATE_WINDOW_MS): LinkedReadResult {
  // Plaid's documented rate limit: asked again in the next window, not an attempt spent (plaid-budget.ts).
  if (status === 429 || e?.error_type === 'RATE_LIMIT_EXCEEDED') {
    throw new TransientProviderError(`Plaid answered HTTP ${status}${e ? ` ${e.error_type}/${e.error_code}` : ''}`, { rateLimited: true, retryAfterMs: rateWindowMs });
  }
  if (e?.error_type === 'API_ERROR' || status >= 500 || (e && TRANSIENT_CODES.has(e.error_code))) {
    throw new TransientProviderError(`Plaid answered HTTP ${status}${e ? ` ${e.error_type}/${e.error_code}` : ''}`);
  }
  if (e && RELINK_CODES.has(e.error_code)) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: RELINK_REQUIRED };
  if (e && REVOKED_CODES.has(e.error_code)) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: ACCOUNT_REVOKED };
  if (e && CLOSED_CODES.has(e.error_code)) return { kind: 'failed', statusCode: 3200, detail: ACCOUNT_CLOSED };
  if (e && UNSUPPORTED_CODES.has(e.error_code)) return { kind: 'failed', statusCode: 3300, detail: null };
  if (e?.error_code === 'INVALID_API_KEYS') return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: 'connection_refused' };
  if (e?.error_code === 'INVALID_ACCESS_TOKEN') return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: 'invalid_link' };
  // The institution has no balance newer than min_last_updated_datetime: a stale balance, which decides nothing.
  if (e?.error_code === 'LAST_UPDATED_DATETIME_OUT_OF_RANGE') return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: 'stale_balance' };
  return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: null };
}

/** How old a cached balance Plaid may answer (min_last_updated_datetime): a day. */
export const MIN_LAST_UPDATED_MS = 24 * 3_600_000;

/** A Plaid Item whose Transactions product is neither billed nor consented to: no history is read (it would start billing). */
export const TRANSACTIONS_NOT_ENABLED = 'transactions_not_enabled';

/** Transactions per page of /transactions/sync (Plaid's largest). */
export const PLAID_PAGE_SIZE = 500;
/** Plaid is still pulling an Item's transactions (PRODUCT_NOT_READY): asked again after this. */
export const PLAID_NOT_READY_RETRY_MS = 60_000;

/** The fields of a Plaid transaction the history reads (the `Transaction` of the `plaid` package). */
interface PlaidTransaction {
  account_id?: unknown;
  amount?: unknown;
  date?: unknown;
  pending?: unknown;
}

/** Plaid's sign: positive is money out of the account, negative money in. The credits, posted only. */
export function plaidCredits(transactions: readonly PlaidTransaction[], accountId: string): HistoryCredit[] {
  const out: HistoryCredit[] = [];
  for (const t of transactions) {
    if (t.account_id !== accountId || t.pending === true || typeof t.amount !== 'number' || t.amount >= 0) continue;
    const at = dayOfIso(t.date);
    const cents = dollarsToCentsRounded(-t.amount);
    if (at !== null && cents !== null && cents > 0) out.push({ at, amountCents: cents });
  }
  return out;
}

export class PlaidSource implements LinkedSource<'plaid'> {
  readonly provider = 'plaid' as const;
  /** Balance calls per Item over the last minute, kept within Plaid's limit. */
  private readonly items: PlaidItemBudget;
  constructor(
    private readonly opts: {
      apiUrl?: string | null;
      /** One timeout for every call, in place of each call's own (plaid-budget.ts). */
      timeoutMs?: number;
      /** Told of every request as it leaves, by its path, and of how it ended. */
      onCall?: CallObserver;
      /** Multiplies the timeouts and Plaid's rate window (PROVIDER_TIME_SCALE; 1 in production). */
      timeScale?: number;
    } = {},
  ) {
    this.items = new PlaidItemBudget(PLAID_RATE_WINDOW_MS * (opts.timeScale ?? 1));
  }

  private url(env: PlaidEnvironment, path: string): string {
    return `${(this.opts.apiUrl ?? HOSTS[env]).replace(/\/+$/, '')}${path}`;
  }

  /** POST with the credentials in the body; the status and parsed body, or TransientProviderError when unreachable. */
  private async post(env: PlaidEnvironment, path: string, body: Record<string, unknown>): Promise<{ status: number; json: unknown; tooLarge?: true }> {
    let res: Response;
    try {
      res = await observed(this.opts.onCall, path, () =>
        fetch(this.url(env, path), {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'plaid-version': PLAID_VERSION },
          body: JSON.stringify(body),
          redirect: 'manual',
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? plaidTimeoutMs(path) * (this.opts.timeScale ?? 1)),
        }),
      );
    } catch (e) {
      // Only the error's name: a fetch error can carry the request, and the request carries the secret.
      throw new TransientProviderError(`Plaid could not be reached (${(e as Error)?.name ?? 'error'})`);
    }
    let json: unknown = null;
    try {
      json = JSON.parse(await boundedText(res, path === '/transactions/sync' ? PAGE_LIMIT_BYTES : ANSWER_LIMIT_BYTES));
    } catch (e) {
      // Past its bound the answer is not read at all: a failed call, whatever it held.
      if (e instanceof AnswerTooLarge) return { status: res.status, json: null, tooLarge: true };
      if (res.ok) throw new TransientProviderError(`Plaid answered HTTP ${res.status} with a body that is not JSON`);
    }
    return { status: res.status, json };
  }

  async verify(creds: Extract<LinkCredentials, { provider: 'plaid' }>): Promise<void> {
    let r: { status: number; json: unknown; tooLarge?: true };
    try {
      // The cheapest call Plaid authenticates without an Item: one institution.
      r = await this.post(creds.environment, '/institutions/get', {
        client_id: creds.clientId,
        secret: creds.secret,
        count: 1,
        offset: 0,
        country_codes: ['US'],
      });
    } catch {
      throw new SourceUnavailable('Plaid could not be reached');
    }
    if (r.tooLarge) throw new SourceUnavailable(`Plaid answered more than ${ANSWER_LIMIT_BYTES} bytes to a credential check`);
    if (r.status === 200) return;
    if (r.status === 429 || r.status >= 500) throw new SourceUnavailable(`Plaid answered HTTP ${r.status}`);
    throw new CredentialsRefused('Plaid refused this client_id and secret for the environment');
  }

  async read(creds: Extract<LinkCredentials, { provider: 'plaid' }>, link: Extract<BankLink, { provider: 'plaid' }>, now: number): Promise<LinkedReadResult> {
    // The Item's five balance calls a minute: a sixth is not made (thrown as rate-limited, with its time).
    this.items.take(link.accessToken, now);
    const r = await this.post(creds.environment, '/accounts/balance/get', {
      client_id: creds.clientId,
      secret: creds.secret,
      access_token: link.accessToken,
      // An institution that gives no real-time balance answers its cached one only when newer than this.
      options: { account_ids: [link.accountId], min_last_updated_datetime: new Date(now - MIN_LAST_UPDATED_MS).toISOString() },
    });
    if (r.tooLarge) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: ANSWER_TOO_LARGE };
    if (r.status !== 200) {
      const e = plaidError(r.json);
      if (r.status === 429 || e?.error_type === 'RATE_LIMIT_EXCEEDED') throw this.items.refused(link.accessToken, now);
      return plaidErrorResult(r.status, e);
    }
    const accounts = (r.json as { accounts?: unknown }).accounts;
    if (!Array.isArray(accounts)) throw new TransientProviderError('Plaid answered HTTP 200 without accounts');
    const account = accounts.find((a) => (a as { account_id?: unknown })?.account_id === link.accountId) as
      | { type?: unknown; balances?: { available?: unknown; current?: unknown; last_updated_datetime?: unknown } }
      | undefined;
    // The Item no longer has the account: closed at the bank.
    if (!account) return { kind: 'failed', statusCode: 3200, detail: ACCOUNT_CLOSED };
    // On a credit account `current` is the amount owed: only a depository account's balance is money to debit.
    if (typeof account.type === 'string' && account.type !== 'depository') return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: NOT_A_CASH_ACCOUNT };
    const b = account.balances ?? {};
    const kind = typeof b.available === 'number' ? 'available' : typeof b.current === 'number' ? 'current' : null;
    if (kind === null) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: 'no_balance' };
    const cents = dollarsToCentsRounded(kind === 'available' ? b.available : b.current);
    // Not whole cents a number holds exactly (past 2^53, not finite): no account holds it, and asking again will not change it.
    if (cents === null) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: IMPLAUSIBLE_BALANCE };
    const updated = typeof b.last_updated_datetime === 'string' ? Date.parse(b.last_updated_datetime) : NaN;
    // Balance is read live from the institution; Plaid gives a time only for some institutions.
    const item = (r.json as { item?: { item_id?: unknown; institution_name?: unknown } }).item;
    const itemId = item?.item_id;
    const institution = institutionName(item?.institution_name);
    return {
      kind: 'balance',
      balanceCents: cents,
      balanceKind: kind,
      asOf: Number.isFinite(updated) ? updated : now,
      ...(typeof itemId === 'string' && itemId.length <= 100 ? { itemId } : {}),
      ...(institution === undefined ? {} : { institution }),
    };
  }

  /**
   * The Item's health by /item/get (free: its error and its consent's end), then, when the Item is well, whether
   * it still has the account (/accounts/get, free too). Transient answers throw, as for a read.
   */
  async probe(creds: Extract<LinkCredentials, { provider: 'plaid' }>, link: Extract<BankLink, { provider: 'plaid' }>, now: number): Promise<LinkProbe> {
    const auth = { client_id: creds.clientId, secret: creds.secret, access_token: link.accessToken };
    const item = await this.post(creds.environment, '/item/get', auth);
    const failed = (r: { status: number; json: unknown; tooLarge?: true }): LinkProbe => {
      if (r.tooLarge) throw new TransientProviderError('Plaid answered more than a probe may');
      const result = plaidErrorResult(r.status, plaidError(r.json));
      return { health: (result.kind === 'failed' && healthOfPlaidDetail(result.detail)) || 'relink_required', expiresAt: null };
    };
    if (item.status !== 200 || item.tooLarge) return failed(item);
    const body = (item.json as { item?: { error?: unknown; consent_expiration_time?: unknown } } | null)?.item;
    if (!body || typeof body !== 'object') throw new TransientProviderError('Plaid answered HTTP 200 without an item');
    const itemError = plaidError(body.error);
    if (itemError) {
      const r = plaidErrorResult(400, itemError);
      const health = r.kind === 'failed' ? healthOfPlaidDetail(r.detail) : null;
      if (health) return { health, expiresAt: null };
    }
    const accounts = await this.post(creds.environment, '/accounts/get', { ...auth, options: { account_ids: [link.accountId] } });
    if (accounts.status !== 200 || accounts.tooLarge) return failed(accounts);
    const list = (accounts.json as { accounts?: unknown } | null)?.accounts;
    if (!Array.isArray(list)) throw new TransientProviderError('Plaid answered HTTP 200 without accounts');
    if (!list.some((a) => (a as { account_id?: unknown })?.account_id === link.accountId)) return { health: 'closed', expiresAt: null };
    const ends = typeof body.consent_expiration_time === 'string' ? Date.parse(body.consent_expiration_time) : NaN;
    if (Number.isFinite(ends) && ends - now <= EXPIRING_WITHIN_MS) return { health: 'expiring', expiresAt: ends };
    return { health: 'ok', expiresAt: null };
  }

  /** The account's owners by /identity/get (billed per Item by Plaid's Identity product): every name of each. */
  async owners(creds: Extract<LinkCredentials, { provider: 'plaid' }>, link: Extract<BankLink, { provider: 'plaid' }>): Promise<OwnersResult> {
    const r = await this.post(creds.environment, '/identity/get', { client_id: creds.clientId, secret: creds.secret, access_token: link.accessToken, options: { account_ids: [link.accountId] } });
    if (r.tooLarge) throw new TransientProviderError('Plaid answered more than an identity may');
    if (r.status !== 200) {
      const result = plaidErrorResult(r.status, plaidError(r.json));
      if (result.kind === 'failed') return result;
      throw new TransientProviderError(`Plaid answered HTTP ${r.status}`);
    }
    const accounts = (r.json as { accounts?: unknown } | null)?.accounts;
    if (!Array.isArray(accounts)) throw new TransientProviderError('Plaid answered HTTP 200 without accounts');
    const account = accounts.find((a) => (a as { account_id?: unknown })?.account_id === link.accountId) as { owners?: { names?: unknown }[] } | undefined;
    const owners = Array.isArray(account?.owners) ? account.owners.slice(0, OWNERS_MAX) : [];
    return { kind: 'owners', names: ownerNames(owners.flatMap((o) => (Array.isArray(o?.names) ? (o.names as unknown[]).slice(0, OWNERS_MAX) : []))) };
  }

  /**
   * The public key (a JWK) Plaid signs its webhooks with, by its key id (/webhook_verification_key/get), with
   * the time it expired when it has. Throws TransientProviderError when Plaid cannot say now.
   */
  async webhookKey(creds: Extract<LinkCredentials, { provider: 'plaid' }>, keyId: string): Promise<PlaidWebhookKey | null> {
    const r = await this.post(creds.environment, '/webhook_verification_key/get', { client_id: creds.clientId, secret: creds.secret, key_id: keyId });
    if (r.tooLarge) throw new TransientProviderError('Plaid answered more than a key may be');
    if (r.status === 429 || r.status >= 500) throw new TransientProviderError(`Plaid answered HTTP ${r.status}`);
    if (r.status !== 200) return null;
    const key = (r.json as { key?: Record<string, unknown> } | null)?.key;
    if (!key || key.kty !== 'EC' || key.crv !== 'P-256' || typeof key.x !== 'string' || typeof key.y !== 'string' || key.kid !== keyId) return null;
    return { kty: 'EC', crv: 'P-256', x: key.x, y: key.y, kid: keyId, expiredAt: typeof key.expired_at === 'number' ? key.expired_at * 1000 : null };
  }

  /**
   * The account's posted credits over the window from /transactions/sync, paged by its cursor, at most
   * HISTORY_MAX_PAGES pages (the bound is checked before each page is asked for).
   */
  async history(creds: Extract<LinkCredentials, { provider: 'plaid' }>, link: Extract<BankLink, { provider: 'plaid' }>, window: HistoryWindow, now: number): Promise<HistoryResult> {
    // A transactions call on an Item without Transactions starts that product, billed monthly per Item until
    // /item/remove: the Item is asked first (/item/get, free), and one with Transactions neither billed nor
    // consented to has no history read (its cycle is learned from balance reads).
    const item = await this.post(creds.environment, '/item/get', { client_id: creds.clientId, secret: creds.secret, access_token: link.accessToken });
    if (item.tooLarge) return { kind: 'none', detail: ANSWER_TOO_LARGE };
    if (item.status !== 200) {
      const failed = plaidErrorResult(item.status, plaidError(item.json));
      return { kind: 'none', detail: (failed.kind === 'failed' && failed.detail) || `http_${item.status}` };
    }
    const products = (item.json as { item?: { billed_products?: unknown; consented_products?: unknown } } | null)?.item;
    const has = (list: unknown) => Array.isArray(list) && list.includes('transactions');
    if (!has(products?.billed_products) && !has(products?.consented_products)) return { kind: 'none', detail: TRANSACTIONS_NOT_ENABLED };
    // /transactions/sync from the start (Plaid's recommended call; /transactions/get says nothing of how much
    // history it holds): its pages while has_more, at most HISTORY_MAX_PAGES, and transactions_update_status,
    // which says whether the history is the first ~30 days only (INITIAL_UPDATE_COMPLETE) or complete.
    const credits: HistoryCredit[] = [];
    let cursor: string | undefined;
    for (let page = 0; ; page++) {
      // Past the page bound the reading ends with what it has (asking again would read the same pages).
      if (page >= HISTORY_MAX_PAGES) return { kind: 'credits', credits: boundedCredits(credits), truncated: true };
      const r = await this.post(creds.environment, '/transactions/sync', {
        client_id: creds.clientId,
        secret: creds.secret,
        access_token: link.accessToken,
        count: PLAID_PAGE_SIZE,
        ...(cursor ? { cursor } : {}),
        options: { account_id: link.accountId, days_requested: Math.max(1, Math.ceil((window.to - window.from) / 86_400_000) + 1) },
      });
      if (r.tooLarge) return { kind: 'none', detail: ANSWER_TOO_LARGE };
      if (r.status !== 200) {
        const e = plaidError(r.json);
        if (e?.error_code === 'PRODUCT_NOT_READY') return { kind: 'pending', retryAt: now + PLAID_NOT_READY_RETRY_MS };
        // The Item changed while its pages were read: read again from the start, later.
        if (e?.error_code === 'TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION') throw new TransientProviderError('Plaid: transactions changed during the reading');
        const failed = plaidErrorResult(r.status, e, PLAID_RATE_WINDOW_MS * (this.opts.timeScale ?? 1));
        return { kind: 'none', detail: (failed.kind === 'failed' && failed.detail) || (e?.error_code ?? `http_${r.status}`).toLowerCase() };
      }
      const body = r.json as { added?: unknown; modified?: unknown; has_more?: unknown; next_cursor?: unknown; transactions_update_status?: unknown };
      if (!Array.isArray(body.added) || typeof body.has_more !== 'boolean' || typeof body.next_cursor !== 'string') {
        throw new TransientProviderError('Plaid answered HTTP 200 without transactions');
      }
      const status = body.transactions_update_status;
      // Nothing pulled from the institution yet: asked again later, not read as "no history".
      if (status === 'NOT_READY') return { kind: 'pending', retryAt: now + PLAID_NOT_READY_RETRY_MS };
      const inWindow = (t: PlaidTransaction) => typeof t.date === 'string' && t.date >= isoDay(window.from) && t.date <= isoDay(window.to);
      credits.push(...plaidCredits([...(body.added as PlaidTransaction[]), ...((Array.isArray(body.modified) ? body.modified : []) as PlaidTransaction[])].filter(inWindow), link.accountId));
      if (!body.has_more || body.next_cursor === cursor) {
        return { kind: 'credits', credits: boundedCredits(credits), truncated: false, complete: status === 'HISTORICAL_UPDATE_COMPLETE' };
      }
      cursor = body.next_cursor;
    }
  }
}

/** The link health a Plaid error's detail names, or null. */
function healthOfPlaidDetail(detail: string | null): LinkProbe['health'] | null {
  return detail === RELINK_REQUIRED ? 'relink_required' : detail === ACCOUNT_REVOKED ? 'revoked' : detail === ACCOUNT_CLOSED ? 'closed' : detail === 'invalid_link' ? 'relink_required' : null;
}
