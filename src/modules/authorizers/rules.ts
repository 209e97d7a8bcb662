import valid from 'card-validator';
import type { PaymentType } from '../../../db/schema/enums';
import { routingNumberProblem } from '../../adapters/routing/aba';
import { dollarsToCents } from '../../platform/money';
import type { AuthorizerCandidate } from './fields';
import type { BankLink } from '../../adapters/bank-data/linked';

// The rules of an authorizer's fields, beyond their shape: one payment-information mode, tax id, routing
// checksum, leading zeros, card approval and expiry, phone, date of birth. One place for balance requests,
// schedules and enrollments.

export type { AuthorizerCandidate, PaymentType };

/** The fields that are sealed in the vault, never stored or logged in the clear. */
export interface SensitiveFields {
  ssn: string | null;
  ein: string | null;
  accountNumber: string | null;
  debitCardNumber: string | null;
  cvv: string | null;
  expirationMonth: number | null;
  expirationYear: number | null;
  firstName: string | null;
  lastName: string | null;
  dateOfBirth: { day: number; month: number; year: number } | null;
  street: string | null;
  /** Where the balance is read instead of the default source (a Plaid or Stripe Financial Connections account). */
  bankLink?: BankLink | null;
}

/** What a validation may need to know of the lender beyond the authorizer itself. */
export interface AuthorizerRuleOptions {
  debitCardsApproved: boolean;
  now: number;
  /** The providers the lender holds a bank-data connection for; a bank_link of another is refused. */
  bankProviders?: readonly string[];
}

export interface NormalizedAuthorizer {
  authorizerUniqueId: string;
  paymentType: PaymentType;
  routingNumber: string | null;
  phone: string | null; // E.164
  zip: string | null;
  metadata: Record<string, string | number | boolean> | null;
  thresholdCents: number | null;
  sensitive: SensitiveFields;
  rowNumber: number;
}

export interface FailedAuthorizer {
  authorizer_unique_id: string | null;
  error: string;
  account_type: PaymentType;
  row_number: number;
}

const digits = (s: string) => s.replace(/[\s-]/g, '');
const blank = (s: string | undefined | null): s is undefined | null | '' => s === undefined || s === null || s.trim() === '';

/** US phone number to E.164, or null when it is not a 10-digit NANP number. */
export function toE164(raw: string): string | null {
  let d = raw.replace(/[\s().+-]/g, '');
  if (!/^\d+$/.test(d)) return null;
  if (d.length === 11 && d.startsWith('1')) d = d.slice(1);
  if (d.length !== 10 || /^[01]/.test(d)) return null;
  return `+1${d}`;
}

function ssnProblem(s: string): string | null {
  const d = digits(s);
  if (!/^\d+$/.test(d)) return 'ssn must contain only digits (dashes allowed)';
  if (d.length === 8) return 'ssn has 8 digits; it looks like a leading zero was lost (send it as text)';
  if (d.length !== 9) return 'ssn must have 9 digits';
  return null;
}

function einProblem(s: string): string | null {
  const d = digits(s);
  if (!/^\d+$/.test(d)) return 'ein must contain only digits (a dash allowed)';
  // Some systems pad an EIN to 10 digits; one that lost that leading zero is still a 9-digit EIN.
  if (d.length !== 9 && d.length !== 10) return 'ein must have 9 digits';
  return null;
}

function zipProblem(s: string): string | null {
  const z = s.trim();
  if (/^\d{4}(-\d{4})?$/.test(z)) return 'zip_code has 4 digits; it looks like a leading zero was lost (send it as text)';
  if (!/^\d{5}(-?\d{4})?$/.test(z)) return 'zip_code must be 5 digits or ZIP+4';
  return null;
}

function cardProblem(s: string, month: number | undefined, year: number | undefined, cvv: string | undefined, now: Date): string | null {
  const d = digits(s);
  if (!/^\d+$/.test(d)) return 'debit_card_number must contain only digits';
  // Length for the card's brand first: a number that lost a leading zero is too short for its brand.
  if (!valid.number(d, { skipLuhnValidation: true }).isValid) {
    return 'debit_card_number has the wrong length for a card number; check for a lost leading zero';
  }
  if (!valid.number(d).isValid) return 'debit_card_number is not a valid card number (check digit)';
  if (!blank(cvv)) {
    // A 4-digit CVV that lost its leading zero still has 3 digits, which is a valid length.
    if (!/^\d{3,4}$/.test(cvv!)) return 'cvv must be 3 or 4 digits';
  }
  if ((month === undefined) !== (year === undefined)) return 'expiration_month and expiration_year go together';
  if (month !== undefined && year !== undefined) {
    const y = now.getUTCFullYear();
    const m = now.getUTCMonth() + 1;
    if (year < y || (year === y && month < m)) return 'the card has expired';
  }
  return null;
}

/**
 * Per-authorizer rules: one payment-information mode, tax id, routing, leading zeros, card approval.
 * Returns the normalised authorizer, or the reason it fails (the rest of the batch goes ahead).
 */
export function validateAuthorizer(
  a: AuthorizerCandidate,
  rowNumber: number,
  opts: AuthorizerRuleOptions,
): { ok: true; value: NormalizedAuthorizer } | { ok: false; failure: FailedAuthorizer } {
  const hasAccount = !blank(a.account_number);
  const hasCard = !blank(a.debit_card_number);
  const paymentType: PaymentType = hasCard && !hasAccount ? 'DEBIT_CARD' : 'ACCOUNT_NUMBER';
  const fail = (error: string) => ({
    ok: false as const,
    failure: { authorizer_unique_id: a.authorizer_unique_id || null, error, account_type: paymentType, row_number: rowNumber },
  });

  if (blank(a.authorizer_unique_id)) return fail('authorizer_unique_id is required');
  if (hasAccount && hasCard) return fail('send either bank account information or debit card information, not both');
  if (!hasAccount && !hasCard) return fail('bank account information (account_number, routing_number) or debit card information (debit_card_number) is required');

  if (blank(a.ssn) && blank(a.ein)) return fail('ssn or ein is required');
  if (!blank(a.ssn)) {
    const p = ssnProblem(a.ssn!);
    if (p) return fail(p);
  }
  if (!blank(a.ein)) {
    const p = einProblem(a.ein!);
    if (p) return fail(p);
  }

  if (paymentType === 'ACCOUNT_NUMBER') {
    if (blank(a.routing_number)) return fail('routing_number is required with account_number');
  } else {
    if (!opts.debitCardsApproved) return fail('debit card balance checks need prior approval for this lender');
    const p = cardProblem(a.debit_card_number!, a.expiration_month, a.expiration_year, a.cvv, new Date(opts.now));
    if (p) return fail(p);
  }
  if (!blank(a.routing_number)) {
    const p = routingNumberProblem(a.routing_number!.trim());
    if (p) return fail(p);
  }

  const zipRaw = a.address?.zip_code ?? a.zip_code;
  if (!blank(zipRaw)) {
    const p = zipProblem(zipRaw!);
    if (p) return fail(p);
  }
  let phone: string | null = null;
  if (!blank(a.phone_number)) {
    phone = toE164(a.phone_number!);
    if (!phone) return fail('phone_number must be a 10-digit US phone number');
  }
  if (a.date_of_birth) {
    const { day, month, year } = a.date_of_birth;
    const d = new Date(Date.UTC(year, month - 1, day));
    if (d.getUTCDate() !== day || d.getUTCMonth() !== month - 1 || d.getTime() > opts.now) return fail('date_of_birth is not a valid past date');
  }
  const link = a.bank_link;
  if (link && opts.bankProviders && !opts.bankProviders.includes(link.provider)) {
    const name = link.provider === 'plaid' ? 'Plaid' : 'Stripe';
    return fail(`bank_link names ${link.provider}, but this lender has no ${name} bank-data connection (POST /v1/bank_data_connections)`);
  }
  let thresholdCents: number | null = null;
  if (a.threshold_amount !== undefined && a.threshold_amount !== null) {
    thresholdCents = dollarsToCents(a.threshold_amount);
    if (thresholdCents === null) return fail('threshold_amount must be dollars with at most two decimals');
  }

  return {
    ok: true,
    value: {
      authorizerUniqueId: a.authorizer_unique_id,
      paymentType,
      routingNumber: blank(a.routing_number) ? null : a.routing_number!.trim(),
      phone,
      zip: blank(zipRaw) ? null : zipRaw!.trim(),
      metadata: a.metadata && Object.keys(a.metadata).length > 0 ? a.metadata : null,
      thresholdCents,
      rowNumber,
      sensitive: {
        ssn: blank(a.ssn) ? null : digits(a.ssn!),
        ein: blank(a.ein) ? null : digits(a.ein!),
        accountNumber: hasAccount ? a.account_number!.trim() : null,
        debitCardNumber: hasCard ? digits(a.debit_card_number!) : null,
        cvv: blank(a.cvv) ? null : a.cvv!,
        expirationMonth: a.expiration_month ?? null,
        expirationYear: a.expiration_year ?? null,
        firstName: a.first_name ?? null,
        lastName: a.last_name ?? null,
        dateOfBirth: a.date_of_birth ?? null,
        street: a.address?.street_address_line1 ?? null,
        ...(link ? { bankLink: link.provider === 'plaid' ? { provider: 'plaid' as const, accessToken: link.access_token, accountId: link.account_id } : { provider: 'stripe' as const, account: link.account } } : {}),
      },
    },
  };
}

/** The rules of a request's authorizers, in request order (row numbers from 1). */
export function validateAuthorizerList(list: AuthorizerCandidate[], opts: AuthorizerRuleOptions) {
  return validateAuthorizers(
    list.map((candidate, i) => ({ candidate, rowNumber: i + 1 })),
    opts,
  );
}

/** Validates a whole list: duplicates of one identifier fail every copy; the rest are checked alone. */
export function validateAuthorizers(
  list: { candidate: AuthorizerCandidate; rowNumber: number }[],
  opts: AuthorizerRuleOptions,
): { accepted: NormalizedAuthorizer[]; failed: FailedAuthorizer[] } {
  const counts = new Map<string, number>();
  for (const { candidate } of list) {
    const id = candidate.authorizer_unique_id;
    if (id) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const accepted: NormalizedAuthorizer[] = [];
  const failed: FailedAuthorizer[] = [];
  for (const { candidate, rowNumber } of list) {
    const id = candidate.authorizer_unique_id;
    if (id && (counts.get(id) ?? 0) > 1) {
      failed.push({
        authorizer_unique_id: id,
        error: 'authorizer_unique_id appears more than once in this request; every copy is rejected',
        account_type: !blank(candidate.debit_card_number) && blank(candidate.account_number) ? 'DEBIT_CARD' : 'ACCOUNT_NUMBER',
        row_number: rowNumber,
      });
      continue;
    }
    const r = validateAuthorizer(candidate, rowNumber, opts);
    if (r.ok) accepted.push(r.value);
    else failed.push(r.failure);
  }
  return { accepted, failed };
}
