import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import type { Enrollment } from './borrower';
import { exactCents } from '../../platform/money';

export interface LedgerView {
  entries: { reference: string; kind: 'credit' | 'reversal'; amount: number; at: string }[];
  collected: number;
  reversed: number;
  net: number;
}

/** The borrower's ledger as collection posts it: credits on settlement, reversals on returns. */
export async function ledgerOf(ctx: Ctx, e: Enrollment): Promise<LedgerView> {
  const rows = await ctx.deps.stores.enrollments.ledgerEntriesOf(ctx, ctx.lender.id, e.id);
  // Summed by SQLite in 64-bit integers, never as floating point in JavaScript.
  const t = await ctx.deps.stores.enrollments.ledgerTotals(ctx, ctx.lender.id, e.id);
  return {
    entries: rows.map((r) => ({ reference: r.reference, kind: r.kind, amount: r.amountCents, at: iso(r.at) })),
    collected: exactCents(t.collected),
    reversed: exactCents(t.reversed),
    net: exactCents(t.collected - t.reversed),
  };
}
