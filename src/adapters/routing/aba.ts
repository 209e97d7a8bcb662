// ABA routing transit numbers: nine digits, a Federal Reserve prefix, and a weighted check digit.
// The value is kept as a string throughout: leading zeros are part of the number (Boston district
// numbers start with 0), and a number that went through a spreadsheet or a JSON number loses them.

const WEIGHTS = [3, 7, 1, 3, 7, 1, 3, 7, 1] as const;

// First two digits: 00 is the U.S. Government, 01–12 the regular Federal Reserve districts, 21–32 thrift
// institutions, 61–72 electronic transactions, 80 traveler's cheques. Anything else is not assigned.
const PREFIX_RANGES: readonly (readonly [number, number])[] = [
  [0, 0],
  [1, 12],
  [21, 32],
  [61, 72],
  [80, 80],
];

const PREFIX_LIST = '00, 01–12, 21–32, 61–72 or 80';

/** True when `s` is nine digits whose weighted sum 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) is a multiple of 10. */
export function isValidAbaChecksum(s: string): boolean {
  if (!/^\d{9}$/.test(s)) return false;
  let sum = 0;
  for (let i = 0; i < 9; i++) sum += WEIGHTS[i] * (s.charCodeAt(i) - 48);
  return sum % 10 === 0;
}

/** The check digit (d9) that makes the first eight digits a valid routing number. */
export function abaCheckDigit(first8: string): number {
  if (!/^\d{8}$/.test(first8)) throw new RangeError('abaCheckDigit needs exactly 8 digits');
  let sum = 0;
  for (let i = 0; i < 8; i++) sum += WEIGHTS[i] * (first8.charCodeAt(i) - 48);
  return (10 - (sum % 10)) % 10;
}

export function hasValidAbaPrefix(s: string): boolean {
  if (!/^\d{2}/.test(s)) return false;
  const prefix = Number(s.slice(0, 2));
  return PREFIX_RANGES.some(([lo, hi]) => prefix >= lo && prefix <= hi);
}

/**
 * Null when `s` is a usable routing number, otherwise a message a lender can act on. The number itself is
 * not echoed back, so the message is safe to log and to return in a per-authorizer error.
 */
export function routingNumberProblem(s: string): string | null {
  if (typeof s !== 'string' || s.length === 0) return 'Routing number is required (9 digits)';
  if (!/^\d+$/.test(s)) return 'Routing number must contain digits only (exactly 9 digits, no spaces or dashes)';
  if (s.length === 8) {
    return (
      'Routing number has 8 digits but must have exactly 9; a leading zero was probably lost ' +
      '(send it as text, not as a number, and keep the leading 0)'
    );
  }
  if (s.length !== 9) return `Routing number must be exactly 9 digits (got ${s.length})`;
  if (!hasValidAbaPrefix(s)) {
    return `Routing number starts with ${s.slice(0, 2)}, which is not a valid routing prefix (expected ${PREFIX_LIST})`;
  }
  if (!isValidAbaChecksum(s)) return 'Routing number fails the ABA checksum; check it for a mistyped digit';
  return null;
}
