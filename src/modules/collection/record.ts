import type { EventSource, EventStatus, PaymentStatus } from '../../../db/schema/enums';
import type { JobContext } from '../../deps';
import { afterCommit, savepoint, type Tx } from '../../platform/context';
import type { StoreCtx } from '../../platform/store';
import { newId } from '../../platform/ids';
import { dbErrorMessage, isTransientConflict } from '../../platform/pg';
import { type EventRecord } from './store';
import type { TargetsMemo } from '../webhooks/endpoints';
import { evaluateReturnRates } from '../return-rates/watch';
import { asObserved, isAhead } from './status-order';
import { afterOutcome, stopAtOnce } from './reactions';
import { isUnauthorizedReturn } from '../../adapters/processors/return-codes';

// Recording an observed status of a payment: the one place that moves `payments.status` after a payment is
// created (tests/architecture checks it). Processor polling, the dispatch answer, a look-up, reconciliation,
// the results upload and voids record an observation (recordObservation, or recordSlice for a batch's); a
// payment never sent ends through recordNotAttempted, and a scheduled payment is released on its day through
// releaseScheduled. An outcome is its event and the payment's status, here; what it sets off (the ledger, the
// borrower's monitor and chain, the lender's endpoints, the return rates) is listed in order in reactions.ts.
//
// Everything is done in the caller's transaction: one event per status of a reference, the first time it is
// seen, the ledger, our payment's status and the reactions. The service records only what it observed and infers nothing.
//
// For the service's own payments the processor's word wins: an uploaded outcome of one (a lender's export, a
// void in its own books) is recorded as the lender's report, an event with source `upload` that moves nothing
// (no status, ledger, chain or reinitiation), and the payment is looked up at its processor at once (dispatch.ts);
// what the processor says is recorded as every processor status is. Only a stop (R08, an unauthorized return)
// acts on the report at once: a stop is never a debit.

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
  /** What is recorded of its source event and reference, when the caller read it already (knownAmong). */
  known?: Known;
}

/** Whether an observation's source event was read before, and its reference's latest event. */
export interface Known {
  seen: boolean;
  /** Undefined: not read with the others (an earlier observation of the same slice records on it first). */
  last: { status: EventStatus; occurredAt: number } | null | undefined;
  /** Read in a transaction that holds the reference from then to its commit (knownAmong in a transaction). */
  held: boolean;
}

/**
 * What is recorded of some observations, read in two queries rather than two per observation (an upload's
 * slice of rows). Read in the transaction that records them, each of its own reference and source event: no
 * observation's recording changes what another's says.
 */
export async function knownAmong(c: StoreCtx, lenderId: string, source: EventSource, of: Pick<Observation, 'reference' | 'sourceEventId'>[]): Promise<Known[]> {
  // What is read here stands until the slice is recorded: its references are held from now to the commit.
  if (c.tx) await c.deps.stores.outcomes.serializeReferences({ ...c, tx: c.tx }, lenderId, of.map((o) => o.reference));
  const seen = await c.deps.stores.outcomes.seenAmong(c, lenderId, source, of.map((o) => o.sourceEventId));
  const last = await c.deps.stores.outcomes.lastEventsAmong(c, lenderId, of.map((o) => o.reference));
  return knownFrom(of, seen, last, c.tx !== undefined);
}

/** What knownAmong answers, from the source events seen and the references' latest events. */
export function knownFrom(
  of: Pick<Observation, 'reference' | 'sourceEventId'>[],
  seenIds: string[],
  lastEvents: { reference: string; status: EventStatus; occurredAt: number }[],
  held = false,
): Known[] {
  const seen = new Set(seenIds);
  const last = new Map(lastEvents.map((r) => [r.reference, { status: r.status, occurredAt: r.occurredAt }]));
  return of.map((o) => ({ seen: seen.has(o.sourceEventId), last: last.get(o.reference) ?? null, held }));
}

/**
 * Not recorded: the source event was read before, or the status is not ahead of the one recorded (stale).
 * `report`: recorded as a lender's report of the service's own payment, not as its outcome; `hold` says why it
 * cannot be confirmed now (null: its processor is being asked).
 */
export type Recorded =
  | { recorded: false; why: 'seen' }
  | { recorded: false; why: 'stale'; current: PaymentStatus | null }
  | { recorded: true; eventId: string; status: EventStatus; occurredAt: number; report?: { hold: string | null } };

/** The message of a lender's report of the service's own payment, on its event. */
export const REPORTED_MESSAGE = 'reported in a results upload; the payment’s outcome is what its processor says';
/** Why a report cannot be confirmed now. */
export const REPORT_HOLDS = {
  keyDeleted: 'the processor key this payment went through was deleted, so its processor cannot be asked; the reported outcome is held and the borrower is not debited again on it',
  neverSent: 'the payment is scheduled and has not been sent, so its processor has nothing to confirm; the reported outcome is held',
} as const;

/** An uploaded return that stops the borrower at once, unconfirmed: a stop (R08, an unauthorized return) is never a debit. */
export const stopsAtOnce = (status: EventStatus, code: string | null): boolean =>
  (status === 'returned' || status === 'late_returned') && code !== null && (code === 'R08' || isUnauthorizedReturn(code));

/** Returns R01/R09 and the other codes only on the statuses that carry one. */
export const codeFor = (status: EventStatus, code: string | null) => (status === 'returned' || status === 'late_returned' ? code : null);

/**
 * Records one observation. `ratesLater`: a return's lender is added to it instead of its return rates being
 * evaluated at once (recordSlice evaluates each such lender once, after the slice's observations).
 */
export async function recordObservation(ctx: JobContext & { tx: Tx }, o: Observation, ratesLater?: Set<string>): Promise<Recorded> {
  // What is recorded of the reference is read, then written on: one recording of a reference at a time (held
  // already when what is known of it was read under its lock in this transaction).
  if (!o.known?.held) await ctx.deps.stores.outcomes.serializeReferences(ctx, o.lenderId, [o.reference]);
  if (o.known ? o.known.seen : await ctx.deps.stores.outcomes.eventSeen(ctx, o.lenderId, o.source, o.sourceEventId)) return { recorded: false, why: 'seen' };
  // Forward only: what is recorded now is the payment's status (the service's own payments) or the latest
  // recorded status of the reference (a payment made elsewhere). A status not ahead of it is one the service
  // has already moved past (an older event read late, a re-read, a look-up that came first): nothing changes.
  const { last, current, status, ahead } = await placeOf(ctx, o);
  if (!ahead) {
    afterCommit(ctx, () => ctx.deps.metrics.paymentObservationsStale.inc({ source: o.source }));
    return { recorded: false, why: 'stale', current };
  }
  if (o.source === 'upload' && o.paymentId && current !== null) return recordReport(ctx, o, o.paymentId, status, current, last);

  const now = ctx.deps.clock.now();
  const { id: eventId, returnCode, occurredAt, ...event } = eventOf(o, status, last, now);
  await ctx.deps.stores.outcomes.recordEvent(ctx, { id: eventId, returnCode, occurredAt, ...event });
  if (o.paymentId) {
    await ctx.deps.stores.outcomes.movePaymentStatus(ctx, {
      id: o.paymentId,
      from: current,
      status,
      returnCode,
      message: o.message,
      now,
      settledAt: status === 'settled' ? occurredAt : null,
      reportHold: `the payment is recorded ${returnCode ? `${status} ${returnCode}` : status}, as its processor says; the reported outcome was not confirmed`,
    });
  }
  afterCommit(ctx, () => ctx.deps.metrics.paymentEvents.inc({ status, source: o.source }));
  await afterOutcome(ctx, o, { eventId, status, returnCode, occurredAt, now }, ratesLater);
  return { recorded: true, eventId, status, occurredAt };
}

/** What the recorder needs of one of the service's own payments to end or release it. */
export type OwnPayment = Pick<Observation, 'lenderId' | 'reference' | 'amountCents' | 'enrollmentId' | 'authorizerUniqueId' | 'connectionId'> & { id: string };

/**
 * A payment the processor does not hold, ended `not_attempted` as every outcome is recorded (its event, its
 * status, the lender's endpoints): whether it was. Only from initiating (an outcome read meanwhile stands). For
 * `never_sent`, decided by the service, only while no send of it was ever claimed: a send claimed meanwhile may
 * be at the processor, and only it can say. `absent_at_processor` is the processor's word: it has no payment
 * with this id past the idempotency horizon.
 */
export async function recordNotAttempted(
  ctx: JobContext & { tx: Tx },
  p: OwnPayment,
  message: string,
  why: 'never_sent' | 'absent_at_processor',
): Promise<boolean> {
  await ctx.deps.stores.outcomes.serializeReferences(ctx, p.lenderId, [p.reference]);
  const s = await ctx.deps.stores.outcomes.sendStateHeld(ctx, p.id);
  if (!s || s.status !== 'initiating' || (why === 'never_sent' && s.firstAttemptAt !== null)) return false;
  const r = await recordObservation(ctx, {
    lenderId: p.lenderId,
    reference: p.reference,
    status: 'not_attempted',
    amountCents: p.amountCents,
    returnCode: null,
    message,
    occurredAt: ctx.deps.clock.now(),
    source: why === 'never_sent' ? 'service' : 'processor',
    sourceEventId: `not_attempted:${p.id}`,
    enrollmentId: p.enrollmentId,
    authorizerUniqueId: p.authorizerUniqueId,
    paymentId: p.id,
    connectionId: p.connectionId,
  });
  return r.recorded;
}

/**
 * A scheduled payment released on its day (its notice has run and nothing stops it): scheduled → initiating,
 * due for dispatch now. The one move no observation makes, so it records no event. False when the payment is
 * no longer scheduled.
 */
export async function releaseScheduled(ctx: JobContext & { tx: Tx }, p: Pick<OwnPayment, 'id' | 'lenderId' | 'reference'>): Promise<boolean> {
  await ctx.deps.stores.outcomes.serializeReferences(ctx, p.lenderId, [p.reference]);
  if (!isAhead('scheduled', 'initiating')) return false;
  return ctx.deps.stores.outcomes.releasePayment(ctx, p.id, ctx.deps.clock.now());
}

/**
 * The event an observation is recorded as: its id minted, a return code only on the statuses that carry one,
 * and a time in the order of the reference's statuses (a status observed later never carries an earlier time).
 */
function eventOf(o: Observation, status: EventStatus, last: Exclude<Known['last'], undefined>, now: number): EventRecord {
  return {
    id: newId(),
    lenderId: o.lenderId,
    enrollmentId: o.enrollmentId,
    aid: o.authorizerUniqueId,
    paymentId: o.paymentId,
    connectionId: o.connectionId,
    reference: o.reference,
    status,
    amount: o.amountCents,
    returnCode: codeFor(status, o.returnCode),
    message: o.message,
    source: o.source,
    sourceEventId: o.sourceEventId,
    occurredAt: last && last.occurredAt > o.occurredAt ? last.occurredAt : o.occurredAt,
    recordedAt: now,
  };
}

/**
 * A lender's uploaded outcome of the service's own payment, ahead of its recorded status: an event with source
 * `upload` that names no payment (so neither the ledger, the chain nor the return rates read it as the
 * payment's), kept on the payment, and the payment queued for a look-up at its processor now. A payment
 * scheduled and not yet sent, or one whose key is gone, cannot be confirmed: its report is held, saying why.
 */
async function recordReport(
  ctx: JobContext & { tx: Tx },
  o: Observation,
  paymentId: string,
  status: EventStatus,
  current: PaymentStatus,
  last: Exclude<Known['last'], undefined>,
): Promise<Recorded> {
  const now = ctx.deps.clock.now();
  const { id: eventId, returnCode, occurredAt, ...event } = eventOf(o, status, last, now);
  await ctx.deps.stores.outcomes.recordEvent(ctx, { id: eventId, returnCode, occurredAt, ...event, paymentId: null, connectionId: null, message: REPORTED_MESSAGE });
  const hold = current === 'scheduled' ? REPORT_HOLDS.neverSent : (await ctx.deps.stores.dispatch.paymentKeyLive(ctx, paymentId)) ? null : REPORT_HOLDS.keyDeleted;
  // An initiating payment is being resolved at its processor already (sent, or looked up): nothing to queue.
  await ctx.deps.stores.outcomes.notePaymentReport(ctx, { id: paymentId, status, returnCode, at: now, hold, lookUp: hold === null && current !== 'initiating' });
  if (o.enrollmentId && stopsAtOnce(status, returnCode)) await stopAtOnce(ctx, { lenderId: o.lenderId, reference: o.reference, paymentId }, o.enrollmentId, status, returnCode, now);
  afterCommit(ctx, () => {
    ctx.deps.metrics.paymentEvents.inc({ status, source: o.source });
    ctx.deps.metrics.paymentReports.inc({ outcome: hold === null ? 'asked' : 'held' });
  });
  return { recorded: true, eventId, status, occurredAt, report: { hold } };
}

/** Where an observation stands against what is recorded: the status it stands for and whether it is ahead. */
async function placeOf(c: StoreCtx, o: Pick<Observation, 'lenderId' | 'reference' | 'paymentId' | 'status' | 'repeat' | 'known'>) {
  const last = o.known && o.known.last !== undefined ? o.known.last : await c.deps.stores.outcomes.lastEventOf(c, o.lenderId, o.reference);
  const current = o.paymentId ? await c.deps.stores.outcomes.paymentStatusOf(c, o.paymentId) : (last?.status ?? null);
  return placeFrom(o, last, current);
}

/** placeOf from what is recorded: the reference's latest event and the status it stands in. */
export function placeFrom(o: Pick<Observation, 'status' | 'repeat'>, last: Exclude<Known['last'], undefined>, current: PaymentStatus | null) {
  const status = asObserved(current, o.status);
  return { last, current, status, ahead: isAhead(current, status, o.repeat === true) };
}

/** The recorded status an observation would not move forward (a dry run's answer), or undefined when it would. */
export async function staleAgainst(
  c: StoreCtx,
  o: Pick<Observation, 'lenderId' | 'reference' | 'paymentId' | 'status' | 'repeat' | 'source' | 'sourceEventId' | 'known'>,
): Promise<PaymentStatus | null | undefined> {
  if (o.known ? o.known.seen : await c.deps.stores.outcomes.eventSeen(c, o.lenderId, o.source, o.sourceEventId)) return undefined;
  const p = await placeOf(c, o);
  return p.ahead ? undefined : p.current;
}

/**
 * Records one observation of a batch (a feed page, a listing, an upload row) in a savepoint of the batch's
 * transaction. One that cannot be recorded (a fault, never a stale status) is undone alone, logged, counted
 * and set aside with its reason, and the batch goes on: one payment never stops the others, nor the cursor.
 */
async function recordOrSetAside(ctx: JobContext & { tx: Tx }, o: Observation, before?: () => Promise<void>): Promise<Recorded | null> {
  try {
    return await savepoint(ctx, async () => {
      await before?.();
      return recordObservation(ctx, o);
    });
  } catch (e) {
    // A transaction that lost a deadlock is not a fault of the observation: the whole batch is done again.
    if (isTransientConflict(e)) throw e;
    const error = dbErrorMessage(e).slice(0, 500);
    await ctx.deps.stores.outcomes.setObservationAside(ctx, { lenderId: o.lenderId, connectionId: o.connectionId, source: o.source, sourceEventId: o.sourceEventId, reference: o.reference, status: o.status, error, at: ctx.deps.clock.now() });
    afterCommit(ctx, () => ctx.deps.metrics.paymentObservationsSetAside.inc({ source: o.source }));
    ctx.deps.logger.error({ source: o.source, source_event_id: o.sourceEventId, payment_id: o.paymentId, status: o.status, err: error }, 'payment observation could not be recorded; set aside');
    return null;
  }
}


/** A fault of one observation of a slice, carried out of the slice's savepoint to have the slice done again. */
export class SliceFault extends Error {
  constructor(readonly fault: unknown) {
    super('an observation of the slice could not be recorded');
  }
}

/**
 * Records a slice of a batch's observations (an upload's rows, a feed's page) in one savepoint rather than
 * one each, as recordOrSetAside would: a savepoint copies every page it first changes to its sub-journal, so
 * one per row copied the same index pages again for every row (profiled, about half of a 10 MB upload went to
 * inserting its events). The answers come in the order of `observations` (undefined where there is none).
 * When an observation of the slice throws, the slice is undone and recorded again one observation after the
 * other, each in its own savepoint (recordOrSetAside), so that a fault still sets aside its own observation
 * alone; what the metrics count is counted at the commit, for the attempt that stands. Anything else that throws is rethrown.
 *
 * In the savepoint the observations are recorded borrower by borrower (byBorrower): each borrower's in the
 * order given, different borrowers side by side. `before(i)`, when it gives a step, runs just before the i-th
 * observation is recorded, in its savepoint (a feed's page keeps the processor's id of our payment). A return
 * read from a processor moves its lender's return rates: those are evaluated once, after the slice's
 * observations, rather than by each borrower's side at once (they are the lender's, not a borrower's).
 */
export async function recordSlice(
  ctx: JobContext & { tx: Tx },
  observations: readonly (Observation | null)[],
  before?: (i: number) => (() => Promise<void>) | undefined,
): Promise<(Recorded | null | undefined)[]> {
  const held: JobContext & { tx: Tx } & TargetsMemo = { ...ctx, targetsOf: new Map() };
  // A reference's latest event as the slice records on it: an observation whose caller read what is known of
  // it but not its reference's latest event (an earlier one of the slice comes first) is given it from here.
  const lastOf = new Map<string, Exclude<Known['last'], undefined>>();
  try {
    return await savepoint(ctx, async () => {
      const lenders = new Set<string>();
      const recorded = await byBorrower(observations, async (o, i) => {
        try {
          await before?.(i)?.();
          const known = o.known && o.known.last === undefined && lastOf.has(o.reference) ? { ...o.known, last: lastOf.get(o.reference)! } : o.known;
          const r = await recordObservation(held, known === o.known ? o : { ...o, known }, lenders);
          if (r.recorded) lastOf.set(o.reference, { status: r.status, occurredAt: r.occurredAt });
          else if (known && known.last !== undefined && !lastOf.has(o.reference)) lastOf.set(o.reference, known.last);
          return r;
        } catch (e) {
          throw new SliceFault(e);
        }
      });
      for (const lenderId of lenders) {
        try {
          await evaluateReturnRates(held, lenderId);
        } catch (e) {
          throw new SliceFault(e);
        }
      }
      return recorded;
    });
  } catch (e) {
    if (!(e instanceof SliceFault)) throw e;
    // A lost deadlock is the transaction's, not a row's: no row is set aside for it.
    if (isTransientConflict(e.fault)) throw e.fault;
    const out: (Recorded | null | undefined)[] = [];
    for (const [i, o] of observations.entries()) out.push(o ? await recordOrSetAside(ctx, o, before?.(i)) : undefined);
    return out;
  }
}

/**
 * `record` over observations one borrower at a time (its enrollment, else the reference): each borrower's in
 * the order given, since its monitor and ledger move one observation after the other; different borrowers'
 * side by side. Nothing one borrower's recording reads is written by another's (its references, payments,
 * ledger entries and monitor are its own; a reference's observations are all one borrower's, and the lender's
 * return rates are evaluated after the slice), so the order among borrowers changes nothing recorded. On
 * PostgreSQL the borrowers' statements are sent one after the other on the transaction's connection without
 * each waiting for the answer before it (pipelined), where one at a time waited a round trip each: several
 * statements a row (bun run bench upload). On SQLite each statement runs when it is called, as before. On the
 * first failure no borrower starts another observation, every one in flight is waited for (no statement is
 * left running on the connection), and that first failure is thrown.
 */
async function byBorrower<R>(observations: readonly (Observation | null)[], record: (o: Observation, i: number) => Promise<R>): Promise<(R | undefined)[]> {
  const out: (R | undefined)[] = new Array(observations.length).fill(undefined);
  const chains = new Map<string, number[]>();
  observations.forEach((o, i) => {
    if (!o) return;
    const key = o.enrollmentId !== null ? `e:${o.enrollmentId}` : `r:${o.reference}`;
    const chain = chains.get(key);
    if (chain) chain.push(i);
    else chains.set(key, [i]);
  });
  let failure: { error: unknown } | null = null;
  await Promise.all(
    [...chains.values()].map(async (chain) => {
      for (const i of chain) {
        if (failure) return;
        try {
          out[i] = await record(observations[i]!, i);
        } catch (error) {
          failure ??= { error };
          return;
        }
      }
    }),
  );
  if (failure) throw (failure as { error: unknown }).error;
  return out;
}
