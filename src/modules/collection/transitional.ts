// The synchronous forms of collection's functions that other modules still call from synchronous code: the
// results upload (knownAmongNow, recordSliceNow, staleAgainstNow, madeForAnotherLenderNow) and the portal's
// pages (collectionOverviewNow, listPaymentsNow, listPaymentEventsNow); recordObservationNow serves the
// synchronous collection decision (decide.ts) and holdChainNow is beside holdChain (chain.ts). Each does what
// the asynchronous function it names does, with the same rules (the pure parts are shared), on the synchronous
// statements of store.sqlite.ts. Each goes once its callers await the asynchronous one.
import type { EventSource, PaymentStatus } from '../../../db/schema/enums';
import type { Ctx, JobContext } from '../../deps';
import { dbOf, withSavepoint, type Tx } from '../../platform/context';
import type { Db } from '../../platform/db';
import { newId } from '../../platform/ids';
import { applyMonitorEvent } from '../enrollments/monitor-store';
import { returnRates } from '../return-rates/service';
import { evaluateReturnRates } from '../return-rates/watch';
import { pushToEndpoints } from '../webhooks/endpoints';
import { holdChainNow } from './chain';
import { borrowerAsked, eventListOf, eventView } from './events';
import { dailyOf, overviewDays, totalsOf, type Overview, type Totals } from './overview';
import { paymentListOf, paymentPageQuery, type PaymentListInput } from './payment-list';
import { codeFor, countedLater, knownFrom, monitorEventOf, placeFrom, SliceFault, type Known, type Observation, type Recorded } from './record';
import { paymentIdIn } from './reference';
import * as q from './store.sqlite';

/** @deprecated transitional: await `knownAmong` (record.ts). */
export function knownAmongNow(db: Db, lenderId: string, source: EventSource, of: Pick<Observation, 'reference' | 'sourceEventId'>[]): Known[] {
  const seen = q.seenAmong(db, lenderId, source, of.map((o) => o.sourceEventId)).map((r) => r.id);
  return knownFrom(of, seen, q.lastEventsAmong(db, lenderId, of.map((o) => o.reference)));
}

/** @deprecated transitional: await `recordObservation` (record.ts). */
export function recordObservationNow(ctx: JobContext & { tx: Tx }, o: Observation): Recorded {
  const { tx } = ctx;
  if (o.known ? o.known.seen : q.eventSeen(tx, o.lenderId, o.source, o.sourceEventId)) return { recorded: false, why: 'seen' };
  const { last, current, status, ahead } = placeOfNow(tx, o);
  if (!ahead) {
    ctx.deps.metrics.paymentObservationsStale.inc({ source: o.source });
    return { recorded: false, why: 'stale', current };
  }
  const now = ctx.deps.clock.now();
  const eventId = newId();
  const returnCode = codeFor(status, o.returnCode);
  const occurredAt = last && last.occurredAt > o.occurredAt ? last.occurredAt : o.occurredAt;
  q.insertEvent(tx, {
    id: eventId,
    lenderId: o.lenderId,
    enrollmentId: o.enrollmentId,
    aid: o.authorizerUniqueId,
    paymentId: o.paymentId,
    connectionId: o.connectionId,
    reference: o.reference,
    status,
    amount: o.amountCents,
    returnCode,
    message: o.message,
    source: o.source,
    sourceEventId: o.sourceEventId,
    occurredAt,
    recordedAt: now,
  });
  if (o.enrollmentId) {
    const entry = { lenderId: o.lenderId, enrollmentId: o.enrollmentId, reference: o.reference, eventId, at: now };
    if (status === 'settled') q.insertLedger(tx, { ...entry, kind: 'credit', amount: o.amountCents });
    else if (status === 'returned' || status === 'late_returned' || status === 'refunded') {
      q.insertLedger(tx, { ...entry, kind: 'reversal', amount: Math.max(0, q.creditedFor(tx, o.lenderId, o.reference)) });
    }
  }
  if (o.paymentId) {
    q.updatePaymentStatus(tx, { id: o.paymentId, from: current, status, returnCode, message: o.message, now, settledAt: status === 'settled' ? occurredAt : null });
  }
  if (o.enrollmentId) {
    const event = monitorEventOf(status, returnCode, o.declineCode ?? null);
    if (event) applyMonitorEvent(tx, { enrollmentId: o.enrollmentId, event, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
    if (status === 'returned' || status === 'late_returned') holdChainNow(ctx, o.enrollmentId, now);
  }
  ctx.deps.metrics.paymentEvents.inc({ status, source: o.source });
  if (o.source === 'processor' && o.authorizerUniqueId) {
    const payment_event = eventView({ id: eventId, reference: o.reference, status, amountCents: o.amountCents, returnCode, authorizerUniqueId: o.authorizerUniqueId, occurredAt, source: o.source, message: o.message });
    pushToEndpoints(tx, now, o.lenderId, 'PAYMENT_EVENT', { payment_event });
  }
  if ((status === 'returned' || status === 'late_returned') && o.source !== 'upload') evaluateReturnRates(ctx, o.lenderId);
  return { recorded: true, eventId, status };
}

function placeOfNow(db: Db, o: Pick<Observation, 'lenderId' | 'reference' | 'paymentId' | 'status' | 'repeat' | 'known'>) {
  const last = o.known ? o.known.last : (q.lastEventOf(db, o.lenderId, o.reference) ?? null);
  const current = o.paymentId ? (q.paymentStatusOf(db, o.paymentId) ?? null) : (last?.status ?? null);
  return placeFrom(o, last, current);
}

/** @deprecated transitional: await `staleAgainst` (record.ts). */
export function staleAgainstNow(
  db: Db,
  o: Pick<Observation, 'lenderId' | 'reference' | 'paymentId' | 'status' | 'repeat' | 'source' | 'sourceEventId' | 'known'>,
): PaymentStatus | null | undefined {
  if (o.known ? o.known.seen : q.eventSeen(db, o.lenderId, o.source, o.sourceEventId)) return undefined;
  const p = placeOfNow(db, o);
  return p.ahead ? undefined : p.current;
}

/** recordOrSetAside (record.ts), synchronously. */
function recordOrSetAsideNow(ctx: JobContext & { tx: Tx }, o: Observation): Recorded | null {
  try {
    return withSavepoint(ctx.tx, () => recordObservationNow(ctx, o));
  } catch (e) {
    const error = (e instanceof Error ? e.message : String(e)).slice(0, 500);
    q.setAside(ctx.tx, { lenderId: o.lenderId, connectionId: o.connectionId, source: o.source, sourceEventId: o.sourceEventId, reference: o.reference, status: o.status, error, at: ctx.deps.clock.now() });
    ctx.deps.metrics.paymentObservationsSetAside.inc({ source: o.source });
    ctx.deps.logger.error({ source: o.source, source_event_id: o.sourceEventId, payment_id: o.paymentId, status: o.status, err: error }, 'payment observation could not be recorded; set aside');
    return null;
  }
}

/** @deprecated transitional: await `recordSlice` (record.ts). */
export function recordSliceNow<R>(ctx: JobContext & { tx: Tx }, attempt: (record: (o: Observation) => Recorded | null) => R): R {
  const counts: (() => void)[] = [];
  const held = { ...ctx, deps: { ...ctx.deps, metrics: countedLater(ctx.deps.metrics, counts) } };
  try {
    const result = withSavepoint(ctx.tx, () =>
      attempt((o) => {
        try {
          return recordObservationNow(held, o);
        } catch (e) {
          throw new SliceFault(e);
        }
      }),
    );
    for (const count of counts) count();
    return result;
  } catch (e) {
    if (!(e instanceof SliceFault)) throw e;
    return attempt((o) => recordOrSetAsideNow(ctx, o));
  }
}

/** @deprecated transitional: await `madeForAnotherLender` (reference.ts). */
export function madeForAnotherLenderNow(db: Db, lenderId: string, reference: string | null): boolean {
  const id = paymentIdIn(reference);
  if (!id) return false;
  const p = q.paymentById(db, id);
  return p !== null && p.reference === reference && p.lenderId !== lenderId;
}

/** @deprecated transitional: await `collectionOverview` (overview.ts). */
export function collectionOverviewNow(ctx: Ctx): Overview {
  const db = dbOf(ctx);
  const lender = ctx.lender.id;
  const now = ctx.deps.clock.now();
  const { since30, firstDay } = overviewDays(now);
  const totals = (from: number): Totals => totalsOf(q.ledgerTotals(db, lender, from), q.inFlightTotals(db, lender, from), q.returnedTotals(db, lender, from));
  const borrowersByState = q.borrowerCountsByState(db, lender);
  const paymentsByStatus = q.paymentCountsByStatus(db, lender);
  const daily = dailyOf(firstDay, q.ledgerTotalsByDay(db, lender, firstDay));
  return {
    asOf: now,
    allTime: totals(0),
    last30Days: totals(since30),
    borrowersByState,
    paymentsByStatus,
    daily,
    returnRates: returnRates({ ctx, input: { windowDays: 60 } }),
  };
}

/** @deprecated transitional: await `listPayments` (payment-list.ts). */
export function listPaymentsNow({ ctx, input }: { ctx: Ctx; input: PaymentListInput }) {
  const { scope, query } = paymentPageQuery(ctx.deps.pageTokens, ctx.lender.id, input);
  return paymentListOf(ctx.deps.pageTokens, scope, input, query, q.paymentsPage(dbOf(ctx), query));
}

/** @deprecated transitional: await `listPaymentEvents` (events.ts). */
export function listPaymentEventsNow({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId?: string } }) {
  const aid = borrowerAsked(input);
  return eventListOf(aid, q.eventsOfBorrower(dbOf(ctx), ctx.lender.id, aid));
}
