import { and, eq, gte, sql } from 'drizzle-orm';
import { enrollments, ledgerEntries, payments } from '../../../db/schema';
import { MONITOR_STATES, PAYMENT_STATUSES, type MonitorState, type PaymentStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { dbOf } from '../../platform/context';
import { exactCents } from '../../platform/money';
import { returnRates } from '../return-rates/service';

// The lender's collection at a glance, for the portal's overview: every figure from the same rows the API
// shows (the borrowers' ledgers and payments of GET /v1/payment_enrollments, GET /v1/return_rates), summed by
// SQLite from covering indexes.

const DAY_MS = 86_400_000;

export interface Totals {
  collected: number;
  returned: number;
  inFlight: number;
  inFlightCount: number;
}

export interface Overview {
  asOf: number;
  allTime: Totals;
  last30Days: Totals;
  borrowersByState: Record<MonitorState, number>;
  paymentsByStatus: Record<PaymentStatus, number>;
  /** Collected and returned per UTC day over the last 60 days, oldest first (today included). */
  daily: { day: number; collected: number; returned: number }[];
  returnRates: ReturnType<typeof returnRates>;
}

// The ledger's sums, by kind: what was credited, and what was reversed by returns.
const credited = () => sql<bigint>`COALESCE(SUM(CASE WHEN ${ledgerEntries.kind} = 'credit' THEN ${ledgerEntries.amountCents} END), 0)`.mapWith(BigInt);
const reversed = () => sql<bigint>`COALESCE(SUM(CASE WHEN ${ledgerEntries.kind} = 'reversal' THEN ${ledgerEntries.amountCents} END), 0)`.mapWith(BigInt);

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

  const ledger = (from: number) =>
    db
      .select({
        collected: credited(),
        returned: reversed(),
      })
      .from(ledgerEntries)
      .where(and(eq(ledgerEntries.lenderId, lender), gte(ledgerEntries.at, from)))
      .get()!;
  // In flight: sent and not yet settled or returned (initiating, processing).
  const flight = (from: number) =>
    db
      .select({ cents: sql<bigint>`COALESCE(SUM(${payments.amountCents}), 0)`.mapWith(BigInt), n: sql<number>`COUNT(*)` })
      .from(payments)
      .where(and(eq(payments.lenderId, lender), sql`${payments.status} IN ('initiating', 'processing')`, gte(payments.createdAt, from)))
      .get()!;
  const totals = (from: number): Totals => {
    const l = ledger(from);
    const f = flight(from);
    return { collected: exactCents(l.collected), returned: exactCents(l.returned), inFlight: exactCents(f.cents), inFlightCount: f.n };
  };

  const borrowersByState = countsOf(
    MONITOR_STATES,
    db.select({ key: enrollments.state, n: sql<number>`COUNT(*)` }).from(enrollments).where(eq(enrollments.lenderId, lender)).groupBy(enrollments.state).all(),
  );
  const paymentsByStatus = countsOf(
    PAYMENT_STATUSES,
    db.select({ key: payments.status, n: sql<number>`COUNT(*)` }).from(payments).where(eq(payments.lenderId, lender)).groupBy(payments.status).all(),
  );

  const byDay = new Map<number, { collected: number; returned: number }>();
  for (const r of db
    .select({
      day: sql<number>`(${ledgerEntries.at} / ${DAY_MS}) * ${DAY_MS}`,
      collected: credited(),
      returned: reversed(),
    })
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.lenderId, lender), gte(ledgerEntries.at, firstDay)))
    .groupBy(sql`1`)
    .all())
    byDay.set(r.day, { collected: exactCents(r.collected), returned: exactCents(r.returned) });
  const daily = Array.from({ length: 60 }, (_, i) => {
    const day = firstDay + i * DAY_MS;
    return { day, ...(byDay.get(day) ?? { collected: 0, returned: 0 }) };
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
