import { eq, sql } from 'drizzle-orm';
import { enrollments, payments } from '../../../db/schema';
import { MONITOR_STATES, PAYMENT_STATUSES, type MonitorState, type PaymentStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { dbOf } from '../../platform/context';
import type { Db } from '../../platform/db';
import { returnRates } from '../return-rates/service';

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
  returned: bigint;
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

/**
 * SUM of an amount column that cannot overflow: each amount (under 2^54 cents: a borrower's ledger stays under
 * 2^53) is summed as three 18-bit parts, each part's sum staying under 2^63 for up to 2^45 rows, more than a
 * SQLite file can hold. The parts are put together in BigInt by `joined`. Read with safeIntegers.
 */
const PART_BITS = 18;
const PART_MASK = (1 << PART_BITS) - 1;
const partSums = (amount: string, name: string, when = '1') =>
  [0, 1, 2]
    .map((i) => `COALESCE(SUM(CASE WHEN ${when} THEN (${amount} >> ${i * PART_BITS})${i < 2 ? ` & ${PART_MASK}` : ''} END), 0) AS ${name}${i}`)
    .join(', ');
type Parts<N extends string> = Record<`${N}${0 | 1 | 2}`, bigint>;
const joined = <N extends string>(row: Parts<N>, name: N): bigint =>
  row[`${name}0`] + (row[`${name}1`] << BigInt(PART_BITS)) + (row[`${name}2`] << BigInt(2 * PART_BITS));

const CREDITED = partSums('amount_cents', 'c', `kind = 'credit'`);
const REVERSED = partSums('amount_cents', 'r', `kind = 'reversal'`);

// What was credited, and what was reversed by returns, from the ledger_entries_lender_at_idx covering index.
const ledgerSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Parts<'c' | 'r'>, [string, number]>(`SELECT ${CREDITED}, ${REVERSED} FROM ledger_entries WHERE lender_id = ? AND at >= ?`)
    .safeIntegers(true)
    .get(lender, from)!;
const ledgerByDay = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Parts<'c' | 'r'> & { day: bigint }, [string, number]>(
      `SELECT (at / ${DAY_MS}) * ${DAY_MS} AS day, ${CREDITED}, ${REVERSED} FROM ledger_entries WHERE lender_id = ? AND at >= ? GROUP BY 1`,
    )
    .safeIntegers(true)
    .all(lender, from);
// In flight: sent and not yet settled or returned (initiating, processing).
const flightSince = (db: Db, lender: string, from: number) =>
  db.$client
    .query<Parts<'f'> & { n: bigint }, [string, number]>(
      `SELECT ${partSums('amount_cents', 'f')}, COUNT(*) AS n FROM payments
        WHERE lender_id = ? AND status IN ('initiating', 'processing') AND created_at >= ?`,
    )
    .safeIntegers(true)
    .get(lender, from)!;

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
    return { collected: joined(l, 'c'), returned: joined(l, 'r'), inFlight: joined(f, 'f'), inFlightCount: Number(f.n) };
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
  for (const r of ledgerByDay(db, lender, firstDay)) byDay.set(Number(r.day), { collected: joined(r, 'c'), returned: joined(r, 'r') });
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
