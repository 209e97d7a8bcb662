// How the portal writes values for people: dates in words in UTC (and relative when recent), dollars with
// separators, and bidirectional control characters made visible so a stored value cannot reorder what is
// shown around it (`‮exe.txt` must not read as `txt.exe`).

import { dollarsToCentsRounded } from '../../../platform/money';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number) => String(n).padStart(2, '0');

/** "23 Nov 2026, 14:38 UTC". */
export function dateWords(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}, ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}

/** "23 Nov 2026": a day, for charts and day columns. */
export function dayWords(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
}

const UNITS: [limitMs: number, unitMs: number, name: string][] = [
  [60_000, 1_000, 'second'],
  [3_600_000, 60_000, 'minute'],
  [86_400_000, 3_600_000, 'hour'],
  [7 * 86_400_000, 86_400_000, 'day'],
];

/** "3 minutes ago", "in 2 hours", "just now": within a week of now; null further away (the date says it). */
export function relative(ms: number, now: number): string | null {
  const diff = ms - now;
  const abs = Math.abs(diff);
  if (abs < 10_000) return 'just now';
  for (const [limit, unit, name] of UNITS) {
    if (abs < limit) {
      const n = Math.floor(abs / unit);
      const words = `${n} ${name}${n === 1 ? '' : 's'}`;
      return diff < 0 ? `${words} ago` : `in ${words}`;
    }
  }
  return null;
}

/** Integer cents as "$1,234.56" (and "-$5.00"); a BigInt exactly, at any size. */
export function dollars(cents: number | bigint): string {
  const c = typeof cents === 'bigint' ? cents : BigInt(Math.round(cents));
  const sign = c < 0n ? '-' : '';
  const abs = c < 0n ? -c : c;
  const whole = (abs / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}$${whole}.${pad(Number(abs % 100n))}`;
}

/**
 * Dollars as the API answers them (123.45) as "$123.45": turned into cents by the money helper, so dollars
 * become cents in one place.
 */
export function dollarAmount(amount: number): string {
  const cents = dollarsToCentsRounded(amount);
  return cents === null ? '—' : dollars(cents);
}

/** A count with separators: 12,345. */
export const count = (n: number): string => n.toLocaleString('en-US');

/** A rate as a percentage with two decimals: 0.0087 → "0.87%". */
export const percent = (rate: number): string => `${(rate * 100).toFixed(2)}%`;

// LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, and the marks LRM, RLM, ALM.
const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;

/**
 * Every bidirectional control character in the text of a rendered page written as its code point
 * ("[U+202E]"), so it shows and reorders nothing. Text only: tags and their attributes are left as they are
 * (an attribute value escapes `<`, so a `<` always opens a tag). One pass over the page.
 */
export function showBidiControls(html: string): string {
  if (!BIDI.test(html)) return html;
  BIDI.lastIndex = 0;
  let out = '';
  let i = 0;
  while (i < html.length) {
    const open = html.indexOf('<', i);
    const textEnd = open === -1 ? html.length : open;
    out += html.slice(i, textEnd).replace(BIDI, (c) => `[U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}]`);
    if (open === -1) break;
    // The tag runs to the first `>` outside a quoted attribute value.
    let j = open + 1;
    let quote: string | null = null;
    for (; j < html.length; j++) {
      const c = html[j]!;
      if (quote) {
        if (c === quote) quote = null;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '>') break;
    }
    out += html.slice(open, j + 1);
    i = j + 1;
  }
  return out;
}
