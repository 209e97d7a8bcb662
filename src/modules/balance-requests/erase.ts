import type { TxCtx } from '../../platform/store';
import { compressPacked, packItems, unpackItems } from './payload';

/** A waiting batch's item list without the borrower's clear details, or null when the borrower is not in it. */
function scrubbed(stored: string | Uint8Array, aid: string): Uint8Array | null {
  const items = unpackItems(stored);
  if (!items.some((i) => i.id === aid)) return null;
  return compressPacked(packItems(items.map((i) => (i.id === aid ? { ...i, phone: null, zip: null, meta: null } : i))));
}

/**
 * Erasure of a borrower, the balance pipeline's part: its clear details (phone, zip, metadata) in the queue
 * rows of started batches, and in the item lists of batches still waiting to start (their sealed part is
 * ciphertext and is not read again once done), and its links' health rows. In the caller's transaction.
 */
export async function eraseBorrowerDetails(ctx: TxCtx, lenderId: string, aid: string): Promise<void> {
  // The waiting batches first, held until the transaction ends: one that starts meanwhile either waits for
  // this erasure and reads the scrubbed list, or started before and its queue rows are scrubbed below.
  const waiting = await ctx.deps.stores.balances.waitingPayloads(ctx, lenderId);
  await ctx.deps.stores.balances.eraseQueuedDetails(ctx, lenderId, aid);
  for (const w of waiting) {
    const items = scrubbed(w.items, aid);
    if (items) await ctx.deps.stores.balances.replacePayloadItems(ctx, w.batchId, items);
  }
  // The borrower's linked accounts kept for probing go with it.
  await ctx.deps.stores.linkHealth.eraseBorrower(ctx, lenderId, aid);
}
