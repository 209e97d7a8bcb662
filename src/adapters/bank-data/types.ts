// The bank-data provider contract: one balance read per authorizer. Amounts are integer cents; the
// service turns them into dollars only at the API edge.

import type { PaymentType } from '../../../db/schema/enums';

export interface BalanceReadRequest {
  authorizerUniqueId: string;
  paymentType: PaymentType;
  routingNumber: string | null;
  accountNumber: string | null;
  debitCardNumber: string | null;
  cvv?: string | null;
  expirationMonth?: number | null;
  expirationYear?: number | null;
  ssn?: string | null;
  ein?: string | null;
  firstName?: string | null;
  lastName?: string | null;
  phoneNumber?: string | null;
  zipCode?: string | null;
  dateOfBirth?: { day: number; month: number; year: number } | null;
}

/** The non-zero balance_status_code values of the spec; 0 (success) is a `balance` result instead. */
export const FAILURE_STATUS_CODES = [2560, 3000, 3001, 3100, 3200, 3300, 3310, 3400, 9000] as const;
export type FailureStatusCode = (typeof FAILURE_STATUS_CODES)[number];

/** The catch-all "Other error" code, also used for answers a provider gives outside the spec's list. */
export const OTHER_ERROR_CODE = 9000;

export function isFailureStatusCode(code: number): code is FailureStatusCode {
  return (FAILURE_STATUS_CODES as readonly number[]).includes(code);
}

/** A bank's Notification of Change on the account, as a source that knows of one passes it on (the HTTP bridge). */
export interface ChangeNotice {
  code: string;
  correctedData: string;
}

export type BalanceReadResult =
  | { kind: 'balance'; balanceCents: number; change?: ChangeNotice }
  // statusCode is one of FAILURE_STATUS_CODES.
  | { kind: 'failed'; statusCode: number };

/**
 * The provider could not answer this time (outage, timeout, garbled answer). Worth retrying; when retries run
 * out the read ends as RETRIEVAL_FAILED / RETRY_LIMIT rather than as a statement about the account.
 */
export class TransientProviderError extends Error {
  /**
   * The provider's documented rate limit, not a failure: the read is asked again once the limit allows,
   * without spending one of its attempts (the caller bounds how long it waits).
   */
  readonly rateLimited: boolean;
  /** When the limit allows the next call, if the provider says (ms from now); otherwise the caller backs off. */
  readonly retryAfterMs: number | null;
  constructor(message: string, options?: { cause?: unknown; rateLimited?: boolean; retryAfterMs?: number | null }) {
    super(message, options);
    this.name = 'TransientProviderError';
    this.rateLimited = options?.rateLimited ?? false;
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }
}

export interface BalanceProvider {
  read(req: BalanceReadRequest): Promise<BalanceReadResult>;
}

// Transaction history: a source that keeps an account's transactions can give its credits (money in) over a
// window, which is what a pay cycle is learned from. Optional: a source without it leaves the service's own
// balance reads as the only history.

/** A credit to the account: the UTC day it posted (midnight, epoch ms) and its amount in cents (positive). */
export interface HistoryCredit {
  at: number;
  amountCents: number;
}

/** The days asked for, as UTC midnights (epoch ms), both inclusive. */
export interface HistoryWindow {
  from: number;
  to: number;
}

export type HistoryResult =
  /** The credits found; `truncated` when the page bound stopped the reading before the source's last page. */
  | {
      kind: 'credits';
      credits: HistoryCredit[];
      truncated: boolean;
      /** false while the source is still pulling older history (Plaid's INITIAL_UPDATE_COMPLETE: about 30 days); absent when the source does not say. */
      complete?: boolean;
    }
  /** The source is still preparing the transactions: ask again at `retryAt` (epoch ms). */
  | { kind: 'pending'; retryAt: number }
  /** This source or account has no history to give (not offered, not permitted, the link needs relinking). */
  | { kind: 'none'; detail: string };

/** Pages of transactions read per account at most, whatever the source says is left: checked before each page. */
export const HISTORY_MAX_PAGES = 10;
/** Credits kept from one reading at most (the most recent). */
export const HISTORY_MAX_CREDITS = 2_000;

/**
 * A balance source that also keeps transactions. Throws TransientProviderError for outages and rate limits
 * (asked again later by the caller).
 */
export interface TransactionHistorySource {
  history(req: BalanceReadRequest, window: HistoryWindow): Promise<HistoryResult>;
}

export const hasHistory = (p: BalanceProvider): p is BalanceProvider & TransactionHistorySource =>
  typeof (p as Partial<TransactionHistorySource>).history === 'function';

/** A UTC midnight as YYYY-MM-DD, and back (null when not a date). */
export const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
export function dayOfIso(s: unknown): number | null {
  if (typeof s !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(s)) return null;
  const t = Date.parse(`${s}T00:00:00Z`);
  return Number.isFinite(t) ? t : null;
}

/** The most recent credits, at most HISTORY_MAX_CREDITS of them, oldest first. */
export function boundedCredits(credits: HistoryCredit[]): HistoryCredit[] {
  const sorted = credits.sort((a, b) => a.at - b.at);
  return sorted.length > HISTORY_MAX_CREDITS ? sorted.slice(-HISTORY_MAX_CREDITS) : sorted;
}
