import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { applyMonitorEventNow as applyMonitorEvent } from '../enrollments/monitor-store';
import { isChainBlock } from '../enrollments/monitor';
import { policyOfNow as policyOf } from '../collection-policy/service';
import { chainPresentments, planPayment } from './rules';
import * as q from './queries';

// The debt's chain of presentments, asked at the moments it can change: a return recorded, and a re-send of
// the borrower (a new authorization, a new amount). A chain that allows no further payment blocks the
// borrower at once, with the rules' reason, and its reads stop (pushed once as ENROLLMENT_BLOCKED); one that
// allows a payment again lifts that block and reads resume. The collection decision asks the same rules on
// every read, so this only says sooner what the decision would say.

/**
 * Re-asks the collection rules for one borrower (in the caller's transaction) and writes what they say on its
 * monitor. Only a monitored borrower is moved. `recount` (a re-send): payments_used becomes the presentments
 * the open chain has used, 0 when the next payment starts a new one.
 */
export function holdChain(ctx: JobContext & { tx: Tx }, enrollmentId: string, now: number, opts: { recount?: boolean } = {}): void {
  const { tx, deps } = ctx;
  const e = q.chainInputsOf(tx, enrollmentId);
  if (!e || (e.state !== 'monitored' && !opts.recount)) return;
  const history = q.paymentHistory(tx, enrollmentId);
  if (opts.recount) q.setPaymentsUsed(tx, enrollmentId, chainPresentments(history, e.authorizationAt), now);
  if (e.state !== 'monitored') return;
  // A payment in flight decides for itself; the rules are asked again when its outcome is recorded.
  if (history.some((p) => p.status === 'initiating' || p.status === 'processing' || p.status === 'scheduled')) return;
  const policy = policyOf(tx, e.lenderId);
  const plan = planPayment({
    history,
    authorizationAt: e.authorizationAt,
    covered: e.cfpbCovered === null ? policy.cfpbCovered : e.cfpbCovered === 1,
    policy,
    collectableCents: e.collectableAmountCents,
    now,
  });
  const readIntervalMs = deps.config.monitorReadIntervalMs;
  if (!plan.ok) applyMonitorEvent(tx, { enrollmentId, event: { type: 'blocked', reason: plan.blocked }, now, readIntervalMs });
  else if (isChainBlock(e.blockedReason)) applyMonitorEvent(tx, { enrollmentId, event: { type: 'unblocked' }, now, readIntervalMs });
}
