import type { Deps, JobContext } from '../../deps';
import { afterCommit, transaction } from '../../platform/context';
import { betweenSlices, type Job } from '../../platform/jobs';
import { DAY_MS } from '../../platform/clock';
import { LeaseLostError } from '../../platform/leases';
import type { ListedPayment } from '../../adapters/processors';
import { recordSlice } from './record';
import type { MatchingStore } from './store';

// Reconciliation: what a change feed no longer holds (Stripe keeps events 30 days; a key not polled for
// longer, or a cursor the processor dropped) is found by listing the processor's payments. Per key, every
// PROCESSOR_RECONCILE_INTERVAL_MS and at once when its feed lost the cursor: the processor's payments created
// since the oldest of the service's payments through the key that is not final (or settled in the last 65
// days, watched for late returns) are listed a page at a time, and every status not yet recorded is recorded
// by the same function as the feed's (one event per status of a reference, stable ids).

/** A settled ACH payment is watched for late returns this long. */
export const LATE_RETURN_WATCH_MS = 65 * DAY_MS;
const PAGE = 100;
const SLACK_MS = 10 * 60_000;

export interface ReconcileResult {
  keys: number;
  recorded: number;
}

/** Reconciles every live key that is due (or the given ones, due or not). */
export async function reconcileKeys(deps: Deps, opts: { connectionIds?: string[]; signal?: AbortSignal } = {}): Promise<ReconcileResult> {
  const now = deps.clock.now();
  const dueBefore = now - deps.config.processorReconcileIntervalMs;
  const conns = await deps.stores.feeds.keysToReconcile({ deps }, { connectionIds: opts.connectionIds, dueBefore });
  let recorded = 0;
  for (const conn of conns) {
    if (opts.signal?.aborted) break;
    try {
      recorded += await reconcileKey(deps, conn, now);
    } catch (e) {
      // The job's lease passed to another replica: it goes on from here.
      if (e instanceof LeaseLostError) throw e;
      deps.logger.warn({ connection_id: conn.id, processor: conn.processor, err: e instanceof Error ? e.message : String(e) }, 'reconciliation failed; tried again later');
    }
  }
  return { keys: conns.length, recorded };
}

async function reconcileKey(deps: Deps, conn: { id: string; lenderId: string; processor: 'sandbox' | 'stripe'; keySealed: string | null }, now: number): Promise<number> {
  const ctx: JobContext = { deps };
  const since = await ctx.deps.stores.matching.oldestUnsettled(ctx, conn.id, now - LATE_RETURN_WATCH_MS);
  let recorded = 0;
  if (since !== null) {
    const processor = deps.processors.forLender(conn.processor, conn.lenderId);
    const key = deps.vault.open(conn.keySealed!);
    for (let page: string | null = null, first = true; first || page !== null; first = false) {
      const res = await processor.listPayments(key, { createdFrom: since - SLACK_MS, createdTo: now + SLACK_MS, page, limit: PAGE });
      await betweenSlices(deps);
      recorded += await recordListed(ctx, conn, res.payments, now);
      page = res.next;
    }
  }
  await transaction(ctx, (tx) => tx.deps.stores.feeds.markReconciled(tx, conn.id, now));
  return recorded;
}

type OwnListed = NonNullable<Awaited<ReturnType<MatchingStore['ownPaymentById']>>>;

/** One page of the processor's payments: the statuses of the service's own payments not recorded yet, in one transaction. */
async function recordListed(ctx: JobContext, conn: { id: string; lenderId: string; processor: string }, listed: ListedPayment[], now: number): Promise<number> {
  let recorded = 0;
  await transaction(ctx, async (tx) => {
    const found: { l: ListedPayment; own: OwnListed }[] = [];
    for (const l of listed) {
      // A payment held open is the dispatcher's to cancel; not_attempted is its answer to record.
      if (!l.paymentId || l.open || l.status === 'not_attempted') continue;
      const own = await tx.deps.stores.matching.ownPaymentById(tx, l.paymentId, conn.id);
      if (!own || own.lenderId !== conn.lenderId) continue;
      found.push({ l, own });
    }
    // The page's references held at once, in one order, before any of them is recorded.
    await tx.deps.stores.outcomes.serializeReferences(tx, conn.lenderId, found.map((f) => f.own.reference));
    const results = await recordSlice(
      tx,
      found.map(({ l, own }) => ({
        lenderId: conn.lenderId,
        reference: own.reference,
        status: l.status,
        amountCents: own.amount,
        returnCode: l.returnCode,
        message: l.message,
        occurredAt: now,
        source: 'processor' as const,
        sourceEventId: `reconciled:${l.processorPaymentId}:${l.status}`,
        enrollmentId: own.enrollmentId,
        authorizerUniqueId: own.aid,
        paymentId: own.id,
        connectionId: conn.id,
      })),
    );
    for (const [i, { l, own }] of found.entries()) {
      if (!results[i]?.recorded) continue;
      recorded++;
      await tx.deps.stores.matching.keepProcessorPaymentId(tx, own.id, l.processorPaymentId);
      afterCommit(tx, () => ctx.deps.metrics.paymentsReconciled.inc({ processor: conn.processor, status: l.status }));
      ctx.deps.logger.info({ payment_id: own.id, status: l.status, connection_id: conn.id }, 'payment status found by reconciliation');
    }
  });
  return recorded;
}

/**
 * One replica at a time. Two replicas reconciling a key at once would record nothing twice (stable event ids,
 * the references serialized, the recorder forward-only), but each would list the key's payments at the
 * processor: N replicas, N times the calls against the lender's rate limit, for nothing. A key whose feed lost
 * its cursor is reconciled at once by the replica polling it, whether or not it holds this job's lease.
 */
export const reconcileJob = (intervalMs: number): Job<Deps> => ({
  name: 'processor-reconcile',
  exclusive: true,
  // Checks often which keys are due; a key is listed only when its interval has passed or its feed lost its cursor.
  intervalMs: Math.min(intervalMs, 60_000),
  tick: (deps, signal) => reconcileKeys(deps, { signal }),
});
