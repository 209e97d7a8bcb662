import { and, eq, inArray, sql } from 'drizzle-orm';
import { batches, enrollments } from '../../../db/schema';
import type { Deps, JobContext } from '../../deps';
import { withTransaction } from '../../platform/context';
import type { Job } from '../../platform/jobs';
import type { NormalizedAuthorizer } from '../authorizers/rules';
import { insertBatch } from '../balance-requests/service';
import type { BalancesRecordedHook } from '../hooks';
import { heldReasonOf, openBorrower } from './service';
import { applyMonitorEvent, dueLapses } from './monitor-store';
import * as q from './queries';

// Monitoring: every monitored borrower's balance is read at enrollment and then every MONITOR_READ_INTERVAL_MS,
// through the balance pipeline (same provider, concurrency, retries, fairness; each read is in the
// authorizer's history). Each recorded read is set on the enrollment and handed to the `monitoringRead`
// hooks, in the transaction that records it: that is where collection decides whether to debit.

/** Reads queued per tick; more wait for the next tick (one second later). */
const READS_PER_TICK = 5000;
const BATCH_MAX = 1000;

/**
 * The due check: monitored borrowers whose read is due, off a partial index of monitored rows, so it costs
 * O(due) and not O(borrowers). Due reads become balance batches (source `monitoring`, one per lender and
 * thousand) and their next read is set one interval on, in the same transaction: a restart neither loses
 * nor repeats a queued read.
 */
export function queueDueReads(deps: Deps): { queued: number } {
  const now = deps.clock.now();
  const due = q.dueReads(deps.db, now, READS_PER_TICK);
  if (due.length === 0) return { queued: 0 };
  const byLender = new Map<string, q.DueRead[]>();
  for (const d of due) {
    const list = byLender.get(d.lenderId) ?? [];
    list.push(d);
    byLender.set(d.lenderId, list);
  }
  const next = now + deps.config.monitorReadIntervalMs;
  withTransaction({ deps }, (tx) => {
    for (const [lenderId, reads] of byLender) {
      for (let i = 0; i < reads.length; i += BATCH_MAX) {
        const chunk = reads.slice(i, i + BATCH_MAX);
        const authorizers: NormalizedAuthorizer[] = chunk.map((d, j) => {
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
            rowNumber: j + 1,
          };
        });
        insertBatch({ ctx: tx, input: { lenderId, source: 'monitoring', authorizers, now } });
      }
    }
    tx.tx
      .update(enrollments)
      .set({ nextReadAt: next })
      .where(inArray(enrollments.id, due.map((d) => d.id)))
      .run();
  });
  return { queued: due.length };
}

/**
 * The balance pipeline's hook: results of monitoring batches are set on their enrollments and handed to the
 * monitoring-read hooks (collection), in the transaction that records them.
 */
export const recordMonitoringReads: BalancesRecordedHook = (ctx, reads) => {
  const batchIds = [...new Set(reads.map((r) => r.batchId))];
  const monitoring = new Set(
    ctx.tx
      .select({ id: batches.id })
      .from(batches)
      .where(and(inArray(batches.id, batchIds), eq(batches.source, 'monitoring')))
      .all()
      .map((b) => b.id),
  );
  if (monitoring.size === 0) return;
  for (const r of reads) {
    if (!monitoring.has(r.batchId)) continue;
    const e = ctx.tx
      .update(enrollments)
      .set({ lastReadCents: r.balanceCents, lastReadAt: r.at })
      .where(and(eq(enrollments.lenderId, r.lenderId), eq(enrollments.authorizerUniqueId, r.authorizerUniqueId)))
      .returning({ id: enrollments.id })
      .get();
    if (!e) continue;
    for (const hook of ctx.deps.hooks.monitoringRead) hook(ctx, { ...r, enrollmentId: e.id });
  }
};

/** Monitors 30 days after they started lapse, unless collected or ended first. Reads a partial index of due lapses. */
export function lapseDueMonitors(deps: Deps): { lapsed: number } {
  const now = deps.clock.now();
  return withTransaction({ deps } as JobContext, ({ tx }) => {
    const due = dueLapses(tx, now);
    for (const d of due) applyMonitorEvent(tx, { enrollmentId: d.id, event: { type: 'lapsed' }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
    return { lapsed: due.length };
  });
}

/**
 * Held borrowers whose bank has become readable (a new routing directory, another provider) start monitoring
 * by themselves, with a fresh 30-day window; those still held keep their current reason.
 */
export function recheckHeld(deps: Deps): { started: number } {
  const now = deps.clock.now();
  let started = 0;
  withTransaction({ deps } as JobContext, ({ tx }) => {
    const held = tx
      .select({ id: enrollments.id, routing: enrollments.routingNumber })
      .from(enrollments)
      .where(and(eq(enrollments.state, 'held'), sql`${enrollments.sealed} IS NOT NULL`))
      .all();
    for (const h of held) {
      const reason = h.routing ? heldReasonOf(deps, h.routing) : 'unresolvable_routing_number';
      const event = reason === null ? ({ type: 'readable' } as const) : ({ type: 'still_held', held: reason } as const);
      const change = applyMonitorEvent(tx, { enrollmentId: h.id, event, now, readIntervalMs: deps.config.monitorReadIntervalMs });
      if (change?.state === 'monitored') {
        tx.update(enrollments).set({ bankName: deps.routing.lookup(h.routing!)?.name ?? null }).where(eq(enrollments.id, h.id)).run();
        started++;
      }
    }
  });
  return { started };
}

export const monitoringReadsJob: Job<Deps> = {
  name: 'monitoring-reads',
  intervalMs: 1_000,
  tick: (deps) => queueDueReads(deps),
};

export const lapseJob: Job<Deps> = {
  name: 'monitor-lapses',
  intervalMs: 60_000,
  tick: (deps) => lapseDueMonitors(deps),
};

/** Daily, and at start (every job's first tick runs at once). */
export const heldRecheckJob: Job<Deps> = {
  name: 'held-recheck',
  intervalMs: 86_400_000,
  tick: (deps) => recheckHeld(deps),
};
