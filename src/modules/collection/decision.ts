import type { MonitorState, NoticeChannel, NoticeClass, Rail } from '../../../db/schema/enums';
import type { RecordedRead } from '../balance-requests/results';
import type { CollectionPolicy } from '../collection-policy/policy';
import { dayStart, localDayOf } from '../../platform/zone';
import { accountBlockOf, ACCOUNT_BLOCK_WORDS, accountValidated, revokedNow, REVOKED_WORDS, blockedReasonOf, LINK_BLOCKS, type BlockedReason } from '../enrollments/monitor';
import type { AccountStanding } from '../bank-accounts/store';
import { latestAuthorization, planPayment, type PastPayment } from './rules';
import { cfpbWindowOf, classify, dayOfString, insideWindow, noticeNeeds, regENeedsNotice, scheduleDebit, type AuthorizedTransfer, type NoticeNeed, type NoticeSchedule, type RegEElection } from './notices';

// The collection decision as one pure function of what is known: a borrower's monitor, its latest read, its
// payments, the lender's policy. decide.ts reads what it asks for and carries out the steps it returns, in the
// transaction that records the read; nothing here reads a clock, a database or a processor, so the money rule
// is tested on its own (tests/modules/collection/decision.test.ts, properties over any input).
//
// A payment of the collectable amount (or of a reinitiation's amount) is created exactly when all of these hold:
// the monitor is `monitored`, inside its window and not waiting for verification; its bank account's state
// (set by the returns of every borrower on it) does not block it; its linked account, if any, may be debited; no payment of the borrower is scheduled or in flight; the collection rules allow one
// (rules.ts); the balance is spendable and current (balanceTruth) and covers the amount plus the margin and
// the policy's buffers; ACH collection is not paused on a return-rate breach; and a processor key resolves.
// A scheduled payment goes out on its day only if the same still holds for it, and is voided otherwise.

/** What the decision reads of the borrower's enrollment. */
export interface DecidingEnrollment {
  state: MonitorState;
  windowEndsAt: number | null;
  blockedReason: string | null;
  rail: Rail;
  cfpbCovered: boolean | null;
  authorizationAt: number | null;
  collectableAmountCents: number;
  /** The borrower's bank account's standing (bank-accounts); null or absent when none is linked. */
  account?: AccountStanding | null;
  /** When the borrower revoked its authorization, if it did. */
  revokedAt?: number | null;
  /** The borrower's new authorization under the payday rule: when it was obtained, and its record (JSON, as stored). */
  reauthorizedAt?: number | null;
  reauthorization?: string | null;
  /** The borrower's Regulation E election (JSON, as stored); null: the policy's. */
  regEElection?: string | null;
  /** An alert of a fraud-monitoring hold rule holds the borrower (1), or not (0 or absent). */
  fraudHold?: number | boolean;
}

/** A scheduled payment as the decision sees it. */
export interface WaitingPayment {
  amountCents: number;
  /** Its day: the lender's calendar day, as its UTC midnight. */
  debitOn: number;
  /** What asks for its notice (null: nothing), the notice's window, and when the lender confirmed sending it. */
  noticeNeeds?: string | null;
  noticeDueFrom?: number | null;
  noticeDueBy?: number | null;
  noticeSentAt?: number | null;
}

/** The borrower's payments and the lender's policy: read once the read can decide something. */
export interface DecidingPayments {
  policy: CollectionPolicy;
  history: PastPayment[];
  scheduled: WaitingPayment | null;
  inFlight: boolean;
}

export interface DecisionInputs {
  now: number;
  /** COLLECTION_MARGIN_CENTS. */
  marginCents: number;
  read: Pick<RecordedRead, 'balanceCents' | 'balanceKind' | 'asOf' | 'at' | 'linkHealth'>;
  enrollment: DecidingEnrollment | null;
  /** Undefined until the decision asks for them. */
  payments?: DecidingPayments;
  /** Whether ACH collection is paused on a return-rate breach (evaluating it alerts on a change): asked for last. */
  paused?: boolean;
  /** Whether a processor key resolves for the borrower: asked for only when a payment would be created. */
  hasKey?: boolean;
}

/** What the decision needs read before it can go on. */
export type Need = 'payments' | 'paused' | 'key';

export type Step =
  /** The scheduled payment ends without moving money. */
  | { do: 'void'; message: string }
  /** The monitor is blocked with this reason (ENROLLMENT_BLOCKED on a change). */
  | { do: 'block'; reason: BlockedReason }
  /** A block the last read set no longer holds. */
  | { do: 'unblock' }
  /** The scheduled payment's day has come: it goes out. */
  | { do: 'release' }
  /** The borrower is read again no later than `at` (the start of a scheduled payment's day), whatever its cadence. */
  | { do: 'read_by'; at: number }
  /**
   * A new payment: sent now (debitOn null), or scheduled for debitOn (a calendar day). `notice`: its class, what
   * asks for a notice (none: needs empty) and the window the lender sends it in; `failed`: the returned attempt
   * a reinitiation presents again.
   */
  | {
      do: 'create';
      amountCents: number;
      attempt: number;
      reinitiationOf: string | null;
      debitOn: number | null;
      notice?: { klass: NoticeClass; needs: NoticeNeed[]; channel: NoticeChannel; dueFrom: number | null; dueBy: number | null };
      failed?: PastPayment | null;
    };

export type Decision = { need: Need } | { steps: Step[] };

/** The blocks the last read set that a read able to decide lifts at once, whatever its balance says. */
const LIFTED_BY_A_READ: readonly string[] = ['late_return_window', 'stale_balance', 'current_only', 'fraud_hold', ...LINK_BLOCKS];

const PAUSED_MESSAGE = 'ACH collection is paused while a return rate is over its threshold';

const need = (what: Need): Decision => ({ need: what });
const steps = (...s: Step[]): Decision => ({ steps: s });

export function decide(i: DecisionInputs): Decision {
  const { now, read, enrollment: e } = i;
  if (!e || e.state !== 'monitored') return steps();
  if (e.windowEndsAt === null || now >= e.windowEndsAt) return steps();
  if (e.blockedReason === 'verification_required') return steps();
  // A bank account whose state blocks the borrower (a return of any borrower's debit to it) takes no payment,
  // whatever its balance or link: one scheduled is voided, and the borrower shows why until the lender acts. A
  // payment already sent is not touched: its outcome is what the processor says.
  // A revocation (Regulation E) stops every debit of the borrower until an authorization dated after it: one
  // scheduled is voided, and the borrower shows why.
  if (revokedNow(e)) {
    if (!i.payments) return need('payments');
    const block: Step = { do: 'block', reason: 'authorization_revoked' };
    return i.payments.scheduled ? steps({ do: 'void', message: `not debited: ${REVOKED_WORDS}` }, block) : steps(block);
  }
  const authorizationAt = latestAuthorization(e.authorizationAt, e.reauthorizedAt ?? null);
  let accountBlock = accountBlockOf(e.account, authorizationAt);
  // An account without validation evidence since its number last changed takes no payment where the lender's
  // policy requires it (Nacha's WEB debit rule): the policy is read for it.
  if (accountBlock === null && e.account && !accountValidated(e.account)) {
    if (!i.payments) return need('payments');
    accountBlock = accountBlockOf(e.account, authorizationAt, i.payments.policy.requireAccountValidation);
  }
  if (accountBlock !== null) {
    if (!i.payments) return need('payments');
    const block: Step = { do: 'block', reason: accountBlock };
    return i.payments.scheduled ? steps({ do: 'void', message: `not debited: ${ACCOUNT_BLOCK_WORDS[accountBlock]}` }, block) : steps(block);
  }
  // A fraud-monitoring hold (an alert of a hold rule, open or needing information) keeps the borrower's debits:
  // none is created or released until the lender clears it; one scheduled waits, and one made waits unsent.
  if (e.fraudHold) return steps({ do: 'block', reason: 'fraud_hold' });
  // A linked account its provider says cannot be debited takes no payment, whatever its balance: one scheduled
  // is voided, and the borrower shows why until the provider says the same link is well again.
  const linkBlock = blockedReasonOf(read.linkHealth ?? null);
  if (linkBlock !== null) {
    if (!i.payments) return need('payments');
    return i.payments.scheduled ? steps({ do: 'void', message: `not debited: ${linkBlock}` }, { do: 'block', reason: linkBlock }) : steps({ do: 'block', reason: linkBlock });
  }
  if (read.balanceCents === null) return steps();
  if (!i.payments) return need('payments');
  const { policy, history, scheduled, inFlight } = i.payments;
  const covered = e.cfpbCovered ?? policy.cfpbCovered;
  const plan = planPayment({ history, authorizationAt: e.authorizationAt, reauthorizedAt: e.reauthorizedAt ?? null, covered, policy, collectableCents: e.collectableAmountCents, now });
  // A covered borrower under a new authorization is debited only on its dates, within its amounts and channel.
  const transfers = covered ? authorizedTransfers(e.reauthorization ?? null) : null;
  const pausable = e.rail === 'ach' && policy.returnRatePause;
  const covers = (amountCents: number, bufferCents: number) => read.balanceCents! >= amountCents + i.marginCents + policy.debitBufferCents + bufferCents;

  if (scheduled) {
    // A notice the rules ask for and the lender has not confirmed by the end of its window: the payment cannot go
    // out on its day, and is voided now (the next read plans another, with a window of its own).
    const needsNotice = (scheduled.noticeNeeds ?? null) !== null;
    if (needsNotice && (scheduled.noticeSentAt ?? null) === null && scheduled.noticeDueBy != null && now > scheduled.noticeDueBy) {
      return steps({ do: 'void', message: NOTICE_MISSED });
    }
    // Its notice runs until debit_on (the lender's calendar day), when the borrower is read again whatever its
    // cadence; then it goes out only if everything that allowed it still holds.
    const today = localDayOf(now, policy.timeZone);
    if (today < scheduled.debitOn) return steps({ do: 'read_by', at: dayStart(scheduled.debitOn, policy.timeZone) });
    // A notice names its day: one whose day passed (the service was not running on it) does not go out later.
    if (needsNotice && today > scheduled.debitOn) return steps({ do: 'void', message: DAY_PASSED });
    if (needsNotice && !insideWindow(scheduled.noticeSentAt ?? null, scheduled.noticeDueFrom ?? null, scheduled.noticeDueBy ?? null)) {
      return steps({ do: 'void', message: `not debited on its day: ${NOTICE_MISSED_WORDS}` });
    }
    if (!plan.ok) return steps({ do: 'void', message: `not debited on its day: ${plan.blocked}` }, { do: 'block', reason: plan.blocked });
    if (pausable && i.paused === undefined) return need('paused');
    if (pausable && i.paused) return steps({ do: 'void', message: `not debited on its day: ${PAUSED_MESSAGE}` }, { do: 'block', reason: 'return_rate_paused' });
    const entry = transfers ? transfers.find((t) => t.day === scheduled.debitOn && t.channel === e.rail) : null;
    if (transfers && !entry) return steps({ do: 'void', message: 'not debited on its day: it is not a date of the borrower’s new authorization' });
    const expected = entry ? Math.min(plan.amountCents, entry.max_amount_cents) : plan.amountCents;
    if (expected !== scheduled.amountCents) return steps({ do: 'void', message: 'not debited on its day: the amount changed since the notice' });
    if (!covers(scheduled.amountCents, 0)) return steps({ do: 'void', message: 'not debited on its day: the balance no longer covers the amount' });
    return steps({ do: 'release' });
  }
  if (inFlight) return steps();
  if (!plan.ok) return steps({ do: 'block', reason: plan.blocked });
  // A balance that is not spendable or not current decides nothing (recorded all the same), and says why.
  const truth = balanceTruth(read, policy, now);
  if (!truth.ok) return steps({ do: 'block', reason: truth.reason });
  // What the last read showed no longer holds (a window passed, a fresh available balance): said at once,
  // whatever the balance says.
  const out: Step[] = e.blockedReason !== null && LIFTED_BY_A_READ.includes(e.blockedReason) ? [{ do: 'unblock' }] : [];
  // The debit's day and its notice: its class, what asks for a notice, and the first day whose window the
  // lender can still meet (under a new authorization, the first of its dates that fits).
  const d = debitPlan({ now, e, policy, plan, history, covered, transfers });
  if (d === null) return steps(...out, { do: 'block', reason: 'reauthorization_required' });
  if (!covers(d.amountCents, truth.bufferCents)) return steps(...out);
  if (pausable && i.paused === undefined) return need('paused');
  if (pausable && i.paused) return steps(...out, { do: 'block', reason: 'return_rate_paused' });
  if (i.hasKey === undefined) return need('key');
  if (!i.hasKey) return steps(...out, { do: 'block', reason: 'no_processor_key' });
  // A payment with a notice or a lead time is scheduled, not sent: dispatch never sees it before its day.
  const today = localDayOf(now, policy.timeZone);
  const debitOn = d.needs.length === 0 && d.schedule.debitOn <= today ? null : d.schedule.debitOn;
  const readOnItsDay: Step[] = debitOn === null ? [] : [{ do: 'read_by', at: dayStart(debitOn, policy.timeZone) }];
  const failed = plan.reinitiationOf !== null ? ([...history].reverse().find((p) => p.status === 'returned' || p.status === 'late_returned') ?? null) : null;
  return steps(...out, {
    do: 'create',
    amountCents: d.amountCents,
    attempt: plan.attempt,
    reinitiationOf: plan.reinitiationOf,
    debitOn,
    notice: { klass: d.klass, needs: d.needs, channel: policy.noticeChannel ?? 'electronic', dueFrom: d.schedule.dueFrom, dueBy: d.schedule.dueBy },
    failed,
  }, ...readOnItsDay);
}

const DAY_PASSED = 'not debited: its day passed before a read could send it (a notice names its day); it is planned again with a new notice';

export const NOTICE_MISSED_WORDS = 'no notice was confirmed inside its window (POST /v1/payments/{id}/notice)';
const NOTICE_MISSED = `not debited: ${NOTICE_MISSED_WORDS}; it is planned again with a new window`;

/** A transfer of a new authorization with its day as the decision compares it (the lender's calendar day, as its UTC midnight). */
export type DatedTransfer = AuthorizedTransfer & { day: number };

/** The transfers of a borrower's new authorization (as stored), by day; null when none was recorded. */
export function authorizedTransfers(json: string | null): DatedTransfer[] | null {
  if (!json) return null;
  const r = JSON.parse(json) as { transfers: AuthorizedTransfer[] };
  return r.transfers.map((t) => ({ ...t, day: dayOfString(t.date)! })).sort((a, b) => a.day - b.day);
}

/** The borrower's Regulation E election (as stored), or the policy's when it has none. */
const electionOf = (json: string | null | undefined, policy: CollectionPolicy): RegEElection => (json ? (JSON.parse(json) as RegEElection) : policy.regEElection);

/**
 * A planned debit's amount, class, notice and day. Not under a new authorization: the collectable (or
 * reinitiation) amount, on the first day the lender's lead and the notice's window allow. Under one (a covered
 * borrower): the first of its dates not used yet, through the borrower's channel, that the notice's window can
 * still meet, for at most that date's amount; null when none is left.
 */
function debitPlan(i: {
  now: number;
  e: DecidingEnrollment;
  policy: CollectionPolicy;
  plan: { amountCents: number; reinitiationOf: string | null };
  history: PastPayment[];
  covered: boolean;
  transfers: DatedTransfer[] | null;
}): { amountCents: number; klass: NoticeClass; needs: NoticeNeed[]; schedule: NoticeSchedule } | null {
  const { now, e, policy, plan, history, covered, transfers } = i;
  const reached = history.filter((p) => p.firstAttemptAt !== null);
  const previous = reached.length > 0 ? reached[reached.length - 1]!.amountCents : null;
  const election = electionOf(e.regEElection, policy);
  const firstEver = reached.length === 0;
  // The payday rule's notices bind where the lender says how it sends them; a Regulation E notice is sent in
  // writing, and its window is the same whatever the channel.
  const channel = policy.noticeChannel ?? 'electronic';
  const one = (amountCents: number, onSchedule: boolean, dates?: number[]) => {
    const klass = classify({ consumerInitiated: false, reinitiationOf: plan.reinitiationOf, firstEver, onSchedule });
    const needs = noticeNeeds({ klass, covered: covered && policy.noticeChannel !== null, regE: regENeedsNotice(election, amountCents, previous) });
    const schedule = scheduleDebit({ now, timeZone: policy.timeZone, needs, cfpb: cfpbWindowOf(klass, channel), leadDays: onSchedule ? 0 : policy.noticeDays, dates });
    return schedule ? { amountCents, klass, needs, schedule } : null;
  };
  if (!transfers) return one(plan.amountCents, false);
  // A date is used by a payment made under the authorization for it (or on it) that was not voided before it went.
  const since = e.reauthorizedAt ?? -Infinity;
  const used = new Set(
    history.filter((p) => p.createdAt > since && p.status !== 'voided' && p.status !== 'not_attempted').map((p) => p.debitOn ?? localDayOf(p.createdAt, policy.timeZone)),
  );
  for (const t of transfers) {
    if (t.channel !== e.rail || used.has(t.day)) continue;
    const found = one(Math.min(plan.amountCents, t.max_amount_cents), true, [t.day]);
    if (found) return found;
  }
  return null;
}

/**
 * Whether a read's balance may decide a debit: a linked account's balance must be its available one (or its
 * current one where the policy allows, with its own buffer) and no older, by the provider's time for it (the
 * read's when it gives none), than the policy's max_balance_age_minutes. A sandbox read is the balance now.
 */
export function balanceTruth(
  read: Pick<RecordedRead, 'balanceKind' | 'asOf' | 'at'>,
  policy: Pick<CollectionPolicy, 'allowCurrentBalance' | 'currentBalanceBufferCents' | 'maxBalanceAgeMinutes'>,
  now: number,
): { ok: true; bufferCents: number } | { ok: false; reason: 'stale_balance' | 'current_only' } {
  if (read.balanceKind === null) return { ok: true, bufferCents: 0 };
  if (read.balanceKind === 'current' && !policy.allowCurrentBalance) return { ok: false, reason: 'current_only' };
  if (now - (read.asOf ?? read.at) > policy.maxBalanceAgeMinutes * 60_000) return { ok: false, reason: 'stale_balance' };
  return { ok: true, bufferCents: read.balanceKind === 'current' ? policy.currentBalanceBufferCents : 0 };
}
