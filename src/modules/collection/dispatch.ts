import { writeGate } from '../../platform/context';
import type { Deps, JobContext } from '../../deps';
import { transaction } from '../../platform/context';
import type { Job } from '../../platform/jobs';
import { drainClaims } from '../../platform/work-pool';
import type { DebitInstrument, DebitRequest, DebitResult, FoundPayment, Processor } from '../../adapters/processors';
import { openBorrower } from '../enrollments/borrower';
import { applyMonitorEvent, monitorStateOf } from '../enrollments/monitor-changes';
import { accountBlockOf, ACCOUNT_BLOCK_WORDS, REVOKED_WORDS, type AccountBlock } from '../enrollments/monitor';
import { policyOf } from '../collection-policy/service';
import { heldForFraud } from '../fraud-monitoring/service';
import type { AccountType } from '../../../db/schema/enums';
import { recordNotAttempted, recordObservation, REPORT_HOLDS } from './record';
import { type DuePayment } from './store';

export type { DuePayment };

// Sending initiated payments to their processor, and finding out what became of those whose answer was not
// seen. A payment row is committed (initiating) before it is sent, and its first attempt is committed before
// the request leaves; every create carries the payment id as its idempotency key.
//
// Ask the processor, never guess. A payment whose answer was not seen (a crash while sending, a timeout, a
// 5xx) stays initiating until the processor says what became of it: sent again with the same key while the
// key is young and the borrower still monitored, looked up otherwise, and looked up only once the key is older
// than PROCESSOR_IDEMPOTENCY_HORIZON_MS (a processor forgets keys after a day: a reused key would be a new
// debit). Only a payment the processor was never asked about, or one a look-up past the horizon does not find,
// is recorded not_attempted. A removal or an outcome recorded elsewhere only stops new payments.
//
// A bank account whose state blocks the borrower (a return of any borrower's debit to it, recorded after the
// payment was made) stops a payment not yet sent as a removal does: never sent, recorded not attempted with
// the account's reason; one sent before is only looked up. The claim checks it again in its statement.
//
// A lender's uploaded outcome of a payment the processor has not confirmed (record.ts) puts the payment back in
// this queue: it is looked up at its processor, and what the processor says is recorded; the report stands,
// saying why, until the processor's word confirms it.

const CONCURRENCY = 16;
const RETRY_BASE_MS = 5_000;
const RETRY_MAX_MS = 15 * 60_000;
/** Room around the attempts for the processor's clock when looking a payment up by the time it was created. */
const LOOKUP_SLACK_MS = 10 * 60_000;

export type Step =
  | { kind: 'done' }
  | { kind: 'wait' }
  | { kind: 'send'; processor: Processor; key: string; call: Promise<DebitResult>; firstAttemptAt: number }
  | { kind: 'look'; processor: Processor; key: string; call: Promise<FoundPayment>; firstAttemptAt: number }
  | { kind: 'verify'; call: Promise<FoundPayment> };

/** A debit ready to go: everything it needs read, nothing sent yet. */
export interface PlannedSend {
  kind: 'planned';
  processor: Processor;
  key: string;
  firstAttemptAt: number;
  request: DebitRequest;
  /** The borrower's sealed details and routing number the request was made from: the claim finds them unchanged, or nothing is sent. */
  details?: { sealed: string; routing: string | null };
}

/**
 * What to do with one due payment (`start` runs it at once). A debit is only planned here: it goes out through
 * `sendPlanned`, whose claim is the line a removal draws (see there).
 */
export async function planSend(ctx: JobContext, p: DuePayment): Promise<Step | PlannedSend> {
  const { deps } = ctx;
  const now = deps.clock.now();
  const pay = await ctx.deps.stores.dispatch.sendStateOf(ctx, p.id);
  // Past initiating, with a lender's report its processor has not confirmed: the processor is asked.
  if (pay && pay.reportedStatus !== null && pay.status !== 'initiating' && pay.status !== 'scheduled') return verify(ctx, p, pay.firstAttemptAt ?? now);
  if (!pay || pay.status !== 'initiating') {
    // The processor already told us (polling read the outcome first): nothing left to resolve here.
    await transaction(ctx, (tx) => tx.deps.stores.dispatch.finishDue(tx, p, { state: 'done' }));
    return { kind: 'done' };
  }
  const e = await ctx.deps.stores.dispatch.borrowerToDebit(ctx, p.enrollmentId);
  const conn = await ctx.deps.stores.dispatch.keyToSend(ctx, p.connectionId);
  const sent = pay.firstAttemptAt !== null;
  const { block: accountBlock, accountType } = await accountBlockOfPayment(ctx, p);

  if (!sent) {
    // Never sent: what is known locally is all there is, and a payment that cannot go now never will.
    if (!e || e.state !== 'monitored' || !e.sealed) return neverSent(ctx, p, 'monitoring of the borrower stopped before the payment was sent', 'removed');
    if (e.revoked) return neverSent(ctx, p, `not sent: ${REVOKED_WORDS}`, 'authorization_revoked');
    if (accountBlock) return neverSent(ctx, p, `not sent: ${ACCOUNT_BLOCK_WORDS[accountBlock]}`, accountBlock, accountBlock);
    if (!conn?.keySealed) return neverSent(ctx, p, 'the processor key was deleted before the payment was sent', 'key_deleted');
    if (p.rail === 'card' && !e.cardToken) return neverSent(ctx, p, 'the borrower has no card token', 'no_card_token');
    // Held by a fraud-monitoring alert: it waits, unsent, until the lender clears the alert (the claim checks it again).
    if (await heldForFraud(ctx, p.enrollmentId)) return { kind: 'wait' };
  }
  if (!conn?.keySealed) {
    // Sent, and the key to ask with is gone: the outcome stays unknown, and the borrower blocked by it.
    deps.logger.warn({ payment_id: p.id }, 'payment outcome unknown and its processor key deleted; it stays initiating');
    return { kind: 'wait' };
  }
  const processor = deps.processors.forLender(conn.processor, p.lenderId);
  const key = deps.vault.open(conn.keySealed);
  const firstAttemptAt = pay.firstAttemptAt ?? now;
  const young = now - firstAttemptAt < deps.config.processorIdempotencyHorizonMs;
  const monitored = e?.state === 'monitored' && !!e.sealed && !e.revoked && accountBlock === null;
  if (sent && !(young && monitored)) {
    // Removed, stopped or erased since, its bank account blocked since, or the key too old to send again: only a look-up.
    const call = processor.findPayment(key, { paymentId: p.id, createdFrom: firstAttemptAt - LOOKUP_SLACK_MS, createdTo: now + LOOKUP_SLACK_MS });
    return { kind: 'look', processor, key, call, firstAttemptAt };
  }
  const borrower = openBorrower(deps, e!.sealed!);
  let instrument: DebitInstrument;
  if (p.rail === 'card') {
    if (!e!.cardToken) {
      // Sent before with a token that has since been erased: only the processor knows what happened.
      const call = processor.findPayment(key, { paymentId: p.id, createdFrom: firstAttemptAt - LOOKUP_SLACK_MS, createdTo: now + LOOKUP_SLACK_MS });
      return { kind: 'look', processor, key, call, firstAttemptAt };
    }
    instrument = { kind: 'token', token: deps.vault.open(e!.cardToken) };
  } else {
    instrument = { kind: 'bank_account', routingNumber: e!.routing ?? '', accountNumber: borrower.s.accountNumber ?? '', accountType: accountType ?? undefined };
  }
  const name = [borrower.s.firstName, borrower.s.lastName].filter(Boolean).join(' ') || p.authorizerUniqueId;
  const request: DebitRequest = {
    paymentId: p.id,
    reference: p.reference,
    amountCents: p.amountCents,
    rail: p.rail,
    instrument,
    borrower: { name },
    ...(p.attempt > 1 ? { entryDescription: 'RETRY PYMT' as const } : {}),
  };
  return { kind: 'planned', processor, key, firstAttemptAt, request, details: { sealed: e!.sealed!, routing: e!.routing } };
}

/**
 * Sends a planned debit once its claim holds. The claim is one conditional UPDATE, committed before the
 * request leaves: the payment is still initiating and its borrower still monitored (not removed, stopped or
 * erased), and from then on the processor may hold it, whatever happens to us. A removal committed before
 * the claim wins (nothing is sent; the payment is decided again and ends not attempted, or looked up if an
 * earlier attempt went out); a removal committed after it finds the payment claimed, and its outcome is
 * what the processor says. `depth` bounds the re-decision: the state the claim lost to is final.
 */
export async function sendPlanned(ctx: JobContext, p: DuePayment, plan: PlannedSend, depth = 0): Promise<Step> {
  const now = ctx.deps.clock.now();
  const claimed = await transaction(ctx, (tx) => tx.deps.stores.dispatch.claimSend(tx, p, now, plan.details));
  if (!claimed) {
    if (depth > 0) return { kind: 'wait' };
    const again = await planSend(ctx, p);
    return again.kind === 'planned' ? sendPlanned(ctx, p, again, depth + 1) : again;
  }
  const call = plan.processor.createDebit(plan.key, plan.request);
  ctx.deps.metrics.paymentsSent.inc({ processor: plan.processor.name });
  return { kind: 'send', processor: plan.processor, key: plan.key, call, firstAttemptAt: plan.firstAttemptAt };
}

/** One due payment decided and, when it is to go out, claimed and sent. */
async function start(ctx: JobContext, p: DuePayment): Promise<Step> {
  const plan = await planSend(ctx, p);
  return plan.kind === 'planned' ? sendPlanned(ctx, p, plan) : plan;
}

/** The look-up of a payment a lender reported an outcome of; with its key gone nothing can be asked, and the report is held. */
async function verify(ctx: JobContext, p: DuePayment, firstAttemptAt: number): Promise<Step> {
  const { deps } = ctx;
  const now = deps.clock.now();
  const conn = await ctx.deps.stores.dispatch.keyToSend(ctx, p.connectionId);
  if (!conn?.keySealed) {
    await transaction(ctx, async (tx) => {
      await tx.deps.stores.outcomes.holdPaymentReport(tx, p.id, REPORT_HOLDS.keyDeleted);
      await tx.deps.stores.dispatch.finishDue(tx, p, { state: 'done' });
    });
    return { kind: 'done' };
  }
  const processor = deps.processors.forLender(conn.processor, p.lenderId);
  const key = deps.vault.open(conn.keySealed);
  return { kind: 'verify', call: processor.findPayment(key, { paymentId: p.id, createdFrom: firstAttemptAt - LOOKUP_SLACK_MS, createdTo: now + LOOKUP_SLACK_MS }) };
}

/**
 * What the processor says of a payment a lender reported an outcome of, recorded as every processor status is
 * (its event, the ledger, the monitor; forward only): a report it confirms is cleared on the way. One it does
 * not confirm stands, saying what the processor said.
 */
async function recordVerified(ctx: JobContext, p: DuePayment, f: FoundPayment): Promise<void> {
  const now = ctx.deps.clock.now();
  await transaction(ctx, async (tx) => {
    if (f.found) {
      if (f.processorPaymentId) await tx.deps.stores.matching.keepProcessorPaymentId(tx, p.id, f.processorPaymentId);
      await recordObservation(tx, {
        lenderId: p.lenderId,
        reference: p.reference,
        status: f.status,
        amountCents: p.amountCents,
        returnCode: f.returnCode,
        message: f.message,
        declineCode: f.declineCode ?? null,
        occurredAt: now,
        source: 'processor',
        sourceEventId: `verified:${p.id}:${f.status}`,
        enrollmentId: p.enrollmentId,
        authorizerUniqueId: p.authorizerUniqueId,
        paymentId: p.id,
        connectionId: p.connectionId,
      });
    }
    const cur = await tx.deps.stores.outcomes.paymentStatusOf(tx, p.id);
    const why = !f.found
      ? 'its processor has no payment with this id; the reported outcome is held'
      : cur === 'processing' || cur === 'initiating'
        ? 'its processor says the payment is still processing; the outcome is recorded when the processor gives it'
        : `its processor says ${cur}; the reported outcome was not confirmed`;
    await tx.deps.stores.outcomes.holdPaymentReport(tx, p.id, why);
    await tx.deps.stores.dispatch.finishDue(tx, p, { state: 'done' });
  });
}

/** A look-up of a reported payment that failed (the processor unreachable, a refused key): said, and asked again later. */
async function verifyLater(ctx: JobContext, p: DuePayment, e: unknown): Promise<void> {
  const now = ctx.deps.clock.now();
  const attempts = p.attempts + 1;
  const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (attempts - 1));
  const why = `its processor could not be asked (${e instanceof Error ? e.message.slice(0, 200) : 'no answer'}); asked again at ${new Date(now + delay).toISOString()}, and the reported outcome is held until it answers`;
  await transaction(ctx, async (tx) => {
    await tx.deps.stores.outcomes.holdPaymentReport(tx, p.id, why);
    await tx.deps.stores.dispatch.finishDue(tx, p, { state: 'pending', attempts, nextAttemptAt: now + delay });
  });
}

/**
 * What the bank accounts of a payment (the one it was made for, its borrower's now) block for its borrower, or
 * null, under the lender's policy; and the account type a Notification of Change gave its borrower's account.
 */
async function accountBlockOfPayment(ctx: JobContext, p: DuePayment): Promise<{ block: AccountBlock | null; accountType: AccountType | null }> {
  const { authorizationAt, accounts, accountType } = await ctx.deps.stores.dispatch.accountsToDebit(ctx, p.id);
  const { requireAccountValidation } = await policyOf(ctx, p.lenderId);
  for (const a of accounts) {
    const block = accountBlockOf(a, authorizationAt, requireAccountValidation);
    if (block) return { block, accountType };
  }
  return { block: null, accountType };
}

/**
 * A payment the processor was never asked about and never will be: not attempted, its slot given back.
 * `block`: its borrower, if still monitored, is blocked with this reason in the same transaction.
 */
async function neverSent(ctx: JobContext, p: DuePayment, message: string, reason: string, block?: AccountBlock): Promise<Step> {
  await giveUp(ctx, p, message, 'never_sent', block);
  ctx.deps.metrics.paymentsSkipped.inc({ reason });
  return { kind: 'done' };
}

/**
 * Recorded not_attempted and not counted against the enrollment. Only for a payment the processor does not
 * hold: one never sent (and no send claimed since, here or on another replica), or one the processor says it
 * has no trace of past the idempotency horizon.
 */
async function giveUp(ctx: JobContext, p: DuePayment, message: string, why: 'never_sent' | 'absent_at_processor', block?: AccountBlock): Promise<void> {
  await transaction(ctx, async (tx) => {
    await tx.deps.stores.dispatch.finishDue(tx, p, { state: 'done' });
    // Forward only: a payment whose status moved meanwhile (an outcome read first) keeps it.
    if (!(await recordNotAttempted(tx, p, message, why))) return;
    const now = ctx.deps.clock.now();
    await tx.deps.stores.enrollments.giveBackPresentment(tx, p.enrollmentId, now);
    if (!block) return;
    // The borrower's state is read and then moved: not beside another change of the same borrower.
    await tx.deps.stores.decisions.serializeBorrowers(tx, [p.enrollmentId]);
    if ((await monitorStateOf(tx, p.enrollmentId)) === 'monitored') {
      await applyMonitorEvent(tx, { enrollmentId: p.enrollmentId, event: { type: 'blocked', reason: block }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
    }
  });
}

/**
 * The processor's answer about the payment, recorded in one transaction: its id, its first event, the ledger
 * and the monitor. When polling recorded an outcome first, that record stands and only the id is kept.
 */
async function recordAnswer(ctx: JobContext, p: DuePayment, r: DebitResult): Promise<void> {
  const now = ctx.deps.clock.now();
  await transaction(ctx, async (tx) => {
    const cur = await tx.deps.stores.outcomes.paymentStatusOf(tx, p.id);
    await tx.deps.stores.dispatch.noteProcessorPaymentId(tx, p.id, r.processorPaymentId, now);
    await tx.deps.stores.dispatch.finishDue(tx, p, { state: 'done' });
    if (cur !== 'initiating') return;
    await recordObservation(tx, {
      lenderId: p.lenderId,
      reference: p.reference,
      status: r.status,
      amountCents: p.amountCents,
      returnCode: r.returnCode,
      message: r.message,
      declineCode: r.declineCode ?? null,
      occurredAt: now,
      source: 'processor',
      sourceEventId: `created:${p.id}`,
      enrollmentId: p.enrollmentId,
      authorizerUniqueId: p.authorizerUniqueId,
      paymentId: p.id,
      connectionId: p.connectionId,
    });
    // The borrower's state is read and then moved: not beside another change of the same borrower.
    if (r.status === 'not_attempted') await tx.deps.stores.decisions.serializeBorrowers(tx, [p.enrollmentId]);
    if (r.status === 'not_attempted' && (await monitorStateOf(tx, p.enrollmentId)) === 'monitored') {
      // The processor wants the bank account verified: no new payment until the lender re-sends the borrower.
      await applyMonitorEvent(tx, { enrollmentId: p.enrollmentId, event: { type: 'blocked', reason: 'verification_required' }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
    }
  });
}

/** A payment held open at the processor (verification): cancelled before it is recorded, so it can never debit later. */
async function closeOpen(ctx: JobContext, s: { processor: Processor; key: string }, p: DuePayment, r: DebitResult & { processorPaymentId: string }): Promise<void> {
  const after = await s.processor.cancelPayment(s.key, r.processorPaymentId);
  // Cancelled: not attempted, for the reason it was held. Moved on before the cancel (verified): what it is now.
  await recordAnswer(ctx, p, after.status === 'voided' ? { ...r, open: false } : after);
}

async function retryLater(ctx: JobContext, p: DuePayment): Promise<void> {
  const now = ctx.deps.clock.now();
  const attempts = p.attempts + 1;
  const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (attempts - 1));
  await transaction(ctx, (tx) => tx.deps.stores.dispatch.finishDue(tx, p, { state: 'pending', attempts, nextAttemptAt: now + delay }));
}

export async function finish(ctx: JobContext, p: DuePayment, s: Extract<Step, { kind: 'send' | 'look' | 'verify' }>): Promise<void> {
  const { deps } = ctx;
  if (s.kind === 'verify') {
    await recordVerified(ctx, p, await s.call);
    return;
  }
  if (s.kind === 'send') {
    const r = await s.call;
    if (r.open && r.processorPaymentId) await closeOpen(ctx, s, p, { ...r, processorPaymentId: r.processorPaymentId });
    else await recordAnswer(ctx, p, r);
    return;
  }
  const f = await s.call;
  if (f.found) {
    deps.logger.info({ payment_id: p.id, status: f.status }, 'payment outcome found at the processor');
    if (f.open) await closeOpen(ctx, s, p, f);
    else await recordAnswer(ctx, p, f);
    return;
  }
  if (deps.clock.now() - s.firstAttemptAt >= deps.config.processorIdempotencyHorizonMs) {
    // Definitely absent: the key is past the horizon, so no request with it can still create the payment.
    deps.logger.warn({ payment_id: p.id }, 'payment not found at the processor past the idempotency horizon; recorded not attempted');
    deps.metrics.paymentsSkipped.inc({ reason: 'absent_at_processor' });
    await giveUp(ctx, p, 'the processor has no payment for this id: the request never reached it', 'absent_at_processor');
    return;
  }
  // Not there yet: a request still on its way could create it. Asked again later.
  await retryLater(ctx, p);
}

/** Sends or resolves every due payment, CONCURRENCY at a time; answers and retries are recorded as they come. */
export async function dispatchPayments(deps: Deps, opts: { signal?: AbortSignal; concurrency?: number } = {}): Promise<{ sent: number }> {
  const ctx: JobContext = { deps };
  let sent = 0;
  await drainClaims({
    concurrency: opts.concurrency ?? CONCURRENCY,
    signal: opts.signal,
    claim: () => deps.stores.dispatch.claimDuePayments({ deps }, (opts.concurrency ?? CONCURRENCY) * 4, deps.clock.now()),
    handle: async (p) => {
      let s: Step;
      try {
        s = await start(ctx, p);
      } catch (e) {
        deps.logger.error({ payment_id: p.id, err: e }, 'payment could not be prepared');
        await retryLater(ctx, p);
        return;
      }
      if (s.kind === 'done') return;
      if (s.kind === 'wait') {
        await retryLater(ctx, p);
        return;
      }
      if (s.kind === 'send') sent++;
      try {
        await finish(ctx, p, s);
      } catch (e) {
        // Unknown outcome (timeout, 5xx, a refused key): resolved at the processor on a later attempt.
        deps.logger.warn({ payment_id: p.id, err: e instanceof Error ? e.message : String(e) }, 'payment outcome not known yet; asked again later');
        if (s.kind === 'verify') await verifyLater(ctx, p, e);
        else await retryLater(ctx, p);
      }
    },
    finish: () => undefined,
    gate: writeGate(deps),
  });
  return { sent };
}

/** Every replica: due payments are claimed row by row (SKIP LOCKED), and a send goes out only through its claim. */
export const dispatchJob: Job<Deps> = {
  name: 'payment-dispatch',
  intervalMs: 250,
  tick: (deps, signal) => dispatchPayments(deps, { signal }),
};
