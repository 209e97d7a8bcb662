import type { MonitorState, Rail } from '../../../db/schema/enums';
import type { RecordedRead } from '../balance-requests/results';
import type { CollectionPolicy } from '../collection-policy/policy';
import { addBusinessDays } from '../../platform/business-days';
import { accountBlockOf, ACCOUNT_BLOCK_WORDS, accountValidated, revokedNow, REVOKED_WORDS, blockedReasonOf, LINK_BLOCKS, type BlockedReason } from '../enrollments/monitor';
import type { AccountStanding } from '../bank-accounts/store';
import { planPayment, type PastPayment } from './rules';

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
  /** An alert of a fraud-monitoring hold rule holds the borrower (1), or not (0 or absent). */
  fraudHold?: number | boolean;
}

/** A scheduled payment as the decision sees it. */
export interface WaitingPayment {
  amountCents: number;
  debitOn: number;
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
  /** A new payment: sent now (debitOn null), or scheduled for debitOn with a notice. */
  | { do: 'create'; amountCents: number; attempt: number; reinitiationOf: string | null; debitOn: number | null };

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
  let accountBlock = accountBlockOf(e.account, e.authorizationAt);
  // An account without validation evidence since its number last changed takes no payment where the lender's
  // policy requires it (Nacha's WEB debit rule): the policy is read for it.
  if (accountBlock === null && e.account && !accountValidated(e.account)) {
    if (!i.payments) return need('payments');
    accountBlock = accountBlockOf(e.account, e.authorizationAt, i.payments.policy.requireAccountValidation);
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
  const plan = planPayment({ history, authorizationAt: e.authorizationAt, covered: e.cfpbCovered ?? policy.cfpbCovered, policy, collectableCents: e.collectableAmountCents, now });
  const pausable = e.rail === 'ach' && policy.returnRatePause;
  const covers = (amountCents: number, bufferCents: number) => read.balanceCents! >= amountCents + i.marginCents + policy.debitBufferCents + bufferCents;

  if (scheduled) {
    // Its notice runs until debit_on; then it goes out only if everything that allowed it still holds.
    if (now < scheduled.debitOn) return steps();
    if (!plan.ok) return steps({ do: 'void', message: `not debited on its day: ${plan.blocked}` }, { do: 'block', reason: plan.blocked });
    if (pausable && i.paused === undefined) return need('paused');
    if (pausable && i.paused) return steps({ do: 'void', message: `not debited on its day: ${PAUSED_MESSAGE}` }, { do: 'block', reason: 'return_rate_paused' });
    if (plan.amountCents !== scheduled.amountCents) return steps({ do: 'void', message: 'not debited on its day: the amount changed since the notice' });
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
  if (!covers(plan.amountCents, truth.bufferCents)) return steps(...out);
  if (pausable && i.paused === undefined) return need('paused');
  if (pausable && i.paused) return steps(...out, { do: 'block', reason: 'return_rate_paused' });
  if (i.hasKey === undefined) return need('key');
  if (!i.hasKey) return steps(...out, { do: 'block', reason: 'no_processor_key' });
  // With a notice period the payment is scheduled, not sent: dispatch never sees it before its day.
  const debitOn = policy.noticeDays > 0 ? addBusinessDays(now, policy.noticeDays) : null;
  return steps(...out, { do: 'create', amountCents: plan.amountCents, attempt: plan.attempt, reinitiationOf: plan.reinitiationOf, debitOn });
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
