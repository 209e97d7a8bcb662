import { and, eq, sql } from 'drizzle-orm';
import { enrollments, ledgerEntries, paymentEvents, payments } from '../../../db/schema';
import type { EventSource, EventStatus, MonitorState } from '../../../db/schema/enums';
import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { newId } from '../../platform/ids';
import { isRetryableReturn } from '../../adapters/processors/return-codes';
import { canTransition } from '../enrollments/states';

// Recording an observed status of a payment: the one function that processor polling, the dispatch of our
// own payments and the results upload all call. It records one event per status of a reference, the first time
// it is seen,
// posts the ledger, moves our payment's status and reacts on the borrower's monitor, all in the caller's
// transaction. The service records only what it observed and infers nothing.

export interface Observation {
  lenderId: string;
  reference: string;
  status: EventStatus;
  amountCents: number;
  returnCode: string | null;
  message: string | null;
  occurredAt: number;
  source: EventSource;
  /** Unique per lender and source: a processor's event id, an upload's row key. */
  sourceEventId: string;
  enrollmentId: string | null;
  authorizerUniqueId: string | null;
  paymentId: string | null;
  connectionId: string | null;
}

export type Recorded = { recorded: false; why: 'seen' | 'same_status' } | { recorded: true; eventId: string };

/** Returns R01/R09 and the other codes only on the statuses that carry one. */
const codeFor = (status: EventStatus, code: string | null) => (status === 'returned' || status === 'late_returned' ? code : null);

export function recordObservation(ctx: JobContext & { tx: Tx }, o: Observation): Recorded {
  const { tx } = ctx;
  const seen = tx
    .select({ id: paymentEvents.id })
    .from(paymentEvents)
    .where(and(eq(paymentEvents.lenderId, o.lenderId), eq(paymentEvents.source, o.source), eq(paymentEvents.sourceEventId, o.sourceEventId)))
    .get();
  if (seen) return { recorded: false, why: 'seen' };
  // A status is recorded once per reference: re-reading a feed from an older cursor (or the processor's own
  // echo of the status the create call already answered) adds nothing.
  const known = tx
    .select({ id: paymentEvents.id })
    .from(paymentEvents)
    .where(and(eq(paymentEvents.lenderId, o.lenderId), eq(paymentEvents.reference, o.reference), eq(paymentEvents.status, o.status)))
    .get();
  if (known) return { recorded: false, why: 'same_status' };

  const now = ctx.deps.clock.now();
  const eventId = newId();
  const returnCode = codeFor(o.status, o.returnCode);
  tx.insert(paymentEvents)
    .values({
      id: eventId,
      lenderId: o.lenderId,
      enrollmentId: o.enrollmentId,
      authorizerUniqueId: o.authorizerUniqueId,
      paymentId: o.paymentId,
      connectionId: o.connectionId,
      reference: o.reference,
      status: o.status,
      amountCents: o.amountCents,
      returnCode,
      message: o.message,
      source: o.source,
      sourceEventId: o.sourceEventId,
      occurredAt: o.occurredAt,
      recordedAt: now,
    })
    .run();

  if (o.enrollmentId) postLedger(tx, o, eventId, now);
  if (o.paymentId) {
    tx.update(payments)
      .set({
        status: o.status,
        returnCode,
        message: o.message,
        updatedAt: now,
        ...(o.status === 'settled' ? { settledAt: o.occurredAt } : {}),
      })
      .where(eq(payments.id, o.paymentId))
      .run();
  }
  if (o.enrollmentId) react(ctx, o.enrollmentId, o.status, returnCode, now);
  ctx.deps.metrics.paymentEvents.inc({ status: o.status, source: o.source });
  return { recorded: true, eventId };
}

/** settled books a credit; returned and late_returned reverse what was credited for the reference (maybe 0). */
function postLedger(tx: Tx, o: Observation, eventId: string, now: number): void {
  if (o.status === 'settled') {
    tx.insert(ledgerEntries)
      .values({ lenderId: o.lenderId, enrollmentId: o.enrollmentId!, reference: o.reference, kind: 'credit', amountCents: o.amountCents, eventId, at: now })
      .run();
  } else if (o.status === 'returned' || o.status === 'late_returned') {
    const row = tx
      .select({ net: sql<number>`COALESCE(SUM(CASE WHEN ${ledgerEntries.kind} = 'credit' THEN ${ledgerEntries.amountCents} ELSE -${ledgerEntries.amountCents} END), 0)` })
      .from(ledgerEntries)
      .where(and(eq(ledgerEntries.lenderId, o.lenderId), eq(ledgerEntries.reference, o.reference)))
      .get();
    tx.insert(ledgerEntries)
      .values({ lenderId: o.lenderId, enrollmentId: o.enrollmentId!, reference: o.reference, kind: 'reversal', amountCents: Math.max(0, row?.net ?? 0), eventId, at: now })
      .run();
  }
}

/**
 * The monitor's reaction to an outcome (payments.md, Collection): settled → collected; returned R01/R09 →
 * stays monitored, eligible when funds suffice; returned with another code, or invalid → stopped; a late
 * return R01/R09 inside the window → monitored again, another code → stopped. Ended monitors (removed,
 * lapsed, stopped) are not moved by outcomes; their history is recorded all the same.
 */
function react(ctx: JobContext & { tx: Tx }, enrollmentId: string, status: EventStatus, code: string | null, now: number): void {
  const e = ctx.tx
    .select({ state: enrollments.state, windowEndsAt: enrollments.windowEndsAt })
    .from(enrollments)
    .where(eq(enrollments.id, enrollmentId))
    .get();
  if (!e) return;
  let next: { state: MonitorState; reason: string | null } | null = null;
  if (status === 'settled' && e.state === 'monitored') next = { state: 'collected', reason: null };
  else if (status === 'returned' && e.state === 'monitored' && !isRetryableReturn(code)) next = { state: 'stopped', reason: code ?? 'returned' };
  else if (status === 'invalid' && e.state === 'monitored') next = { state: 'stopped', reason: 'invalid' };
  else if (status === 'late_returned' && (e.state === 'collected' || e.state === 'monitored')) {
    const inWindow = e.windowEndsAt !== null && now < e.windowEndsAt;
    next = isRetryableReturn(code) && inWindow ? { state: 'monitored', reason: null } : { state: 'stopped', reason: code ?? 'late_returned' };
  }
  if (!next || next.state === e.state || !canTransition(e.state, next.state)) return;
  ctx.tx
    .update(enrollments)
    .set({ state: next.state, reason: next.reason, updatedAt: now, ...(next.state === 'monitored' ? { nextReadAt: now } : { nextReadAt: null }) })
    .where(eq(enrollments.id, enrollmentId))
    .run();
}
