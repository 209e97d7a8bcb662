import type { EventSource, EventStatus } from '../../../db/schema/enums';
import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { newId } from '../../platform/ids';
import { applyMonitorEvent } from '../enrollments/monitor-store';
import * as q from './queries';
import { eventView } from './events';
import { pushToEndpoints } from '../webhooks/endpoints';
import { evaluateReturnRates } from '../return-rates/watch';

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
  /** Money that had gone back came back (a dispute won, a refund failed): a status the reference had is recorded again. */
  repeat?: boolean;
  /** A card decline's code; one that must never be retried stops the borrower with it. */
  declineCode?: string | null;
}

export type Recorded = { recorded: false; why: 'seen' | 'same_status' } | { recorded: true; eventId: string };

/** Returns R01/R09 and the other codes only on the statuses that carry one. */
const codeFor = (status: EventStatus, code: string | null) => (status === 'returned' || status === 'late_returned' ? code : null);

export function recordObservation(ctx: JobContext & { tx: Tx }, o: Observation): Recorded {
  const { tx } = ctx;
  if (q.eventSeen(tx, o.lenderId, o.source, o.sourceEventId)) return { recorded: false, why: 'seen' };
  // A status is recorded once per reference: re-reading a feed from an older cursor (or the processor's own
  // echo of the status the create call already answered) adds nothing.
  if (!o.repeat && q.statusKnown(tx, o.lenderId, o.reference, o.status)) return { recorded: false, why: 'same_status' };

  const now = ctx.deps.clock.now();
  const eventId = newId();
  const returnCode = codeFor(o.status, o.returnCode);
  q.insertEvent(tx, {
    id: eventId,
    lenderId: o.lenderId,
    enrollmentId: o.enrollmentId,
    aid: o.authorizerUniqueId,
    paymentId: o.paymentId,
    connectionId: o.connectionId,
    reference: o.reference,
    status: o.status,
    amount: o.amountCents,
    returnCode,
    message: o.message,
    source: o.source,
    sourceEventId: o.sourceEventId,
    occurredAt: o.occurredAt,
    recordedAt: now,
  });
  if (o.enrollmentId) postLedger(tx, o, eventId, now);
  if (o.paymentId) {
    q.updatePaymentStatus(tx, { id: o.paymentId, status: o.status, returnCode, message: o.message, now, settledAt: o.status === 'settled' ? o.occurredAt : null });
  }
  if (o.enrollmentId) react(ctx, o.enrollmentId, o.status, returnCode, now, o.declineCode ?? null);
  ctx.deps.metrics.paymentEvents.inc({ status: o.status, source: o.source });
  // Pushed to the lender's endpoints: what the processor said (the lender has its uploads already).
  if (o.source === 'processor' && o.authorizerUniqueId) {
    const payment_event = eventView({ id: eventId, reference: o.reference, status: o.status, amountCents: o.amountCents, returnCode, authorizerUniqueId: o.authorizerUniqueId, occurredAt: o.occurredAt, source: o.source, message: o.message });
    pushToEndpoints(tx, now, o.lenderId, 'PAYMENT_EVENT', { payment_event });
  }
  // A return moves the lender's return rates: evaluated at once (an upload evaluates once, after its rows).
  if ((o.status === 'returned' || o.status === 'late_returned') && o.source !== 'upload') evaluateReturnRates(ctx, o.lenderId);
  return { recorded: true, eventId };
}

/**
 * settled books a credit; returned, late_returned and refunded reverse what is credited for the reference
 * (maybe 0), so the ledger is the money the lender holds: a won dispute or a failed refund is settled again.
 */
function postLedger(tx: Tx, o: Observation, eventId: string, now: number): void {
  const entry = { lenderId: o.lenderId, enrollmentId: o.enrollmentId!, reference: o.reference, eventId, at: now };
  if (o.status === 'settled') q.insertLedger(tx, { ...entry, kind: 'credit', amount: o.amountCents });
  else if (o.status === 'returned' || o.status === 'late_returned' || o.status === 'refunded') {
    q.insertLedger(tx, { ...entry, kind: 'reversal', amount: Math.max(0, q.creditedFor(tx, o.lenderId, o.reference)) });
  }
}

/** The outcomes that move a monitor (the state machine decides how); the others are history only. */
function react(ctx: JobContext & { tx: Tx }, enrollmentId: string, status: EventStatus, code: string | null, now: number, declineCode: string | null): void {
  const event =
    status === 'invalid'
      ? { type: status, declineCode }
      : status === 'settled'
      ? { type: status }
      : status === 'returned'
        ? { type: status, code }
        : status === 'late_returned'
          ? { type: status, code }
          : null;
  if (event) applyMonitorEvent(ctx.tx, { enrollmentId, event, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
}
