import type { RateStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { DAY_MS, iso } from '../../platform/clock';
import type { StoreCtx } from '../../platform/store';
import { policyOf } from '../collection-policy/service';
import { type WindowReturn } from './store';
import { UNAUTHORIZED_RETURNS } from '../../adapters/processors/return-codes';

// Nacha's return-rate thresholds (collection-rules.md): an originator whose ACH debits come back too often
// is reviewed by its bank. Each class's rate is its returns over the window's debits.

// Thresholds in tenths of a per mille, so the boundaries are compared in integers, exactly.
export const RETURN_CLASSES = {
  unauthorized: { codes: UNAUTHORIZED_RETURNS, threshold: 0.005, tenthsPerMille: 50 },
  administrative: { codes: ['R02', 'R03', 'R04'], threshold: 0.03, tenthsPerMille: 300 },
  overall: { codes: null, threshold: 0.15, tenthsPerMille: 1500 },
} as const;
export type ReturnClass = keyof typeof RETURN_CLASSES;
export const CLASS_NAMES = Object.keys(RETURN_CLASSES) as ReturnClass[];

/** The window Nacha's thresholds are measured over, which the alerts and the pause watch. */
export const WATCH_DAYS = 60;

/**
 * ok below 80% of the threshold, warning from 80%, exceeded at or above it: returns ÷ debits against it, in
 * integers. Returns with no debits in the window (returns of debits made before it) are never fine: exceeded.
 */
export function statusOf(returns: number, debits: number, tenthsPerMille: number): RateStatus {
  if (debits === 0) return returns > 0 ? 'exceeded' : 'ok';
  if (returns * 10_000 >= debits * tenthsPerMille) return 'exceeded';
  return returns * 10_000 * 10 >= debits * tenthsPerMille * 8 ? 'warning' : 'ok';
}

/** returns ÷ debits; with no debits, 0 without returns and 1 with some (every debit came back, as far as the window shows). */
export const rateOf = (returns: number, debits: number): number => (debits > 0 ? returns / debits : returns > 0 ? 1 : 0);

export interface ClassRate {
  returns: number;
  rate: number;
  threshold: number;
  status: RateStatus;
}

/** The lender's rates over the `days` ending at `to`, from the window's index entries. */
export async function ratesOver(c: StoreCtx, lenderId: string, to: number, days: number) {
  const from = to - days * DAY_MS;
  const debits = await c.deps.stores.returnRates.debitsIn(c, lenderId, from, to);
  const returns = await c.deps.stores.returnRates.returnsIn(c, lenderId, from, to);
  return ratesFrom(debits, returns, from, to, days);
}

/** Each class's rate from the window's debits and returns. */
function ratesFrom(debits: number, returns: WindowReturn[], from: number, to: number, days: number) {
  return { window: { from: iso(from), to: iso(to), days }, debits, ...classify(debits, returns) };
}

/**
 * Returns by code (in code order; one without a code counts in overall only) and each class's returns and rate
 * over `debits`: the rates' classes, and the monthly ACH report's.
 */
export function classify(debits: number, returns: readonly WindowReturn[]) {
  const counts = new Map<string, number>();
  for (const r of returns) if (r.code) counts.set(r.code, (counts.get(r.code) ?? 0) + 1);
  // In code order: the rows come in whatever order the engine reads them, and the answer must not follow it.
  const byCode: Record<string, number> = Object.fromEntries([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const cls = (name: ReturnClass): ClassRate => {
    const { codes, threshold, tenthsPerMille } = RETURN_CLASSES[name];
    const n = codes === null ? returns.length : returns.filter((r) => r.code !== null && (codes as readonly string[]).includes(r.code)).length;
    return { returns: n, rate: rateOf(n, debits), threshold, status: statusOf(n, debits, tenthsPerMille) };
  };
  return {
    rates: { unauthorized: cls('unauthorized'), administrative: cls('administrative'), overall: cls('overall') } as Record<ReturnClass, ClassRate>,
    by_code: byCode,
  };
}

/**
 * The lender's ACH debits in [from, to] with the total of their amounts, and its returns in it by code and
 * class, each class's rate over those debits: counted exactly as the rates count them (the same statements).
 */
export async function debitsAndReturnsIn(c: StoreCtx, lenderId: string, from: number, to: number) {
  const debits = await c.deps.stores.returnRates.debitTotalsIn(c, lenderId, from, to);
  const returns = await c.deps.stores.returnRates.returnsIn(c, lenderId, from, to);
  return { debits, returns: returns.length, ...classify(debits.count, returns) };
}

export const anyExceeded = (statuses: Record<ReturnClass, { status: RateStatus } | RateStatus>): boolean =>
  CLASS_NAMES.some((c) => {
    const s = statuses[c];
    return (typeof s === 'string' ? s : s.status) === 'exceeded';
  });

/** GET /v1/return_rates. `paused`: the lender's policy pauses on breach and a class is exceeded over 60 days now. */
export async function returnRates({ ctx, input }: { ctx: Ctx; input: { windowDays: number } }) {
  const now = ctx.deps.clock.now();
  const answer = await ratesOver(ctx, ctx.lender.id, now, input.windowDays);
  const watched = input.windowDays === WATCH_DAYS ? answer : await ratesOver(ctx, ctx.lender.id, now, WATCH_DAYS);
  return { ...answer, paused: (await policyOf(ctx, ctx.lender.id)).returnRatePause && anyExceeded(watched.rates) };
}
