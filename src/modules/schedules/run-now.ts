import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { Conflict, NotFound } from '../../platform/errors';
import { takeOnDemand } from '../../platform/on-demand';
import { insertBatch, refuseOverBacklog } from '../balance-requests/service';
import { runAuthorizers } from './runs';

// POST /v1/monitoring/schedules/{id}/run: one run of an ACTIVE schedule now, beside its cadence (its next
// run stays where it was). The run is a batch like any other run: its results, its BALANCE_BATCH_COMPLETED
// and threshold alerts go to the schedule's webhook. Bounded: one run of a schedule in flight at a time, the
// lender's on-demand bucket, and the lender's bound on authorizers waiting to be checked.

export interface RunNowResult {
  schedule_id: string;
  batch_id: string;
  submitted_at: string;
  total_authorizers: number;
}

export function runScheduleNow({ ctx, input }: { ctx: Ctx; input: { id: string } }): Promise<RunNowResult> {
  const now = ctx.deps.clock.now();
  return transaction(ctx, async (tx) => {
    // Held until the end: another run now of this schedule waits, then finds this one's batch open.
    const s = await tx.deps.stores.schedules.lockSchedule(tx, ctx.lender.id, input.id);
    if (!s) throw new NotFound('Schedule', input.id);
    if (s.status !== 'ACTIVE') throw new Conflict(`The schedule is ${s.status}: only an ACTIVE schedule runs`);
    // The schedule's batches: a run still going is not doubled.
    const open = await tx.deps.stores.schedules.openRunOf(tx, s.id);
    if (open) throw new Conflict(`A run of this schedule is still in progress (batch ${open}); run it again when that batch completes`);
    const authorizers = await runAuthorizers(tx, s);
    if (authorizers.length === 0) throw new Conflict('The schedule has no authorizers left to read');
    await refuseOverBacklog(tx, ctx.lender.id, authorizers.length, 'this run');
    // Spent last, once everything else allows the run: a refused request costs the lender nothing.
    takeOnDemand(ctx.deps, ctx.lender.id, 'the run');
    const batchId = await insertBatch({
      ctx: tx,
      input: { lenderId: s.lenderId, source: 'schedule', scheduleId: s.id, webhookUrl: s.webhook, authorizers, now },
    });
    return { schedule_id: s.id, batch_id: batchId, submitted_at: iso(now), total_authorizers: authorizers.length };
  });
}
