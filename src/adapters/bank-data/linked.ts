// Accounts a borrower linked at a bank-data source the lender holds credentials for (Plaid, Stripe Financial
// Connections). Each read goes through the lender's own credentials; the answer is a balance with its kind
// and the provider's time, a failure code, or "a refresh is still running, come back at".

import type { BalanceKind, BankDataProvider, LinkHealth, PlaidEnvironment } from '../../../db/schema/enums';
import type { HistoryResult, HistoryWindow } from './types';

export type BankLink =
  | { provider: 'plaid'; accessToken: string; accountId: string }
  | { provider: 'stripe'; account: string };

export type LinkCredentials =
  | { provider: 'plaid'; clientId: string; secret: string; environment: PlaidEnvironment }
  | { provider: 'stripe'; apiKey: string };

export type LinkedReadResult =
  | {
      kind: 'balance';
      balanceCents: number;
      balanceKind: BalanceKind;
      asOf: number | null;
      /** What the provider said of the link beside the balance, when it says (Stripe: consent expiring, account number not transactable). */
      health?: LinkProbe;
      /** Plaid: the Item the account belongs to (how a Plaid webhook names it). */
      itemId?: string;
      /** The institution's name as the provider gives it (the export's Institution for a linked read). */
      institution?: string;
    }
  /** `detail` names a cause the code alone does not: `relink_required` (the borrower must link again). */
  | { kind: 'failed'; statusCode: number; detail: string | null }
  /** The provider is still refreshing the balance: read again at `retryAt` (epoch ms). */
  | { kind: 'pending'; retryAt: number };

export const RELINK_REQUIRED = 'relink_required';
/** The borrower revoked the account or the permission to it (Plaid USER_ACCOUNT_REVOKED, USER_PERMISSION_REVOKED). */
export const ACCOUNT_REVOKED = 'account_revoked';
/** The account is closed at the bank. */
export const ACCOUNT_CLOSED = 'account_closed';
/** The account number a debit would go through is not usable (Stripe account_numbers[].status not transactable). */
export const ACCOUNT_NOT_TRANSACTABLE = 'account_not_transactable';

/** The linked account is not a cash account (a credit card, a loan, investments): its balance is not money to debit. */
export const NOT_A_CASH_ACCOUNT = 'not_a_cash_account';

/** What a provider says of a link now: its health, and the provider's date when it is expiring. */
export interface LinkProbe {
  health: LinkHealth;
  expiresAt: number | null;
}

/** The health a failed read's detail tells of its link, or null when it tells nothing of it. */
export function healthOfDetail(detail: string | null): LinkHealth | null {
  if (detail === RELINK_REQUIRED) return 'relink_required';
  if (detail === ACCOUNT_REVOKED) return 'revoked';
  if (detail === ACCOUNT_CLOSED) return 'closed';
  if (detail === ACCOUNT_NOT_TRANSACTABLE) return 'not_transactable';
  return null;
}

/** The detail a read is failed with while its link has this (blocking) health. */
export function detailOfHealth(health: LinkHealth): string {
  return health === 'revoked' ? ACCOUNT_REVOKED : health === 'closed' ? ACCOUNT_CLOSED : health === 'not_transactable' ? ACCOUNT_NOT_TRANSACTABLE : RELINK_REQUIRED;
}

/** Healths under which a link is probed, not read, and no debit follows (expiring is still read). */
export const BLOCKING_HEALTHS: ReadonlySet<LinkHealth> = new Set(['relink_required', 'revoked', 'closed', 'not_transactable']);

/** The provider refused the lender's credentials: nothing is stored. */
export class CredentialsRefused extends Error {
  constructor(message = 'the provider refused these credentials') {
    super(message);
    this.name = 'CredentialsRefused';
  }
}

/** The provider could not be asked (outage, timeout): nothing is stored; try again. */
export class SourceUnavailable extends Error {
  constructor(message = 'the provider could not be reached') {
    super(message);
    this.name = 'SourceUnavailable';
  }
}

/** At most this many owners, and names of each, are read of an account (the rest of an answer is left). */
export const OWNERS_MAX = 10;

/** A linked account's owners' names as the provider gives them, or the provider's refusal (no identity product, a broken link). */
export type OwnersResult = { kind: 'owners'; names: string[] } | { kind: 'failed'; statusCode: number; detail: string | null };

/** The printable names of at most OWNERS_MAX owners, each at most 200 characters. */
export const ownerNames = (names: unknown[]): string[] =>
  names
    .filter((n): n is string => typeof n === 'string' && n.trim().length > 0)
    .slice(0, OWNERS_MAX)
    .map((n) => n.slice(0, 200));

export interface LinkedSource<P extends BankDataProvider = BankDataProvider> {
  readonly provider: P;
  /** One cheap authenticated call: throws CredentialsRefused or SourceUnavailable. */
  verify(creds: Extract<LinkCredentials, { provider: P }>): Promise<void>;
  /**
   * One balance read. Throws TransientProviderError for rate limits and outages (retried with backoff by the
   * caller); `now` is the caller's clock, for a refresh's timing.
   */
  read(creds: Extract<LinkCredentials, { provider: P }>, link: Extract<BankLink, { provider: P }>, now: number): Promise<LinkedReadResult>;
  /**
   * The account's credits over a window (at most HISTORY_MAX_PAGES pages). Throws TransientProviderError for
   * rate limits and outages; `pending` while the provider prepares the transactions.
   */
  history(creds: Extract<LinkCredentials, { provider: P }>, link: Extract<BankLink, { provider: P }>, window: HistoryWindow, now: number): Promise<HistoryResult>;
  /**
   * The link's health without reading its balance, by the provider's free call (Plaid /item/get and
   * /accounts/get, Stripe's account retrieve). Throws TransientProviderError when it cannot be asked now.
   */
  probe(creds: Extract<LinkCredentials, { provider: P }>, link: Extract<BankLink, { provider: P }>, now: number): Promise<LinkProbe>;
  /**
   * The names of the account's owners (Plaid /identity/get, Stripe's account ownership), for a lender whose
   * connection has the identity product. Throws TransientProviderError when it cannot be asked now.
   */
  owners(creds: Extract<LinkCredentials, { provider: P }>, link: Extract<BankLink, { provider: P }>): Promise<OwnersResult>;
}

export interface LinkedSources {
  plaid: LinkedSource<'plaid'> & {
    /** The key Plaid signs webhooks with, by key id; null when Plaid has no such key. */
    webhookKey(creds: Extract<LinkCredentials, { provider: 'plaid' }>, keyId: string): Promise<PlaidWebhookKey | null>;
  };
  stripe: LinkedSource<'stripe'> & {
    /** The fca_… account an ACH PaymentMethod was verified through, or null. */
    accountOfPaymentMethod(creds: Extract<LinkCredentials, { provider: 'stripe' }>, paymentMethod: string): Promise<string | null>;
  };
}

/** A Plaid webhook verification key: an EC P-256 public JWK, and when Plaid retired it (null while current). */
export interface PlaidWebhookKey {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  expiredAt: number | null;
}

/** The last four characters of a secret, for showing which one is stored. */
export const last4 = (s: string): string => s.slice(-4);

/** A provider's institution name as the export shows it: printable text, at most 100 characters, else none. */
export function institutionName(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const name = v.trim();
  return name.length > 0 && name.length <= 100 && !/[\u0000-\u001f\u007f]/.test(name) ? name : undefined;
}
