import { eq, sql } from 'drizzle-orm';
import { enrollments, paymentConnections, payments } from '../../../db/schema';
import type { Deps, JobContext } from '../../deps';
import type { Db } from '../../platform/db';
import { withTransaction } from '../../platform/context';
import type { Job } from '../../platform/jobs';
import { LeaseQueue, oldestDueFirst } from '../../platform/lease-queue';
import { drainClaims } from '../../platform/work-pool';
import { ProcessorUnavailable, type DebitInstrument, type DebitResult } from '../../adapters/processors';
import { openBorrower } from '../enrollments/service';
import { recordObservation } from './record';
import { applyMonitorEvent, monitorStateOf } from '../enrollments/monitor-store';

// Sending initiated payments to their processor. A payment row is committed (initiating) before this runs;
// every call carries the payment id as its idempotency key, so a retry after a timeout, a 5xx or a crash
// (leases are released at start) can never create a second debit.

/** Longer than a processor call can take with the SDK's own retries. */
const DISPATCH_LEASE_MS = 120_000;
const CONCURRENCY = 16;
const RETRY_BASE_MS = 5_000;
const RETRY_MAX_MS = 15 * 60_000;

interface DuePayment {
  id: string;
  lenderId: string;
  enrollmentId: string;
  authorizerUniqueId: string;
  connectionId: string;
  rail: 'ach' | 'card';
  amountCents: number;
  reference: string;
  attempts: number;
}

const queues = new WeakMap<Db, LeaseQueue<typeof payments, DuePayment>>();

export function dispatchQueue(deps: Pick<Deps, 'db'>): LeaseQueue<typeof payments, DuePayment> {
  let q = queues.get(deps.db);
  if (!q) {
    q = new LeaseQueue(deps.db, payments, {
      leaseMs: DISPATCH_LEASE_MS,
      // Raw: claimed every tick of the dispatch job (bench collection).
      pick: oldestDueFirst<DuePayment>(
        `SELECT id, lender_id AS lenderId, enrollment_id AS enrollmentId, authorizer_unique_id AS authorizerUniqueId,
                connection_id AS connectionId, rail, amount_cents AS amountCents, reference, attempts
           FROM payments`,
      ),
    });
    queues.set(deps.db, q);
  }
  return q;
}

/** A payment that will not be sent: recorded as never attempted, and not counted against the enrollment. */
function abandon(ctx: JobContext, p: DuePayment, message: string, reason: string): void {
  const now = ctx.deps.clock.now();
  withTransaction(ctx, (tx) => {
    tx.tx.update(payments).set({ status: 'not_attempted', message, updatedAt: now }).where(eq(payments.id, p.id)).run();
    dispatchQueue(ctx.deps).finalize(tx.tx, p.id, { state: 'done' });
    tx.tx
      .update(enrollments)
      .set({ paymentsUsed: sql`MAX(${enrollments.paymentsUsed} - 1, 0)`, updatedAt: now })
      .where(eq(enrollments.id, p.enrollmentId))
      .run();
  });
  ctx.deps.metrics.paymentsSkipped.inc({ reason });
}

/**
 * One payment: the borrower's state is checked and the processor called in one synchronous step (nothing
 * else runs in between), so no request reaches the processor for a borrower after its removal returned.
 */
function send(ctx: JobContext, p: DuePayment): Promise<DebitResult> | null {
  const { deps } = ctx;
  const e = deps.db
    .select({ state: enrollments.state, sealed: enrollments.sealed, cardToken: enrollments.cardTokenSealed, routing: enrollments.routingNumber })
    .from(enrollments)
    .where(eq(enrollments.id, p.enrollmentId))
    .get();
  if (!e || e.state !== 'monitored' || !e.sealed) {
    abandon(ctx, p, 'monitoring of the borrower stopped before the payment was sent', 'removed');
    return null;
  }
  const conn = deps.db
    .select({ processor: paymentConnections.processor, keySealed: paymentConnections.keySealed })
    .from(paymentConnections)
    .where(eq(paymentConnections.id, p.connectionId))
    .get();
  if (!conn?.keySealed) {
    abandon(ctx, p, 'the processor key was deleted before the payment was sent', 'key_deleted');
    return null;
  }
  const borrower = openBorrower(deps, e.sealed);
  let instrument: DebitInstrument;
  if (p.rail === 'card') {
    if (!e.cardToken) {
      abandon(ctx, p, 'the borrower has no card token', 'no_card_token');
      return null;
    }
    instrument = { kind: 'token', token: deps.vault.open(e.cardToken) };
  } else {
    instrument = { kind: 'bank_account', routingNumber: e.routing ?? '', accountNumber: borrower.s.accountNumber ?? '' };
  }
  const name = [borrower.s.firstName, borrower.s.lastName].filter(Boolean).join(' ') || p.authorizerUniqueId;
  return deps.processors.byName(conn.processor).createDebit(deps.vault.open(conn.keySealed), {
    paymentId: p.id,
    reference: p.reference,
    amountCents: p.amountCents,
    rail: p.rail,
    instrument,
    borrower: { name },
  });
}

/** The processor's answer, recorded in one transaction: the payment's first event, ledger and monitor. */
function recordAnswer(ctx: JobContext, p: DuePayment, r: DebitResult): void {
  const now = ctx.deps.clock.now();
  withTransaction(ctx, (tx) => {
    tx.tx.update(payments).set({ processorPaymentId: r.processorPaymentId, updatedAt: now }).where(eq(payments.id, p.id)).run();
    dispatchQueue(ctx.deps).finalize(tx.tx, p.id, { state: 'done' });
    recordObservation(tx, {
      lenderId: p.lenderId,
      reference: p.reference,
      status: r.status,
      amountCents: p.amountCents,
      returnCode: r.returnCode,
      message: r.message,
      occurredAt: now,
      source: 'processor',
      sourceEventId: `created:${p.id}`,
      enrollmentId: p.enrollmentId,
      authorizerUniqueId: p.authorizerUniqueId,
      paymentId: p.id,
      connectionId: p.connectionId,
    });
    if (r.status === 'not_attempted') {
      // The processor wants the bank account verified: no new payment until the lender re-sends the borrower.
      // (An ended monitor is left as it is: blocking concerns the next payment of a monitored borrower.)
      if (monitorStateOf(tx.tx, p.enrollmentId) === 'monitored') {
        applyMonitorEvent(tx.tx, { enrollmentId: p.enrollmentId, event: { type: 'blocked', reason: 'verification_required' }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
      }
    }
  });
}

function retryLater(ctx: JobContext, p: DuePayment): void {
  const now = ctx.deps.clock.now();
  const attempts = p.attempts + 1;
  const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (attempts - 1));
  withTransaction(ctx, ({ tx }) => dispatchQueue(ctx.deps).finalize(tx, p.id, { state: 'pending', attempts, nextAttemptAt: now + delay }));
}

/** Sends every due payment, CONCURRENCY at a time; answers and retries are recorded as they come. */
export async function dispatchPayments(deps: Deps, opts: { signal?: AbortSignal; concurrency?: number } = {}): Promise<{ sent: number }> {
  const ctx: JobContext = { deps };
  let sent = 0;
  await drainClaims({
    concurrency: opts.concurrency ?? CONCURRENCY,
    signal: opts.signal,
    claim: () => dispatchQueue(deps).claim((opts.concurrency ?? CONCURRENCY) * 4, deps.clock.now()),
    handle: async (p) => {
      let pending: Promise<DebitResult> | null;
      try {
        pending = send(ctx, p);
      } catch (e) {
        deps.logger.error({ payment_id: p.id, err: e }, 'payment could not be prepared');
        retryLater(ctx, p);
        return;
      }
      if (!pending) return;
      sent++;
      try {
        recordAnswer(ctx, p, await pending);
      } catch (e) {
        if (!(e instanceof ProcessorUnavailable)) deps.logger.error({ payment_id: p.id, err: e }, 'payment dispatch failed');
        // Unknown outcome: sent again later with the same idempotency key, which returns the first payment.
        retryLater(ctx, p);
      }
    },
    finish: () => undefined,
  });
  return { sent };
}

export const dispatchJob: Job<Deps> = {
  name: 'payment-dispatch',
  intervalMs: 250,
  tick: (deps, signal) => dispatchPayments(deps, { signal }),
};
