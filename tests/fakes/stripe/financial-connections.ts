// Financial Connections accounts of the fake Stripe, typed by the `stripe` package: a balance, its
// asynchronous refresh (pending for a while, then succeeded or failed) and the account's status; and the
// account's transactions (a pay pattern's; Stripe's sign: positive money in), listed once a transactions
// refresh has succeeded, paged with starting_after and has_more.
import type Stripe from 'stripe';
import { ok, stripeError, type Answer } from './account';
import { obj, str, type Form } from './form';
import { patternTransactions, type PayPattern } from '../pay-pattern';

type Transaction = Stripe.FinancialConnections.Transaction;

type Account = Stripe.FinancialConnections.Account;

export interface FcAccountSpec {
  id: string;
  /** Cents; null for no available balance. */
  available?: number | null;
  current?: number;
  status?: Account['status'];
  permissions?: Stripe.FinancialConnections.Account.Permission[];
  /** cash by default; credit for a card or a line of credit. */
  category?: Account['category'];
  /** The owners' names its ownership gives (expand[]=ownership); none refreshed when absent. */
  owners?: string[];
}

export interface FcControl {
  /** A linked account readable with this key. */
  addFcAccount(key: string, spec: FcAccountSpec): void;
  setFcStatus(id: string, status: Account['status']): void;
  /**
   * The account's status details: an inactive account's cause (`account_closed`, `access_expired`…), an active
   * one's expected deactivation (seconds since the epoch); null clears them.
   */
  setFcStatusDetails(id: string, details: { inactiveCause?: string; expectedDeactivation?: number } | null): void;
  /** The statuses of the account's tokenized account numbers (`transactable`, `expired`, `deactivated`, `pending`); null: none listed. */
  setFcAccountNumbers(id: string, statuses: string[] | null): void;
  /** The account's balance as the next refresh will find it. */
  setFcBalance(id: string, cents: { available?: number | null; current?: number }): void;
  /** The account's balance as given, whatever it holds (numbers no real answer would carry), with no refresh due. */
  setFcRawBalance(id: string, balance: Record<string, unknown>): void;
  /** Refreshes stay pending this long (real time, or the clock given) before they succeed. */
  setRefreshDelay(ms: number, clock?: () => number): void;
  /** The next n refreshes fail at the institution. */
  failNextRefreshes(n: number): void;
  /** Refresh requests received per account. */
  refreshes(id: string): number;
  /** The account's subscriptions (`transactions` once subscribed). */
  subscriptions(id: string): string[];
  /** The account's transactions, as the next transactions refresh will find them. */
  setFcTransactions(id: string, pattern: PayPattern): void;
  /** Transactions list requests received per account. */
  transactionLists(id: string): number;
}

interface Entry {
  key: string;
  account: Account;
  next: { available: number | null; current: number };
  pendingUntil: number | null;
  fails: boolean;
  refreshes: number;
  /** Subscribe and unsubscribe calls. */
  subscribes: number;
  /** What a transactions refresh finds, what the last one found, and when a pending one ends (real time). */
  nextTransactions: Transaction[];
  transactions: Transaction[];
  txPendingUntil: number | null;
  lists: number;
}

export class FakeFinancialConnections implements FcControl {
  private readonly accounts = new Map<string, Entry>();
  /** Each account's owners' names, given by its ownership when a retrieve expands it. */
  private readonly owners = new Map<string, string[]>();
  private delayMs = 0;
  /** The clock a refresh's delay is measured by (real time unless a test gives its own). */
  private clock: () => number = Date.now;
  private failing = 0;

  constructor(private readonly now: () => number) {}

  addFcAccount(key: string, spec: FcAccountSpec): void {
    const account: Account = {
      id: spec.id,
      object: 'financial_connections.account',
      account_holder: { type: 'customer', customer: 'cus_1FakeHolder' },
      account_numbers: null,
      balance: null,
      balance_refresh: null,
      category: spec.category ?? 'cash',
      created: this.now(),
      display_name: 'Checking',
      institution_name: 'StripeBank',
      last4: '6789',
      livemode: false,
      ownership: spec.owners ? `fcaowns_${spec.id.slice(4)}` : null,
      ownership_refresh: null,
      permissions: spec.permissions ?? ['balances', 'payment_method', 'transactions'],
      status: spec.status ?? 'active',
      subcategory: 'checking',
      subscriptions: null,
      supported_payment_method_types: ['us_bank_account'],
      transaction_refresh: null,
    } as Account;
    if (spec.owners) this.owners.set(spec.id, spec.owners);
    this.accounts.set(spec.id, { key, account, next: { available: spec.available === undefined ? 100_00 : spec.available, current: spec.current ?? 100_00 }, pendingUntil: null, fails: false, refreshes: 0, subscribes: 0, nextTransactions: [], transactions: [], txPendingUntil: null, lists: 0 });
  }

  setFcStatus(id: string, status: Account['status']): void {
    this.entry(id).account.status = status;
  }

  setFcStatusDetails(id: string, details: { inactiveCause?: string; expectedDeactivation?: number } | null): void {
    const a = this.entry(id).account as Account & { status_details?: unknown };
    if (details === null) {
      delete a.status_details;
      return;
    }
    a.status_details = {
      ...(details.inactiveCause ? { inactive: { cause: details.inactiveCause } } : {}),
      ...(details.expectedDeactivation ? { active: { action: 'relink_required', cause: 'access_expired', expected_deactivation_date: details.expectedDeactivation } } : {}),
    };
  }

  setFcAccountNumbers(id: string, statuses: string[] | null): void {
    this.entry(id).account.account_numbers =
      statuses === null
        ? null
        : (statuses.map((status) => ({ expected_expiry_date: null, identifier_type: 'tokenized_account_number', status, supported_networks: ['ach'] })) as Account['account_numbers']);
  }

  setFcBalance(id: string, cents: { available?: number | null; current?: number }): void {
    const e = this.entry(id);
    e.next = { available: cents.available === undefined ? e.next.available : cents.available, current: cents.current ?? e.next.current };
  }

  setFcRawBalance(id: string, balance: Record<string, unknown>): void {
    const e = this.entry(id);
    e.account.balance = balance as unknown as Account['balance'];
    // Refreshed just now: the adapter takes the balance as it is, without asking for another refresh.
    e.account.balance_refresh = { last_attempted_at: this.now(), next_refresh_available_at: null, status: 'succeeded' };
  }

  setRefreshDelay(ms: number, clock: () => number = Date.now): void {
    this.delayMs = ms;
    this.clock = clock;
  }

  failNextRefreshes(n: number): void {
    this.failing = n;
  }

  refreshes(id: string): number {
    return this.accounts.get(id)?.refreshes ?? 0;
  }

  subscriptions(id: string): string[] {
    return [...(this.accounts.get(id)?.account.subscriptions ?? [])];
  }

  setFcTransactions(id: string, pattern: PayPattern): void {
    const e = this.entry(id);
    e.nextTransactions = patternTransactions(pattern).map((t, i) => {
      const at = Math.floor(Date.parse(`${t.date}T12:00:00Z`) / 1000);
      return {
        id: `fctxn_${id.slice(4)}_${String(i).padStart(5, '0')}`,
        object: 'financial_connections.transaction',
        account: id,
        amount: t.amountCents,
        currency: 'usd',
        description: t.name,
        livemode: false,
        status: 'posted',
        status_transitions: { posted_at: at, void_at: null },
        transacted_at: at,
        transaction_refresh: 'fctxnref_fake',
        updated: at,
      };
    });
  }

  transactionLists(id: string): number {
    return this.accounts.get(id)?.lists ?? 0;
  }

  private entry(id: string): Entry {
    const e = this.accounts.get(id);
    if (!e) throw new Error(`fake Stripe: no Financial Connections account ${id}`);
    return e;
  }

  /** A pending refresh whose time has come ends now: the balance is the account's, as of now. */
  private settle(e: Entry): Account {
    if (e.txPendingUntil !== null && this.clock() >= e.txPendingUntil) {
      e.txPendingUntil = null;
      e.transactions = e.nextTransactions;
      e.account.transaction_refresh = { ...e.account.transaction_refresh!, status: 'succeeded' };
    }
    if (e.pendingUntil !== null && this.clock() >= e.pendingUntil) {
      e.pendingUntil = null;
      const at = this.now();
      if (e.fails) {
        e.account.balance_refresh = { last_attempted_at: e.account.balance_refresh!.last_attempted_at, next_refresh_available_at: null, status: 'failed' };
      } else {
        e.account.balance_refresh = { last_attempted_at: e.account.balance_refresh!.last_attempted_at, next_refresh_available_at: null, status: 'succeeded' };
        e.account.balance = {
          as_of: at,
          type: 'cash',
          cash: { available: e.next.available === null ? null : { usd: e.next.available } },
          current: { usd: e.next.current },
        };
      }
    }
    return e.account;
  }

  private visible(key: string, id: string): Entry | null {
    const e = this.accounts.get(id);
    return e && e.key === key ? e : null;
  }

  /** The routes under /v1/financial_connections/accounts; null when the path is not one of them. */
  handle(method: string, path: string, key: string, p: Form): Answer | null {
    if (method === 'GET' && path === '/v1/financial_connections/transactions') return this.listTransactions(key, p);
    if (!path.startsWith('/v1/financial_connections/accounts')) return null;
    if (method === 'GET' && path === '/v1/financial_connections/accounts') {
      const limit = Math.min(Number(typeof p.limit === 'string' ? p.limit : 10) || 10, 100);
      const data = [...this.accounts.values()].filter((e) => e.key === key).slice(0, limit).map((e) => this.settle(e));
      const list: Stripe.ApiList<Account> = { object: 'list', data, has_more: false, url: '/v1/financial_connections/accounts' };
      return ok(list);
    }
    const sub = /^\/v1\/financial_connections\/accounts\/([^/]+)\/(subscribe|unsubscribe)$/.exec(path);
    if (sub && method === 'POST') {
      const e = this.visible(key, sub[1]!);
      if (!e) return stripeError(404, 'invalid_request_error', `No such financial_connections.account: '${sub[1]}'`, { code: 'resource_missing', param: 'account' });
      const features = Array.isArray(p.features) ? p.features : [];
      if (!features.includes('transactions')) return stripeError(400, 'invalid_request_error', 'features must include transactions', { param: 'features' });
      e.subscribes++;
      if (sub[2] === 'unsubscribe') {
        e.account.subscriptions = [];
        return ok(this.settle(e));
      }
      // Subscribing starts a transactions refresh, and Stripe refreshes about daily while it lasts.
      const started = this.refreshTransactions(e);
      if (started.status < 400) e.account.subscriptions = ['transactions'];
      return started.status < 400 ? ok(this.settle(e)) : started;
    }
    const m = /^\/v1\/financial_connections\/accounts\/([^/]+)(\/refresh)?$/.exec(path);
    if (!m) return null;
    const e = this.visible(key, m[1]!);
    if (!e) return stripeError(404, 'invalid_request_error', `No such financial_connections.account: '${m[1]}'`, { code: 'resource_missing', param: 'account' });
    if (method === 'GET' && !m[2]) {
      const account = this.settle(e);
      const expand = Array.isArray(p.expand) ? p.expand : typeof p.expand === 'string' ? [p.expand] : [];
      const names = this.owners.get(account.id);
      if (!expand.includes('ownership') || !names || typeof account.ownership !== 'string') return ok(account);
      const ownership = account.ownership;
      const owners = names.map((name, i) => ({ id: `fcaown_${i}`, object: 'financial_connections.account_owner', email: null, name, ownership, phone: null, raw_address: null, refreshed_at: null }));
      return ok({ ...account, ownership: { id: ownership, object: 'financial_connections.account_ownership', created: account.created, owners: { object: 'list', data: owners, has_more: false, url: '/v1/financial_connections/accounts/owners' } } } as Account);
    }
    if (method === 'POST' && m[2]) {
      const features = Array.isArray(p.features) ? p.features : [];
      if (features.includes('transactions')) return this.refreshTransactions(e);
      if (!features.includes('balance')) return stripeError(400, 'invalid_request_error', 'features must include balance or transactions', { param: 'features' });
      if (e.account.status !== 'active') {
        return stripeError(400, 'invalid_request_error', `The account is ${e.account.status}; it cannot be refreshed.`, { code: 'financial_connections_account_inactive' });
      }
      if (!e.account.permissions?.includes('balances')) {
        return stripeError(400, 'invalid_request_error', 'The account has not granted the balances permission.', { code: 'financial_connections_no_balances_permission' });
      }
      this.settle(e);
      if (e.account.balance_refresh?.status === 'pending') return ok(e.account);
      e.refreshes++;
      e.fails = this.failing > 0;
      if (this.failing > 0) this.failing--;
      e.account.balance_refresh = { last_attempted_at: this.now(), next_refresh_available_at: null, status: 'pending' };
      e.pendingUntil = this.clock() + this.delayMs;
      return ok(this.settle(e));
    }
    return null;
  }

  private refreshTransactions(e: Entry): Answer {
    if (e.account.status !== 'active') {
      return stripeError(400, 'invalid_request_error', `The account is ${e.account.status}; it cannot be refreshed.`, { code: 'financial_connections_account_inactive' });
    }
    if (!e.account.permissions?.includes('transactions')) {
      return stripeError(400, 'invalid_request_error', 'The account has not granted the transactions permission.', { code: 'financial_connections_no_transactions_permission' });
    }
    this.settle(e);
    if (e.account.transaction_refresh?.status === 'pending') return ok(e.account);
    e.refreshes++;
    e.account.transaction_refresh = { id: `fctxnref_${e.refreshes}`, last_attempted_at: this.now(), next_refresh_available_at: null, status: 'pending' };
    e.txPendingUntil = this.clock() + this.delayMs;
    return ok(this.settle(e));
  }

  /** GET /v1/financial_connections/transactions: the account's, newest first, `limit` a page after `starting_after`. */
  private listTransactions(key: string, p: Form): Answer {
    const account = str(p.account);
    if (!account) return stripeError(400, 'invalid_request_error', 'Missing required param: account.', { param: 'account' });
    const e = this.visible(key, account);
    if (!e) return stripeError(404, 'invalid_request_error', `No such financial_connections.account: '${account}'`, { code: 'resource_missing', param: 'account' });
    e.lists++;
    this.settle(e);
    const limit = Math.min(Math.max(Number(str(p.limit) ?? 10) || 10, 1), 100);
    const range = obj(p.transacted_at);
    const gte = Number(str(range?.gte) ?? -Infinity);
    const lt = Number(str(range?.lt) ?? Infinity);
    const all = e.transactions.filter((t) => t.transacted_at >= gte && t.transacted_at < lt).sort((a, b) => b.transacted_at - a.transacted_at || b.id.localeCompare(a.id));
    const after = str(p.starting_after);
    const from = after ? all.findIndex((t) => t.id === after) + 1 : 0;
    const data = all.slice(from, from + limit);
    const list: Stripe.ApiList<Transaction> = { object: 'list', data, has_more: from + limit < all.length, url: '/v1/financial_connections/transactions' };
    return ok(list);
  }
}
