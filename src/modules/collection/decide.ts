import { newId } from '../../platform/ids';
import type { RecordedRead } from '../balance-requests/results';
import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { addBusinessDays } from '../../platform/business-days';
import { recordObservation, releaseScheduled, type Observation } from './record';
import { pushToEndpoints } from '../webhooks/endpoints';
import { iso } from '../../platform/clock';
import { resolveKey } from '../payment-connections/resolve';
import { referenceOf } from './reference';
import { planPayment } from './rules';
import { policyOf } from '../collection-policy/service';
import type { CollectionPolicy } from '../collection-policy/policy';
import { blockedReasonOf, type BlockedReason } from '../enrollments/monitor';
import { collectionStore as store, type ScheduledPayment } from './store';
import { applyMonitorEvent } from '../enrollments/monitor-store';
import { evaluateReturnRates } from '../return-rates/watch';
import { anyExceeded } from '../return-rates/service';

/**
 * The collection decision, called with each monitoring read in the transaction that records it (the chain in
 * modules/balance-results.ts). A payment of
 * the current collectable_amount is initiated on the borrower's rail exactly when all of these hold: the
 * monitor is `monitored` and inside its window; no payment of the borrower is in flight; the collection rules
 * allow one (the debt's chain of presentments has room, no new authorization is needed); nothing blocks it
 * (verification); a key resolves; and the balance
 * covers the amount plus COLLECTION_MARGIN_CENTS. The payment row (status initiating, its id the idempotency
 * key) is committed with the read; the dispatch job sends it. No key → skipped, with blocked_reason.
 */
export async function decideCollection(ctx: JobContext & { tx: Tx }, read: RecordedRead & { enrollmentId: string }): Promise<void> {
  const { tx, deps } = ctx;
  const now = deps.clock.now();
  // One decision per borrower at a time: what is in flight, the history and the presentments counted are read
  // and then written on, so a second decision (another read of the borrower) waits for this one.
  await store.serializeBorrower(ctx, read.enrollmentId);
  const e = await store.enrollmentToDecide(ctx, read.enrollmentId);
  if (!e || e.state !== 'monitored') return;
  if (e.windowEndsAt === null || now >= e.windowEndsAt) return;
  if (e.blockedReason === 'verification_required') return;
  const block = async (reason: BlockedReason) => {
    await applyMonitorEvent(ctx, { enrollmentId: e.id, event: { type: 'blocked', reason }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
    deps.metrics.paymentsSkipped.inc({ reason });
  };
  // A linked account its provider says cannot be debited (revoked, closed at the bank, an account number that
  // is not transactable) takes no payment, whatever its balance: one scheduled is voided, and the borrower
  // shows why until the provider says the same link is well again (balance-requests/link-health.ts).
  const linkBlock = blockedReasonOf(read.linkHealth ?? null);
  if (linkBlock !== null) {
    const waiting = await store.scheduledPaymentOf(ctx, e.id);
    if (waiting) await voidScheduled(ctx, waiting, `not debited: ${linkBlock}`);
    return block(linkBlock);
  }
  if (read.balanceCents === null) return;
  const policy = await policyOf(ctx, e.lenderId);
  const history = await store.paymentHistory(ctx, e.id);
  const planNow = () =>
    planPayment({
      history,
      authorizationAt: e.authorizationAt,
      covered: e.cfpbCovered ?? policy.cfpbCovered,
      policy,
      collectableCents: e.collectableAmountCents,
      now,
    });
  // Pause on breach: an ACH payment of a lender that pauses is not initiated while a return rate is exceeded,
  // evaluated now (which also alerts on a change); it goes on by itself once every class is back under.
  const paused = async () => e.rail === 'ach' && policy.returnRatePause && anyExceeded(await evaluateReturnRates(ctx, e.lenderId));
  const scheduled = await store.scheduledPaymentOf(ctx, e.id);
  if (scheduled) {
    // Its notice runs until debit_on; then it goes out only if everything that allowed it still holds.
    if (now < scheduled.debitOn) return;
    const plan = planNow();
    const pause = plan.ok && (await paused());
    const why = !plan.ok
      ? plan.blocked
      : pause
        ? 'ACH collection is paused while a return rate is over its threshold'
        : plan.amountCents !== scheduled.amountCents
        ? 'the amount changed since the notice'
        : read.balanceCents < scheduled.amountCents + deps.config.collectionMarginCents + policy.debitBufferCents
          ? 'the balance no longer covers the amount'
          : null;
    if (why !== null) {
      await voidScheduled(ctx, scheduled, `not debited on its day: ${why}`);
      if (!plan.ok) await block(plan.blocked);
      else if (pause) await block('return_rate_paused');
      return;
    }
    await releaseScheduled(ctx, scheduled);
    return;
  }
  if (await store.paymentInFlight(ctx, e.id)) return;
  const plan = planNow();
  if (!plan.ok) return block(plan.blocked);
  // A balance that is not spendable or not current decides nothing (recorded all the same), and says why.
  const truth = balanceTruth(read, policy, now);
  if (!truth.ok) return block(truth.reason);
  // What the last read showed no longer holds (a window passed, a fresh available balance): said at once,
  // whatever the balance says.
  if (
    e.blockedReason === 'late_return_window' ||
    e.blockedReason === 'stale_balance' ||
    e.blockedReason === 'current_only' ||
    e.blockedReason === 'account_revoked' ||
    e.blockedReason === 'account_closed' ||
    e.blockedReason === 'account_not_transactable'
  ) {
    await applyMonitorEvent(ctx, { enrollmentId: e.id, event: { type: 'unblocked' }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
  }
  if (read.balanceCents < plan.amountCents + deps.config.collectionMarginCents + policy.debitBufferCents + truth.bufferCents) return;
  if (await paused()) return block('return_rate_paused');
  const key = await resolveKey(ctx, { lenderId: e.lenderId, rail: e.rail, merchantRef: e.merchantRef });
  if (!key || !key.keySealed) return block('no_processor_key');
  // With a notice period the payment is scheduled, not sent: dispatch never sees it before its day.
  const debitOn = policy.noticeDays > 0 ? addBusinessDays(now, policy.noticeDays) : null;
  const id = newId();
  await store.createPayment(ctx, {
      id,
      lenderId: e.lenderId,
      enrollmentId: e.id,
      authorizerUniqueId: e.authorizerUniqueId,
      connectionId: key.id,
      rail: e.rail,
      amountCents: plan.amountCents,
      reference: referenceOf(e.authorizerUniqueId, id),
      status: debitOn === null ? 'initiating' : 'scheduled',
      attempt: plan.attempt,
      reinitiationOf: plan.reinitiationOf,
      debitOn,
      // Out of the dispatch queue while scheduled; put back on its day.
      state: debitOn === null ? 'pending' : 'done',
      nextAttemptAt: now,
      createdAt: now,
      updatedAt: now,
  });
  // The presentments the debt's chain has used, this one included.
  await store.setPaymentsUsed(ctx, e.id, plan.attempt, now);
  await applyMonitorEvent(ctx, { enrollmentId: e.id, event: { type: 'payment_initiated' }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
  if (debitOn === null) deps.metrics.paymentsInitiated.inc({ rail: e.rail });
  else {
    deps.metrics.paymentsScheduled.inc({ rail: e.rail });
    // The notice: the lender tells the borrower before debit_on.
    await pushToEndpoints(ctx, now, e.lenderId, 'PAYMENT_SCHEDULED', {
      authorizer_unique_id: e.authorizerUniqueId,
      reference: referenceOf(e.authorizerUniqueId, id),
      amount: plan.amountCents,
      debit_on: iso(debitOn).slice(0, 10),
    });
  }
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

/**
 * A scheduled payment ends without moving money: voided (an event on its reference, source `service`), its
 * slot given back. On its day when something no longer allows it, and at once on removal or erasure.
 */
export async function voidScheduled(ctx: JobContext & { tx: Tx }, p: ScheduledPayment, message: string): Promise<void> {
  const now = ctx.deps.clock.now();
  await recordObservation(ctx, voidedObservation(p, message, now));
  await store.giveBackPresentment(ctx, p.enrollmentId, now);
}

/** The event that ends a scheduled payment without moving money. */
export function voidedObservation(p: Omit<ScheduledPayment, 'debitOn'>, message: string, now: number): Observation {
  return {
    lenderId: p.lenderId,
    reference: p.reference,
    status: 'voided',
    amountCents: p.amountCents,
    returnCode: null,
    message,
    occurredAt: now,
    source: 'service',
    sourceEventId: `voided:${p.id}`,
    enrollmentId: p.enrollmentId,
    authorizerUniqueId: p.aid,
    paymentId: p.id,
    connectionId: null,
  };
}

export const STOPPED_BEFORE_ITS_DAY = 'monitoring of the borrower stopped before its day';

/** Monitoring stopped (removal, erasure): a scheduled payment of the borrower never goes out. */
export async function voidScheduledOnStop(ctx: JobContext & { tx: Tx }, stopped: { enrollmentId: string }): Promise<void> {
  await store.serializeBorrower(ctx, stopped.enrollmentId);
  const p = await store.scheduledPaymentOf(ctx, stopped.enrollmentId);
  if (p) await voidScheduled(ctx, p, STOPPED_BEFORE_ITS_DAY);
}
