import { and, asc, eq } from 'drizzle-orm';
import { ledgerEntries } from '../../../db/schema';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { dbOf } from '../../platform/context';
import type { Enrollment } from './borrower';
import { exactCents } from '../../platform/money';
import * as q from './queries';

export interface LedgerView {
  entries: { reference: string; kind: 'credit' | 'reversal'; amount: number; at: string }[];
  collected: number;
  reversed: number;
  net: number;
}

/** The borrower's ledger as collection posts it: credits on settlement, reversals on returns. */
export function ledgerOf(ctx: Ctx, e: Enrollment): LedgerView {
  const rows = dbOf(ctx)
    .select()
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.lenderId, ctx.lender.id), eq(ledgerEntries.enrollmentId, e.id)))
    .orderBy(asc(ledgerEntries.id))
    .all();
  // Summed by SQLite in 64-bit integers, never as floating point in JavaScript.
  const t = q.ledgerTotals(dbOf(ctx), ctx.lender.id, e.id);
  return {
    entries: rows.map((r) => ({ reference: r.reference, kind: r.kind, amount: r.amountCents, at: iso(r.at) })),
    collected: exactCents(t.collected),
    reversed: exactCents(t.reversed),
    net: exactCents(t.collected - t.reversed),
  };
}
