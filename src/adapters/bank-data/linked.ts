// Accounts a borrower linked at a bank-data source the lender holds credentials for (Plaid, Stripe Financial
// Connections). Each read goes through the lender's own credentials; the answer is a balance with its kind
// and the provider's time, a failure code, or "a refresh is still running, come back at".

import type { BalanceKind, BankDataProvider, PlaidEnvironment } from '../../../db/schema/enums';
import type { HistoryResult, HistoryWindow } from './types';

export type BankLink =
  | { provider: 'plaid'; accessToken: string; accountId: string }
  | { provider: 'stripe'; account: string };

export type LinkCredentials =
  | { provider: 'plaid'; clientId: string; secret: string; environment: PlaidEnvironment }
  | { provider: 'stripe'; apiKey: string };

export type LinkedReadResult =
  | { kind: 'balance'; balanceCents: number; balanceKind: BalanceKind; asOf: number | null }
  /** `detail` names a cause the code alone does not: `relink_required` (the borrower must link again). */
  | { kind: 'failed'; statusCode: number; detail: string | null }
  /** The provider is still refreshing the balance: read again at `retryAt` (epoch ms). */
  | { kind: 'pending'; retryAt: number };

export const RELINK_REQUIRED = 'relink_required';

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
}

export interface LinkedSources {
  plaid: LinkedSource<'plaid'>;
  stripe: LinkedSource<'stripe'> & {
    /** The fca_… account an ACH PaymentMethod was verified through, or null. */
    accountOfPaymentMethod(creds: Extract<LinkCredentials, { provider: 'stripe' }>, paymentMethod: string): Promise<string | null>;
  };
}

/** The last four characters of a secret, for showing which one is stored. */
export const last4 = (s: string): string => s.slice(-4);
