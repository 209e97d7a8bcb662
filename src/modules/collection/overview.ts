import type { MonitorState, PaymentStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { returnRates } from '../return-rates/service';
import { type CountedSum, type LedgerTotals } from './store';

// The lender's collection at a glance, for the portal's overview: every figure from the same rows the API
// shows (the borrowers' ledgers and payments of GET /v1/payment_enrollments, GET /v1/return_rates), summed by
// SQLite from covering indexes.
//
// A lender's totals are sums over all of its borrowers, each of whose ledger may come near 2^53 cents (the
// upload refuses a file that would take one past it): they are given exactly as BigInt, never as a number
// that would round, and summed so SQLite's 64-bit integers cannot overflow (an overflowing SUM is an error).

const DAY_MS = 86_400_000;

/** Cents, exact at any size. */
export interface Totals {
  collected: bigint;
  /** Ledger reversals: what returns took back of what had been credited (a debit never credited reverses nothing). */
  returned: bigint;
  /** Debits returned (or returned late), each once: their amount and how many. */
  returnedDebits: bigint;
  returnedDebitCount: number;
  inFlight: bigint;
  inFlightCount: number;
}

export interface Overview {
  asOf: number;
  allTime: Totals;
  last30Days: Totals;
  borrowersByState: Record<MonitorState, number>;
  paymentsByStatus: Record<PaymentStatus, number>;
  /** Collected and returned per UTC day over the last 60 days, oldest first (today included). */
  daily: { day: number; collected: bigint; returned: bigint }[];
  returnRates: Awaited<ReturnType<typeof returnRates>>;
}

/** The days the overview shows: the last 60 UTC days, today included. */
export function overviewDays(now: number) {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return { since30: now - 30 * DAY_MS, firstDay: today - 59 * DAY_MS };
}

export const totalsOf = (l: LedgerTotals, f: CountedSum, d: CountedSum): Totals => ({
  collected: l.credited,
  returned: l.reversed,
  returnedDebits: d.amount,
  returnedDebitCount: d.count,
  inFlight: f.amount,
  inFlightCount: f.count,
});

/** Every day from firstDay, 0 for a day without entries. */
export function dailyOf(firstDay: number, days: (LedgerTotals & { day: number })[]): Overview['daily'] {
  const byDay = new Map(days.map((r) => [r.day, { collected: r.credited, returned: r.reversed }]));
  return Array.from({ length: 60 }, (_, i) => {
    const day = firstDay + i * DAY_MS;
    return { day, ...(byDay.get(day) ?? { collected: 0n, returned: 0n }) };
  });
}

export async function collectionOverview(ctx: Ctx): Promise<Overview> {
  const lender = ctx.lender.id;
  const now = ctx.deps.clock.now();
  const { since30, firstDay } = overviewDays(now);
  const totals = async (from: number): Promise<Totals> =>
    totalsOf(await ctx.deps.stores.paymentReads.ledgerTotals(ctx, lender, from), await ctx.deps.stores.paymentReads.inFlightTotals(ctx, lender, from), await ctx.deps.stores.paymentReads.returnedTotals(ctx, lender, from));
  const borrowersByState = await ctx.deps.stores.paymentReads.borrowerCountsByState(ctx, lender);
  const paymentsByStatus = await ctx.deps.stores.paymentReads.paymentCountsByStatus(ctx, lender);
  const daily = dailyOf(firstDay, await ctx.deps.stores.paymentReads.ledgerTotalsByDay(ctx, lender, firstDay));
  return {
    asOf: now,
    allTime: await totals(0),
    last30Days: await totals(since30),
    borrowersByState,
    paymentsByStatus,
    daily,
    returnRates: await returnRates({ ctx, input: { windowDays: 60 } }),
  };
}
