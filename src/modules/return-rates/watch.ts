import type { RateStatus } from '../../../db/schema/enums';
import type { Deps, JobContext } from '../../deps';
import { transaction, type Tx } from '../../platform/context';
import type { Job } from '../../platform/jobs';
import { pushToEndpoints } from '../webhooks/endpoints';
import { CLASS_NAMES, ratesOver, WATCH_DAYS, type ReturnClass } from './service';
import { type SavedStatuses, type WatchedStatuses } from './store';

// The return-rate watch: each class's status over the last 60 days is evaluated whenever a return is recorded
// (read from a processor, or uploaded), before a lender that pauses on breach initiates an ACH payment, and on
// a timer (the window slides: debits leave it too). A class whose status changed since the last evaluation is
// pushed once to the lender's endpoints as RETURN_RATE_ALERT, in the transaction that evaluated it. An upload
// reads the rates on a snapshot and saves them after (readReturnRates, saveReturnRates), so that the read, as
// long as the lender's window is large, never holds the write lock.

const ALL_OK: Record<ReturnClass, RateStatus> = { unauthorized: 'ok', administrative: 'ok', overall: 'ok' };

type Rates = Awaited<ReturnType<typeof ratesOver>>;

/** The statuses now, and a RETURN_RATE_ALERT payload for each class whose status changed; metrics and log as it goes. */
function compare(deps: JobContext['deps'], lenderId: string, r: Rates, prev: WatchedStatuses) {
  const next = { ...ALL_OK };
  const alerts: Record<string, unknown>[] = [];
  for (const c of CLASS_NAMES) {
    const cur = r.rates[c];
    next[c] = cur.status;
    deps.metrics.achReturnRate.set({ lender: lenderId, class: c }, cur.rate);
    if (cur.status === prev[c]) continue;
    alerts.push({
      class: c,
      status: cur.status,
      rate: cur.rate,
      threshold: cur.threshold,
      returns: cur.returns,
      debits: r.debits,
      window_days: WATCH_DAYS,
    });
    deps.logger.info({ lender_id: lenderId, class: c, from: prev[c], to: cur.status }, 'return-rate status changed');
  }
  deps.metrics.achDebitsWindow.set({ lender: lenderId }, r.debits);
  return { next, alerts };
}

/** Evaluates the lender's rates now, alerts on every class whose status changed, and returns the statuses. */
export async function evaluateReturnRates(ctx: JobContext & { tx: Tx }, lenderId: string): Promise<Record<ReturnClass, RateStatus>> {
  await ctx.deps.stores.returnRates.serializeWatch(ctx, lenderId);
  const now = ctx.deps.clock.now();
  const r = await ratesOver(ctx, lenderId, now, WATCH_DAYS);
  const prev = (await ctx.deps.stores.returnRates.watchedStatuses(ctx, lenderId)) ?? ALL_OK;
  const { next, alerts } = compare(ctx.deps, lenderId, r, prev);
  for (const a of alerts) await pushToEndpoints(ctx, now, lenderId, 'RETURN_RATE_ALERT', a);
  await ctx.deps.stores.returnRates.saveWatchedStatuses(ctx, lenderId, next, now);
  return next;
}

/** Rates read on a snapshot, and the evaluation saved when they were read (null: none yet). */
export interface RatesRead {
  rates: Rates;
  saved: SavedStatuses | null;
}

/**
 * The lender's rates now, read on whatever `ctx` reads (an upload's: a snapshot taken once its rows are
 * committed, holding no write lock), and the evaluation saved then: saveReturnRates saves them.
 */
export async function readReturnRates(ctx: JobContext & { tx: Tx }, lenderId: string): Promise<RatesRead> {
  const rates = await ratesOver(ctx, lenderId, ctx.deps.clock.now(), WATCH_DAYS);
  return { rates, saved: (await ctx.deps.stores.returnRates.watchedStatuses(ctx, lenderId)) ?? null };
}

const sameEvaluation = (a: SavedStatuses | null, b: SavedStatuses | null): boolean =>
  a === null || b === null ? a === b : a.evaluatedAt === b.evaluatedAt && CLASS_NAMES.every((c) => a[c] === b[c]);

/**
 * Saves the statuses of rates read by readReturnRates, alerting on every class whose status changed, as
 * evaluateReturnRates does: the same as an evaluation made when they were read, as no other evaluation was
 * saved in between (their turn is taken first, so one under way is waited for). If one was, the rates are read
 * again here, in this turn, as evaluateReturnRates reads them: that one may have read them before what was
 * read here was committed (PostgreSQL), and saving these after it would undo it. Returns the statuses.
 */
export async function saveReturnRates(ctx: JobContext & { tx: Tx }, lenderId: string, read: RatesRead): Promise<Record<ReturnClass, RateStatus>> {
  await ctx.deps.stores.returnRates.serializeWatch(ctx, lenderId);
  const saved = (await ctx.deps.stores.returnRates.watchedStatuses(ctx, lenderId)) ?? null;
  if (!sameEvaluation(saved, read.saved)) return evaluateReturnRates(ctx, lenderId);
  const now = ctx.deps.clock.now();
  const { next, alerts } = compare(ctx.deps, lenderId, read.rates, saved ?? ALL_OK);
  for (const a of alerts) await pushToEndpoints(ctx, now, lenderId, 'RETURN_RATE_ALERT', a);
  await ctx.deps.stores.returnRates.saveWatchedStatuses(ctx, lenderId, next, now);
  return next;
}

/** Every lender, each in its own transaction: the daily-at-least evaluation as the window slides. */
export async function evaluateAll(deps: Deps, signal?: AbortSignal): Promise<number> {
  const ids = await deps.stores.returnRates.lenderIds({ deps });
  for (const id of ids) {
    if (signal?.aborted) break;
    // One lender at a time, each in its turn at the write gate: requests go on between them.
    await transaction({ deps }, (tx) => evaluateReturnRates(tx, id));
    await Bun.sleep(0);
  }
  return ids.length;
}

/**
 * Every replica. A lender's evaluation takes its lock first (serializeWatch) and compares with the statuses the
 * last one saved, so of two replicas evaluating at once the second finds the change already saved and alerts
 * nothing: one RETURN_RATE_ALERT per change. Running everywhere keeps each replica's return-rate gauges current.
 */
export const returnRateJob = (intervalMs: number): Job<Deps> => ({
  name: 'return-rate-watch',
  intervalMs,
  tick: (deps, signal) => evaluateAll(deps, signal),
});
