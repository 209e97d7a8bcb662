// A borrower's account activity as a bank keeps it, for the fakes' transaction histories: payroll credits on a
// schedule (each paid the business day before a weekend or holiday, as payroll is) and ordinary debits between.
import { isBusinessDay } from '../../src/platform/business-days';

const D = 86_400_000;

export interface PayPattern {
  /** Days between paydays (7 weekly, 14 biweekly). */
  everyDays: number;
  /** One payday of the pattern (YYYY-MM-DD); the others are every `everyDays` from it, both ways. */
  payday: string;
  /** The pay, in cents. */
  payCents: number;
  /** An ordinary debit every this many days (groceries, bills), in cents; none when 0. Default 3 days, $42.17. */
  debitEveryDays?: number;
  debitCents?: number;
  /** The last day of the history (YYYY-MM-DD or epoch ms); default today. The history goes 90 days back from it. */
  until?: string | number;
  /** How many days back from `until` (default 90). */
  days?: number;
}

export interface PatternTransaction {
  /** YYYY-MM-DD. */
  date: string;
  /** Cents, positive for money in, negative for money out. */
  amountCents: number;
  name: string;
}

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The pattern's transactions, oldest first. */
export function patternTransactions(p: PayPattern): PatternTransaction[] {
  const untilMs = p.until === undefined ? Date.now() : typeof p.until === 'number' ? p.until : Date.parse(`${p.until}T00:00:00Z`);
  const last = untilMs - (untilMs % D);
  const first = last - (p.days ?? 90) * D;
  const anchor = Date.parse(`${p.payday}T00:00:00Z`);
  const step = p.everyDays * D;
  const out: PatternTransaction[] = [];
  for (let nominal = anchor + Math.floor((first - anchor) / step) * step; nominal <= last + 4 * D; nominal += step) {
    let paid = nominal;
    while (!isBusinessDay(paid)) paid -= D;
    if (paid >= first && paid <= last) out.push({ date: iso(paid), amountCents: p.payCents, name: 'ACME PAYROLL DIRECT DEP' });
  }
  const every = p.debitEveryDays ?? 3;
  if (every > 0) for (let d = first + D; d <= last; d += every * D) out.push({ date: iso(d), amountCents: -(p.debitCents ?? 42_17), name: 'CORNER GROCERY' });
  return out.sort((a, b) => a.date.localeCompare(b.date));
}
