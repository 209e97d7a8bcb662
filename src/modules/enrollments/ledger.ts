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

/**
 * Borrowers' ledgers as collection posts them (credits on settlement, reversals on returns), by enrollment id:
 * the entries of all of them in one statement, their totals in another.
 */
export async function ledgersOf(ctx: Ctx, es: readonly Enrollment[]): Promise<Map<string, LedgerView>> {
  const ids = es.map((e) => e.id);
  const entries = new Map<string, LedgerView['entries']>(ids.map((id) => [id, []]));
  for (const r of await ctx.deps.stores.enrollments.ledgerEntriesAmong(ctx, ctx.lender.id, ids)) {
    entries.get(r.enrollmentId)?.push({ reference: r.reference, kind: r.kind, amount: r.amountCents, at: iso(r.at) });
  }
  // Summed by the database in 64-bit integers and read as BigInt, never as floating point in JavaScript.
  const totals = new Map((await ctx.deps.stores.enrollments.ledgerTotalsAmong(ctx, ctx.lender.id, ids)).map((t) => [t.enrollmentId, t]));
  return new Map(
    ids.map((id) => {
      const t = totals.get(id) ?? { collected: 0n, reversed: 0n };
      return [id, { entries: entries.get(id)!, collected: exactCents(t.collected), reversed: exactCents(t.reversed), net: exactCents(t.collected - t.reversed) }];
    }),
  );
}
