import type { Ctx, Deps } from '../../deps';
import { transaction } from '../../platform/context';
import { InvalidInput, NotFound } from '../../platform/errors';
import type { Job } from '../../platform/jobs';
import { againOnConflict } from '../../platform/pg';
import type { CallCount } from '../../platform/provider-calls';

// What a lender's reads cost at its providers: the calls made through each bank-data connection, per endpoint
// and UTC day. The calls are counted in memory as they leave (platform/provider-calls.ts) and added to the
// provider_calls table by this job every few seconds, one statement for all of them, so no read waits for a
// write. A count not yet written is shown by this process's usage answers all the same; one that cannot be
// written is kept for the next flush. A process stopped cleanly writes its counts on the way out; a crash loses
// at most the last PROVIDER_CALLS_FLUSH_MS of them (other replicas' unwritten counts show once written).

/** How often counted calls are written. */
export const PROVIDER_CALLS_FLUSH_MS = 5_000;

/** Writes the calls counted so far; on failure they are given back to be written with the next ones. */
export async function writeProviderCalls(deps: Deps): Promise<{ written: number }> {
  const rows: CallCount[] = deps.providerCalls.drain();
  if (rows.length === 0) return { written: 0 };
  try {
    await againOnConflict(3, () => transaction({ deps }, (tx) => tx.deps.stores.bankDataConnections.addProviderCalls(tx, rows)));
  } catch (e) {
    deps.providerCalls.restore(rows);
    throw e;
  }
  return { written: rows.length };
}

/** Every replica: each adds its own counts (an addition, so two replicas' counts sum). */
export const providerCallsJob: Job<Deps> = {
  name: 'provider-calls',
  intervalMs: PROVIDER_CALLS_FLUSH_MS,
  tick: (deps) => writeProviderCalls(deps),
};

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** GET /v1/bank_data_connections/{id}/usage: the connection's calls in a month (UTC), by endpoint and by day. */
export async function connectionUsage({ ctx, input }: { ctx: Ctx; input: { id: string; month?: string } }) {
  const month = input.month ?? new Date(ctx.deps.clock.now()).toISOString().slice(0, 7);
  const m = MONTH.exec(month);
  if (!m) throw InvalidInput.field('month', 'must be a month as YYYY-MM');
  // Another lender's connection, or a deleted one, is not found, as everywhere else.
  const conn = await ctx.deps.stores.bankDataConnections.liveConnection(ctx, ctx.lender.id, input.id);
  if (!conn) throw new NotFound('Bank-data connection', input.id);
  const next = Number(m[2]) === 12 ? `${Number(m[1]) + 1}-01` : `${m[1]}-${String(Number(m[2]) + 1).padStart(2, '0')}`;
  const byKey = new Map<string, { date: string; endpoint: string; calls: number }>();
  const add = (date: string, endpoint: string, calls: number) => {
    const k = `${date}\n${endpoint}`;
    const row = byKey.get(k);
    if (row) row.calls += calls;
    else byKey.set(k, { date, endpoint, calls });
  };
  for (const r of await ctx.deps.stores.bankDataConnections.providerCalls(ctx, conn.id, `${month}-01`, `${next}-01`)) add(r.day, r.endpoint, Number(r.calls));
  for (const r of ctx.deps.providerCalls.unwritten(conn.id, `${month}-`)) add(r.day, r.endpoint, r.calls);
  const days = [...byKey.values()].sort((a, b) => (a.date === b.date ? (a.endpoint < b.endpoint ? -1 : 1) : a.date < b.date ? -1 : 1));
  const totals = new Map<string, number>();
  for (const d of days) totals.set(d.endpoint, (totals.get(d.endpoint) ?? 0) + d.calls);
  return {
    connection_id: conn.id,
    provider: conn.provider,
    month,
    total_calls: days.reduce((s, d) => s + d.calls, 0),
    endpoints: [...totals].map(([endpoint, calls]) => ({ endpoint, calls })).sort((a, b) => b.calls - a.calls || (a.endpoint < b.endpoint ? -1 : 1)),
    days,
  };
}
