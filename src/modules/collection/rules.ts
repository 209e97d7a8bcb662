import type { CollectionPolicy } from '../collection-policy/policy';
import { DAY_MS } from '../../platform/clock';
import { addBusinessDays } from '../../platform/business-days';
import { isRetryableReturn } from '../../adapters/processors/return-codes';
import type { ChainBlock } from '../enrollments/monitor';

// The rules that bound an automatic debit beyond the spec's defaults (collection-rules.md), as one pure
// function of a borrower's payment history, its enrollment and the lender's policy: which payment may go out
// next (an original, or a reinitiation of one, with its amount), or why none may.
//
// - Nacha reinitiation: only after R01/R09; at most `maxReinitiations` per original; none later than 180 days
//   after the original first reached the processor; with `original`, the returned payment's amount, and none
//   when the collectable amount has dropped below it. Presentments are counted per debt: the original and its
//   reinitiations are one chain, which removal, lapse, re-send and restarts keep, until the debt is settled
//   and its late-return window has passed (the policy's `lateReturnWindowDays`: a late return inside it is
//   the chain's failure, and no new payment goes out before it passes), a return of another code ends it (a
//   corrected entry is a new one), or a new authorization, obtained after the last return, starts a new chain.
// - R08 (payment stopped): no further debit until the borrower authorizes again (a later authorization). An
//   R08 a lender uploaded counts at once, whatever the processor says: a stop is never a debit.
// - The CFPB payday rule (12 CFR 1041.8) for a covered borrower: after two consecutive failures for funds, no
//   further attempt without a new authorization obtained after the second failure. A settlement resets it.

export const REINITIATION_WINDOW_MS = 180 * DAY_MS;

/** A payment of the borrower as the rules see it (every enrollment period: an R08 or two failures outlive a re-send). */
export interface PastPayment {
  id: string;
  status: string;
  returnCode: string | null;
  amountCents: number;
  attempt: number;
  reinitiationOf: string | null;
  createdAt: number;
  /** When its outcome was recorded (the failure's time for a return). */
  updatedAt: number;
  firstAttemptAt: number | null;
  /** A lender's uploaded return code its processor has not confirmed, and when it came (record.ts). */
  reportedReturnCode: string | null;
  reportedAt: number | null;
  /** A scheduled payment's day (the lender's calendar day, as its UTC midnight); null for one sent at once. */
  debitOn: number | null;
  /** Its class for the payment notices (notices.ts); null for a payment made before classes were kept. */
  noticeClass: string | null;
}

export type Plan =
  | { ok: true; amountCents: number; attempt: number; reinitiationOf: string | null }
  | { ok: false; blocked: ChainBlock | 'late_return_window' };

/**
 * When a payment settled at `settledAt` can no longer be returned late as the chain's failure: the end of the
 * `days`-th business day after the day it settled.
 */
export const lateReturnWindowEnd = (settledAt: number, days: number): number => addBusinessDays(settledAt, days) + DAY_MS;

/** A settled payment whose money may still come back: its late-return window has not passed. */
const settledOpen = (p: PastPayment, now: number, days: number) => p.status === 'settled' && now < lateReturnWindowEnd(p.updatedAt, days);
const inFlightStatus = (p: PastPayment) => p.status === 'initiating' || p.status === 'processing';

const failed = (p: PastPayment) => p.status === 'returned' || p.status === 'late_returned';
const forFunds = (p: PastPayment) => failed(p) && isRetryableReturn(p.returnCode);
/**
 * Statuses that never reached the borrower's account are not part of the history the rules read; neither is a
 * payment the borrower asked for (12 CFR 1041.8(d)): it is no presentment of the debt's chain (never reinitiated),
 * and its outcome neither adds to the payday rule's failures nor ends them (a settled one lifts no stop).
 */
const counts = (p: PastPayment) =>
  p.status !== 'not_attempted' && p.status !== 'voided' && p.status !== 'invalid' && p.status !== 'scheduled' && p.noticeClass !== 'consumer_initiated';

/**
 * Presentments of the debt's open chain so far: the position of the last payment that reached the processor
 * while its chain is open (in flight; returned for funds with no authorization since; settled inside its
 * late-return window); 0 when the next payment starts a new chain.
 */
export function chainPresentments(history: PastPayment[], authorizationAt: number | null, now: number, lateReturnWindowDays: number): number {
  const sent = history.filter(counts);
  const last = sent[sent.length - 1];
  if (!last) return 0;
  const open = forFunds(last) ? !(authorizationAt !== null && authorizationAt > last.updatedAt) : inFlightStatus(last) || settledOpen(last, now, lateReturnWindowDays);
  if (!open) return 0;
  const original = (last.reinitiationOf && history.find((p) => p.id === last.reinitiationOf)) || last;
  return 1 + history.filter((p) => p.reinitiationOf === original.id && counts(p)).length;
}

/**
 * The payday rule's streak: the borrower's last payments that failed for funds one after the other, newest first,
 * counted back to the last one that did not (settled, returned with another code) or that a later authorization
 * answered. Two of them stop a covered borrower (12 CFR 1041.8(b)).
 */
export function failuresForFunds(history: PastPayment[], authorizationAt: number | null): PastPayment[] {
  const sent = history.filter(counts);
  const streak: PastPayment[] = [];
  for (let i = sent.length - 1; i >= 0; i--) {
    const p = sent[i]!;
    if (!forFunds(p) || (authorizationAt !== null && authorizationAt > p.updatedAt)) break;
    streak.push(p);
  }
  return streak;
}

/**
 * The two consecutive failures for funds that stop a covered borrower and make the consumer-rights notice due
 * (12 CFR 1041.9(c)), oldest first: the first two of the streak, whatever followed them. Null while the streak is
 * shorter. A stop (R08) is not a failure for funds: it blocks on its own and owes no notice.
 */
export function secondFailure(history: PastPayment[], authorizationAt: number | null): [PastPayment, PastPayment] | null {
  const streak = failuresForFunds(history, authorizationAt);
  return streak.length >= 2 ? [streak[streak.length - 1]!, streak[streak.length - 2]!] : null;
}

/** The later of a re-send's authorization and a new one recorded under the payday rule: either answers a stop, a revocation or a chain. */
export const latestAuthorization = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.max(a, b));

/**
 * The next payment, or why none may go out. `history` is every payment of the borrower, oldest first, over
 * every enrollment period (a chain outlives a re-send); `authorizationAt` is the borrower's latest
 * authorization to debit, if the lender sent one.
 */
export function planPayment(input: {
  history: PastPayment[];
  authorizationAt: number | null;
  /** When the borrower's new authorization under the payday rule (12 CFR 1041.8(c)) was obtained, if one was recorded. */
  reauthorizedAt?: number | null;
  covered: boolean;
  policy: CollectionPolicy;
  collectableCents: number;
  now: number;
}): Plan {
  const { history, covered, policy, collectableCents, now } = input;
  const authorizationAt = latestAuthorization(input.authorizationAt, input.reauthorizedAt ?? null);
  // A covered borrower's failures for funds end only at a new authorization recorded under the payday rule: a
  // re-send's authorization date is not one (it names no dates, amounts or channel), so it lifts nothing.
  const streakAuthorization = covered ? (input.reauthorizedAt ?? null) : authorizationAt;
  const reauthorized = (after: PastPayment) => authorizationAt !== null && authorizationAt > after.updatedAt;
  const sent = history.filter(counts);

  // R08: the borrower stopped the payment (as the processor or the lender's upload says); only a new
  // authorization obtained after the stop allows another.
  const stopAt = (p: PastPayment) => (failed(p) && p.returnCode === 'R08' ? p.updatedAt : p.reportedReturnCode === 'R08' ? p.reportedAt : null);
  const lastStop = [...history].reverse().find((p) => stopAt(p) !== null);
  if (lastStop && !(authorizationAt !== null && authorizationAt > stopAt(lastStop)!)) return { ok: false, blocked: 'reauthorization_required' };

  // The payday rule: two consecutive failures for funds, counted back to the last settlement or authorization.
  if (covered && failuresForFunds(history, streakAuthorization).length >= 2) return { ok: false, blocked: 'reauthorization_required' };

  const last = sent[sent.length - 1];
  // Settled, and its money may still come back: the debt's chain is open until its late-return window passes
  // (a late return is its failure, and a reinitiation of its original follows). Nothing else goes out before.
  if (last && settledOpen(last, now, policy.lateReturnWindowDays)) return { ok: false, blocked: 'late_return_window' };
  if (!last || !forFunds(last) || reauthorized(last)) {
    // No debt presented and returned for funds (nothing yet, settled, another code), or a new authorization
    // since the return: an original (attempt 1), a chain of its own.
    return { ok: true, amountCents: collectableCents, attempt: 1, reinitiationOf: null };
  }
  // A reinitiation of the returned payment's original.
  const original = (last.reinitiationOf && history.find((p) => p.id === last.reinitiationOf)) || last;
  const reinitiations = history.filter((p) => p.reinitiationOf === original.id && counts(p)).length;
  if (reinitiations >= policy.maxReinitiations) return { ok: false, blocked: 'reinitiation_limit' };
  if (now > (original.firstAttemptAt ?? original.createdAt) + REINITIATION_WINDOW_MS) return { ok: false, blocked: 'reinitiation_window' };
  if (policy.reinitiationAmount === 'original') {
    if (collectableCents < original.amountCents) return { ok: false, blocked: 'amount_changed' };
    return { ok: true, amountCents: original.amountCents, attempt: reinitiations + 2, reinitiationOf: original.id };
  }
  return { ok: true, amountCents: collectableCents, attempt: reinitiations + 2, reinitiationOf: original.id };
}
