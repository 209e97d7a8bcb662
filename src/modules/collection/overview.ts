import { eq, sql } from 'drizzle-orm';
import { enrollments, payments } from '../../../db/schema';
import { MONITOR_STATES, PAYMENT_STATUSES, type MonitorState, type PaymentStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { dbOf } from '../../platform/context';
import { flightSince, ledgerByDay, ledgerSince, returnedSince, sumOf } from './queries';
import { returnRatesNow as returnRates } from '../return-rates/service';

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
  returnRates: ReturnType<typeof returnRates>;
}

/** Every key with its count from grouped rows, 0 for a key no row has. */
function countsOf<K extends string>(keys: readonly K[], rows: { key: K; n: number }[]): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const r of rows) out[r.key] = r.n;
  return out;
}

export function collectionOverview(ctx: Ctx): Overview {
  const db = dbOf(ctx);
  const lender = ctx.lender.id;
  const now = ctx.deps.clock.now();
  const since30 = now - 30 * DAY_MS;
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const firstDay = today - 59 * DAY_MS;

  const totals = (from: number): Totals => {
    const l = ledgerSince(db, lender, from);
    const f = flightSince(db, lender, from);
    const d = returnedSince(db, lender, from);
    return {
      collected: sumOf(l, 'c'),
      returned: sumOf(l, 'r'),
      returnedDebits: sumOf(d, 'd'),
      returnedDebitCount: Number(d.n),
      inFlight: sumOf(f, 'f'),
      inFlightCount: Number(f.n),
    };
  };

  const borrowersByState = countsOf(
    MONITOR_STATES,
    db.select({ key: enrollments.state, n: sql<number>`COUNT(*)` }).from(enrollments).where(eq(enrollments.lenderId, lender)).groupBy(enrollments.state).all(),
  );
  const paymentsByStatus = countsOf(
    PAYMENT_STATUSES,
    db.select({ key: payments.status, n: sql<number>`COUNT(*)` }).from(payments).where(eq(payments.lenderId, lender)).groupBy(payments.status).all(),
  );

  const byDay = new Map<number, { collected: bigint; returned: bigint }>();
  for (const r of ledgerByDay(db, lender, firstDay)) byDay.set(Number(r.day), { collected: sumOf(r, 'c'), returned: sumOf(r, 'r') });
  const daily = Array.from({ length: 60 }, (_, i) => {
    const day = firstDay + i * DAY_MS;
    return { day, ...(byDay.get(day) ?? { collected: 0n, returned: 0n }) };
  });

  return {
    asOf: now,
    allTime: totals(0),
    last30Days: totals(since30),
    borrowersByState,
    paymentsByStatus,
    daily,
    returnRates: returnRates({ ctx, input: { windowDays: 60 } }),
  };
}
