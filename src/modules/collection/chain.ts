import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { applyMonitorEvent } from '../enrollments/monitor-changes';
import { accountBlockOf, isAccountBlock, isChainBlock, revokedNow, type BlockedReason } from '../enrollments/monitor';
import type { AccountStanding } from '../bank-accounts/store';
import { policyOf } from '../collection-policy/service';
import type { CollectionPolicy } from '../collection-policy/policy';
import { chainPresentments, latestAuthorization, planPayment, secondFailure, type PastPayment } from './rules';
import { noteSecondFailure } from '../rights-notices/service';
import { type ChainInputs } from './store';

// The debt's chain of presentments, asked at the moments it can change: a return recorded, and a re-send of
// the borrower (a new authorization, a new amount, another bank account). A chain that allows no further
// payment blocks the borrower at once, with the rules' reason, and its reads stop (pushed once as
// ENROLLMENT_BLOCKED); one that allows a payment again lifts that block and reads resume. The borrower's bank
// account is asked first: its state blocks the borrower whatever the chain says, and a block it set lifts once
// it no longer holds for the borrower (a later authorization, another account). The collection decision asks
// the same on every read, so this only says sooner what the decision would say.
//
// A return that makes a covered borrower's second consecutive failure for funds also makes the consumer-rights
// notice due (12 CFR 1041.9(c), rights-notices/service.ts), in the same transaction, whatever the borrower's
// monitor says by then: the lender learned of the failure, and owes the notice, even for a borrower it removed.

/**
 * Re-asks the collection rules for one borrower (in the caller's transaction) and writes what they say on its
 * monitor. Only a monitored borrower is moved. `recount` (a re-send): payments_used becomes the presentments
 * the open chain has used, 0 when the next payment starts a new one. `returned` (a return was just recorded):
 * a covered borrower's second consecutive failure for funds makes the consumer-rights notice due.
 */
export async function holdChain(ctx: JobContext & { tx: Tx }, enrollmentId: string, now: number, opts: { recount?: boolean; returned?: boolean } = {}): Promise<void> {
  const { deps } = ctx;
  // The history is read and the presentments written from it: not beside a decision about the same borrower.
  await ctx.deps.stores.decisions.serializeBorrowers(ctx, [enrollmentId]);
  const e = await ctx.deps.stores.decisions.chainInputsOf(ctx, enrollmentId);
  if (!e || (e.state !== 'monitored' && !opts.recount && !opts.returned)) return;
  const history = await ctx.deps.stores.decisions.paymentHistory(ctx, enrollmentId);
  const policy = await policyOf(ctx, e.lenderId);
  if (opts.returned && coveredBy(e, policy)) {
    const failed = secondFailure(history, e.reauthorizedAt);
    if (failed) await noteSecondFailure(ctx, { lenderId: e.lenderId, enrollmentId, failed: [failed[0].id, failed[1].id] });
  }
  if (e.state !== 'monitored' && !opts.recount) return;
  const used = () => chainPresentments(history, latestAuthorization(e.authorizationAt, e.reauthorizedAt), now, policy.lateReturnWindowDays);
  if (opts.recount) await ctx.deps.stores.enrollments.setPaymentsUsed(ctx, enrollmentId, used(), now);
  if (e.state !== 'monitored') return;
  // A payment in flight decides for itself; the rules are asked again when its outcome is recorded.
  if (inFlight(history)) return;
  const move = chainMove(e, history, policy, now, await ctx.deps.stores.decisions.accountStandingOf(ctx, enrollmentId));
  if (!move) return;
  await applyMonitorEvent(ctx, { enrollmentId, event: move, now, readIntervalMs: deps.config.monitorReadIntervalMs });
  // A block shows the chain it is about: payments_used counts that chain's presentments.
  if (move.type === 'blocked' && !opts.recount) await ctx.deps.stores.enrollments.setPaymentsUsed(ctx, enrollmentId, used(), now);
}

/** Whether the CFPB payday rule covers the borrower: its own cfpb_covered, else the lender's policy. */
const coveredBy = (e: ChainInputs, policy: CollectionPolicy): boolean => (e.cfpbCovered === null ? policy.cfpbCovered : e.cfpbCovered === 1);

export const inFlight = (history: PastPayment[]) => history.some((p) => p.status === 'initiating' || p.status === 'processing' || p.status === 'scheduled');

/**
 * What the rules say of a monitored borrower with nothing in flight: blocked, unblocked, or nothing to change.
 * `account`: the standing of the borrower's bank account (null: none linked).
 */
export function chainMove(
  e: ChainInputs,
  history: PastPayment[],
  policy: CollectionPolicy,
  now: number,
  account: AccountStanding | null = null,
): { type: 'blocked'; reason: BlockedReason } | { type: 'unblocked' } | null {
  if (revokedNow(e)) return { type: 'blocked', reason: 'authorization_revoked' };
  const accountBlock = accountBlockOf(account, latestAuthorization(e.authorizationAt, e.reauthorizedAt), policy.requireAccountValidation);
  if (accountBlock) return { type: 'blocked', reason: accountBlock };
  const plan = planPayment({
    history,
    authorizationAt: e.authorizationAt,
    reauthorizedAt: e.reauthorizedAt,
    covered: coveredBy(e, policy),
    policy,
    collectableCents: e.collectableAmountCents,
    now,
  });
  if (!plan.ok) return { type: 'blocked', reason: plan.blocked };
  if (isChainBlock(e.blockedReason) || isAccountBlock(e.blockedReason) || e.blockedReason === 'late_return_window' || e.blockedReason === 'authorization_revoked') {
    return { type: 'unblocked' };
  }
  return null;
}
