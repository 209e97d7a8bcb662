import { and, eq, inArray } from 'drizzle-orm';
import { enrollments, payments } from '../../../db/schema';
import { newId } from '../../platform/ids';
import type { MonitoringReadHook } from '../hooks';
import { resolveKey } from '../payment-connections/resolve';
import { referenceOf } from './reference';
import { planPayment } from './rules';
import { policyOf } from '../collection-policy/service';
import type { BlockedReason } from '../enrollments/monitor';
import * as q from './queries';
import { applyMonitorEvent } from '../enrollments/monitor-store';

/** An original payment and at most two reinitiations per enrollment. */
export const MAX_PAYMENTS_PER_ENROLLMENT = 3;


/**
 * The collection decision, called with each monitoring read in the transaction that records it. A payment of
 * the current collectable_amount is initiated on the borrower's rail exactly when all of these hold: the
 * monitor is `monitored` and inside its window; no payment of the borrower is in flight; fewer than three
 * payments since the last enrollment; nothing blocks it (verification); a key resolves; and the balance
 * covers the amount plus COLLECTION_MARGIN_CENTS. The payment row (status initiating, its id the idempotency
 * key) is committed with the read; the dispatch job sends it. No key → skipped, with blocked_reason.
 */
export const decideCollection: MonitoringReadHook = (ctx, read) => {
  const { tx, deps } = ctx;
  const now = deps.clock.now();
  const e = tx.select().from(enrollments).where(eq(enrollments.id, read.enrollmentId)).get();
  if (!e || e.state !== 'monitored') return;
  if (e.windowEndsAt === null || now >= e.windowEndsAt) return;
  if (read.balanceCents === null) return;
  if (e.paymentsUsed >= MAX_PAYMENTS_PER_ENROLLMENT) return;
  if (e.blockedReason === 'verification_required') return;
  const inFlight = tx
    .select({ id: payments.id })
    .from(payments)
    .where(and(eq(payments.enrollmentId, e.id), inArray(payments.status, ['initiating', 'processing'])))
    .get();
  if (inFlight) return;
  const block = (reason: BlockedReason) => {
    applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'blocked', reason }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
    deps.metrics.paymentsSkipped.inc({ reason });
  };
  const policy = policyOf(tx, e.lenderId);
  const plan = planPayment({
    history: q.paymentHistory(tx, e.id),
    enrolledAt: e.enrolledAt,
    authorizationAt: e.authorizationAt,
    covered: e.cfpbCovered ?? policy.cfpbCovered,
    policy,
    collectableCents: e.collectableAmountCents,
    now,
  });
  if (!plan.ok) return block(plan.blocked);
  if (read.balanceCents < plan.amountCents + deps.config.collectionMarginCents) return;
  const key = resolveKey(ctx, { lenderId: e.lenderId, rail: e.rail, merchantRef: e.merchantRef });
  if (!key || !key.keySealed) return block('no_processor_key');
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
      status: 'initiating',
      attempt: plan.attempt,
      reinitiationOf: plan.reinitiationOf,
      nextAttemptAt: now,
      createdAt: now,
      updatedAt: now,
    })
    .run();
  tx.update(enrollments).set({ paymentsUsed: e.paymentsUsed + 1, updatedAt: now }).where(eq(enrollments.id, e.id)).run();
  applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'payment_initiated' }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
  deps.metrics.paymentsInitiated.inc({ rail: e.rail });
};
