import type { Deps, JobContext } from '../../deps';
import { betweenSlices, type Job } from '../../platform/jobs';
import { transaction, type Tx } from '../../platform/context';
import { iso } from '../../platform/clock';
import { centsToDollars } from '../../platform/money';
import { enqueueWebhook, MAX_PAYLOAD_BYTES } from '../webhooks/service';
import { insertBatch, thresholdHits } from '../balance-requests/service';
import type { NormalizedAuthorizer, SensitiveFields } from '../authorizers/rules';
import type { CompletedBatch } from '../balance-requests/results';
import { nextRunAfter } from './times';
import { type ScheduleRow } from './store';

/** Runs started per call: each is a synchronous transaction (up to 1000 authorizers), so the job yields between runs. */
const DUE_LIMIT = 10;

/**
 * The scheduler's due check. It reads the (status, next_run_at) index only, so its cost does not grow
 * with the number of schedules that are not due. Each due schedule starts one run: a batch of its current
 * authorizers, and next_run_at moved to the first slot after now, in one transaction (a restart can neither
 * lose nor repeat a run). A run missed while the service was down therefore runs once, then the schedule
 * continues at its next future slot.
 */
export async function startDueRuns(deps: Deps): Promise<{ started: number; due: number }> {
  const now = deps.clock.now();
  const due = await deps.stores.schedules.dueScheduleIds({ deps }, now, DUE_LIMIT);
  let started = 0;
  for (const id of due) {
    if (await startRun({ deps }, id, now)) started++;
  }
  return { started, due: due.length };
}

/** Starts every due run, one transaction each, letting requests through between runs. */
export async function startAllDueRuns(deps: Deps, signal?: AbortSignal): Promise<{ started: number }> {
  let started = 0;
  for (;;) {
    const now = deps.clock.now();
    const due = await deps.stores.schedules.dueScheduleIds({ deps }, now, DUE_LIMIT);
    for (const id of due) {
      if (signal?.aborted) return { started };
      if (await startRun({ deps }, id, now)) started++;
      await betweenSlices(deps);
    }
    if (due.length < DUE_LIMIT) return { started };
  }
}

type Schedule = ScheduleRow;

/** A schedule's current authorizers, opened, as a run's batch takes them (at most 1000). */
export async function runAuthorizers(ctx: JobContext & { tx: Tx }, s: Schedule): Promise<NormalizedAuthorizer[]> {
  const { vault } = ctx.deps;
  const rows = await ctx.deps.stores.schedules.scheduleAuthorizers(ctx, s.id);
  return rows.map((r, i) => ({
    authorizerUniqueId: r.authorizerUniqueId,
    paymentType: r.paymentType,
    routingNumber: r.routingNumber,
    phone: r.phone,
    zip: r.zip,
    metadata: r.metadata ? JSON.parse(r.metadata) : null,
    // The authorizer's own threshold overrides the schedule's.
    thresholdCents: r.thresholdCents ?? s.thresholdCents,
    sensitive: vault.openJson<SensitiveFields>(r.sealed),
    rowNumber: i + 1,
  }));
}

function startRun(ctx: JobContext, scheduleId: string, now: number): Promise<boolean> {
  return transaction(ctx, async (tx) => {
    const s = await tx.deps.stores.schedules.dueSchedule(tx, scheduleId, now);
    if (!s || s.nextRunAt === null) return false;
    // The run is taken before its batch is made: of two callers that found it due, one takes it and the
    // other makes nothing.
    if (!(await tx.deps.stores.schedules.recordRunStarted(tx, s.id, s.nextRunAt, nextRunAfter(s, now), now))) return false;
    const authorizers = await runAuthorizers(tx, s);
    if (authorizers.length > 0) {
      await insertBatch({ ctx: tx, input: { lenderId: s.lenderId, source: 'schedule', scheduleId: s.id, webhookUrl: s.webhook, authorizers, now } });
    }
    return authorizers.length > 0;
  });
}

/** Alerts that fit one delivery: the alert list is split when a run has very many. */
function chunkAlerts<T>(alerts: T[], base: Record<string, unknown>): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = JSON.stringify(base).length + 64;
  for (const a of alerts) {
    const len = JSON.stringify(a).length + 1;
    if (current.length > 0 && size + len > MAX_PAYLOAD_BYTES - 512) {
      chunks.push(current);
      current = [];
      size = JSON.stringify(base).length + 64;
    }
    current.push(a);
    size += len;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * A schedule's run completed, called in the transaction that completes its batch (the chain in
 * modules/balance-results.ts): last_run_at, and one BALANCE_THRESHOLD_ALERT listing every authorizer whose
 * balance meets or exceeds its threshold.
 */
export async function onScheduleBatchCompleted(ctx: JobContext & { tx: Tx }, batch: CompletedBatch): Promise<void> {
  if (batch.source !== 'schedule' || !batch.scheduleId) return;
  const webhook = await ctx.deps.stores.schedules.recordRunCompleted(ctx, batch.scheduleId, batch.completedAt);
  if (!webhook) return;
  for (const input of thresholdAlerts(batch, webhook, await thresholdHits({ ctx, input: { batchId: batch.id } }))) {
    await enqueueWebhook({ ctx, input });
  }
}

/** The run's BALANCE_THRESHOLD_ALERT deliveries: none without a hit, the alerts split to fit each. */
function thresholdAlerts(batch: CompletedBatch, webhook: string, hits: Awaited<ReturnType<typeof thresholdHits>>) {
  if (hits.length === 0) return [];
  const alerts = hits.map((h) => ({
    authorizer_unique_id: h.aid,
    institution_name: h.institution,
    balance: centsToDollars(h.cents),
    threshold_amount: centsToDollars(h.threshold),
  }));
  const base = { event_uuid: '', type: 'BALANCE_THRESHOLD_ALERT', schedule_id: batch.scheduleId, batch_id: batch.id, timestamp: iso(batch.completedAt) };
  return chunkAlerts(alerts, base).map((chunk) => ({
    lenderId: batch.lenderId,
    type: 'BALANCE_THRESHOLD_ALERT' as const,
    url: webhook,
    payload: { ...base, event_uuid: crypto.randomUUID(), alerts: chunk },
  }));
}

/**
 * Every replica: a run is taken by one conditional UPDATE of the schedule's next_run_at from the slot found
 * due (recordRunStarted) before its batch is made, so of two replicas finding one slot due one starts the run
 * and the other makes nothing: never two runs of one slot.
 */
export const scheduleJob: Job<Deps> = {
  name: 'schedule-runs',
  intervalMs: 15_000,
  tick: (deps, signal) => startAllDueRuns(deps, signal),
};
