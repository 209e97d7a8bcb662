// The accept worker's thread (accept-offload.ts starts it): prepares large balance requests off the event
// loop. It holds a vault with the current key only (it seals, never opens) and no database connection.
import { Vault } from '../../platform/vault';
import { postedError } from '../../platform/thread';
import { prepareBalanceRequest } from './prepare';

declare const self: Worker;

type ToWorker = { type: 'init'; key: Uint8Array } | { type: 'prepare'; id: number; bytes: Uint8Array; debitCardsApproved: boolean; now: number; bankProviders?: string[] };

let vault: Vault | null = null;

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === 'init') {
    vault = new Vault(Buffer.from(m.key));
    return;
  }
  try {
    const prepared = prepareBalanceRequest(m.bytes, { debitCardsApproved: m.debitCardsApproved, now: m.now, bankProviders: m.bankProviders, seal: (b) => vault!.sealBytes(b) });
    self.postMessage({ type: 'done', id: m.id, prepared });
  } catch (e) {
    self.postMessage({ type: 'failed', id: m.id, error: postedError(e) });
  }
};
