import { newId } from '../../platform/ids';
import type { RecordedRead } from '../balance-requests/results';
import type { JobContext } from '../../deps';
import { afterCommit, type Tx } from '../../platform/context';
import { recordObservation, releaseScheduled, type Observation } from './record';
import { pushToEndpoints } from '../webhooks/endpoints';
import { isoOrNull } from '../../platform/clock';
import { dayString } from './notices';
import { resolveKey } from '../payment-connections/resolve';
import { referenceOf } from './reference';
import { decide, type DecisionInputs, type Step } from './decision';
import { policyOf } from '../collection-policy/service';
import type { CollectionPolicy } from '../collection-policy/policy';
import { type DecidingRow, type DecisionRead, type ScheduledPayment } from './store';
import { linkStoredBorrowers } from '../enrollments/account-links';
import { applyMonitorEvent } from '../enrollments/monitor-changes';
import { evaluateReturnRates } from '../return-rates/watch';
import { anyExceeded } from '../return-rates/service';
import { fraudOnDebit } from '../fraud-monitoring/hooks';

/**
 * Borrowers held until the transaction ends, as each of their decisions holds them (on PostgreSQL their rows
 * locked in the order of their ids, FOR NO KEY UPDATE): what else is written about them in the transaction
 * waits for no other writer of them, and no decision of them elsewhere runs meanwhile.
 */
export const holdBorrowers = (ctx: JobContext & { tx: Tx }, enrollmentIds: readonly string[]): Promise<void> =>
  ctx.deps.stores.decisions.serializeBorrowers(ctx, enrollmentIds);

/**
 * The collection decision, called with each monitoring read in the transaction that records it (the chain in
 * modules/balance-results.ts): what decide (decision.ts) asks for is read, and the steps it returns are
 * carried out, in order. The payment row (status initiating, its id the idempotency key) is committed with the
 * read; the dispatch job sends it.
 */
export async function decideCollection(ctx: JobContext & { tx: Tx }, read: RecordedRead & { enrollmentId: string }, known?: DecisionRead): Promise<void> {
  const { deps } = ctx;
  // One decision per borrower at a time: what is in flight, the history and the presentments counted are read
  // and then written on, so a second decision (another read of the borrower) waits for this one. `known`: what
  // the caller read for it beforehand, in this transaction, once it had serialized the borrower.
  if (!known) await ctx.deps.stores.decisions.serializeBorrowers(ctx, [read.enrollmentId]);
  const e = await linkedFirst(ctx, known ? known.enrollment : await ctx.deps.stores.decisions.enrollmentToDecide(ctx, read.enrollmentId));
  const inputs: DecisionInputs = { now: deps.clock.now(), marginCents: deps.config.collectionMarginCents, read, enrollment: e };
  let scheduled: ScheduledPayment | null = null;
  let policy: CollectionPolicy | null = null;
  let key: { id: string } | null = null;
  for (;;) {
    const d = decide(inputs);
    if ('steps' in d) return carryOut(ctx, e!, d.steps, { scheduled, policy: policy!, key });
    if (d.need === 'payments') {
      policy = await policyOf(ctx, e!.lenderId);
      const history = known ? known.history : await ctx.deps.stores.decisions.paymentHistory(ctx, e!.id);
      scheduled = known ? known.scheduled : await ctx.deps.stores.decisions.scheduledPaymentOf(ctx, e!.id);
      const inFlight = known ? history.some((p) => IN_FLIGHT.has(p.status)) : await ctx.deps.stores.decisions.paymentInFlight(ctx, e!.id);
      inputs.payments = { policy, history, scheduled, inFlight: scheduled === null && inFlight };
    } else if (d.need === 'paused') {
      // Evaluated now, which also alerts on a change; ACH collection goes on by itself once every class is back under.
      inputs.paused = anyExceeded(await evaluateReturnRates(ctx, e!.lenderId));
    } else {
      const k = await resolveKey(ctx, { lenderId: e!.lenderId, rail: e!.rail, merchantRef: e!.merchantRef });
      key = k?.keySealed ? { id: k.id } : null;
      inputs.hasKey = key !== null;
    }
  }
}

/**
 * A monitored ACH borrower stored before bank accounts were known, and not linked yet by the start-up job, is
 * linked before it is decided, so its account's state counts (a borrower that cannot be linked is decided by
 * its own rules, as before).
 */
async function linkedFirst(ctx: JobContext & { tx: Tx }, e: DecidingRow | null): Promise<DecidingRow | null> {
  if (!e || e.state !== 'monitored' || e.rail !== 'ach' || e.bankAccountId !== null || e.sealed === null) return e;
  const a = (await linkStoredBorrowers(ctx, [{ id: e.id, lenderId: e.lenderId, routing: e.routingNumber, sealed: e.sealed }], ctx.deps.clock.now())).get(e.id);
  return a ? { ...e, bankAccountId: a.id, account: { state: a.state, lastReturnAt: a.lastReturnAt, pendingChangeId: a.pendingChangeId, validatedAt: a.validatedAt, numberChangedAt: a.numberChangedAt } } : e;
}

/** The statuses of a payment in flight (paymentInFlight's). */
const IN_FLIGHT: ReadonlySet<string> = new Set(['initiating', 'processing']);

/**
 * Decisions for the monitoring reads of one flush of balance results, in their order (the chain in
 * modules/balance-results.ts, which holds every borrower first with holdBorrowers, before anything it writes of
 * them): what decisions read of them, one statement per kind for all of them, then each decided, and `after`
 * called once for all of them, decided. A borrower read twice in the flush is decided each time as one alone,
 * `after` with each decision and `alone` true (the second decision reads what the first and its `after` wrote).
 */
export async function decideCollections(
  ctx: JobContext & { tx: Tx },
  reads: (RecordedRead & { enrollmentId: string })[],
  after: (reads: (RecordedRead & { enrollmentId: string })[], alone: boolean) => Promise<void>,
): Promise<void> {
  const times = new Map<string, number>();
  for (const r of reads) times.set(r.enrollmentId, (times.get(r.enrollmentId) ?? 0) + 1);
  const once = [...times].filter(([, n]) => n === 1).map(([id]) => id);
  const known = once.length > 0 ? await ctx.deps.stores.decisions.decisionInputsOf(ctx, once) : new Map<string, DecisionRead>();
  const decided: (RecordedRead & { enrollmentId: string })[] = [];
  for (const r of reads) {
    if (times.get(r.enrollmentId) === 1) {
      // A borrower found by its read but gone since (erased in between) is decided alone, as before: on nothing.
      await decideCollection(ctx, r, known.get(r.enrollmentId));
      decided.push(r);
    } else {
      await decideCollection(ctx, r);
      await after([r], true);
    }
  }
  await after(decided, false);
}

/** The steps of a decision, in order. */
async function carryOut(
  ctx: JobContext & { tx: Tx },
  e: DecidingRow,
  steps: Step[],
  read: { scheduled: ScheduledPayment | null; policy: CollectionPolicy; key: { id: string } | null },
): Promise<void> {
  const { deps } = ctx;
  const now = deps.clock.now();
  const monitor = (event: Parameters<typeof applyMonitorEvent>[1]['event']) => applyMonitorEvent(ctx, { enrollmentId: e.id, event, now, readIntervalMs: deps.config.monitorReadIntervalMs });
  for (const step of steps) {
    if (step.do === 'void') await voidScheduled(ctx, read.scheduled!, step.message);
    else if (step.do === 'release') await releaseScheduled(ctx, read.scheduled!);
    else if (step.do === 'unblock') await monitor({ type: 'unblocked' });
    else if (step.do === 'read_by') await ctx.deps.stores.enrollments.readNoLaterThan(ctx, e.id, step.at);
    else if (step.do === 'block') {
      await monitor({ type: 'blocked', reason: step.reason });
      afterCommit(ctx, () => deps.metrics.paymentsSkipped.inc({ reason: step.reason }));
    } else await createPayment(ctx, e, step, read.key!.id, now);
  }
}

/** A new payment: initiating (dispatch sends it), or scheduled for its day with the notice in the outbox. */
async function createPayment(ctx: JobContext & { tx: Tx }, e: DecidingRow, p: Extract<Step, { do: 'create' }>, connectionId: string, now: number): Promise<void> {
  const { deps } = ctx;
  const id = newId();
  const reference = referenceOf(e.authorizerUniqueId, id);
  await ctx.deps.stores.decisions.createPayment(ctx, {
    id,
    lenderId: e.lenderId,
    enrollmentId: e.id,
    authorizerUniqueId: e.authorizerUniqueId,
    connectionId,
    rail: e.rail,
    amountCents: p.amountCents,
    reference,
    status: p.debitOn === null ? 'initiating' : 'scheduled',
    attempt: p.attempt,
    reinitiationOf: p.reinitiationOf,
    debitOn: p.debitOn,
    noticeClass: p.notice?.klass ?? null,
    noticeNeeds: p.notice && p.notice.needs.length > 0 ? p.notice.needs.join(',') : null,
    noticeChannel: p.notice && p.notice.needs.length > 0 ? p.notice.channel : null,
    noticeDueFrom: p.notice?.dueFrom ?? null,
    noticeDueBy: p.notice?.dueBy ?? null,
    // The account an ACH debit is made for: a return of it sets that account's state.
    bankAccountId: e.rail === 'ach' ? e.bankAccountId : null,
    // Out of the dispatch queue while scheduled; put back on its day.
    state: p.debitOn === null ? 'pending' : 'done',
    nextAttemptAt: now,
    createdAt: now,
    updatedAt: now,
  });
  // The presentments the debt's chain has used, this one included.
  await ctx.deps.stores.enrollments.setPaymentsUsed(ctx, e.id, p.attempt, now);
  // Fraud monitoring's debit rules; a hold rule's hit keeps this payment from being sent until it is cleared.
  await fraudOnDebit(ctx, { lenderId: e.lenderId, enrollmentId: e.id, aid: e.authorizerUniqueId, rail: e.rail, bankAccountId: e.bankAccountId, account: e.account, paymentId: id, amountCents: p.amountCents });
  await applyMonitorEvent(ctx, { enrollmentId: e.id, event: { type: 'payment_initiated' }, now, readIntervalMs: deps.config.monitorReadIntervalMs });
  if (p.debitOn === null) afterCommit(ctx, () => deps.metrics.paymentsInitiated.inc({ rail: e.rail }));
  else {
    afterCommit(ctx, () => deps.metrics.paymentsScheduled.inc({ rail: e.rail }));
    // The notice: the lender tells the borrower before debit_on.
    await pushToEndpoints(ctx, now, e.lenderId, 'PAYMENT_SCHEDULED', { authorizer_unique_id: e.authorizerUniqueId, reference, amount: p.amountCents, debit_on: dayString(p.debitOn) });
    if (p.notice && p.notice.needs.length > 0) await pushToEndpoints(ctx, now, e.lenderId, 'PAYMENT_NOTICE_DUE', noticeDuePayload({ id, reference, e, p }));
  }
}

/**
 * A scheduled payment ends without moving money: voided (an event on its reference, source `service`), its
 * slot given back. On its day when something no longer allows it, and at once on removal or erasure.
 */
export async function voidScheduled(ctx: JobContext & { tx: Tx }, p: ScheduledPayment, message: string): Promise<void> {
  const now = ctx.deps.clock.now();
  await recordObservation(ctx, voidedObservation(p, message, now));
  await ctx.deps.stores.enrollments.giveBackPresentment(ctx, p.enrollmentId, now);
}

/** The event that ends a scheduled payment without moving money. */
export function voidedObservation(p: Omit<ScheduledPayment, 'debitOn'>, message: string, now: number): Observation {
  return {
    lenderId: p.lenderId,
    reference: p.reference,
    status: 'voided',
    amountCents: p.amountCents,
    returnCode: null,
    message,
    occurredAt: now,
    source: 'service',
    sourceEventId: `voided:${p.id}`,
    enrollmentId: p.enrollmentId,
    authorizerUniqueId: p.aid,
    paymentId: p.id,
    connectionId: null,
  };
}

export const STOPPED_BEFORE_ITS_DAY = 'monitoring of the borrower stopped before its day';

/** Monitoring stopped (removal, erasure): a scheduled payment of the borrower never goes out. */
export async function voidScheduledOnStop(ctx: JobContext & { tx: Tx }, stopped: { enrollmentId: string }): Promise<void> {
  await ctx.deps.stores.decisions.serializeBorrowers(ctx, [stopped.enrollmentId]);
  const p = await ctx.deps.stores.decisions.scheduledPaymentOf(ctx, stopped.enrollmentId);
  if (p) await voidScheduled(ctx, p, STOPPED_BEFORE_ITS_DAY);
}

/**
 * PAYMENT_NOTICE_DUE: what the model forms of the payday rule's notices (12 CFR 1041.9(b), Model Forms A-3 to
 * A-5) and Regulation E's varying-amount notice ask that the service holds: the payment, its day, amount and
 * channel, the borrower's and the lender's references, and for a reinitiation the failed attempt it presents
 * again. The lender sends the notice inside the window and confirms it (POST /v1/payments/{id}/notice).
 */
function noticeDuePayload(v: { id: string; reference: string; e: DecidingRow; p: Extract<Step, { do: 'create' }> }) {
  const { e, p } = v;
  const n = p.notice!;
  const f = p.failed ?? null;
  return {
    payment_id: v.id,
    reference: v.reference,
    authorizer_unique_id: e.authorizerUniqueId,
    merchant_ref: e.merchantRef,
    amount: p.amountCents,
    debit_on: dayString(p.debitOn!),
    payment_channel: e.rail,
    notice_class: n.klass,
    requirements: n.needs,
    notice_channel: n.channel,
    notice_due_from: isoOrNull(n.dueFrom),
    notice_due_by: isoOrNull(n.dueBy),
    failed_attempt: f ? { attempted_on: f.firstAttemptAt !== null ? dayString(f.firstAttemptAt) : null, amount: f.amountCents, return_code: f.returnCode } : null,
  };
}
