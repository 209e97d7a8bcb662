// The accept worker's thread (accept-offload.ts starts it): prepares large balance requests off the event
// loop (a JSON body or a CSV file). It holds a vault with the current key only (it seals, never opens) and no database connection.
import { Vault } from '../../platform/vault';
import { postedError } from '../../platform/thread';
import { prepareBalanceCsv, prepareBalanceRequest } from './prepare';

declare const self: Worker;

type ToWorker =
  | { type: 'init'; key: Uint8Array }
  | { type: 'prepare' | 'prepare_csv'; id: number; bytes: Uint8Array; debitCardsApproved: boolean; now: number; bankProviders?: string[] };

let vault: Vault | null = null;

self.onmessage = async (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === 'init') {
    vault = new Vault(Buffer.from(m.key));
    return;
  }
  try {
    const opts = { debitCardsApproved: m.debitCardsApproved, now: m.now, bankProviders: m.bankProviders, seal: (b: Uint8Array) => vault!.sealBytes(b) };
    const prepared = m.type === 'prepare_csv' ? await prepareBalanceCsv(m.bytes, opts) : prepareBalanceRequest(m.bytes, opts);
    self.postMessage({ type: 'done', id: m.id, prepared });
  } catch (e) {
    self.postMessage({ type: 'failed', id: m.id, error: postedError(e) });
  }
};
