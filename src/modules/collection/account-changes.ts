import type { Ctx, Deps, JobContext } from '../../deps';
import { transaction } from '../../platform/context';
import type { PlatformDeps } from '../../platform/context';
import { Conflict, NotFound } from '../../platform/errors';
import { betweenSlices, type Job } from '../../platform/jobs';
import type { TxCtx } from '../../platform/store';
import { changeView, type SealedCorrection } from '../bank-accounts/changes';
import { NUMBER_CODES } from '../bank-accounts/corrections';
import { fingerprintKey, fingerprintOf } from '../bank-accounts/fingerprint';
import { openBorrower, sealBorrower } from '../enrollments/borrower';
import { indexBorrowers } from '../enrollments/search';
import { pushToEndpoints } from '../webhooks/endpoints';

// A Notification of Change applied (bank-accounts/changes.ts receives it): every borrower on the account gets
// the corrected details, so the next debit carries them, and the account its new fingerprint. Here, above
// enrollments and bank accounts both, since it writes the borrowers' sealed details and the account's record.

type ChangeCtx = TxCtx & { deps: Pick<PlatformDeps, 'vault' | 'clock'> & Pick<Deps, 'routing'> };

/** Borrowers of an account whose details one transaction corrects at a time. */
const BORROWERS_PER_SLICE = 200;

/**
 * Applies one change (status received) in one transaction: every borrower on the account gets the corrected
 * details (sealed again, its routing number and bank; its search entry), then the account its new fingerprint
 * and last four (or, when the corrected details are an account the lender already has, its borrowers move to
 * that one), its type, the time its number changed, and its hold lifted unless another change waits; the
 * borrowers are told (a block it set lifts, or validation_required where the policy asks for evidence again).
 * ACCOUNT_CORRECTED goes to the lender's endpoints. Nothing when the change is not to be applied (any more).
 */
export async function applyChange(c: ChangeCtx, changeId: string, by: 'automatic' | 'lender'): Promise<boolean> {
  const store = c.deps.stores.bankAccounts;
  const borrowers = c.deps.stores.enrollments;
  const change = await store.changeOf(c, changeId);
  if (!change || change.status !== 'received') return false;
  // One after another with a change received on the account meanwhile: its hold is never lost.
  await store.serializeAccount(c, change.bankAccountId);
  const sealed = JSON.parse(c.deps.vault.open(change.correctedSealed!)) as SealedCorrection;
  const now = c.deps.clock.now();
  let routing: string | null = null;
  let number: string | null = null;
  for (let after = ''; ; ) {
    const slice = await borrowers.detailsOnAccount(c, change.bankAccountId, after, BORROWERS_PER_SLICE);
    for (const b of slice) {
      const borrower = openBorrower(c.deps, b.sealed);
      if (sealed.a) borrower.s.accountNumber = sealed.a;
      const nextRouting = sealed.r ?? b.routing;
      routing = nextRouting;
      number = borrower.s.accountNumber ?? null;
      await borrowers.correctDetails(c, {
        id: b.id,
        sealed: sealBorrower(c.deps, borrower),
        routing: nextRouting,
        bankName: nextRouting ? (c.deps.routing.lookup(nextRouting)?.name ?? null) : null,
        now,
      });
      if (sealed.a) await indexBorrowers(c, c.deps.vault, [{ lenderId: b.lenderId, aid: b.aid, sensitive: borrower.s, phone: borrower.phone, cardLast4: null }]);
    }
    if (slice.length < BORROWERS_PER_SLICE) break;
    after = slice[slice.length - 1]!.aid;
  }
  const numberChanged = NUMBER_CODES.has(change.code);
  let fingerprint: string | null = null;
  if (numberChanged && routing !== null && number !== null) {
    const fp = fingerprintOf(await fingerprintKey(c), routing, number);
    const known = await store.accountByFingerprint(c, change.lenderId, fp);
    if (known && known !== change.bankAccountId) await borrowers.moveToAccount(c, change.bankAccountId, known, now);
    else fingerprint = fp;
  }
  await store.finishChange(c, {
    changeId,
    accountId: change.bankAccountId,
    status: 'applied',
    by,
    fingerprint,
    last4: fingerprint !== null ? number!.slice(-4) : null,
    accountType: sealed.t ?? null,
    numberChanged,
    routingCorrected: sealed.r !== undefined,
    now,
  });
  await pushToEndpoints(c, now, change.lenderId, 'ACCOUNT_CORRECTED', changeView({ ...change, status: 'applied', appliedAt: now, appliedBy: by }));
  return true;
}

/** Changes one tick of the job applies. */
const CHANGES_PER_TICK = 50;

/** The changes received under `automatic`, each applied in its own transaction, oldest first. */
export async function applyReceivedChanges(deps: Deps, signal?: AbortSignal): Promise<{ applied: number }> {
  const ctx: JobContext = { deps };
  let applied = 0;
  for (const { id } of await deps.stores.bankAccounts.changesToApply(ctx, CHANGES_PER_TICK)) {
    if (signal?.aborted) break;
    await betweenSlices(deps);
    if (await transaction(ctx, (tx) => applyChange(tx, id, 'automatic'))) applied++;
  }
  return { applied };
}

/**
 * Every replica: a change is applied in a transaction that finds it still received (and marks it applied), so
 * two replicas taking the same one apply it once: the second finds it applied and does nothing.
 */
export const accountChangesJob: Job<Deps> = {
  name: 'bank-account-changes',
  intervalMs: 5_000,
  tick: (deps, signal) => applyReceivedChanges(deps, signal),
};

/**
 * POST /v1/bank_accounts/{id}/changes/{change_id}/apply: the lender confirms a change held for review, and it
 * is applied now, in this transaction. One already applied or recorded is a 409; another lender's a 404.
 */
export async function confirmChange({ ctx, input }: { ctx: Ctx; input: { id: string; changeId: string } }) {
  return transaction(ctx, async (tx) => {
    const change = await tx.deps.stores.bankAccounts.changeOf(tx, input.changeId, ctx.lender.id);
    if (!change || change.bankAccountId !== input.id) throw new NotFound('Notification of Change', input.changeId);
    if (change.status === 'review') await tx.deps.stores.bankAccounts.confirmChange(tx, ctx.lender.id, change.id);
    else if (change.status !== 'received') throw new Conflict(`This Notification of Change is ${change.status} already`);
    await applyChange(tx, change.id, 'lender');
    const after = (await tx.deps.stores.bankAccounts.changeOf(tx, change.id, ctx.lender.id))!;
    return changeView(after);
  });
}
