import type { EventSource, EventStatus } from '../../../db/schema/enums';
import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { applyMonitorEvent } from '../enrollments/monitor-changes';
import { pushToEndpoints } from '../webhooks/endpoints';
import { evaluateReturnRates } from '../return-rates/watch';
import { eventView } from './events';
import { holdChain } from './chain';
import { recordAccountReturn } from '../bank-accounts/service';
import { accountStateOfReturn } from '../../adapters/processors/account-states';
import { linkBorrower } from '../enrollments/account-links';
import { policyOf } from '../collection-policy/service';
import { fraudOnReturn } from '../fraud-monitoring/hooks';

// What a recorded outcome of a payment sets off, in one place. The recorder (record.ts) records the outcome's
// event and moves the payment's status, then calls afterOutcome in the same transaction, so what the reactions
// write commits with the outcome or not at all. In order:
//   1. the ledger: settled books a credit, a return or a refund reverses what was credited for the reference;
//   1a. a return whose code says something of the bank account (adapters/processors/account-states.ts) sets
//      the state of the account the debit was made for (the payment's; for a payment made elsewhere or before
//      accounts were known, the borrower's, linked now if it was not): every borrower on it is blocked by it
//      from then on (the decision and the dispatch read it; collection/account-blocks.ts tells each of them);
//   2. the borrower's monitor moves (enrollments/monitor.ts decides how): settled collects, a return stops or
//      lets a reinitiation go, an invalid card payment may stop the borrower;
//   3. the debt's chain of presentments (chain.ts): after a return, a chain that is full or needs a new
//      authorization blocks reads at once, and a covered borrower's second consecutive failure for funds makes
//      the consumer-rights notice due (RIGHTS_NOTICE_DUE in the outbox);
//   4. the lender's endpoints are told (PAYMENT_EVENT in the outbox), for every source but an upload (the
//      lender has its own file);
//   5. a return moves the lender's return rates (return-rates/watch.ts), which may pause ACH collection and
//      put RETURN_RATE_ALERT in the outbox; a batch evaluates them once, after its observations;
//   6. an unauthorized-class return asks fraud monitoring whether such returns cluster (fraud-monitoring/hooks.ts).
// A lender's upload of the service's own payment is a report, not an outcome: only a stop acts on it at once
// (stopAtOnce), through steps 1a (an unauthorized return marks the account: a stop is never a debit), 2 and 3.

/** What the recorder recorded of an observation: its event, the status it stands for and the times. */
export interface RecordedEvent {
  eventId: string;
  /** The status recorded (a return of a settled payment is its late return). */
  status: EventStatus;
  returnCode: string | null;
  /** The event's time, in the order of the reference's statuses. */
  occurredAt: number;
  now: number;
}

/** What the reactions read of the observation itself (record.ts's Observation has these). */
interface Observed {
  lenderId: string;
  reference: string;
  /** The service's own payment it is about; null for a payment made elsewhere. */
  paymentId: string | null;
  amountCents: number;
  message: string | null;
  source: EventSource;
  enrollmentId: string | null;
  authorizerUniqueId: string | null;
  /** A card decline's code; one that must never be retried stops the borrower with it. */
  declineCode?: string | null;
}

/** Steps 1 to 5 for one outcome. `ratesLater`: step 5 is left to the batch, which evaluates each lender once. */
export async function afterOutcome(ctx: JobContext & { tx: Tx }, o: Observed, r: RecordedEvent, ratesLater?: Set<string>): Promise<void> {
  if (o.enrollmentId) {
    await postLedger(ctx, o, r, o.enrollmentId);
    await markAccount(ctx, o, o.enrollmentId, r.status, r.returnCode, r.now);
    await moveBorrower(ctx, o.enrollmentId, r.status, r.returnCode, r.now, o.declineCode ?? null);
  }
  if (o.source !== 'upload' && o.authorizerUniqueId) {
    const payment_event = eventView({
      id: r.eventId,
      reference: o.reference,
      status: r.status,
      amountCents: o.amountCents,
      returnCode: r.returnCode,
      authorizerUniqueId: o.authorizerUniqueId,
      occurredAt: r.occurredAt,
      source: o.source,
      message: o.message,
    });
    await pushToEndpoints(ctx, r.now, o.lenderId, 'PAYMENT_EVENT', { payment_event });
  }
  if ((r.status === 'returned' || r.status === 'late_returned') && o.source !== 'upload') {
    if (ratesLater) ratesLater.add(o.lenderId);
    else await evaluateReturnRates(ctx, o.lenderId);
    await fraudOnReturn(ctx, { lenderId: o.lenderId, paymentId: o.paymentId, code: r.returnCode });
  }
}

/** Steps 1a, 2 and 3 for a lender's report of a stop (R08, an unauthorized return): a stop is never a debit. */
export async function stopAtOnce(
  ctx: JobContext & { tx: Tx },
  o: Pick<Observed, 'lenderId' | 'reference' | 'paymentId'>,
  enrollmentId: string,
  status: EventStatus,
  code: string | null,
  now: number,
): Promise<void> {
  await markAccount(ctx, o, enrollmentId, status, code, now);
  await moveBorrower(ctx, enrollmentId, status, code, now, null);
}

/**
 * Step 1a: a return whose code says something of the bank account sets its state. The account is the one the
 * payment was made for; a card payment has none; a payment made elsewhere (an upload's) or before accounts were
 * known goes by the borrower's account, linked now if the start-up job has not linked it yet.
 */
async function markAccount(
  ctx: JobContext & { tx: Tx },
  o: Pick<Observed, 'lenderId' | 'reference' | 'paymentId'>,
  enrollmentId: string,
  status: EventStatus,
  code: string | null,
  now: number,
): Promise<void> {
  if (status !== 'returned' && status !== 'late_returned') return;
  // The lender's policy may make a code's action on the account stricter than Nacha's table.
  const stricter = (await policyOf(ctx, o.lenderId)).accountReturnStates;
  if (accountStateOfReturn(code, stricter) === null) return;
  const payment = o.paymentId ? await ctx.deps.stores.outcomes.paymentAccountOf(ctx, o.paymentId) : null;
  if (payment?.rail === 'card') return;
  const accountId = payment?.bankAccountId ?? (await linkBorrower(ctx, enrollmentId, now));
  if (accountId) await recordAccountReturn(ctx, { accountId, code, reference: o.reference, at: now, stricter });
}

/** Step 1: the ledger is the money the lender holds; a won dispute or a failed refund is settled again. */
async function postLedger(ctx: JobContext & { tx: Tx }, o: Observed, r: RecordedEvent, enrollmentId: string): Promise<void> {
  const entry = { lenderId: o.lenderId, enrollmentId, reference: o.reference, eventId: r.eventId, at: r.now };
  if (r.status === 'settled') await ctx.deps.stores.outcomes.postLedgerEntry(ctx, { ...entry, kind: 'credit', amount: o.amountCents });
  else if (r.status === 'returned' || r.status === 'late_returned' || r.status === 'refunded') {
    await ctx.deps.stores.outcomes.postLedgerEntry(ctx, { ...entry, kind: 'reversal', amount: Math.max(0, await ctx.deps.stores.outcomes.creditedFor(ctx, o.lenderId, o.reference)) });
  }
}

/** Steps 2 and 3: the outcomes that move a monitor (the state machine decides how); the others are history only. */
async function moveBorrower(ctx: JobContext & { tx: Tx }, enrollmentId: string, status: EventStatus, code: string | null, now: number, declineCode: string | null): Promise<void> {
  const event = monitorEventOf(status, code, declineCode);
  if (event) await applyMonitorEvent(ctx, { enrollmentId, event, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
  // A return may leave the debt's chain of presentments full, or need a new authorization: said at once, and
  // reads stop until the lender acts (never found out only when the next read would have debited).
  if (status === 'returned' || status === 'late_returned') await holdChain(ctx, enrollmentId, now, { returned: true });
}

/** The outcomes that move a monitor, as the event they are to it. */
export function monitorEventOf(status: EventStatus, code: string | null, declineCode: string | null) {
  return status === 'invalid'
    ? { type: status, declineCode }
    : status === 'settled'
      ? { type: status }
      : status === 'returned'
        ? { type: status, code }
        : status === 'late_returned'
          ? { type: status, code }
          : null;
}
