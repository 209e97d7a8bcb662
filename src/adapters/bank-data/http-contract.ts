// The JSON contract of the HTTP bank-data provider (documented in docs/bank-data-http.md): how a read is
// written as a request body and how an answer is read back. Kept apart from the transport so each side can be
// checked on its own.

import {
  type BalanceReadRequest,
  type BalanceReadResult,
  isFailureStatusCode,
  OTHER_ERROR_CODE,
} from './types';

export interface BalanceRequestBody {
  authorizer_unique_id: string;
  payment_type: 'ACCOUNT_NUMBER' | 'DEBIT_CARD';
  routing_number: string | null;
  account_number: string | null;
  debit_card_number: string | null;
  cvv: string | null;
  expiration_month: number | null;
  expiration_year: number | null;
  ssn: string | null;
  ein: string | null;
  first_name: string | null;
  last_name: string | null;
  phone_number: string | null;
  zip_code: string | null;
  date_of_birth: { day: number; month: number; year: number } | null;
}

// Every field is always present (null when unknown), so a provider never has to tell "absent" from "null".
export function toRequestBody(req: BalanceReadRequest): BalanceRequestBody {
  return {
    authorizer_unique_id: req.authorizerUniqueId,
    payment_type: req.paymentType,
    routing_number: req.routingNumber,
    account_number: req.accountNumber,
    debit_card_number: req.debitCardNumber,
    cvv: req.cvv ?? null,
    expiration_month: req.expirationMonth ?? null,
    expiration_year: req.expirationYear ?? null,
    ssn: req.ssn ?? null,
    ein: req.ein ?? null,
    first_name: req.firstName ?? null,
    last_name: req.lastName ?? null,
    phone_number: req.phoneNumber ?? null,
    zip_code: req.zipCode ?? null,
    date_of_birth: req.dateOfBirth ? { ...req.dateOfBirth } : null,
  };
}

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * Dollars (a JSON number such as 1234.56, or the same as a string) to integer cents without binary floating
 * point error: the shortest decimal text of the number is split into digits, so 0.29 is 29 cents, never 28.
 * Digits past the cent round half away from zero. Null when the value is not a decimal amount or the cents
 * would not be an exact integer.
 */
export function dollarsToCents(value: unknown): number | null {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    text = String(value);
    // Exponent form only appears below 1e-6 (rounds to no cents) or at 1e21 and above (beyond exact integers).
    if (/e/i.test(text)) return Math.abs(value) < 1 ? 0 : null;
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    return null;
  }
  const m = DECIMAL.exec(text);
  if (!m) return null;
  const [, sign, whole, fraction = ''] = m;
  let cents = BigInt(whole) * 100n + BigInt((fraction + '00').slice(0, 2));
  if (fraction.length > 2 && fraction[2] >= '5') cents += 1n;
  if (cents > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const n = Number(cents);
  return sign === '-' && n !== 0 ? -n : n;
}

/**
 * The provider's answer as a read result, or null when it does not follow the contract (the caller treats
 * that as a transient failure: a garbled answer says nothing about the account).
 */
export function fromResponseBody(body: unknown): BalanceReadResult | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const { balance_status_code: code, balance } = body as Record<string, unknown>;
  if (typeof code !== 'number' || !Number.isSafeInteger(code) || code < 0) return null;
  if (code === 0) {
    const cents = dollarsToCents(balance);
    return cents === null ? null : { kind: 'balance', balanceCents: cents };
  }
  // A failure code carries no balance; any balance sent along with it is ignored.
  return { kind: 'failed', statusCode: isFailureStatusCode(code) ? code : OTHER_ERROR_CODE };
}
