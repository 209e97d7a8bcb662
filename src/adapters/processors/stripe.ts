import { createHash } from 'node:crypto';
import Stripe from 'stripe';
import { STRIPE_API_VERSION, StripeClients } from './stripe-clients';
import { RETURN_CODES, normalizeReturnCode } from './return-codes';
import { DECLINE_CODES, mustNotRetry } from './decline-codes';
import type { CallObserver } from '../../platform/provider-calls';
import {
  CardRefused,
  KeyRefused,
  ProcessorUnavailable,
  type ChangePage,
  type DebitRequest,
  type DebitResult,
  type EventStatus,
  type FoundPayment,
  type ListedPayment,
  type PaymentPage,
  type Processor,
  type ProcessorChange,
  type RawCard,
  type TokenizedCard,
  REFERENCE_PREFIX,
} from './types';

// Stripe through its official SDK with the API version pinned: ACH debits are us_bank_account
// PaymentIntents with an offline mandate, card charges are off-session on a pm_… token, and the service's
// payment id is the idempotency key of every create. Outcomes are read from events.list. What the mapping
// below does not know stays `processing` and is logged, never guessed into a money-moving status.

/** The version this SDK release ships with; `satisfies` breaks the build when an SDK upgrade moves it. */
export { STRIPE_API_VERSION };

/** The events that carry a payment's outcome; every other type is left out of the feed. */
export const STRIPE_EVENT_TYPES = [
  'payment_intent.processing',
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.canceled',
  'charge.succeeded',
  'charge.failed',
  'charge.refunded',
  'charge.dispute.created',
  'charge.dispute.closed',
  'refund.failed',
] as const;

/** Stripe's ACH failure codes as Nacha return codes (payments.md). */
const FAILURE_TO_RCODE: Record<string, string> = {
  insufficient_funds: 'R01',
  account_closed: 'R02',
  bank_account_closed: 'R02',
  no_account: 'R03',
  bank_account_invalid_details: 'R03',
  account_number_invalid: 'R03',
  debit_not_authorized: 'R10',
  bank_account_frozen: 'R16',
  bank_account_restricted: 'R20',
  recipient_deceased: 'R15',
};

/**
 * Dispute reasons on a settled ACH debit. Stripe reports a bank return that arrives after `succeeded` as a
 * dispute with a funds or account reason; every other reason is the account holder contesting the debit,
 * which stops collection (R10) rather than inviting another attempt.
 */
const DISPUTE_TO_RCODE: Record<string, string> = {
  insufficient_funds: 'R01',
  incorrect_account_details: 'R03',
};

/** A raw network code (`R01`, `r1`) as a known R-code; null for anything else (card codes such as `51`). */
function networkRCode(code: string | null | undefined): string | null {
  const r = code ? normalizeReturnCode(code) : null;
  return r && r in RETURN_CODES ? r : null;
}

/** A raw network code wins when it is an R-code; else the failure code's mapping; null when neither is known. */
export function stripeFailureToReturnCode(failureCode: string | null | undefined, networkCode?: string | null): string | null {
  return networkRCode(networkCode) ?? (failureCode ? (FAILURE_TO_RCODE[failureCode] ?? null) : null);
}

/** A dispute as a late return: its network reason code when that is an R-code, else by reason (R10 by default). */
export function disputeReturnCode(d: Pick<Stripe.Dispute, 'reason' | 'network_reason_code' | 'payment_method_details'>): string {
  const details = d.payment_method_details as Record<string, { network_reason_code?: string | null } | string | undefined> | undefined;
  const nested = details ? details[String(details.type)] : undefined;
  return (
    networkRCode(d.network_reason_code) ??
    networkRCode(typeof nested === 'object' ? nested?.network_reason_code : null) ??
    DISPUTE_TO_RCODE[d.reason] ??
    'R10'
  );
}

/**
 * Stripe's messages can echo what was sent; any run of six or more digits (an account, routing or card
 * number) is masked before a message is kept or logged.
 */
export const scrubMessage = (text: string): string => text.replace(/\d(?:[ -]?\d){5,}/g, '[redacted]');

type Logger = { warn(obj: object, msg: string): void };
type Failure = { status: EventStatus; returnCode: string | null; message: string | null; declineCode?: string | null };

const refOf = (metadata: Stripe.Metadata | null | undefined, description: string | null | undefined): string | null =>
  metadata?.drs_reference ?? (description?.startsWith(REFERENCE_PREFIX) ? description : null);

const idOf = (v: string | { id: string } | null | undefined): string | null => (v == null ? null : typeof v === 'string' ? v : v.id);

/** A card decline: for funds it is a return R01 (retryable), any other decline is invalid. */
function cardFailure(codes: (string | null | undefined)[], message: string | null | undefined): Failure {
  const funds = codes.includes('insufficient_funds');
  // The most telling code: one that forbids a retry, else the first known one.
  const declineCode = codes.find((c) => mustNotRetry(c)) ?? codes.find((c) => c && c in DECLINE_CODES) ?? null;
  return { status: funds ? 'returned' : 'invalid', returnCode: funds ? 'R01' : null, message: scrubMessage(message ?? 'card declined'), declineCode };
}

/** An ACH failure: returned with the mapped R-code; an unknown code stays a return without a code, logged. */
function achFailure(codes: (string | null | undefined)[], networkCode: string | null | undefined, message: string | null | undefined, logger?: Logger): Failure {
  const returnCode = codes.reduce<string | null>((found, c) => found ?? stripeFailureToReturnCode(c), networkRCode(networkCode));
  if (!returnCode) logger?.warn({ processor: 'stripe', failure_codes: codes.filter(Boolean) }, 'Stripe failure code without an R-code mapping');
  return { status: 'returned', returnCode, message: message ? scrubMessage(message) : null };
}

/**
 * A failure from every signal Stripe gives about one failed payment: the PaymentIntent's last error, its
 * charge, and the PaymentMethod's blocked status. `charge.failed` and `payment_intent.payment_failed` each
 * carry part of these; read together, both notifications of one failure give the same, most specific code
 * (a raw network R-code first, then the failure codes' mapping), whichever is read first.
 */
export function failureOf(pi: Stripe.PaymentIntent, charge: Stripe.Charge | null, logger?: Logger): Failure {
  const err = pi.last_payment_error;
  const pm = err?.payment_method ?? null;
  const type = pm?.type ?? err?.payment_method_type ?? charge?.payment_method_details?.type ?? (pi.payment_method_types?.length === 1 ? pi.payment_method_types[0] : null);
  const codes = [charge?.failure_code, err?.code, err?.decline_code, charge?.outcome?.reason];
  const message = charge?.failure_message ?? err?.message ?? null;
  if (type === 'card') return cardFailure(codes, message);
  const networkCode =
    [pm?.us_bank_account?.status_details?.blocked?.network_code, charge?.outcome?.network_decline_code, err?.network_decline_code].find((c) => networkRCode(c)) ?? null;
  return achFailure(codes, networkCode, message, logger);
}

/** A failed PaymentIntent (`requires_payment_method` with its last error), card or ACH by the method that failed. */
function intentFailure(pi: Stripe.PaymentIntent, logger?: Logger): Failure {
  const err = pi.last_payment_error;
  if (!err) return { status: 'invalid', returnCode: null, message: 'Stripe did not attempt the debit' };
  const type = err.payment_method?.type ?? err.payment_method_type ?? (pi.payment_method_types?.length === 1 ? pi.payment_method_types[0] : null);
  if (type === 'card') return cardFailure([err.decline_code, err.code], err.message);
  return achFailure([err.code, err.decline_code], err.network_decline_code, err.message, logger);
}

/** A PaymentIntent's state at creation, as the payment's first status. */
export function intentToResult(pi: Stripe.PaymentIntent, logger?: Logger): DebitResult {
  const base = { processorPaymentId: pi.id, returnCode: null, message: null };
  switch (pi.status) {
    case 'processing':
      return { ...base, status: 'processing' };
    case 'succeeded':
      return { ...base, status: 'settled' };
    case 'requires_action': {
      const what = pi.payment_method_types?.includes('us_bank_account') ? 'bank account verification required' : 'customer action required';
      // Open: verified later, it would still debit. The caller cancels it before recording it not attempted.
      return { ...base, status: 'not_attempted', message: pi.next_action?.type ? `${what} (${pi.next_action.type})` : what, open: true };
    }
    case 'canceled':
      return { ...base, status: 'voided' };
    case 'requires_payment_method':
      return { ...base, ...intentFailure(pi, logger) };
    default:
      logger?.warn({ processor: 'stripe', payment_intent: pi.id, status: pi.status }, 'PaymentIntent status without a mapping kept as processing');
      return { ...base, status: 'processing' };
  }
}

/**
 * One Stripe event as a change of a payment; null for an event that changes no payment (a partial refund).
 * A dispute's reference is not on the dispute: it is null here and filled in from the PaymentIntent.
 */
export function eventToChange(e: Stripe.Event, logger?: Logger): ProcessorChange | null {
  const change = (o: { id: string; reference: string | null; amount: number; created?: number }, f: Failure): ProcessorChange => ({
    sourceEventId: e.id,
    processorPaymentId: o.id,
    reference: o.reference,
    amountCents: o.amount,
    occurredAt: e.created * 1000,
    ...(o.created !== undefined ? { paymentCreatedAt: o.created * 1000 } : {}),
    ...f,
  });
  const ok = (status: EventStatus): Failure => ({ status, returnCode: null, message: null });
  const ofIntent = (pi: Stripe.PaymentIntent) => ({ id: pi.id, reference: refOf(pi.metadata, pi.description), amount: pi.amount, created: pi.created });
  const ofCharge = (ch: Stripe.Charge) => ({ id: idOf(ch.payment_intent) ?? ch.id, reference: refOf(ch.metadata, ch.description), amount: ch.amount, created: ch.created });
  switch (e.type) {
    case 'payment_intent.processing':
      return change(ofIntent(e.data.object), ok('processing'));
    case 'payment_intent.succeeded':
      return change(ofIntent(e.data.object), ok('settled'));
    case 'payment_intent.canceled':
      return change(ofIntent(e.data.object), ok('voided'));
    case 'payment_intent.payment_failed':
      return change(ofIntent(e.data.object), intentFailure(e.data.object, logger));
    case 'charge.succeeded':
      return change(ofCharge(e.data.object), ok('settled'));
    case 'charge.failed': {
      const ch = e.data.object;
      const f =
        ch.payment_method_details?.type === 'card'
          ? cardFailure([ch.outcome?.reason, ch.failure_code], ch.failure_message)
          : achFailure([ch.failure_code], ch.outcome?.network_decline_code, ch.failure_message, logger);
      return change(ofCharge(ch), f);
    }
    case 'charge.refunded': {
      const ch = e.data.object;
      if (ch.amount_refunded >= ch.amount) return change(ofCharge(ch), ok('refunded'));
      logger?.warn({ processor: 'stripe', event: e.id, charge: ch.id }, 'partial refund ignored');
      return null;
    }
    case 'charge.dispute.created': {
      const d = e.data.object;
      const id = idOf(d.payment_intent) ?? idOf(d.charge)!;
      return change({ id, reference: refOf(d.metadata, null), amount: d.amount }, { status: 'late_returned', returnCode: disputeReturnCode(d), message: `disputed: ${d.reason}` });
    }
    case 'charge.dispute.closed': {
      // Won: the disputed money is back with the merchant. Lost: the return already recorded stands.
      const d = e.data.object;
      if (d.status !== 'won') return null;
      const id = idOf(d.payment_intent) ?? idOf(d.charge)!;
      return { ...change({ id, reference: refOf(d.metadata, null), amount: d.amount }, { status: 'settled', returnCode: null, message: 'dispute won: the funds are reinstated' }), reinstated: true };
    }
    case 'refund.failed': {
      // The refund never reached the borrower: the money stays with the merchant.
      const r = e.data.object;
      const id = idOf(r.payment_intent) ?? idOf(r.charge);
      if (!id) return null;
      return { ...change({ id, reference: refOf(r.metadata, null), amount: r.amount }, { status: 'settled', returnCode: null, message: 'refund failed: the funds stay collected' }), reinstated: true };
    }
    default: {
      logger?.warn({ processor: 'stripe', event: e.id, type: e.type }, 'Stripe event without a mapping kept as processing');
      const o = e.data.object as { id?: string; amount?: number; metadata?: Stripe.Metadata | null; description?: string | null };
      return o.id ? change({ id: o.id, reference: refOf(o.metadata, o.description), amount: o.amount ?? 0 }, ok('processing')) : null;
    }
  }
}

const statusOf = (e: unknown): number | undefined => (e instanceof Stripe.errors.StripeError ? e.statusCode : undefined);

/** Network failures, timeouts, 5xx, 429 and 409 (a concurrent request on the same key): worth a retry. */
function unavailable(e: unknown): ProcessorUnavailable | null {
  const status = statusOf(e);
  const transient =
    e instanceof Stripe.errors.StripeConnectionError ||
    e instanceof Stripe.errors.StripeAPIError ||
    e instanceof Stripe.errors.StripeRateLimitError ||
    (status !== undefined && (status >= 500 || status === 429 || status === 409));
  if (!transient) return null;
  return new ProcessorUnavailable(`Stripe could not be reached or answered a transient error${status ? ` (${status})` : ''}: ${scrubMessage((e as Error).message)}`, { cause: e });
}

const refused = (e: unknown): boolean => e instanceof Stripe.errors.StripeAuthenticationError || e instanceof Stripe.errors.StripePermissionError;

export class StripeProcessor implements Processor {
  readonly name = 'stripe' as const;
  private readonly clients: StripeClients;

  constructor(private readonly opts: { apiUrl?: string | null; timeoutMs?: number; logger?: Logger; onCall?: CallObserver; timeScale?: number } = {}) {
    this.clients = new StripeClients(opts);
  }

  /** SDK clients kept now (a bounded cache, MAX_STRIPE_CLIENTS). */
  get clientCount(): number {
    return this.clients.size;
  }

  /** One client per key (the key is the account); the SDK does not retry: dispatch is the one retry policy. */
  private client(key: string): Stripe {
    return this.clients.of(key);
  }

  async verifyKey(key: string): Promise<{ accountId: string }> {
    const client = this.client(key);
    try {
      // GET /v1/account with no id: the key's own account.
      const account = await client.accounts.retrieveCurrent();
      return { accountId: account.id };
    } catch (e) {
      const u = unavailable(e);
      if (u) throw u;
      if (!(e instanceof Stripe.errors.StripePermissionError)) {
        if (e instanceof Stripe.errors.StripeError) throw new KeyRefused();
        throw e;
      }
    }
    // A restricted key without the account permission: the key is checked with a balance read, and its
    // account stands for itself (two such keys of one account are not recognised as one).
    try {
      await client.balance.retrieve();
      return { accountId: `key_${createHash('sha256').update(key).digest('hex').slice(0, 32)}` };
    } catch (e) {
      const u = unavailable(e);
      if (u) throw u;
      if (e instanceof Stripe.errors.StripeError) throw new KeyRefused();
      throw e;
    }
  }

  /**
   * The PaymentIntent our payment id created: PaymentIntents created in the window, listed (a strongly
   * consistent read, unlike search) and matched by `metadata.drs_payment_id`.
   */
  async findPayment(key: string, q: { paymentId: string; createdFrom: number; createdTo: number }): Promise<FoundPayment> {
    const stripe = this.client(key);
    try {
      for (let page: string | null = null; ; ) {
        const r = await this.listIntents(stripe, q.createdFrom, q.createdTo, page, 100);
        const pi = r.data.find((x) => x.metadata?.drs_payment_id === q.paymentId);
        if (pi) return { found: true, ...(await this.currentOf(stripe, pi)) };
        if (!r.has_more || r.data.length === 0) return { found: false };
        page = r.data.at(-1)!.id;
      }
    } catch (e) {
      if (refused(e)) throw new KeyRefused();
      throw unavailable(e) ?? e;
    }
  }

  async listPayments(key: string, q: { createdFrom: number; createdTo: number; page: string | null; limit?: number }): Promise<PaymentPage> {
    const stripe = this.client(key);
    try {
      const r = await this.listIntents(stripe, q.createdFrom, q.createdTo, q.page, Math.max(1, Math.min(100, q.limit ?? 100)));
      const payments: ListedPayment[] = [];
      for (const pi of r.data) {
        const cur = await this.currentOf(stripe, pi);
        payments.push({ ...cur, paymentId: pi.metadata?.drs_payment_id ?? null, reference: refOf(pi.metadata, pi.description), amountCents: pi.amount, createdAt: pi.created * 1000 });
      }
      return { payments, next: r.has_more && r.data.length > 0 ? r.data.at(-1)!.id : null };
    } catch (e) {
      if (refused(e)) throw new KeyRefused();
      throw unavailable(e) ?? e;
    }
  }

  async cancelPayment(key: string, processorPaymentId: string): Promise<DebitResult> {
    const stripe = this.client(key);
    try {
      const pi = await stripe.paymentIntents.cancel(processorPaymentId);
      return { processorPaymentId: pi.id, status: 'voided', returnCode: null, message: 'canceled before it could debit' };
    } catch (e) {
      if (refused(e)) throw new KeyRefused();
      const u = unavailable(e);
      if (u) throw u;
      // Not cancelable any more (verified and processing, or already canceled): what it is now decides.
      if (e instanceof Stripe.errors.StripeInvalidRequestError) {
        const pi = await stripe.paymentIntents.retrieve(processorPaymentId, { expand: ['latest_charge'] }).catch((err: unknown) => {
          throw unavailable(err) ?? err;
        });
        return this.currentOf(stripe, pi);
      }
      throw e;
    }
  }

  /** PaymentIntents created in [from, to] (ms), newest first as Stripe lists them, with their latest charge. */
  private listIntents(stripe: Stripe, from: number, to: number, startingAfter: string | null, limit: number) {
    return stripe.paymentIntents.list({
      created: { gte: Math.floor(from / 1000), lte: Math.ceil(to / 1000) },
      limit,
      expand: ['data.latest_charge'],
      ...(startingAfter ? { starting_after: startingAfter } : {}),
    });
  }

  /** A PaymentIntent's status now: its own state, and what happened to its charge since (a dispute, a full refund). */
  private async currentOf(stripe: Stripe, pi: Stripe.PaymentIntent): Promise<{ processorPaymentId: string } & Omit<DebitResult, 'processorPaymentId'>> {
    const base = intentToResult(pi, this.opts.logger);
    const charge = pi.latest_charge && typeof pi.latest_charge === 'object' ? pi.latest_charge : null;
    if (pi.status === 'succeeded' && charge?.disputed) {
      const disputes = await stripe.disputes.list({ payment_intent: pi.id, limit: 1 });
      const d = disputes.data[0];
      return { processorPaymentId: pi.id, status: 'late_returned', returnCode: d ? disputeReturnCode(d) : null, message: d ? `disputed: ${d.reason}` : 'disputed' };
    }
    if (pi.status === 'succeeded' && charge && charge.amount_refunded >= charge.amount) {
      return { processorPaymentId: pi.id, status: 'refunded', returnCode: null, message: null };
    }
    return { ...base, processorPaymentId: pi.id };
  }

  /** The Customer a stored PaymentMethod is attached to; null when none, or when Stripe does not know the id. */
  private async customerOf(key: string, token: string): Promise<string | null> {
    try {
      const pm = await this.client(key).paymentMethods.retrieve(token);
      return typeof pm.customer === 'string' ? pm.customer : (pm.customer?.id ?? null);
    } catch (e) {
      // Stripe's test tokens (pm_card_visa) and unknown ids are left to the create call to accept or refuse.
      if (e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing') return null;
      throw e;
    }
  }

  async tokenizeCard(key: string, card: RawCard): Promise<TokenizedCard> {
    let pm: Stripe.PaymentMethod;
    try {
      pm = await this.client(key).paymentMethods.create({
        type: 'card',
        card: { number: card.number, exp_month: card.expMonth, exp_year: card.expYear, ...(card.cvv ? { cvc: card.cvv } : {}) },
      });
    } catch (e) {
      const u = unavailable(e);
      if (u) throw u;
      if (refused(e)) throw new CardRefused('the processor key cannot tokenize cards');
      if (e instanceof Stripe.errors.StripeError) throw new CardRefused(scrubMessage(e.message || 'the card was refused'));
      throw e;
    }
    // A PaymentMethod attached to no Customer can be used by one PaymentIntent only; a borrower's card may be
    // charged again after a decline for funds, so it gets a Customer of its own (no personal data on it).
    try {
      const client = this.client(key);
      const customer = await client.customers.create({ description: 'Borrower card (debit recovery)' });
      pm = await client.paymentMethods.attach(pm.id, { customer: customer.id });
    } catch (e) {
      const u = unavailable(e);
      if (u) throw u;
      if (refused(e)) throw new CardRefused('the processor key cannot store cards for reuse');
      if (e instanceof Stripe.errors.StripeError) throw new CardRefused(scrubMessage(e.message || 'the card was refused'));
      throw e;
    }
    return {
      token: pm.id,
      last4: pm.card?.last4 ?? card.number.slice(-4),
      brand: pm.card?.brand ?? null,
      funding: pm.card?.funding ?? null,
      expMonth: pm.card?.exp_month ?? card.expMonth,
      expYear: pm.card?.exp_year ?? card.expYear,
    };
  }

  async createDebit(key: string, req: DebitRequest): Promise<DebitResult> {
    const params = debitParams(req);
    if (typeof params === 'string') return { processorPaymentId: null, status: 'invalid', returnCode: null, message: params };
    try {
      // A stored PaymentMethod attached to a Customer is charged with that Customer, as Stripe requires.
      if (req.instrument.kind === 'token') {
        const customer = await this.customerOf(key, req.instrument.token);
        if (customer) params.customer = customer;
      }
      const pi = await this.client(key).paymentIntents.create(params, { idempotencyKey: req.paymentId });
      return intentToResult(pi, this.opts.logger);
    } catch (e) {
      const u = unavailable(e);
      if (u) throw u;
      if (refused(e)) throw new KeyRefused();
      if (e instanceof Stripe.errors.StripeCardError) {
        return { processorPaymentId: e.payment_intent?.id ?? null, ...cardFailure([e.decline_code, e.code], e.message) };
      }
      if (e instanceof Stripe.errors.StripeError) {
        if (e instanceof Stripe.errors.StripeIdempotencyError) {
          // The payment id was sent before with other parameters: the first request's payment, if any, still
          // reaches the feed under this reference; this attempt itself made nothing.
          this.opts.logger?.warn({ processor: 'stripe', payment_id: req.paymentId }, 'idempotency key reused with other parameters');
        }
        return { processorPaymentId: null, status: 'invalid', returnCode: null, message: scrubMessage(e.message) };
      }
      throw e;
    }
  }

  async listChanges(key: string, cursor: string | null, opts: { limit?: number } = {}): Promise<ChangePage> {
    const limit = Math.max(1, Math.min(100, opts.limit ?? 100));
    const stripe = this.client(key);
    try {
      let page: { events: Stripe.Event[]; hasMore: boolean } | null;
      if (cursor) {
        page = await this.after(stripe, cursor, limit);
        if (!page) {
          // Events are kept 30 days: changes after the cursor are gone. Read on from the newest event; the
          // caller reconciles the key by listing its PaymentIntents.
          const newest = await stripe.events.list({ limit: 1, types: [...STRIPE_EVENT_TYPES] });
          return { changes: [], nextCursor: newest.data[0]?.id ?? null, hasMore: false, cursorLost: true };
        }
      } else page = await this.oldest(stripe);
      const changes: ProcessorChange[] = [];
      const failures: ProcessorChange[] = [];
      for (const e of page.events) {
        const c = eventToChange(e, this.opts.logger);
        if (!c) continue;
        changes.push(c);
        if (e.type === 'charge.failed' || e.type === 'payment_intent.payment_failed') failures.push(c);
      }
      await this.fillDisputes(stripe, changes);
      await this.fillFailures(stripe, failures);
      const last = page.events.at(-1);
      return { changes, nextCursor: last ? last.id : cursor, hasMore: page.hasMore };
    } catch (e) {
      if (refused(e)) throw new KeyRefused();
      throw unavailable(e) ?? e;
    }
  }

  /** The events just newer than the cursor, oldest first; null when Stripe no longer knows the cursor. */
  private async after(stripe: Stripe, cursor: string, limit: number): Promise<{ events: Stripe.Event[]; hasMore: boolean } | null> {
    try {
      // Still listed newest first: with ending_before the page is the `limit` events closest to the cursor.
      const page = await stripe.events.list({ ending_before: cursor, limit, types: [...STRIPE_EVENT_TYPES] });
      return { events: [...page.data].reverse(), hasMore: page.has_more };
    } catch (e) {
      if (!(e instanceof Stripe.errors.StripeInvalidRequestError) || e.code !== 'resource_missing') throw e;
      this.opts.logger?.warn({ processor: 'stripe', cursor }, 'Stripe no longer knows the change cursor; the key is reconciled');
      return null;
    }
  }

  /**
   * A new key's first read: the oldest event Stripe keeps, found by walking back a page at a time and keeping
   * only the last page, so the feed is never held in memory; the next reads go forward from it.
   */
  private async oldest(stripe: Stripe): Promise<{ events: Stripe.Event[]; hasMore: boolean }> {
    let last: Stripe.Event | undefined;
    for (let after: string | undefined; ; ) {
      const page = await stripe.events.list({ limit: 100, types: [...STRIPE_EVENT_TYPES], ...(after ? { starting_after: after } : {}) });
      if (page.data.length > 0) last = page.data.at(-1);
      if (!page.has_more || page.data.length === 0) break;
      after = last!.id;
    }
    return { events: last ? [last] : [], hasMore: last !== undefined };
  }

  /**
   * The two notifications of one failure each carry part of what Stripe knows about it: both are given the
   * failure read from the PaymentIntent with its charge (one read per payment per page).
   */
  private async fillFailures(stripe: Stripe, changes: ProcessorChange[]): Promise<void> {
    const seen = new Map<string, ReturnType<typeof failureOf>>();
    for (const c of changes) {
      if (!c.processorPaymentId.startsWith('pi_')) continue;
      let f = seen.get(c.processorPaymentId);
      if (!f) {
        const pi = await stripe.paymentIntents.retrieve(c.processorPaymentId, { expand: ['latest_charge'] });
        f = failureOf(pi, pi.latest_charge && typeof pi.latest_charge === 'object' ? pi.latest_charge : null, this.opts.logger);
        seen.set(c.processorPaymentId, f);
      }
      Object.assign(c, f);
    }
  }

  /**
   * A dispute names its charge (and, on newer API versions, its PaymentIntent) but carries no reference: both
   * come from the PaymentIntent, read once per payment per page.
   */
  private async fillDisputes(stripe: Stripe, changes: ProcessorChange[]): Promise<void> {
    const seen = new Map<string, { id: string; reference: string | null; created?: number }>();
    for (const c of changes) {
      if ((c.status !== 'late_returned' && !c.reinstated) || c.reference) continue;
      let found = seen.get(c.processorPaymentId);
      if (!found) {
        found = await this.lookUp(stripe, c.processorPaymentId);
        seen.set(c.processorPaymentId, found);
      }
      c.processorPaymentId = found.id;
      c.reference = found.reference;
      if (found.created !== undefined) c.paymentCreatedAt = found.created * 1000;
    }
  }

  private async lookUp(stripe: Stripe, id: string): Promise<{ id: string; reference: string | null; created?: number }> {
    try {
      if (id.startsWith('ch_') || id.startsWith('py_')) {
        const ch = await stripe.charges.retrieve(id, { expand: ['payment_intent'] });
        const pi = ch.payment_intent && typeof ch.payment_intent === 'object' ? ch.payment_intent : null;
        return { id: pi?.id ?? id, reference: refOf(pi?.metadata ?? ch.metadata, pi?.description ?? ch.description), created: pi?.created ?? ch.created };
      }
      const pi = await stripe.paymentIntents.retrieve(id);
      return { id, reference: refOf(pi.metadata, pi.description), created: pi.created };
    } catch (e) {
      if (e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing') return { id, reference: null };
      throw e;
    }
  }
}

/** The PaymentIntent to create for a debit, or why none can be. */
function debitParams(req: DebitRequest): Stripe.PaymentIntentCreateParams | string {
  const common = {
    amount: req.amountCents,
    currency: 'usd',
    confirm: true,
    description: req.reference,
    // A reinitiation says so in metadata: the API has no field for an ACH entry's Company Entry Description (a
    // statement descriptor is the statement text), so RETRY PYMT cannot be put on the entry itself.
    metadata: { drs_reference: req.reference, drs_payment_id: req.paymentId, ...(req.entryDescription ? { drs_entry_description: req.entryDescription } : {}) },
  } satisfies Stripe.PaymentIntentCreateParams;
  if (req.rail === 'card') {
    if (req.instrument.kind !== 'token') return 'a card charge needs a card token';
    // The pinned API version names the accepted methods `allowed_payment_method_types` on create.
    return { ...common, payment_method: req.instrument.token, allowed_payment_method_types: ['card'], off_session: true };
  }
  const method: Pick<Stripe.PaymentIntentCreateParams, 'payment_method' | 'payment_method_data'> =
    req.instrument.kind === 'token'
      ? { payment_method: req.instrument.token }
      : {
          payment_method_data: {
            type: 'us_bank_account',
            us_bank_account: {
              routing_number: req.instrument.routingNumber,
              account_number: req.instrument.accountNumber,
              account_holder_type: 'individual',
              // As a Notification of Change corrected it (C05, C06, C07); otherwise as Stripe takes it (checking).
              ...(req.instrument.accountType ? { account_type: req.instrument.accountType } : {}),
            },
            billing_details: { name: req.borrower.name },
          },
        };
  return {
    ...common,
    ...method,
    allowed_payment_method_types: ['us_bank_account'],
    // The lender collected the borrower's authorization outside Stripe.
    mandate_data: { customer_acceptance: { type: 'offline' } },
  };
}
