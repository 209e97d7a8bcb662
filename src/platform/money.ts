// Money is integer cents inside the service. Dollars exist only at the edges: API fields the spec gives in
// dollars, provider answers, CSV cells. Every conversion goes through here, on the decimal text of the
// value, so no binary floating point error reaches a stored amount (1.005 dollars is not 100 cents).

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * The largest amount of money any route accepts: $10,000,000,000.00 (an uploaded payment amount, a balance
 * threshold; a collectable amount has the spec's lower limit). Far above any debit a lender makes, and low
 * enough that the sum of 9,000 of them stays an exact integer in a JavaScript number.
 */
export const MAX_AMOUNT_CENTS = 1_000_000_000_000;
export const MAX_AMOUNT_TEXT = '$10,000,000,000.00';

/**
 * A sum of cents from SQLite (exact 64-bit integer arithmetic, read as a BigInt) as a number, exactly. Sums of
 * amounts at most MAX_AMOUNT_CENTS stay under 2^53 for the first 9,000 of them; past 2^53 an exact number
 * cannot be given, and that is an error rather than a rounded total.
 */
export function exactCents(sum: bigint | number): number {
  const n = typeof sum === 'bigint' ? sum : BigInt(sum);
  if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < -BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('a sum of cents beyond 2^53 cannot be given exactly');
  return Number(n);
}

function decimalText(value: unknown): string | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    const text = String(value);
    // Exponent form appears only below 1e-6 or at 1e21 and above; neither is an amount of money here.
    return /e/i.test(text) ? null : text;
  }
  if (typeof value === 'string') return value.trim();
  return null;
}

function toCents(value: unknown, rounding: 'exact' | 'half-away'): number | null {
  const text = decimalText(value);
  if (text === null) return null;
  const m = DECIMAL.exec(text);
  if (!m) return null;
  const [, sign, whole, fraction = ''] = m;
  if (rounding === 'exact' && fraction.replace(/0+$/, '').length > 2) return null;
  const up = rounding === 'half-away' && fraction.length > 2 && fraction[2]! >= '5' ? 1 : 0;
  let n: number;
  if (whole!.length <= 13) {
    // Below 10^13 dollars every step is an integer under 2^53, so plain numbers are exact (and much
    // cheaper than BigInt on a 100,000-row file).
    n = Number(whole) * 100 + Number((fraction + '00').slice(0, 2)) + up;
  } else {
    const cents = BigInt(whole!) * 100n + BigInt((fraction + '00').slice(0, 2)) + BigInt(up);
    if (cents > BigInt(Number.MAX_SAFE_INTEGER)) return null;
    n = Number(cents);
  }
  return sign === '-' && n !== 0 ? -n : n;
}

/**
 * Dollars (a JSON number such as 1234.56, or the same as text) to integer cents, exactly: more than two
 * decimals is refused (null), as is anything that is not a plain decimal. For amounts a caller sends.
 */
export const dollarsToCents = (value: unknown): number | null => toCents(value, 'exact');

/**
 * The same, rounding digits past the cent half away from zero: for amounts read from another system (a
 * bank-data provider) that may carry more precision than cents.
 */
export const dollarsToCentsRounded = (value: unknown): number | null => {
  // A tiny number prints in exponent form; it rounds to no cents.
  if (typeof value === 'number' && Number.isFinite(value) && Math.abs(value) < 1e-6) return 0;
  return toCents(value, 'half-away');
};

/** Cents as a JSON dollars number (12345 → 123.45). Division by 100 of an integer prints exactly. */
export const centsToDollars = (cents: number): number => cents / 100;
export const centsToDollarsOrNull = (cents: number | null): number | null => (cents === null ? null : cents / 100);

/** Cents as decimal text with two places: 12345 → "123.45", -5 → "-0.05". */
export function formatCents(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/**
 * A dollars cell as people type it in a spreadsheet: `425`, `425.00`, `$1,234.56`, `1234.5`. Thousands
 * separators must group by three. Null when unreadable or with more than two decimals.
 */
export function parseDollarText(text: string): number | null {
  let s = text.trim();
  let negative = false;
  if (s.startsWith('-')) {
    negative = true;
    s = s.slice(1).trim();
  }
  if (s.startsWith('$')) s = s.slice(1).trim();
  if (s.includes(',')) {
    if (!/^\d{1,3}(,\d{3})+(\.\d*)?$/.test(s)) return null;
    s = s.replace(/,/g, '');
  }
  const cents = dollarsToCents(s);
  return cents === null ? null : negative ? -cents : cents;
}
