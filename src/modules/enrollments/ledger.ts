import type { Ctx } from '../../deps';
import type { Enrollment } from './service';

export interface LedgerView {
  entries: { reference: string; kind: 'credit' | 'reversal'; amount: number; at: string }[];
  collected: number;
  reversed: number;
  net: number;
}

/**
 * The borrower's ledger as the enrollment read shows it. Payments and their events are recorded by
 * collection; until a payment of this borrower exists, the ledger is empty.
 */
export function ledgerOf(_ctx: Ctx, _e: Enrollment): LedgerView {
  return { entries: [], collected: 0, reversed: 0, net: 0 };
}
