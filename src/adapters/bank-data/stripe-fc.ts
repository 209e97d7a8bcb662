import Stripe from 'stripe';
import { StripeClients } from '../processors/stripe-clients';
import { ACCOUNT_CLOSED, NOT_A_CASH_ACCOUNT, CredentialsRefused, institutionName, RELINK_REQUIRED, SourceUnavailable, type BankLink, type LinkCredentials, type LinkedReadResult, type LinkedSource, type LinkProbe, type OwnersResult, OWNERS_MAX, ownerNames } from './linked';
import { HISTORY_MAX_PAGES, OTHER_ERROR_CODE, TransientProviderError, boundedCredits, type HistoryCredit, type HistoryResult, type HistoryWindow } from './types';
import type { CallObserver } from '../../platform/provider-calls';

// Stripe Financial Connections through the official SDK, with the lender's Stripe key: an fca_… account's
// balance, refreshed when the last one is not fresh. A refresh is asynchronous: while it is pending the read
// answers "come back" (the caller waits without holding a slot), and Stripe's next_refresh_available_at is
// never run ahead of. STRIPE_API_URL points the SDK elsewhere, as for payments.

/** A refresh attempted this recently is the balance's refresh: its answer is read, not asked for again. */
export const FRESH_REFRESH_MS = 15 * 60_000;
/** How long to wait before looking again at a refresh that is still pending. */
export const REFRESH_POLL_MS = 1_000;

type Account = Stripe.FinancialConnections.Account;

/** Transactions per page of the list (Stripe's largest). */
export const STRIPE_TX_PAGE_SIZE = 100;
/** A transaction refresh attempted this recently is read rather than asked for again. */
export const FRESH_TX_REFRESH_MS = 24 * 3_600_000;
/**
 * An account subscribed to transactions is refreshed by Stripe about daily: its last refresh is read if it is
 * no older than this, and only an older one is asked for again.
 */
export const FRESH_SUBSCRIBED_TX_MS = 48 * 3_600_000;

const transient = (e: unknown): boolean =>
  e instanceof Stripe.errors.StripeRateLimitError ||
  e instanceof Stripe.errors.StripeAPIError ||
  e instanceof Stripe.errors.StripeConnectionError ||
  (e instanceof Stripe.errors.StripeError && (e.statusCode ?? 0) >= 500);

/**
 * Stripe's rate limit (429) is its documented limit, not a failure: asked again with backoff, no attempt spent.
 * Any other outage is retried as one.
 */
const transientError = (e: unknown): TransientProviderError =>
  new TransientProviderError(`Stripe answered HTTP ${(e as Stripe.errors.StripeError).statusCode ?? 'no answer'}`, { rateLimited: e instanceof Stripe.errors.StripeRateLimitError });

/** What a read names when Stripe's answer is not a Financial Connections account. */
export const NOT_AN_ACCOUNT = 'not_an_account';
const isAccount = (a: unknown): a is Account => (a as { object?: unknown } | null)?.object === 'financial_connections.account';

/**
 * What Stripe says of an account's link: `disconnected`, or `inactive` for expired consent or changed
 * authentication, needs the borrower (relink); `inactive` because the account closed at the bank is closed; an
 * active account whose every tokenized account number is expired, deactivated or pending cannot be debited; an
 * active account with an expected deactivation date is expiring.
 */
export function healthOfAccount(a: Account): LinkProbe {
  if (a.status === 'disconnected') return { health: 'relink_required', expiresAt: null };
  if (a.status === 'inactive') {
    // The inactive details name the cause where the API version gives them (not in every SDK's types).
    const cause = (a.status_details as { inactive?: { cause?: unknown } } | undefined)?.inactive?.cause;
    return { health: typeof cause === 'string' && /closed/.test(cause) ? 'closed' : 'relink_required', expiresAt: null };
  }
  const numbers = a.account_numbers;
  if (Array.isArray(numbers) && numbers.length > 0 && !numbers.some((n) => n.status === 'transactable')) return { health: 'not_transactable', expiresAt: null };
  const ends = a.status_details?.active?.expected_deactivation_date;
  if (typeof ends === 'number' && Number.isFinite(ends)) return { health: 'expiring', expiresAt: ends * 1000 };
  return { health: 'ok', expiresAt: null };
}

/** A balance in the account's currency (USD), the available one when Stripe has it, with what Stripe says of the link. */
function balanceOf(a: Account): LinkedReadResult | null {
  const b = a.balance;
  if (!b) return null;
  const available = b.cash?.available?.usd;
  const current = b.current?.usd;
  const health = healthOfAccount(a);
  const institution = institutionName(a.institution_name);
  const named = institution === undefined ? {} : { institution };
  if (typeof available === 'number') return { kind: 'balance', balanceCents: Math.round(available), balanceKind: 'available', asOf: b.as_of * 1000, health, ...named };
  if (typeof current === 'number') return { kind: 'balance', balanceCents: Math.round(current), balanceKind: 'current', asOf: b.as_of * 1000, health, ...named };
  return null;
}

/** The read of an account as Stripe describes it, or null when a refresh must be asked for. */
export function accountResult(a: Account, now: number, refreshed: boolean): LinkedReadResult | null {
  const link = healthOfAccount(a);
  if (link.health === 'closed') return { kind: 'failed', statusCode: 3200, detail: ACCOUNT_CLOSED };
  if (link.health === 'relink_required') return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: RELINK_REQUIRED };
  if (a.permissions && !a.permissions.includes('balances')) return { kind: 'failed', statusCode: 3300, detail: 'balance_not_permitted' };
  // A credit card or line of credit's balance is what is owed, not money to debit: only a cash account is read.
  if (typeof a.category === 'string' && a.category !== 'cash') return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: NOT_A_CASH_ACCOUNT };
  const r = a.balance_refresh;
  if (r?.status === 'pending') return { kind: 'pending', retryAt: now + REFRESH_POLL_MS };
  const fresh = r !== null && r !== undefined && now - r.last_attempted_at * 1000 <= FRESH_REFRESH_MS;
  if (r?.status === 'succeeded' && (fresh || refreshed)) {
    return balanceOf(a) ?? { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: 'no_balance' };
  }
  if (r?.status === 'failed' && (fresh || refreshed)) {
    // The institution did not answer this refresh: an outage, retried like one.
    throw new TransientProviderError('Stripe could not refresh the account balance at the institution');
  }
  const nextAt = r?.next_refresh_available_at ? r.next_refresh_available_at * 1000 : null;
  if (nextAt !== null && nextAt > now) {
    // No refresh allowed yet: the last balance with its own time, or wait until one is.
    const last = r?.status === 'succeeded' ? balanceOf(a) : null;
    return last ?? { kind: 'pending', retryAt: nextAt };
  }
  return null;
}

/**
 * Where an account's transactions stand: `list` when the last transaction refresh can be read, `refresh`
 * when one must be asked for, or an answer already (pending, no history).
 */
export function transactionsState(a: Account, now: number, refreshed: boolean): HistoryResult | 'list' | 'refresh' {
  if (a.status === 'disconnected' || a.status === 'inactive') return { kind: 'none', detail: RELINK_REQUIRED };
  if (a.permissions && !a.permissions.includes('transactions')) return { kind: 'none', detail: 'transactions_not_permitted' };
  const r = a.transaction_refresh;
  if (r?.status === 'pending') return { kind: 'pending', retryAt: now + REFRESH_POLL_MS };
  const subscribed = Array.isArray(a.subscriptions) && a.subscriptions.includes('transactions');
  const fresh = r !== null && r !== undefined && now - r.last_attempted_at * 1000 <= (subscribed ? FRESH_SUBSCRIBED_TX_MS : FRESH_TX_REFRESH_MS);
  if (r?.status === 'succeeded' && (fresh || refreshed)) return 'list';
  if (r?.status === 'failed' && (fresh || refreshed)) throw new TransientProviderError('Stripe could not refresh the account transactions at the institution');
  const nextAt = r?.next_refresh_available_at ? r.next_refresh_available_at * 1000 : null;
  if (nextAt !== null && nextAt > now) return r?.status === 'succeeded' ? 'list' : { kind: 'pending', retryAt: nextAt };
  return 'refresh';
}

/** Stripe's sign: positive is money in. Posted credits, in USD cents, on their UTC day. */
export function stripeCredits(txs: readonly Stripe.FinancialConnections.Transaction[]): HistoryCredit[] {
  const out: HistoryCredit[] = [];
  for (const t of txs) {
    if (t.status !== 'posted' || t.currency !== 'usd' || !Number.isSafeInteger(t.amount) || t.amount <= 0) continue;
    const at = t.transacted_at * 1000;
    out.push({ at: at - (at % 86_400_000), amountCents: t.amount });
  }
  return out;
}

export class StripeFcSource implements LinkedSource<'stripe'> {
  readonly provider = 'stripe' as const;
  private readonly clients: StripeClients;
  constructor(opts: { apiUrl?: string | null; timeoutMs?: number; onCall?: CallObserver; timeScale?: number } = {}) {
    this.clients = new StripeClients(opts);
  }

  /** SDK clients kept now (a bounded cache, MAX_STRIPE_CLIENTS). */
  get clientCount(): number {
    return this.clients.size;
  }

  private client(key: string): Stripe {
    return this.clients.of(key);
  }

  async verify(creds: Extract<LinkCredentials, { provider: 'stripe' }>): Promise<void> {
    try {
      await this.client(creds.apiKey).financialConnections.accounts.list({ limit: 1 });
    } catch (e) {
      if (transient(e)) throw new SourceUnavailable('Stripe could not be reached');
      if (e instanceof Stripe.errors.StripeError) throw new CredentialsRefused('Stripe refused this key for Financial Connections');
      throw e;
    }
  }

  /**
   * The Financial Connections account a PaymentMethod was verified through (an ACH pm_… verified instantly);
   * null for any other PaymentMethod, one verified by micro-deposits, or when Stripe cannot tell now.
   */
  async accountOfPaymentMethod(creds: Extract<LinkCredentials, { provider: 'stripe' }>, paymentMethod: string): Promise<string | null> {
    try {
      const pm = await this.client(creds.apiKey).paymentMethods.retrieve(paymentMethod);
      const fca = pm.us_bank_account?.financial_connections_account ?? null;
      return fca && /^fca_[A-Za-z0-9]+$/.test(fca) ? fca : null;
    } catch (e) {
      if (e instanceof Stripe.errors.StripeError) return null;
      throw e;
    }
  }

  async read(creds: Extract<LinkCredentials, { provider: 'stripe' }>, link: Extract<BankLink, { provider: 'stripe' }>, now: number): Promise<LinkedReadResult> {
    const accounts = this.client(creds.apiKey).financialConnections.accounts;
    try {
      const current = await accounts.retrieve(link.account);
      // An answer that is not an account is a failed read, never a refresh to wait on for ten minutes.
      if (!isAccount(current)) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: NOT_AN_ACCOUNT };
      const known = accountResult(current, now, false);
      if (known) return known;
      const refreshed = await accounts.refresh(link.account, { features: ['balance'] });
      if (!isAccount(refreshed)) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: NOT_AN_ACCOUNT };
      return accountResult(refreshed, now, true) ?? { kind: 'pending', retryAt: now + REFRESH_POLL_MS };
    } catch (e) {
      if (e instanceof TransientProviderError) throw e;
      if (transient(e)) throw transientError(e);
      if (e instanceof Stripe.errors.StripeAuthenticationError || e instanceof Stripe.errors.StripePermissionError) {
        return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: 'connection_refused' };
      }
      if (e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing') return { kind: 'failed', statusCode: 3400, detail: null };
      if (e instanceof Stripe.errors.StripeError) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: null };
      throw e;
    }
  }

  /**
   * The account's owners, as its ownership (refreshed by Stripe when the borrower granted the ownership
   * permission) names them: one retrieve with the ownership expanded, its first OWNERS_MAX owners. An account
   * whose ownership was never refreshed names none.
   */
  async owners(creds: Extract<LinkCredentials, { provider: 'stripe' }>, link: Extract<BankLink, { provider: 'stripe' }>): Promise<OwnersResult> {
    try {
      const account = await this.client(creds.apiKey).financialConnections.accounts.retrieve(link.account, { expand: ['ownership'] });
      if (!isAccount(account)) throw new TransientProviderError('Stripe answered something other than the account');
      const ownership = account.ownership;
      const owners = ownership && typeof ownership === 'object' && Array.isArray(ownership.owners?.data) ? ownership.owners.data.slice(0, OWNERS_MAX) : [];
      return { kind: 'owners', names: ownerNames(owners.map((o) => (o as { name?: unknown }).name)) };
    } catch (e) {
      if (e instanceof TransientProviderError) throw e;
      if (transient(e)) throw transientError(e);
      if (e instanceof Stripe.errors.StripeAuthenticationError || e instanceof Stripe.errors.StripePermissionError) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: 'connection_refused' };
      if (e instanceof Stripe.errors.StripeError) return { kind: 'failed', statusCode: OTHER_ERROR_CODE, detail: null };
      throw e;
    }
  }

  /** The account's health by one retrieve (no refresh asked for). */
  async probe(creds: Extract<LinkCredentials, { provider: 'stripe' }>, link: Extract<BankLink, { provider: 'stripe' }>): Promise<LinkProbe> {
    try {
      const account = await this.client(creds.apiKey).financialConnections.accounts.retrieve(link.account);
      if (!isAccount(account)) throw new TransientProviderError('Stripe answered something other than the account');
      return healthOfAccount(account);
    } catch (e) {
      if (e instanceof TransientProviderError) throw e;
      if (transient(e)) throw new TransientProviderError(`Stripe answered HTTP ${(e as Stripe.errors.StripeError).statusCode ?? 'no answer'}`);
      // The account is gone for this key: the borrower must link again.
      if (e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing') return { health: 'relink_required', expiresAt: null };
      if (e instanceof Stripe.errors.StripeError) throw new TransientProviderError(`Stripe refused the probe (${e.type})`);
      throw e;
    }
  }

  /**
   * The account's posted credits over the window: a transaction refresh asked for when the last one is not
   * fresh (`features[]=transactions`), `pending` while it runs (the caller comes back, never waits here), then
   * the list, paged with starting_after while has_more, at most HISTORY_MAX_PAGES pages.
   */
  async history(creds: Extract<LinkCredentials, { provider: 'stripe' }>, link: Extract<BankLink, { provider: 'stripe' }>, window: HistoryWindow, now: number): Promise<HistoryResult> {
    const fc = this.client(creds.apiKey).financialConnections;
    try {
      const account = await fc.accounts.retrieve(link.account);
      if (!isAccount(account)) return { kind: 'none', detail: NOT_AN_ACCOUNT };
      let state = transactionsState(account, now, false);
      // A monitored account is subscribed to transactions once (Stripe then refreshes them about daily, and
      // subscribing starts the first refresh); only a subscribed account's refresh gone stale is asked for.
      const subscribed = Array.isArray(account.subscriptions) && account.subscriptions.includes('transactions');
      if (state === 'refresh' && !subscribed) state = transactionsState(await fc.accounts.subscribe(link.account, { features: ['transactions'] }), now, true);
      else if (state === 'refresh') state = transactionsState(await fc.accounts.refresh(link.account, { features: ['transactions'] }), now, true);
      if (state === 'refresh') return { kind: 'pending', retryAt: now + REFRESH_POLL_MS };
      if (state !== 'list') return state;
      const credits: HistoryCredit[] = [];
      let after: string | undefined;
      for (let page = 0; ; page++) {
        if (page >= HISTORY_MAX_PAGES) return { kind: 'credits', credits: boundedCredits(credits), truncated: true };
        const list = await fc.transactions.list({
          account: link.account,
          limit: STRIPE_TX_PAGE_SIZE,
          transacted_at: { gte: Math.floor(window.from / 1000), lt: Math.floor(window.to / 1000) + 86_400 },
          ...(after ? { starting_after: after } : {}),
        });
        credits.push(...stripeCredits(list.data));
        const last = list.data.at(-1);
        if (!list.has_more || !last) return { kind: 'credits', credits: boundedCredits(credits), truncated: false };
        after = last.id;
      }
    } catch (e) {
      if (e instanceof TransientProviderError) throw e;
      if (transient(e)) throw transientError(e);
      if (e instanceof Stripe.errors.StripeAuthenticationError || e instanceof Stripe.errors.StripePermissionError) return { kind: 'none', detail: 'connection_refused' };
      if (e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing') return { kind: 'none', detail: 'no_such_account' };
      if (e instanceof Stripe.errors.StripeError) return { kind: 'none', detail: e.code ?? 'stripe_error' };
      throw e;
    }
  }
}
