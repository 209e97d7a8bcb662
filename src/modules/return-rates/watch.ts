import { eq } from 'drizzle-orm';
import { lenders, returnRateWatch } from '../../../db/schema';
import type { RateStatus } from '../../../db/schema/enums';
import type { Deps, JobContext } from '../../deps';
import { transaction, type Tx } from '../../platform/context';
import type { Job } from '../../platform/jobs';
import { pushToEndpointsNow as pushToEndpoints } from '../webhooks/endpoints';
import { CLASS_NAMES, ratesOver, WATCH_DAYS, type ReturnClass } from './service';

// The return-rate watch: each class's status over the last 60 days is evaluated whenever a return is recorded
// (read from a processor, or uploaded), before a lender that pauses on breach initiates an ACH payment, and on
// a timer (the window slides: debits leave it too). A class whose status changed since the last evaluation is
// pushed once to the lender's endpoints as RETURN_RATE_ALERT, in the transaction that evaluated it.

const ALL_OK: Record<ReturnClass, RateStatus> = { unauthorized: 'ok', administrative: 'ok', overall: 'ok' };

/** Evaluates the lender's rates now, alerts on every class whose status changed, and returns the statuses. */
export function evaluateReturnRates(ctx: JobContext & { tx: Tx }, lenderId: string): Record<ReturnClass, RateStatus> {
  const { tx, deps } = ctx;
  const now = deps.clock.now();
  const r = ratesOver(tx, lenderId, now, WATCH_DAYS);
  const prev = tx.select().from(returnRateWatch).where(eq(returnRateWatch.lenderId, lenderId)).get() ?? ALL_OK;
  const next = { ...ALL_OK };
  for (const c of CLASS_NAMES) {
    const cur = r.rates[c];
    next[c] = cur.status;
    deps.metrics.achReturnRate.set({ lender: lenderId, class: c }, cur.rate);
    if (cur.status === prev[c]) continue;
    pushToEndpoints(tx, now, lenderId, 'RETURN_RATE_ALERT', {
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
  const row = { lenderId, ...next, evaluatedAt: now };
  tx.insert(returnRateWatch).values(row).onConflictDoUpdate({ target: returnRateWatch.lenderId, set: row }).run();
  return next;
}

/** Every lender, each in its own transaction: the daily-at-least evaluation as the window slides. */
export async function evaluateAll(deps: Deps, signal?: AbortSignal): Promise<number> {
  const ids = deps.db.select({ id: lenders.id }).from(lenders).all();
  for (const { id } of ids) {
    if (signal?.aborted) break;
    // One lender at a time, each in its turn at the write gate: requests go on between them.
    await transaction({ deps }, (tx) => evaluateReturnRates(tx, id));
    await Bun.sleep(0);
  }
  return ids.length;
}

export const returnRateJob = (intervalMs: number): Job<Deps> => ({
  name: 'return-rate-watch',
  intervalMs,
  tick: (deps, signal) => evaluateAll(deps, signal),
});
