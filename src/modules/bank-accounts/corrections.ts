import { CHANGE_CODES, type AccountType, type ChangeCode } from '../../../db/schema/enums';
import { routingNumberProblem } from '../../adapters/routing/aba';
import { canonicalAccount } from './fingerprint';

// A Notification of Change as a receiving bank words it: its code and its corrected data (Nacha Operating Rules,
// Appendix Five, the Addenda Record's Corrected Data field), read as a results file, the bank-data source or a
// processor gives it. Pure functions: what the service does with one is changes.ts.

/** What a correction changes of the account, read from its corrected data. */
export interface Correction {
  routing?: string;
  accountNumber?: string;
  accountType?: AccountType;
  /** C09: the Individual Identification Number (the service sends none of its own: recorded only). */
  individualId?: string;
}

/** The codes whose correction changes the details a debit is sent with; C09 and C13 change nothing the service sends. */
export const APPLIED_CODES: ReadonlySet<ChangeCode> = new Set(['C01', 'C02', 'C03', 'C05', 'C06', 'C07']);
/** The codes that change the routing or account number: validation evidence older than the change no longer counts. */
export const NUMBER_CODES: ReadonlySet<ChangeCode> = new Set(['C01', 'C02', 'C03', 'C06', 'C07']);

/** Nacha's transaction codes of a debit or credit to a checking (2x) or savings (3x) account. */
function accountTypeOfCode(code: string): AccountType | null {
  const t = code.trim().toLowerCase();
  if (t === 'checking' || t === 'dda') return 'checking';
  if (t === 'savings' || t === 'sav') return 'savings';
  if (/^2[2-9]$/.test(t)) return 'checking';
  if (/^3[2-9]$/.test(t)) return 'savings';
  return null;
}

/**
 * A change code as written: `C01`, `c1`, `C01 - Incorrect DFI Account Number`, `NOC C01`; null when it is not
 * one the service reads (C08 and the IAT codes C14 and above are not).
 */
export function readChangeCode(text: string): ChangeCode | null {
  const m = /^(?:noc\s*[-:]?\s*)?c0?(\d{1,2})(?![0-9])/i.exec(text.trim());
  if (!m) return null;
  const code = `C${m[1]!.padStart(2, '0')}`;
  return (CHANGE_CODES as readonly string[]).includes(code) ? (code as ChangeCode) : null;
}

/** An account number as a correction gives it: 1 to 17 letters, digits or hyphens (Nacha's DFI Account Number), canonical. */
function accountOf(text: string | undefined): string | null {
  if (text === undefined) return null;
  const a = canonicalAccount(text.trim());
  return /^[A-Za-z0-9]{1,17}$/.test(a) ? a : null;
}

const routingOf = (text: string | undefined): string | null => (text !== undefined && routingNumberProblem(text.trim()) === null ? text.trim() : null);

/**
 * The parts of corrected data: separated by spaces (Nacha pads the fields with spaces), slashes, bars,
 * semicolons or commas, as exports write them; one part when it is written as the field's fixed positions.
 */
const partsOf = (text: string): string[] => text.trim().split(/\s*[\/|;,]\s*|\s+/).filter((p) => p !== '');

/**
 * What a Notification of Change corrects, or why its corrected data cannot be read. Linear in the text, which
 * is bounded by the caller (a cell of at most 64 characters).
 */
export function readCorrection(code: ChangeCode, text: string): { ok: true; correction: Correction } | { ok: false; problem: string } {
  const parts = partsOf(text);
  const bad = (what: string) => ({ ok: false as const, problem: `${code}'s corrected data is not ${what}` });
  switch (code) {
    case 'C01': {
      const a = accountOf(parts.join(''));
      return a ? { ok: true, correction: { accountNumber: a } } : bad('an account number (1 to 17 letters or digits)');
    }
    case 'C02': {
      const r = routingOf(parts.join(''));
      return r ? { ok: true, correction: { routing: r } } : bad('a routing number (9 digits passing the ABA checksum)');
    }
    case 'C03': {
      const [r, a] = parts.length === 1 ? [parts[0]!.slice(0, 9), parts[0]!.slice(9)] : parts.length === 2 ? parts : [];
      const routing = routingOf(r);
      const accountNumber = accountOf(a);
      return routing && accountNumber ? { ok: true, correction: { routing, accountNumber } } : bad('a routing number and an account number');
    }
    case 'C05': {
      const t = parts.length === 1 ? accountTypeOfCode(parts[0]!) : null;
      return t ? { ok: true, correction: { accountType: t } } : bad('a transaction code (22, 27, 32, 37…) or checking/savings');
    }
    case 'C06': {
      const [a, t] = parts.length === 1 ? [parts[0]!.slice(0, -2), parts[0]!.slice(-2)] : parts.length === 2 ? parts : [];
      const accountNumber = accountOf(a);
      const accountType = t === undefined ? null : accountTypeOfCode(t);
      return accountNumber && accountType ? { ok: true, correction: { accountNumber, accountType } } : bad('an account number and a transaction code');
    }
    case 'C07': {
      const [r, a, t] = parts.length === 1 ? [parts[0]!.slice(0, 9), parts[0]!.slice(9, -2), parts[0]!.slice(-2)] : parts.length === 3 ? parts : [];
      const routing = routingOf(r);
      const accountNumber = accountOf(a);
      const accountType = t === undefined ? null : accountTypeOfCode(t);
      return routing && accountNumber && accountType
        ? { ok: true, correction: { routing, accountNumber, accountType } }
        : bad('a routing number, an account number and a transaction code');
    }
    case 'C09': {
      const id = text.trim();
      return id.length >= 1 && id.length <= 22 ? { ok: true, correction: { individualId: id } } : bad('an individual identification number (1 to 22 characters)');
    }
    case 'C13':
      // The addenda format: nothing the service sends; the text is kept as it came.
      return { ok: true, correction: {} };
  }
}
