import type { NoticeChannel, NoticeClass, Rail } from '../../../db/schema/enums';
import { addBusinessDays, businessDaysBefore, isBusinessDay } from '../../platform/business-days';
import { DAY_MS } from '../../platform/clock';
import { localDayOf, localTime } from '../../platform/zone';
import { CFPB_WINDOWS, type NoticeWindow, type RegEElection } from '../collection-policy/notice-windows';

export { CFPB_WINDOWS, leadBounds, type NoticeWindow, type RegEElection } from '../collection-policy/notice-windows';

// The notices a debit needs before it goes out, and when they must be sent, as pure functions of the debit,
// the borrower and the lender's policy (decision.ts asks them when it plans a payment).
//
// - The CFPB payday rule (12 CFR 1041.9(b)), for a covered loan: a payment notice before the first payment
//   transfer (electronic: no later than 3 business days before it; mail: no later than 6), and an
//   unusual-withdrawal notice before a transfer whose date, amount or channel differs from the authorized
//   schedule, or that re-initiates a returned one (electronic: no earlier than 7 and no later than 3 business
//   days before; mail: no earlier than 10 and no later than 6). A transfer on the authorized schedule, and a
//   single immediate transfer at the consumer's request (1041.8(d)), need none.
// - Regulation E (12 CFR 1005.10(d)), for any borrower the lender's policy or the borrower's election brings
//   under it: a preauthorized transfer whose amount varies needs written notice of its amount and date at least
//   10 days before it, unless the borrower elected notice only outside a range or beyond a difference.
//
// One notice serves both when both apply: its window is where their windows meet, and the debit day is the
// first one (from the lender's lead time) where they meet and the lender still has a day to send it. Days are
// the lender's calendar days (its time zone); business days leave out weekends and the Federal Reserve's
// holidays.

/** Regulation E's varying-amount notice: at least this many calendar days before the transfer. */
export const REG_E_NOTICE_DAYS = 10;

/** What asks for a payment's notice. */
export type NoticeNeed = 'cfpb' | 'reg_e';

/** One transfer of a new authorization (12 CFR 1041.8(c)(2)): its day (the lender's calendar), the most it may be, its channel. */
export interface AuthorizedTransfer {
  date: string;
  max_amount_cents: number;
  channel: Rail;
}

/**
 * The class of a planned debit. `first`: no debit of the borrower has reached its processor before;
 * `regular`: on a date of the borrower's new authorization, within its amount and channel; `unusual`: any other
 * debit the service plans on a balance (its date and amount follow the balance, not a schedule).
 */
export function classify(i: { consumerInitiated: boolean; reinitiationOf: string | null; firstEver: boolean; onSchedule: boolean }): NoticeClass {
  if (i.consumerInitiated) return 'consumer_initiated';
  if (i.reinitiationOf !== null) return 'reinitiation';
  if (i.firstEver) return 'first';
  return i.onSchedule ? 'regular' : 'unusual';
}

/**
 * Whether a debit of `amountCents` needs Regulation E's varying-amount notice under an election, `previous`
 * being the amount of the borrower's last debit that reached its processor (null: none yet, so the amount is
 * not known to the borrower). `always`: whenever it differs from the last one; `outside_range`: only outside
 * [min, max]; `difference_over`: only when it differs from the last one by more than the amount.
 */
export function regENeedsNotice(election: RegEElection, amountCents: number, previous: number | null): boolean {
  switch (election.type) {
    case 'none':
      return false;
    case 'always':
      return previous === null || amountCents !== previous;
    case 'outside_range':
      return amountCents < election.min_cents || amountCents > election.max_cents;
    case 'difference_over':
      return previous === null ? amountCents > election.amount_cents : Math.abs(amountCents - previous) > election.amount_cents;
  }
}

/** The payday rule's window of a class's notice for a channel; null for a class that needs none. */
export const cfpbWindowOf = (klass: NoticeClass | null, channel: NoticeChannel): NoticeWindow | null =>
  klass === 'first' || klass === 'unusual' || klass === 'reinitiation' ? CFPB_WINDOWS[klass][channel] : null;

/** What a planned debit's notice asks: nothing, or one or both rules. */
export function noticeNeeds(i: { klass: NoticeClass; covered: boolean; regE: boolean }): NoticeNeed[] {
  const out: NoticeNeed[] = [];
  if (i.covered && (i.klass === 'first' || i.klass === 'unusual' || i.klass === 'reinitiation')) out.push('cfpb');
  if (i.regE && i.klass !== 'consumer_initiated') out.push('reg_e');
  return out;
}

/** The window of a notice for a debit on `day`, as calendar days (inclusive), or null where the rules leave none. */
export function windowDays(day: number, needs: readonly NoticeNeed[], cfpb: NoticeWindow | null): { from: number; by: number } {
  let from = -Infinity;
  let by = Infinity;
  if (needs.includes('cfpb') && cfpb) {
    if (cfpb.earliest !== null) from = businessDaysBefore(day, cfpb.earliest);
    by = Math.min(by, businessDaysBefore(day, cfpb.latest));
  }
  if (needs.includes('reg_e')) by = Math.min(by, day - REG_E_NOTICE_DAYS * DAY_MS);
  return { from, by };
}

/** The lead a notice needs when the lender set none: a day to send it before the latest day the rules allow. */
export const defaultLead = (cfpb: NoticeWindow | null): number => (cfpb ? cfpb.latest + 1 : 1);

export interface NoticeSchedule {
  /** The debit's day: the lender's calendar day, as its UTC midnight. */
  debitOn: number;
  /** The notice is sent no earlier than this (null: no notice needed) … */
  dueFrom: number | null;
  /** … and no later than this instant (the end of the last day the rules allow, in the lender's zone). */
  dueBy: number | null;
}

/**
 * The day of a debit planned at `now`, and its notice's window. The lead (`leadDays` business days, or the
 * notice's own when 0) gives the first day tried; from it, the first day (a business day, or one of `dates` when
 * the borrower's authorization names them) whose window is not empty and ends today or later. Null when
 * `dates` has none that fits, or none within `horizonDays`.
 */
export function scheduleDebit(i: {
  now: number;
  timeZone: string | null;
  needs: readonly NoticeNeed[];
  cfpb: NoticeWindow | null;
  leadDays: number;
  /** The authorized days, ascending (UTC midnights of the lender's calendar days). */
  dates?: readonly number[];
  horizonDays?: number;
}): NoticeSchedule | null {
  const today = localDayOf(i.now, i.timeZone);
  // Nothing to tell and no lead: today, whatever day it is (a debit goes out as soon as the balance covers it).
  if (i.needs.length === 0 && i.leadDays === 0 && !i.dates) return { debitOn: today, dueFrom: null, dueBy: null };
  const lead = i.leadDays > 0 ? i.leadDays : i.needs.length > 0 ? defaultLead(i.needs.includes('cfpb') ? i.cfpb : null) : 0;
  const first = lead > 0 ? addBusinessDays(today, lead) : today;
  const fits = (day: number): NoticeSchedule | null => {
    if (i.needs.length === 0) return { debitOn: day, dueFrom: null, dueBy: null };
    const w = windowDays(day, i.needs, i.cfpb);
    const from = Math.max(w.from, today);
    if (from > w.by || w.by < today) return null;
    return { debitOn: day, dueFrom: Math.max(i.now, localTime(from, 0, i.timeZone)), dueBy: localTime(w.by + DAY_MS, 0, i.timeZone) - 1 };
  };
  if (i.dates) {
    for (const d of i.dates) {
      if (d < first) continue;
      const s = fits(d);
      if (s) return s;
    }
    return null;
  }
  const horizon = first + (i.horizonDays ?? 60) * DAY_MS;
  for (let d = first; d <= horizon; d += DAY_MS) {
    if (!isBusinessDay(d)) continue;
    const s = fits(d);
    if (s) return s;
  }
  return null;
}

/** Whether a notice sent at `sentAt` lies inside a payment's window. */
export const insideWindow = (sentAt: number | null, dueFrom: number | null, dueBy: number | null): boolean =>
  sentAt !== null && dueFrom !== null && dueBy !== null && sentAt >= dueFrom && sentAt <= dueBy;

/** The `YYYY-MM-DD` of a calendar day held as its UTC midnight, and back (null for what is not one). */
export const dayString = (day: number): string => new Date(day).toISOString().slice(0, 10);
export function dayOfString(s: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return null;
  const t = Date.parse(`${s}T00:00:00Z`);
  return Number.isFinite(t) && dayString(t) === s ? t : null;
}
