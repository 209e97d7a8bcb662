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

export type BalanceReadResult =
  | { kind: 'balance'; balanceCents: number }
  // statusCode is one of FAILURE_STATUS_CODES.
  | { kind: 'failed'; statusCode: number };

/**
 * The provider could not answer this time (outage, timeout, garbled answer). Worth retrying; when retries run
 * out the read ends as RETRIEVAL_FAILED / RETRY_LIMIT rather than as a statement about the account.
 */
export class TransientProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientProviderError';
  }
}

export interface BalanceProvider {
  read(req: BalanceReadRequest): Promise<BalanceReadResult>;
}
