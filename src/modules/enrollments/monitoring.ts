import type { Deps, JobContext } from '../../deps';
import { commitsSyncedLater, transaction, type Tx } from '../../platform/context';
import { betweenSlices, type Job } from '../../platform/jobs';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { NormalizedAuthorizer } from '../authorizers/rules';
import { insertBatch } from '../balance-requests/service';
import type { RecordedRead } from '../balance-requests/results';
import { openBorrower } from './borrower';
import { heldReasonOf } from './service';
import { applyMonitorEvent, monitorStateOf } from './monitor-changes';
import { LINK_BLOCKS } from './monitor';
import { type DueRead } from './store';

// Monitoring: every monitored borrower's balance is read at enrollment and then every MONITOR_READ_INTERVAL_MS,
// through the balance pipeline (same provider, concurrency, retries, fairness; each read is in the
// authorizer's history). Each recorded read is set on the enrollment, then collection decides whether to
// debit, in the transaction that records it (the chain is in modules/balance-results.ts).

/**
 * Reads queued per transaction. Each costs a borrower's record opened and re-sealed in a batch, so a slice of
 * 200 holds the event loop for a few milliseconds; the job yields between slices, and goes on until none is due.
 */
export const READS_PER_SLICE = 200;
const BATCH_MAX = 1000;

/**
 * The due check, one slice: monitored borrowers whose read is due, off a partial index of monitored rows, so
 * it costs O(due) and not O(borrowers). Due reads become balance batches (source `monitoring`, one per lender
 * and thousand) and their next read is set one interval on, in the transaction that read them: a restart
 * neither loses nor repeats a queued read.
 */
export async function queueDueReads(deps: Deps, max = READS_PER_SLICE): Promise<{ queued: number }> {
  const now = deps.clock.now();
  // Most ticks find nothing: that is answered without a write transaction.
  if ((await deps.stores.enrollments.dueReads({ deps }, now, 1)).length === 0) return { queued: 0 };
  const next = now + deps.config.monitorReadIntervalMs;
  return transaction({ deps }, async (tx) => {
    const due = await tx.deps.stores.enrollments.dueReads(tx, now, max);
    // The next reads first, the batches last: a batch's insert holds its lender's count of waiting reads
    // (balance_backlog, on PostgreSQL a row every flush of the lender's results also moves) until the commit.
    await tx.deps.stores.enrollments.setNextReads(tx, due.map((d) => d.id), next);
    const byLender = new Map<string, DueRead[]>();
    for (const d of due) {
      const list = byLender.get(d.lenderId) ?? [];
      list.push(d);
      byLender.set(d.lenderId, list);
    }
    // Lenders in id order: a flush of results locks lenders' backlog rows in that order too (PostgreSQL), so the
    // two never wait on each other in a circle.
    for (const [lenderId, reads] of [...byLender].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      for (let i = 0; i < reads.length; i += BATCH_MAX) {
        const chunk = reads.slice(i, i + BATCH_MAX);
        const authorizers = chunk.map((d, j) => monitoringAuthorizer(deps, d, j + 1));
        await insertBatch({ ctx: tx, input: { lenderId, source: 'monitoring', authorizers, now } });
      }
    }
    return { queued: due.length };
  });
}

/** A monitored borrower as a monitoring batch reads it (the due check and a read asked for now alike). */
export function monitoringAuthorizer(deps: Pick<Deps, 'vault'>, d: { aid: string; routing: string | null; sealed: string; metadata: string | null }, rowNumber: number): NormalizedAuthorizer {
  const sealed = openBorrower(deps, d.sealed);
  return {
    authorizerUniqueId: d.aid,
    // Card borrowers too: the balance is read from the bank account.
    paymentType: 'ACCOUNT_NUMBER',
    routingNumber: d.routing,
    phone: sealed.phone,
    zip: sealed.zip,
    metadata: d.metadata ? JSON.parse(d.metadata) : null,
    thresholdCents: null,
    sensitive: sealed.s,
    rowNumber,
  };
}

/** Every due read, a slice per transaction, with a turn of the event loop between slices (the job's tick). */
export async function queueAllDueReads(deps: Deps, signal?: AbortSignal): Promise<{ queued: number }> {
  let queued = 0;
  for (;;) {
    const r = await queueDueReads(deps);
    queued += r.queued;
    if (r.queued < READS_PER_SLICE || signal?.aborted) return { queued };
    await betweenSlices(deps);
  }
}

/** The results of monitoring batches among recorded results, in their order: the borrowers' monitoring reads. */
export async function monitoringReadsAmong(c: StoreCtx, reads: RecordedRead[]): Promise<RecordedRead[]> {
  return monitoringOf(reads, await c.deps.stores.enrollments.monitoringBatchesAmong(c, [...new Set(reads.map((r) => r.batchId))]));
}

function monitoringOf(reads: RecordedRead[], batchIds: string[]): RecordedRead[] {
  const monitoring = new Set(batchIds);
  return monitoring.size === 0 ? [] : reads.filter((r) => monitoring.has(r.batchId));
}

/** The enrollments of monitoring reads: each one's id, or null when it has none. */
export const enrollmentsOfReads = (c: TxCtx, reads: readonly RecordedRead[]): Promise<(string | null)[]> => c.deps.stores.enrollments.enrollmentsOfReads(c, reads);

/**
 * Monitoring reads set on their borrowers' enrollments as the last read, each with the next read its cadence
 * set (`next`, absent: left as it is), in one write of each borrower's row.
 */
export function setLastReads(c: TxCtx, reads: readonly (RecordedRead & { enrollmentId: string })[], next: ReadonlyMap<string, number>): Promise<void> {
  return c.deps.stores.enrollments.setLastReads(
    c,
    reads.map((r) => ({ enrollmentId: r.enrollmentId, balanceCents: r.balanceCents, at: r.at, next: next.get(r.enrollmentId) ?? null })),
  );
}

/**
 * The provider says a borrower's linked account is well again: a block the link set on its collection lifts
 * and a monitored borrower is read at once, in the transaction that closes the link's episode.
 */
export async function readAfterRepair(c: JobContext & { tx: Tx }, link: { lenderId: string; aid: string; now: number }): Promise<void> {
  const e = await c.deps.stores.enrollments.enrollmentOf(c, link.lenderId, link.aid);
  if (!e || e.state !== 'monitored') return;
  if ((LINK_BLOCKS as readonly (string | null)[]).includes(e.blockedReason)) {
    await applyMonitorEvent(c, { enrollmentId: e.id, event: { type: 'unblocked' }, now: link.now, readIntervalMs: c.deps.config.monitorReadIntervalMs });
  }
  await c.deps.stores.enrollments.setNextReads(c, [e.id], link.now);
}

/** Lapses and re-checks per transaction; the jobs yield between slices. */
export const MONITORS_PER_SLICE = 200;

/**
 * Monitors 30 days after they started lapse, unless collected or ended first, a slice at a time (`max`).
 * Reads a partial index of due lapses.
 */
export function lapseDueMonitors(deps: Deps, max = MONITORS_PER_SLICE): Promise<{ lapsed: number }> {
  const now = deps.clock.now();
  return transaction({ deps } as JobContext, async (tx) => {
    const due = await tx.deps.stores.monitors.dueLapses(tx, now, max);
    for (const d of due) await applyMonitorEvent(tx, { enrollmentId: d.id, event: { type: 'lapsed' }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
    return { lapsed: due.length };
  });
}

/**
 * Held borrowers whose bank has become readable (a new routing directory, another provider) start monitoring
 * by themselves, with a fresh 30-day window; those still held keep their current reason. A slice at a time:
 * the held borrowers after `after` (by id), at most `max`; `last` is where the next slice starts.
 */
export async function recheckHeld(deps: Deps, opts: { after?: string; max?: number } = {}): Promise<{ started: number; checked: number; last: string | null }> {
  const now = deps.clock.now();
  const max = opts.max ?? MONITORS_PER_SLICE;
  let started = 0;
  let checked = 0;
  let last: string | null = null;
  await transaction({ deps } as JobContext, async (tx) => {
    const held = await tx.deps.stores.enrollments.heldBorrowers(tx, opts.after ?? '', max);
    checked = held.length;
    last = held.at(-1)?.id ?? null;
    for (const h of held) {
      // Read again, held by this transaction: one re-sent or erased since the list was read is no longer held.
      if ((await monitorStateOf(tx, h.id)) !== 'held') continue;
      const reason = h.routing ? heldReasonOf(deps, h.routing) : 'unresolvable_routing_number';
      const event = reason === null ? ({ type: 'readable' } as const) : ({ type: 'still_held', held: reason } as const);
      const change = await applyMonitorEvent(tx, { enrollmentId: h.id, event, now, readIntervalMs: deps.config.monitorReadIntervalMs });
      if (change?.state === 'monitored') {
        await tx.deps.stores.enrollments.setBankName(tx, h.id, deps.routing.lookup(h.routing!)?.name ?? null);
        // Readable from now on: its transactions too, for its pay cycle.
        await deps.enrollmentChanges.wantHistory(tx, h.lenderId, [h.id], now);
        started++;
      }
    }
  });
  return { started, checked, last };
}

/** Every due lapse, a slice per transaction, yielding between slices. */
export async function lapseAllDueMonitors(deps: Deps, signal?: AbortSignal): Promise<{ lapsed: number }> {
  let lapsed = 0;
  for (;;) {
    const r = await lapseDueMonitors(deps);
    lapsed += r.lapsed;
    if (r.lapsed < MONITORS_PER_SLICE || signal?.aborted) return { lapsed };
    await betweenSlices(deps);
  }
}

/** Every held borrower, a slice per transaction in the order of their ids, yielding between slices. */
export async function recheckAllHeld(deps: Deps, signal?: AbortSignal): Promise<{ started: number }> {
  let started = 0;
  let after: string | undefined;
  for (;;) {
    const r = await recheckHeld(deps, { after });
    started += r.started;
    if (r.checked < MONITORS_PER_SLICE || r.last === null || signal?.aborted) return { started };
    after = r.last;
    await betweenSlices(deps);
  }
}

/**
 * Every replica: the due reads are claimed as they are read (FOR UPDATE SKIP LOCKED on PostgreSQL) and moved
 * on in the transaction that queues them, so a read is queued once whoever finds it due.
 */
export const monitoringReadsJob: Job<Deps> = {
  name: 'monitoring-reads',
  intervalMs: 1_000,
  // The due reads queued commit without a sync of their own, as the pipeline that reads them (balance-requests/processing.ts).
  tick: (deps, signal) => commitsSyncedLater(() => queueAllDueReads(deps, signal)),
};

/**
 * Every replica: due lapses are claimed as they are read (SKIP LOCKED), and a monitor moved meanwhile is read
 * again and left out; the state machine refuses a second lapse.
 */
export const lapseJob: Job<Deps> = {
  name: 'monitor-lapses',
  intervalMs: 60_000,
  tick: (deps, signal) => lapseAllDueMonitors(deps, signal),
};

/**
 * Daily, and at start (every job's first tick runs at once). Every replica: each held borrower is read again
 * under its row lock before it moves, so two replicas at once move it once (the second finds it monitored, or
 * held for the same reason, which writes nothing); and the answer is this replica's own routing directory,
 * loaded at its start, so a replica started with a new directory re-checks with it at once.
 */
export const heldRecheckJob: Job<Deps> = {
  name: 'held-recheck',
  intervalMs: 86_400_000,
  tick: (deps, signal) => recheckAllHeld(deps, signal),
};
