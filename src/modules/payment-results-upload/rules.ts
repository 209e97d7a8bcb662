import { CHANGE_CODES, type ChangeCode, type EventStatus, type ResultFileFormat } from '../../../db/schema/enums';
import { readChangeCode, readCorrection, type Correction } from '../bank-accounts/corrections';
import { normalizeReturnCode } from '../../adapters/processors/return-codes';
import { DAY_MS } from '../../platform/clock';
import { IDENTIFIER_MAX, isIdentifier } from '../../platform/fields';
import { MAX_AMOUNT_CENTS, MAX_AMOUNT_TEXT, parseDollarText } from '../../platform/money';

// How a payment-results file is read, cell by cell: header names and their aliases, blanks, amounts, the
// five date formats, statuses and their aliases, return codes, and the six row rules. Pure functions: the
// service decides what is recorded.

export const UPLOAD_STATUSES = ['settled', 'returned', 'late_return', 'pending', 'sent', 'voided', 'invalid', 'refunded', 'not_attempted'] as const;
export type UploadStatus = (typeof UPLOAD_STATUSES)[number];

const STATUS_ALIASES: Record<string, UploadStatus> = { paid: 'settled', rejected: 'returned', reversed: 'late_return' };

/** Upload statuses as payment event statuses (payments.md section 7). */
export const EVENT_STATUS_OF: Record<UploadStatus, EventStatus> = {
  settled: 'settled',
  returned: 'returned',
  late_return: 'late_returned',
  pending: 'processing',
  sent: 'processing',
  voided: 'voided',
  invalid: 'invalid',
  refunded: 'refunded',
  not_attempted: 'not_attempted',
};

/** Statuses without an outcome date: they never replace a settled or returned outcome. */
export const UNDATED: ReadonlySet<UploadStatus> = new Set(['pending', 'sent', 'voided', 'invalid', 'refunded', 'not_attempted']);

export type Column =
  | 'authorizer_unique_id'
  | 'reference'
  | 'payment_amount'
  | 'payment_status'
  | 'submitted_at'
  | 'settled_at'
  | 'returned_at'
  | 'return_code'
  | 'batch_id'
  | 'change_code'
  | 'corrected_data';

const ALIASES: Record<string, Column> = {
  authorizer_unique_id: 'authorizer_unique_id',
  authorizer_id: 'authorizer_unique_id',
  reference: 'reference',
  payment_reference: 'reference',
  payment_amount: 'payment_amount',
  amount: 'payment_amount',
  payment_status: 'payment_status',
  outcome: 'payment_status',
  status: 'payment_status',
  submitted_at: 'submitted_at',
  payment_date: 'submitted_at',
  submitted: 'submitted_at',
  settled_at: 'settled_at',
  settlement_date: 'settled_at',
  settled_date: 'settled_at',
  returned_at: 'returned_at',
  return_date: 'returned_at',
  returned_date: 'returned_at',
  return_code: 'return_code',
  return_reason: 'return_code',
  batch_id: 'batch_id',
  // Notifications of Change, as the documented columns and as processors' NOC reports head them.
  change_code: 'change_code',
  noc_code: 'change_code',
  noc: 'change_code',
  correction_code: 'change_code',
  notification_of_change: 'change_code',
  corrected_data: 'corrected_data',
  corrected_information: 'corrected_data',
  corrected_info: 'corrected_data',
  corrected_value: 'corrected_data',
  correction: 'corrected_data',
  correction_data: 'corrected_data',
};

/** Case-insensitive; spaces and punctuation read as underscores. */
export const normalizeHeader = (h: string): string =>
  h.replace(/^\uFEFF/, '').trim().toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '');

export const EXPORT_COLUMNS = ['authorizer_id', 'batch_id', 'institution', 'phone', 'zip', 'balance', 'status', 'creator', 'timestamp'];

/**
 * The columns of a header. A balance export with payment columns added (the nine fixed columns and a
 * payment_status column) is `annotated_export`: its own Status column is the balance check's and is ignored.
 */
export function readHeader(header: string[]): { format: UploadFormat; columns: (Column | null)[] } {
  const names = header.map(normalizeHeader);
  const annotated = EXPORT_COLUMNS.every((c) => names.includes(c)) && names.includes('payment_status');
  // A processor's report of Notifications of Change: a change code column and no status column.
  const changesOnly = !annotated && names.some((n) => ALIASES[n] === 'change_code') && !names.some((n) => ALIASES[n] === 'payment_status');
  const seen = new Set<Column>();
  const columns = names.map((n) => {
    if (annotated && n === 'status') return null;
    const c = ALIASES[n] ?? null;
    if (!c || seen.has(c)) return null; // the first column of a name wins
    seen.add(c);
    return c;
  });
  return { format: annotated ? 'annotated_export' : changesOnly ? 'notifications_of_change' : 'generic', columns };
}

/** How a file is read: results (generic, or a balance export annotated with them), or a report of Notifications of Change. */
export type UploadFormat = ResultFileFormat;

/** The longest corrected data read: Nacha's field is 29 characters; an export may space it out. */
const CORRECTED_MAX = 64;

/** A Notification of Change of a row: the borrower or payment it names, its code and its corrected data. */
export interface ParsedChange {
  row: number;
  authorizerUniqueId: string | null;
  reference: string | null;
  code: ChangeCode;
  text: string;
  correction: Correction;
}

/**
 * A row's Notification of Change (its change_code and corrected_data): every reason it cannot be read, at
 * `severity` (an error in a report of changes; a warning in a results row, whose outcome is still recorded).
 */
export function checkChange(r: RawRow, severity: RowProblem['severity']): { change: ParsedChange | null; problems: RowProblem[] } {
  const problems: RowProblem[] = [];
  const say = (reason: string) => problems.push({ row: r.row, rule: 1, reason, severity });
  const v = r.values;
  const aid = v.authorizer_unique_id || null;
  const reference = v.reference || null;
  if (!aid && !reference) say('authorizer_unique_id or reference is required');
  for (const col of ['authorizer_unique_id', 'reference'] as const) {
    if (v[col] && !isIdentifier(v[col])) say(`${col} is not 1 to ${IDENTIFIER_MAX} characters of well-formed Unicode text without control characters`);
  }
  const code = v.change_code ? readChangeCode(v.change_code) : null;
  if (!v.change_code) say('change_code is missing');
  else if (!code) say(`change_code is not a Notification of Change code the service reads (${CHANGE_CODES.join(', ')})`);
  const text = v.corrected_data ?? '';
  let correction: Correction | null = null;
  if (text.length > CORRECTED_MAX) say(`corrected_data is longer than ${CORRECTED_MAX} characters`);
  else if (code && code !== 'C13' && !text) say('corrected_data is missing');
  else if (code) {
    const read = readCorrection(code, text);
    if (read.ok) correction = read.correction;
    else say(read.problem);
  }
  const wording = severity === 'warning' ? problems.map((p) => ({ ...p, reason: `${p.reason}; the Notification of Change was not recorded` })) : problems;
  if (problems.length > 0 || !code || !correction) return { change: null, problems: wording };
  return { change: { row: r.row, authorizerUniqueId: aid, reference, code, text, correction }, problems };
}

/** Cells holding #N/A, N/A or - read as blank. */
export const cell = (v: string | undefined): string => {
  const t = (v ?? '').trim();
  if (t.length > 4) return t;
  return t === '#N/A' || t.toUpperCase() === 'N/A' || t === '-' ? '' : t;
};

/** A pure reading of a cell remembered for the next rows: a file repeats a few statuses, codes and dates over thousands of rows. Bounded. */
function remembered<T>(read: (text: string) => T): (text: string) => T {
  const seen = new Map<string, T>();
  return (text) => {
    let v = seen.get(text);
    if (v !== undefined || seen.has(text)) return v as T;
    v = read(text);
    if (seen.size >= 4096) seen.clear();
    seen.set(text, v);
    return v;
  };
}

export const readStatus = remembered(statusOf);

function statusOf(text: string): UploadStatus | null {
  const k = text.trim().toLowerCase().replace(/[\s-]+/g, '_');
  if ((UPLOAD_STATUSES as readonly string[]).includes(k)) return k as UploadStatus;
  return STATUS_ALIASES[k] ?? null;
}

/** Dollars as spreadsheets write them; more than two decimals, negatives and zero are unreadable here. */
export function readAmount(text: string): number | null {
  const cents = parseDollarText(text);
  return cents !== null && cents > 0 && cents <= MAX_AMOUNT_CENTS ? cents : null;
}

const utc = (y: number, m: number, d: number, hh = 0, mm = 0): number | null => {
  const t = Date.UTC(y, m - 1, d, hh, mm);
  const dt = new Date(t);
  return dt.getUTCFullYear() === y && dt.getUTCMonth() === m - 1 && dt.getUTCDate() === d && hh < 24 && mm < 60 ? t : null;
};

/** YYYY-MM-DD, MM/DD/YYYY, MM/DD/YY, MM/DD/YYYY HH:MM or ISO 8601; without a time zone, UTC. */
export const readDate = remembered(parseDate);

function parseDate(text: string): number | null {
  const s = text.trim();
  let m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (m) return utc(+m[1]!, +m[2]!, +m[3]!);
  m = /^(\d{1,2})\/(\d{1,2})\/(\d{4}|\d{2})(?: (\d{1,2}):(\d{2}))?$/.exec(s);
  if (m) {
    const year = m[3]!.length === 2 ? 2000 + +m[3]! : +m[3]!;
    return utc(year, +m[1]!, +m[2]!, m[4] ? +m[4] : 0, m[5] ? +m[5] : 0);
  }
  m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(s);
  if (m) {
    if (utc(+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!) === null) return null;
    const t = Date.parse(m[7] ? s : `${s}Z`);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

/** R01, r01, R1, `R01 - Insufficient Funds`; the words `insufficient funds` (R01) and `payment stopped` (R08). */
export const readReturnCode = remembered(returnCodeOf);

function returnCodeOf(text: string): string | null {
  const t = text.trim();
  if (t === '' || t === '0') return null;
  const code = normalizeReturnCode(t);
  if (code && code !== 'R00') return code;
  const words = t.toLowerCase().replace(/\s+/g, ' ');
  if (words === 'insufficient funds') return 'R01';
  if (words === 'payment stopped') return 'R08';
  return null;
}

export interface RawRow {
  row: number;
  values: Partial<Record<Column, string>>;
}

export interface ParsedRow {
  row: number;
  authorizerUniqueId: string | null;
  reference: string | null;
  status: UploadStatus;
  amountCents: number;
  submittedAt: number;
  settledAt: number | null;
  returnedAt: number | null;
  returnCode: string | null;
  batchId: string | null;
}

export interface RowProblem {
  row: number;
  rule: number;
  reason: string;
  severity: 'error' | 'warning';
}

/** Rules 1 to 5 on one row: every reason, not the first one. A row with no error comes back parsed. */
export function checkRow(r: RawRow, now: number): { parsed: ParsedRow | null; problems: RowProblem[] } {
  const problems: RowProblem[] = [];
  const err = (rule: number, reason: string) => problems.push({ row: r.row, rule, reason, severity: 'error' });
  const v = r.values;
  const aid = v.authorizer_unique_id || null;
  const reference = v.reference || null;
  if (!aid && !reference) err(1, 'authorizer_unique_id or reference is required');
  // The identifier rule of every other route (platform/fields.ts), for what is stored and shown again: the
  // length is checked first, so a cell of megabytes costs no more than its length. Never quoted back.
  for (const col of ['authorizer_unique_id', 'reference', 'batch_id'] as const) {
    if (v[col] && !isIdentifier(v[col])) err(1, `${col} is not 1 to ${IDENTIFIER_MAX} characters of well-formed Unicode text without control characters`);
  }

  const amount = v.payment_amount ? readAmount(v.payment_amount) : null;
  if (!v.payment_amount) err(1, 'payment_amount is missing');
  else if (amount === null) err(1, `payment_amount is not a positive amount in dollars with at most two decimals, at most ${MAX_AMOUNT_TEXT}`);

  let status: UploadStatus | null = null;
  if (!v.payment_status) err(1, 'payment_status is missing');
  else {
    status = readStatus(v.payment_status);
    if (!status) err(5, `payment_status is not one of ${UPLOAD_STATUSES.join(', ')} (or paid, rejected, reversed)`);
  }

  const date = (col: 'submitted_at' | 'settled_at' | 'returned_at') => {
    if (!v[col]) return null;
    const t = readDate(v[col]!);
    if (t === null) err(1, `${col} is not a date (YYYY-MM-DD, MM/DD/YYYY, MM/DD/YY, MM/DD/YYYY HH:MM or ISO 8601)`);
    return t;
  };
  const submittedAt = date('submitted_at');
  if (!v.submitted_at) err(1, 'submitted_at is missing');
  const settledAt = date('settled_at');
  const returnedAt = date('returned_at');

  let returnCode: string | null = v.return_code || null;
  if (status === 'settled') {
    if (!v.settled_at) err(1, 'settled_at is required on a settled row');
    if (v.return_code) err(4, 'a settled row has no return code');
  } else if (status === 'returned' || status === 'late_return') {
    if (!v.returned_at) err(1, `returned_at is required on a ${status} row`);
    returnCode = v.return_code ? readReturnCode(v.return_code) : null;
    if (!v.return_code) err(1, `return_code is required on a ${status} row`);
    else if (!returnCode) err(1, 'return_code is not an ACH return code (such as R01, or "insufficient funds")');
  }

  const tomorrow = now + DAY_MS;
  for (const [name, t] of [['settled_at', settledAt], ['returned_at', returnedAt]] as const) {
    if (t === null) continue;
    if (submittedAt !== null && t < submittedAt) err(2, `${name} is earlier than submitted_at`);
    if (t > tomorrow) err(2, `${name} is more than one day in the future`);
  }
  if (status === 'late_return' && settledAt !== null && returnedAt !== null && returnedAt < settledAt) err(3, 'returned_at is earlier than settled_at');

  if (problems.length > 0) return { parsed: null, problems };
  return {
    parsed: {
      row: r.row,
      authorizerUniqueId: aid,
      reference,
      status: status!,
      amountCents: amount!,
      submittedAt: submittedAt!,
      settledAt,
      returnedAt,
      returnCode,
      batchId: v.batch_id || null,
    },
    problems,
  };
}

/** The key of a row: its reference, else its borrower, amount and date. */
export const keyOf = (p: ParsedRow): string =>
  p.reference ?? `UPL-${p.authorizerUniqueId}-${p.amountCents}-${new Date(p.submittedAt).toISOString().slice(0, 10)}`;

/** Two rows say the same about a payment. */
export const sameRow = (a: ParsedRow, b: ParsedRow): boolean =>
  a.authorizerUniqueId === b.authorizerUniqueId &&
  a.status === b.status &&
  a.amountCents === b.amountCents &&
  a.submittedAt === b.submittedAt &&
  a.settledAt === b.settledAt &&
  a.returnedAt === b.returnedAt &&
  a.returnCode === b.returnCode;
