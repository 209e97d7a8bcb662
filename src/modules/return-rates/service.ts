import type { Ctx } from '../../deps';
import { DAY_MS, iso } from '../../platform/clock';
import { dbOf } from '../../platform/context';
import * as q from './queries';

// Nacha's return-rate thresholds (collection-rules.md): an originator whose ACH debits come back too often
// is reviewed by its bank. Each class's rate is its returns over the window's debits.

// Thresholds in tenths of a per mille, so the boundaries are compared in integers, exactly.
export const RETURN_CLASSES = {
  unauthorized: { codes: ['R05', 'R07', 'R10', 'R11', 'R29', 'R51'], threshold: 0.005, tenthsPerMille: 50 },
  administrative: { codes: ['R02', 'R03', 'R04'], threshold: 0.03, tenthsPerMille: 300 },
  overall: { codes: null, threshold: 0.15, tenthsPerMille: 1500 },
} as const;
export type ReturnClass = keyof typeof RETURN_CLASSES;

/** ok below 80% of the threshold, warning from 80%, exceeded at or above it: returns ÷ debits against it, in integers. */
export function statusOf(returns: number, debits: number, tenthsPerMille: number): 'ok' | 'warning' | 'exceeded' {
  if (debits === 0) return 'ok';
  if (returns * 10_000 >= debits * tenthsPerMille) return 'exceeded';
  return returns * 10_000 * 10 >= debits * tenthsPerMille * 8 ? 'warning' : 'ok';
}

/** GET /v1/return_rates. */
export function returnRates({ ctx, input }: { ctx: Ctx; input: { windowDays: number } }) {
  const to = ctx.deps.clock.now();
  const from = to - input.windowDays * DAY_MS;
  const db = dbOf(ctx);
  const debits = q.debitsIn(db, ctx.lender.id, from, to);
  const returns = q.returnsIn(db, ctx.lender.id, from, to);
  const byCode: Record<string, number> = {};
  for (const r of returns) if (r.code) byCode[r.code] = (byCode[r.code] ?? 0) + 1;
  const rate = (n: number) => (debits === 0 ? 0 : n / debits);
  const cls = (name: ReturnClass) => {
    const { codes, threshold, tenthsPerMille } = RETURN_CLASSES[name];
    const n = codes === null ? returns.length : returns.filter((r) => r.code !== null && (codes as readonly string[]).includes(r.code)).length;
    return { returns: n, rate: rate(n), threshold, status: statusOf(n, debits, tenthsPerMille) };
  };
  return {
    window: { from: iso(from), to: iso(to), days: input.windowDays },
    debits,
    rates: { unauthorized: cls('unauthorized'), administrative: cls('administrative'), overall: cls('overall') },
    by_code: byCode,
    // The pause on breach is not built: nothing pauses collection.
    paused: false,
  };
}
