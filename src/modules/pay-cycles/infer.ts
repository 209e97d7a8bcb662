import { DAY_MS } from '../../platform/clock';
import { isBusinessDay } from '../../platform/business-days';

// Pay-cycle inference: from a borrower's income deposits (credits of a linked account's transactions, or the
// rises of its day-over-day balances), how often it is paid and when next, with a confidence. Pure: the same
// history gives the same answer, so it is property-tested and replayed in the cadence benchmark.
//
// Each hypothesis (weekly, biweekly, semimonthly, monthly) is a schedule of nominal paydays, each moved to the
// business day before when it falls on a weekend or a Federal Reserve holiday, as payroll does. A hypothesis
// scores how well its schedule and the deposits agree within a day: the share of deposits it explains and the
// share of its paydays that had a deposit (their harmonic mean). The best one wins; a biweekly schedule that
// lands on semimonthly dates (or the other way round) keeps the second as an alternative. A payday counts as
// missed once the day after it has come without a deposit; two missed since the last deposit mean the cycle
// changed: it is `irregular` until it is learned again. The next payday is the first one not yet paid: once
// its deposit has been seen (within a day of it), the one after.

export const FREQUENCIES = ['weekly', 'biweekly', 'semimonthly', 'monthly', 'irregular', 'unknown'] as const;
export type Frequency = (typeof FREQUENCIES)[number];
export type RegularFrequency = Exclude<Frequency, 'irregular' | 'unknown'>;

/** A credit: the UTC day it posted (any time of that day) and its amount. */
export interface Deposit {
  at: number;
  amountCents: number;
}

export interface PayCycle {
  frequency: Frequency;
  /** The next payday on or after the day asked about (UTC midnight); null when the cycle is not known. */
  nextPayday: number | null;
  /** 0 to 1: how well the schedule explains the history, times how much history there is. */
  confidence: number;
  /** The income deposits the cycle was learned from. */
  deposits: number;
  /** A second schedule that explains the history almost as well (biweekly against semimonthly). */
  alternative?: { frequency: RegularFrequency; nextPayday: number };
  /** Whether a deposit of the history came the day before its payday: the next may land early too. */
  landsEarly?: boolean;
}

/** How much history is read: three months, as lenders' links give. */
export const HISTORY_DAYS = 120;
/** Fewer income deposits than this: `unknown`. */
export const MIN_DEPOSITS = 3;
/** A hypothesis explaining less than this is no cycle: `irregular`. */
const MIN_SCORE = 0.7;
/** Two schedules within this of each other both stand. */
const AMBIGUITY = 0.1;
/**
 * Deposits that make a full history, per frequency: six paydays, or three for a monthly cycle (three months is
 * all a linked account's history holds, and as long a span as six biweekly paydays).
 */
const FULL_HISTORY: Record<RegularFrequency, number> = { weekly: 6, biweekly: 6, semimonthly: 6, monthly: 3 };
/** Credits below this are not pay (transfers, refunds). */
const MIN_PAY_CENTS = 2_000;
/** Pay amounts vary (hours, overtime): deposits within this ratio of each other are one income. */
const PAY_BAND = 1.6;

const dayOf = (t: number): number => Math.floor(t / DAY_MS);
const msOf = (day: number): number => day * DAY_MS;

/** The business day on or before a nominal payday (payroll is paid early, not late). */
function paidOn(day: number): number {
  let d = day;
  while (!isBusinessDay(msOf(d))) d--;
  return d;
}

/**
 * The income among credits: the largest group of credits of similar amounts (within PAY_BAND of each other),
 * credits of one day added up. Sorting makes it O(n log n); a window over sorted amounts finds the group.
 */
export function incomeDeposits(credits: readonly Deposit[]): Deposit[] {
  const byDay = new Map<number, number>();
  for (const c of credits) if (c.amountCents >= MIN_PAY_CENTS) byDay.set(dayOf(c.at), (byDay.get(dayOf(c.at)) ?? 0) + c.amountCents);
  const days = [...byDay].map(([day, amountCents]) => ({ day, amountCents })).sort((a, b) => a.amountCents - b.amountCents);
  if (days.length === 0) return [];
  let best = { from: 0, to: 0 };
  for (let from = 0, to = 0; to < days.length; to++) {
    while (days[to]!.amountCents > days[from]!.amountCents * PAY_BAND) from++;
    // The most members; on a tie, the larger amounts (pay, not a repeated small transfer).
    if (to - from >= best.to - best.from) best = { from, to };
  }
  return days
    .slice(best.from, best.to + 1)
    .map((d) => ({ at: msOf(d.day), amountCents: d.amountCents }))
    .sort((a, b) => a.at - b.at);
}

/**
 * Rises of a balance from one read to the next, as credits (a source without transactions): a rise larger than
 * the income threshold on the day of the later read.
 */
export function depositsFromBalances(reads: readonly { at: number; balanceCents: number }[]): Deposit[] {
  const sorted = [...reads].sort((a, b) => a.at - b.at);
  const out: Deposit[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const rise = sorted[i]!.balanceCents - sorted[i - 1]!.balanceCents;
    if (rise >= MIN_PAY_CENTS) out.push({ at: sorted[i]!.at, amountCents: rise });
  }
  return out;
}

/** A schedule: the paid days (business days) from `from` to `to`, inclusive, in order. */
type Schedule = (from: number, to: number) => number[];

const periodic =
  (period: number, phase: number): Schedule =>
  (from, to) => {
    const out: number[] = [];
    const start = from - 2;
    const first = start + ((((phase - start) % period) + period) % period);
    for (let d = first; d <= to + 3; d += period) {
      const paid = paidOn(d);
      if (paid >= from && paid <= to) out.push(paid);
    }
    return out;
  };

/** Nominal days of the month (1 to 31, clamped to the month; 0: the month's last day). */
const monthly =
  (daysOfMonth: number[]): Schedule =>
  (from, to) => {
    const out: number[] = [];
    const start = new Date(msOf(from - 3));
    for (let y = start.getUTCFullYear(), m = start.getUTCMonth(); ; m++) {
      const monthStart = dayOf(Date.UTC(y, m, 1));
      if (monthStart > to + 3) break;
      const last = dayOf(Date.UTC(y, m + 1, 0));
      for (const dom of daysOfMonth) {
        const nominal = dom === 0 ? last : Math.min(monthStart + dom - 1, last);
        const paid = paidOn(nominal);
        if (paid >= from && paid <= to) out.push(paid);
      }
    }
    return out.sort((a, b) => a - b);
  };

interface Hypothesis {
  frequency: RegularFrequency;
  schedule: Schedule;
}

/**
 * How well a schedule explains the deposit days (sorted) between the first and the last: `s` from 0 to 1, and
 * `off`, the days its matched paydays are off by in all (the smaller wins a tie: the 13th over the 12th).
 */
function score(schedule: Schedule, days: readonly number[]): { s: number; off: number; early: number } {
  const first = days[0]!;
  const last = days[days.length - 1]!;
  const paydays = schedule(first - 1, last + 1);
  if (paydays.length === 0) return { s: 0, off: 0, early: 0 };
  // Each payday explains at most one deposit, within a day either way (both lists are sorted).
  let matched = 0;
  let off = 0;
  let early = 0;
  for (let i = 0, j = 0; i < days.length && j < paydays.length; ) {
    const d = days[i]! - paydays[j]!;
    if (Math.abs(d) <= 1) {
      matched++;
      off += Math.abs(d);
      if (d < 0) early++;
      i++;
      j++;
    } else if (d < 0) i++;
    else j++;
  }
  const precision = matched / days.length;
  const recall = matched / paydays.length;
  return { s: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall), off, early };
}

const better = (a: { s: number; off: number }, b: { s: number; off: number }): number => b.s - a.s || a.off - b.off;

/** The most common phase (days since the epoch, mod period) of the deposits, counting a day's neighbours. */
function phaseOf(days: readonly number[], period: number): number {
  const counts = new Array<number>(period).fill(0);
  for (const d of days) for (const k of [-1, 0, 1]) counts[(((d + k) % period) + period) % period]! += k === 0 ? 2 : 1;
  let best = 0;
  for (let p = 1; p < period; p++) if (counts[p]! > counts[best]!) best = p;
  return best;
}

function hypotheses(days: readonly number[]): Hypothesis[] {
  const out: Hypothesis[] = [
    { frequency: 'weekly', schedule: periodic(7, phaseOf(days, 7)) },
    { frequency: 'biweekly', schedule: periodic(14, phaseOf(days, 14)) },
  ];
  // Semimonthly: the 1st and 16th through the 15th and the last day, and the 15th with the last day.
  for (let a = 1; a <= 15; a++) out.push({ frequency: 'semimonthly', schedule: monthly([a, a === 15 ? 0 : a + 15]) });
  // Monthly: any day of the month, or the last.
  for (let a = 0; a <= 31; a++) out.push({ frequency: 'monthly', schedule: monthly([a]) });
  return out;
}

const unknown = (deposits: number): PayCycle => ({ frequency: 'unknown', nextPayday: null, confidence: 0, deposits });

/**
 * The pay cycle of a borrower as of a day, from its credits (any order; the last HISTORY_DAYS before `asOf`
 * are read). `asOf` is a time; the next payday is on or after its day.
 */
export function inferPayCycle(credits: readonly Deposit[], asOf: number): PayCycle {
  const today = dayOf(asOf);
  const income = incomeDeposits(credits.filter((c) => dayOf(c.at) <= today && dayOf(c.at) > today - HISTORY_DAYS));
  const days = income.map((d) => dayOf(d.at));
  if (days.length < MIN_DEPOSITS) return unknown(days.length);
  const scored = hypotheses(days)
    .map((h) => ({ h, ...score(h.schedule, days) }))
    // The highest score, then the closest; on a tie of both, the more frequent schedule (listed first).
    .sort(better);
  const best = scored[0]!;
  if (best.s < MIN_SCORE) return { frequency: 'irregular', nextPayday: null, confidence: round(1 - best.s), deposits: days.length };
  const last = days[days.length - 1]!;
  // Predicted paydays after the last deposit whose next day has come without one: two, and it changed.
  const missed = best.h.schedule(last + 2, today - 1).length;
  if (missed >= 2) return { frequency: 'irregular', nextPayday: null, confidence: round(0.5 * best.s), deposits: days.length };
  // The first payday not yet paid: on or after today, and not one the last deposit (a day either way) paid.
  const next = (h: Hypothesis) => h.schedule(Math.max(today, last + 2), today + 62)[0]!;
  const confidence = round(best.s * Math.min(1, days.length / FULL_HISTORY[best.h.frequency]));
  const cycle: PayCycle = { frequency: best.h.frequency, nextPayday: msOf(next(best.h)), confidence, deposits: days.length, landsEarly: best.early > 0 };
  const rival = scored.find((x) => x.h.frequency !== best.h.frequency && x.s >= best.s - AMBIGUITY && x.s >= MIN_SCORE);
  if (rival && isPair(best.h.frequency, rival.h.frequency)) cycle.alternative = { frequency: rival.h.frequency, nextPayday: msOf(next(rival.h)) };
  return cycle;
}

/** Biweekly and semimonthly look alike over a few months: each keeps the other as an alternative. */
const isPair = (a: RegularFrequency, b: RegularFrequency) => (a === 'biweekly' && b === 'semimonthly') || (a === 'semimonthly' && b === 'biweekly');

const round = (x: number) => Math.round(x * 100) / 100;

/** Every payday of a known cycle from one day to another (UTC midnights), for the cadence and the simulation. */
export function paydaysOf(cycle: Pick<PayCycle, 'frequency'>, credits: readonly Deposit[], from: number, to: number): number[] {
  const days = incomeDeposits(credits).map((d) => dayOf(d.at));
  if (days.length < MIN_DEPOSITS || cycle.frequency === 'irregular' || cycle.frequency === 'unknown') return [];
  const best = hypotheses(days)
    .filter((h) => h.frequency === cycle.frequency)
    .map((h) => ({ h, ...score(h.schedule, days) }))
    .sort(better)[0];
  return best ? best.h.schedule(dayOf(from), dayOf(to)).map(msOf) : [];
}
