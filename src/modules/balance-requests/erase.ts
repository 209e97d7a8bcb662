import type { Tx } from '../../platform/context';
import { compressPacked, packItems, unpackItems } from './payload';
import * as q from './queries';

/**
 * Erasure of a borrower, the balance pipeline's part: its clear details (phone, zip, metadata) in the queue
 * rows of started batches, and in the item lists of batches still waiting to start (their sealed part is
 * ciphertext and is not read again once done). In the caller's transaction.
 */
export function eraseBorrowerDetails(tx: Tx, lenderId: string, aid: string): void {
  q.eraseQueuedDetails(tx, lenderId, aid);
  for (const w of q.waitingPayloads(tx, lenderId)) {
    const items = unpackItems(w.items);
    if (!items.some((i) => i.id === aid)) continue;
    const scrubbed = items.map((i) => (i.id === aid ? { ...i, phone: null, zip: null, meta: null } : i));
    q.replacePayloadItems(tx, w.batchId, compressPacked(packItems(scrubbed)));
  }
}
