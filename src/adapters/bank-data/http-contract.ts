// The JSON contract of the HTTP bank-data provider (documented in docs/bank-data-http.md): how a read is
// written as a request body and how an answer is read back. Kept apart from the transport so each side can be
// checked on its own.

import {
  dayOfIso,
  isoDay,
  type HistoryCredit,
  type HistoryWindow,
  type BalanceReadRequest,
  type BalanceReadResult,
  type ChangeNotice,
  isFailureStatusCode,
  OTHER_ERROR_CODE,
} from './types';
import { dollarsToCentsRounded } from '../../platform/money';
import type { PaymentType } from '../../../db/schema/enums';

export interface BalanceRequestBody {
  authorizer_unique_id: string;
  payment_type: PaymentType;
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

/**
 * The provider's answer as a read result, or null when it does not follow the contract (the caller treats
 * that as a transient failure: a garbled answer says nothing about the account).
 */
export function fromResponseBody(body: unknown): BalanceReadResult | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const { balance_status_code: code, balance, notification_of_change: noc } = body as Record<string, unknown>;
  if (typeof code !== 'number' || !Number.isSafeInteger(code) || code < 0) return null;
  if (code === 0) {
    const cents = dollarsToCentsRounded(balance);
    if (cents === null) return null;
    const change = changeOf(noc);
    if (change === null) return null;
    return change === undefined ? { kind: 'balance', balanceCents: cents } : { kind: 'balance', balanceCents: cents, change };
  }
  // A failure code carries no balance; any balance sent along with it is ignored.
  return { kind: 'failed', statusCode: isFailureStatusCode(code) ? code : OTHER_ERROR_CODE };
}

/**
 * An answer's optional `notification_of_change`: `{code, corrected_data}`, both short strings (the service reads
 * them as it reads an uploaded one); undefined when absent or null, null when it does not follow the contract.
 */
function changeOf(v: unknown): ChangeNotice | null | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) return null;
  const { code, corrected_data: data } = v as Record<string, unknown>;
  if (typeof code !== 'string' || code.length === 0 || code.length > 64) return null;
  if (typeof data !== 'string' || data.length > 64) return null;
  return { code, correctedData: data };
}

/** `POST {BANK_DATA_URL}/transactions`: the authorizer as for a balance read, the days asked for, the page. */
export interface TransactionsRequestBody extends BalanceRequestBody {
  start_date: string;
  end_date: string;
  page_token: string | null;
}

export function toTransactionsRequestBody(req: BalanceReadRequest, window: HistoryWindow, pageToken: string | null): TransactionsRequestBody {
  return { ...toRequestBody(req), start_date: isoDay(window.from), end_date: isoDay(window.to), page_token: pageToken };
}

/** A page token is opaque to the service, but bounded. */
const MAX_PAGE_TOKEN = 1024;

/**
 * One page of the provider's answer: its credits (money in is a positive `amount` in dollars; money out,
 * negative, is skipped) and the next page's token, or null when the answer does not follow the contract.
 */
export function fromTransactionsBody(body: unknown): { credits: HistoryCredit[]; nextPageToken: string | null } | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const { transactions, next_page_token: next } = body as Record<string, unknown>;
  if (!Array.isArray(transactions)) return null;
  if (next !== undefined && next !== null && (typeof next !== 'string' || next.length === 0 || next.length > MAX_PAGE_TOKEN)) return null;
  const credits: HistoryCredit[] = [];
  for (const t of transactions) {
    if (typeof t !== 'object' || t === null) return null;
    const { date, amount } = t as Record<string, unknown>;
    const at = dayOfIso(date);
    const cents = dollarsToCentsRounded(amount);
    if (at === null || cents === null) return null;
    if (cents > 0) credits.push({ at, amountCents: cents });
  }
  return { credits, nextPageToken: typeof next === 'string' ? next : null };
}
