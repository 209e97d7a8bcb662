import type { Deps, JobContext } from '../../deps';
import { transaction, type Tx } from '../../platform/context';
import { betweenSlices, type Job } from '../../platform/jobs';
import { accountBlockOf, ACCOUNT_BLOCK_WORDS, isAccountBlock } from '../enrollments/monitor';
import { policyOf } from '../collection-policy/service';
import { holdChain } from './chain';
import { applyMonitorEvent } from '../enrollments/monitor-changes';
import { voidScheduled } from './decide';

// A return that sets a bank account's state (reactions.ts) acts on every borrower on the account at once: no
// payment is created, released or sent for any of them from its commit on (the decision and the dispatch's
// claim read the account's state). This job makes it visible on each of them soon after: every monitored
// borrower on the account that the state blocks is blocked with the account's reason (ENROLLMENT_BLOCKED to the
// lender's endpoints, reads stopped), and a payment of theirs scheduled and not sent is voided with it. Each
// borrower in its own transaction, serialized as a decision is, so it never holds two borrowers at once.

/** Accounts a tick takes, and borrowers of one account a slice. */
const ACCOUNTS_PER_TICK = 50;
const BORROWERS_PER_SLICE = 200;

/**
 * One borrower on a blocked account, as the account now stands: blocked and its scheduled payment voided when
 * the account's state blocks it (a payment already sent is left to its outcome); nothing otherwise.
 */
export async function holdForAccount(ctx: JobContext & { tx: Tx }, enrollmentId: string, now: number): Promise<boolean> {
  await ctx.deps.stores.decisions.serializeBorrowers(ctx, [enrollmentId]);
  const e = await ctx.deps.stores.decisions.chainInputsOf(ctx, enrollmentId);
  if (!e || e.state !== 'monitored') return false;
  const policy = await policyOf(ctx, e.lenderId);
  const block = accountBlockOf(await ctx.deps.stores.decisions.accountStandingOf(ctx, enrollmentId), e.authorizationAt, policy.requireAccountValidation);
  if (!block) {
    // The account no longer blocks it (a Notification of Change applied): a block the account set is lifted,
    // or replaced by what the rules say now.
    if (isAccountBlock(e.blockedReason)) await holdChain(ctx, enrollmentId, now);
    return false;
  }
  const scheduled = await ctx.deps.stores.decisions.scheduledPaymentOf(ctx, enrollmentId);
  if (scheduled) await voidScheduled(ctx, scheduled, `not debited: ${ACCOUNT_BLOCK_WORDS[block]}`);
  await applyMonitorEvent(ctx, { enrollmentId, event: { type: 'blocked', reason: block }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
  return true;
}

/**
 * The accounts whose borrowers are due to be told of a return, each account's monitored borrowers taken in
 * slices, then the account marked told (unless another return marked it again meanwhile: it is taken again).
 */
export async function tellAccountBlocks(deps: Deps, signal?: AbortSignal): Promise<{ blocked: number }> {
  const ctx: JobContext = { deps };
  let blocked = 0;
  for (const account of await deps.stores.bankAccounts.accountsToTell(ctx, ACCOUNTS_PER_TICK)) {
    let after = '';
    for (;;) {
      if (signal?.aborted) return { blocked };
      const slice = await deps.stores.bankAccounts.monitoredOn(ctx, account.id, after, BORROWERS_PER_SLICE);
      for (const b of slice) {
        await betweenSlices(deps);
        if (await transaction(ctx, (tx) => holdForAccount(tx, b.id, deps.clock.now()))) blocked++;
      }
      if (slice.length < BORROWERS_PER_SLICE) break;
      after = slice[slice.length - 1]!.id;
    }
    await betweenSlices(deps);
    await transaction(ctx, (tx) => tx.deps.stores.bankAccounts.told(tx, account.id, account.due));
  }
  return { blocked };
}

/**
 * Every replica: telling a borrower twice changes nothing the second time (a block already there writes
 * nothing, a voided payment is voided once), and the mark is cleared by compare and set.
 */
export const accountBlocksJob: Job<Deps> = {
  name: 'bank-account-blocks',
  intervalMs: 5_000,
  tick: (deps, signal) => tellAccountBlocks(deps, signal),
};
