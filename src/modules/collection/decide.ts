import { and, eq, inArray, sql } from 'drizzle-orm';
import { enrollments, payments } from '../../../db/schema';
import { newId } from '../../platform/ids';
import type { RecordedRead } from '../balance-requests/results';
import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { addBusinessDays } from '../../platform/business-days';
import { recordObservation } from './record';
import { pushToEndpointsNow as pushToEndpoints } from '../webhooks/endpoints';
import { iso } from '../../platform/clock';
import { resolveKeyNow as resolveKey } from '../payment-connections/resolve';
import { referenceOf } from './reference';
import { planPayment } from './rules';
import { policyOfNow as policyOf } from '../collection-policy/service';
import type { BlockedReason } from '../enrollments/monitor';
import * as q from './queries';
import { applyMonitorEventNow as applyMonitorEvent } from '../enrollments/monitor-store';
import { evaluateReturnRatesNow as evaluateReturnRates } from '../return-rates/watch';
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
export function decideCollection(ctx: JobContext & { tx: Tx }, read: RecordedRead & { enrollmentId: string }): void {
  const { tx, deps } = ctx;
  const now = deps.clock.now();
  const e = tx.select().from(enrollments).where(eq(enrollments.id, read.enrollmentId)).get();
  if (!e || e.state !== 'monitored') return;
  if (e.windowEndsAt === null || now >= e.windowEndsAt) return;
  if (read.balanceCents === null) return;
  if (e.blockedReason === 'verification_required') return;
  const block = (reason: BlockedReason) => {
    applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'blocked', reason }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
    deps.metrics.paymentsSkipped.inc({ reason });
  };
  const policy = policyOf(tx, e.lenderId);
  const history = q.paymentHistory(tx, e.id);
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
  const paused = () => e.rail === 'ach' && policy.returnRatePause && anyExceeded(evaluateReturnRates(ctx, e.lenderId));
  const scheduled = q.scheduledPaymentOf(tx, e.id);
  if (scheduled) {
    // Its notice runs until debit_on; then it goes out only if everything that allowed it still holds.
    if (now < scheduled.debitOn) return;
    const plan = planNow();
    const pause = plan.ok && paused();
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
      voidScheduled(ctx, scheduled, `not debited on its day: ${why}`);
      if (!plan.ok) block(plan.blocked);
      else if (pause) block('return_rate_paused');
      return;
    }
    q.releaseScheduled(tx, scheduled.id, now);
    return;
  }
  const inFlight = tx
    .select({ id: payments.id })
    .from(payments)
    .where(and(eq(payments.enrollmentId, e.id), inArray(payments.status, ['initiating', 'processing'])))
    .get();
  if (inFlight) return;
  const plan = planNow();
  if (!plan.ok) return block(plan.blocked);
  if (read.balanceCents < plan.amountCents + deps.config.collectionMarginCents + policy.debitBufferCents) return;
  if (paused()) return block('return_rate_paused');
  const key = resolveKey(ctx, { lenderId: e.lenderId, rail: e.rail, merchantRef: e.merchantRef });
  if (!key || !key.keySealed) return block('no_processor_key');
  // With a notice period the payment is scheduled, not sent: dispatch never sees it before its day.
  const debitOn = policy.noticeDays > 0 ? addBusinessDays(now, policy.noticeDays) : null;
  const id = newId();
  tx.insert(payments)
    .values({
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
    })
    .run();
  // The presentments the debt's chain has used, this one included.
  tx.update(enrollments).set({ paymentsUsed: plan.attempt, updatedAt: now }).where(eq(enrollments.id, e.id)).run();
  applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'payment_initiated' }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
  if (debitOn === null) deps.metrics.paymentsInitiated.inc({ rail: e.rail });
  else {
    deps.metrics.paymentsScheduled.inc({ rail: e.rail });
    // The notice: the lender tells the borrower before debit_on.
    pushToEndpoints(tx, now, e.lenderId, 'PAYMENT_SCHEDULED', {
      authorizer_unique_id: e.authorizerUniqueId,
      reference: referenceOf(e.authorizerUniqueId, id),
      amount: plan.amountCents,
      debit_on: iso(debitOn).slice(0, 10),
    });
  }
}

/**
 * A scheduled payment ends without moving money: voided (an event on its reference, source `service`), its
 * slot given back. On its day when something no longer allows it, and at once on removal or erasure.
 */
export function voidScheduled(ctx: JobContext & { tx: Tx }, p: { id: string; lenderId: string; enrollmentId: string; aid: string; reference: string; amountCents: number }, message: string): void {
  const now = ctx.deps.clock.now();
  recordObservation(ctx, {
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
  });
  ctx.tx.update(enrollments).set({ paymentsUsed: sql`MAX(${enrollments.paymentsUsed} - 1, 0)`, updatedAt: now }).where(eq(enrollments.id, p.enrollmentId)).run();
}

/** Monitoring stopped (removal, erasure): a scheduled payment of the borrower never goes out. */
export function voidScheduledOnStop(ctx: JobContext & { tx: Tx }, stopped: { enrollmentId: string }): void {
  const p = q.scheduledPaymentOf(ctx.tx, stopped.enrollmentId);
  if (p) voidScheduled(ctx, p, 'monitoring of the borrower stopped before its day');
}
