import Stripe from 'stripe';
import { RETURN_CODES } from './return-codes';
import {
  CardRefused,
  KeyRefused,
  ProcessorUnavailable,
  type ChangePage,
  type DebitRequest,
  type DebitResult,
  type EventStatus,
  type Processor,
  type ProcessorChange,
  type RawCard,
  type TokenizedCard,
} from './types';

// Stripe through its official SDK, with the API version pinned: ACH debits as us_bank_account
// PaymentIntents with an offline mandate, card charges off-session on a stored pm_… token, the service's
// payment id as the idempotency key of every create, and outcomes read from events.list. The transformer
// below maps Stripe's statuses and failure codes to the spec's event statuses and R-codes; what it does not
// know stays `processing` and is logged, never guessed into a money-moving status.

export const STRIPE_API_VERSION = '2026-10-28.endive';
const TIMEOUT_MS = 10_000;

/** The event types that carry a payment's outcome. */
export const STRIPE_EVENT_TYPES = [
  'payment_intent.processing',
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.canceled',
  'payment_intent.requires_action',
  'charge.succeeded',
  'charge.failed',
  'charge.refunded',
  'charge.dispute.created',
] as const;

/** Stripe's ACH failure codes as R-codes (payments.md); null when Stripe gives none we know. */
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

const isRCode = (s: string | null | undefined): s is string => !!s && /^R\d{2}$/.test(s) && s in RETURN_CODES;

/** A raw network code wins when it is an R-code; else the failure code's mapping. */
export function stripeFailureToReturnCode(failureCode: string | null | undefined, networkCode?: string | null): string | null {
  if (isRCode(networkCode)) return networkCode;
  return failureCode ? (FAILURE_TO_RCODE[failureCode] ?? null) : null;
}

/** A dispute on a settled ACH debit is a late return: its network reason code, else R10 (not authorized). */
export function disputeReturnCode(d: { network_reason_code?: string | null; reason?: string | null }): string {
  if (isRCode(d.network_reason_code)) return d.network_reason_code;
  if (d.reason === 'insufficient_funds') return 'R01';
  return 'R10';
}

type Logger = { warn(obj: object, msg: string): void };

const refOf = (metadata: Stripe.Metadata | null | undefined, description: string | null | undefined): string | null =>
  metadata?.drs_reference ?? (description?.startsWith('DRS-') ? description : null);

const idOf = (v: string | { id: string } | null | undefined): string | null => (v == null ? null : typeof v === 'string' ? v : v.id);

/** A card's failure: a decline for funds is a return R01, any other decline is invalid. */
function cardFailure(code: string | null | undefined, declineCode: string | null | undefined): { status: EventStatus; returnCode: string | null } {
  return code === 'insufficient_funds' || declineCode === 'insufficient_funds' ? { status: 'returned', returnCode: 'R01' } : { status: 'invalid', returnCode: null };
}

/** A PaymentIntent's state at creation, as an event status. */
export function intentToResult(pi: Stripe.PaymentIntent, logger?: Logger): DebitResult {
  const base = { processorPaymentId: pi.id, returnCode: null, message: null };
  switch (pi.status) {
    case 'processing':
      return { ...base, status: 'processing' };
    case 'succeeded':
      return { ...base, status: 'settled' };
    case 'requires_action':
      return { ...base, status: 'not_attempted', message: 'Stripe requires bank account verification before this debit' };
    case 'canceled':
      return { ...base, status: 'voided' };
    case 'requires_payment_method': {
      const err = pi.last_payment_error;
      if (pi.payment_method_types.includes('card')) {
        const f = cardFailure(err?.code, err?.decline_code);
        return { ...base, ...f, message: err?.message ?? 'card declined' };
      }
      return { ...base, status: 'returned', returnCode: stripeFailureToReturnCode(err?.code), message: err?.message ?? null };
    }
    default:
      logger?.warn({ processor: 'stripe', status: pi.status }, 'unknown PaymentIntent status kept as processing');
      return { ...base, status: 'processing' };
  }
}

/** One Stripe event as a change of a payment; null for an event that changes nothing here (a partial refund). */
export function eventToChange(e: Stripe.Event, logger?: Logger): ProcessorChange | null {
  const at = e.created * 1000;
  const change = (o: { paymentId: string; reference: string | null; amount: number }, status: EventStatus, returnCode: string | null = null, message: string | null = null): ProcessorChange => ({
    sourceEventId: e.id,
    processorPaymentId: o.paymentId,
    reference: o.reference,
    status,
    amountCents: o.amount,
    returnCode,
    occurredAt: at,
    message,
  });
  if (e.type.startsWith('payment_intent.')) {
    const pi = e.data.object as Stripe.PaymentIntent;
    const o = { paymentId: pi.id, reference: refOf(pi.metadata, pi.description), amount: pi.amount };
    switch (e.type) {
      case 'payment_intent.processing':
        return change(o, 'processing');
      case 'payment_intent.succeeded':
        return change(o, 'settled');
      case 'payment_intent.canceled':
        return change(o, 'voided');
      case 'payment_intent.requires_action':
        return change(o, 'not_attempted', null, 'Stripe requires bank account verification before this debit');
      case 'payment_intent.payment_failed': {
        const r = intentToResult({ ...pi, status: 'requires_payment_method' });
        return change(o, r.status, r.returnCode, r.message);
      }
    }
  }
  if (e.type === 'charge.dispute.created') {
    const d = e.data.object as Stripe.Dispute & { network_reason_code?: string | null };
    const o = { paymentId: idOf(d.payment_intent) ?? idOf(d.charge)!, reference: refOf(d.metadata, null), amount: d.amount };
    return change(o, 'late_returned', disputeReturnCode(d));
  }
  if (e.type.startsWith('charge.')) {
    const ch = e.data.object as Stripe.Charge;
    const o = { paymentId: idOf(ch.payment_intent) ?? ch.id, reference: refOf(ch.metadata, ch.description), amount: ch.amount };
    switch (e.type) {
      case 'charge.succeeded':
        return change(o, 'settled');
      case 'charge.failed': {
        if (ch.payment_method_details?.type === 'card') {
          const f = cardFailure(ch.failure_code, ch.outcome?.reason);
          return change(o, f.status, f.returnCode, ch.failure_message ?? null);
        }
        return change(o, 'returned', stripeFailureToReturnCode(ch.failure_code, ch.outcome?.network_decline_code), ch.failure_message ?? null);
      }
      case 'charge.refunded':
        if (ch.amount_refunded >= ch.amount) return change(o, 'refunded');
        logger?.warn({ processor: 'stripe', event: e.id }, 'partial refund ignored');
        return null;
    }
  }
  logger?.warn({ processor: 'stripe', type: e.type }, 'unknown Stripe event kept as processing');
  const obj = e.data.object as { id?: string; amount?: number; metadata?: Stripe.Metadata; description?: string | null };
  return obj.id ? change({ paymentId: obj.id, reference: refOf(obj.metadata, obj.description), amount: obj.amount ?? 0 }, 'processing') : null;
}

/** Stripe's errors in the contract's terms. */
function unavailable(e: unknown): ProcessorUnavailable | null {
  if (e instanceof Stripe.errors.StripeConnectionError || e instanceof Stripe.errors.StripeAPIError || e instanceof Stripe.errors.StripeRateLimitError) {
    return new ProcessorUnavailable(`Stripe could not be reached or answered an error (${(e as Error).message})`, { cause: e });
  }
  const status = (e as { statusCode?: number }).statusCode;
  if (e instanceof Stripe.errors.StripeError && status !== undefined && status >= 500) return new ProcessorUnavailable(`Stripe answered ${status}`, { cause: e });
  return null;
}

const refused = (e: unknown) => e instanceof Stripe.errors.StripeAuthenticationError || e instanceof Stripe.errors.StripePermissionError;

export class StripeProcessor implements Processor {
  readonly name = 'stripe' as const;
  private readonly clients = new Map<string, Stripe>();

  constructor(private readonly opts: { apiUrl?: string | null; timeoutMs?: number; logger?: Logger } = {}) {}

  /** One client per key: the key is the account. STRIPE_API_URL points every client elsewhere (tests). */
  private client(key: string): Stripe {
    let c = this.clients.get(key);
    if (!c) {
      const url = this.opts.apiUrl ? new URL(this.opts.apiUrl) : null;
      c = new Stripe(key, {
        apiVersion: STRIPE_API_VERSION as Stripe.LatestApiVersion,
        timeout: this.opts.timeoutMs ?? TIMEOUT_MS,
        maxNetworkRetries: 2,
        telemetry: false,
        ...(url ? { host: url.hostname, port: url.port || (url.protocol === 'https:' ? 443 : 80), protocol: url.protocol.replace(':', '') as 'http' | 'https' } : {}),
      });
      this.clients.set(key, c);
    }
    return c;
  }

  async verifyKey(key: string): Promise<void> {
    try {
      await this.client(key).balance.retrieve();
    } catch (e) {
      if (refused(e)) throw new KeyRefused();
      throw unavailable(e) ?? new KeyRefused(`the processor refused this key (${(e as Error).message})`);
    }
  }

  async tokenizeCard(key: string, card: RawCard): Promise<TokenizedCard> {
    try {
      const pm = await this.client(key).paymentMethods.create({
        type: 'card',
        card: { number: card.number, exp_month: card.expMonth, exp_year: card.expYear, ...(card.cvv ? { cvc: card.cvv } : {}) },
      });
      return {
        token: pm.id,
        last4: pm.card?.last4 ?? card.number.slice(-4),
        brand: pm.card?.brand ?? null,
        funding: pm.card?.funding ?? null,
        expMonth: pm.card?.exp_month ?? card.expMonth,
        expYear: pm.card?.exp_year ?? card.expYear,
      };
    } catch (e) {
      const u = unavailable(e);
      if (u) throw u;
      if (refused(e)) throw new CardRefused('the processor key cannot tokenize cards');
      // Stripe's message names the problem, never the number.
      throw new CardRefused((e as Error).message || 'the card was refused');
    }
  }

  async createDebit(key: string, req: DebitRequest): Promise<DebitResult> {
    const common = {
      amount: req.amountCents,
      currency: 'usd',
      confirm: true,
      description: req.reference,
      metadata: { drs_reference: req.reference, drs_payment_id: req.paymentId },
    };
    let params: Stripe.PaymentIntentCreateParams;
    if (req.rail === 'card') {
      if (req.instrument.kind !== 'token') return { processorPaymentId: null, status: 'invalid', returnCode: null, message: 'a card charge needs a card token' };
      params = { ...common, payment_method: req.instrument.token, allowed_payment_method_types: ['card'], off_session: true };
    } else {
      params = {
        ...common,
        allowed_payment_method_types: ['us_bank_account'],
        mandate_data: { customer_acceptance: { type: 'offline' } },
        ...(req.instrument.kind === 'token'
          ? { payment_method: req.instrument.token }
          : {
              payment_method_data: {
                type: 'us_bank_account',
                us_bank_account: { routing_number: req.instrument.routingNumber, account_number: req.instrument.accountNumber, account_holder_type: 'individual' },
                billing_details: { name: req.borrower.name },
              },
            }),
      };
    }
    try {
      const pi = await this.client(key).paymentIntents.create(params, { idempotencyKey: req.paymentId });
      return intentToResult(pi, this.opts.logger);
    } catch (e) {
      const u = unavailable(e);
      if (u) throw u;
      if (e instanceof Stripe.errors.StripeCardError) {
        const f = cardFailure(e.code, e.decline_code);
        return { processorPaymentId: idOf((e as { payment_intent?: { id: string } }).payment_intent) ?? null, ...f, message: e.message };
      }
      if (refused(e)) throw new KeyRefused();
      // A definite refusal of the request itself (bad parameters, a reused key with other parameters).
      return { processorPaymentId: null, status: 'invalid', returnCode: null, message: (e as Error).message };
    }
  }

  async listChanges(key: string, cursor: string | null, opts: { limit?: number } = {}): Promise<ChangePage> {
    const limit = Math.min(100, opts.limit ?? 100);
    const stripe = this.client(key);
    try {
      let events: Stripe.Event[];
      let hasMore: boolean;
      if (cursor) {
        // ending_before: the events just newer than the cursor, still listed newest first.
        const page = await stripe.events.list({ ending_before: cursor, limit, types: [...STRIPE_EVENT_TYPES] });
        events = [...page.data].reverse();
        hasMore = page.has_more;
      } else {
        // From the beginning: walk back to the oldest event, then hand out the oldest page first.
        const all: Stripe.Event[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await stripe.events.list({ limit: 100, types: [...STRIPE_EVENT_TYPES], ...(after ? { starting_after: after } : {}) });
          all.push(...page.data);
          if (!page.has_more || page.data.length === 0) break;
          after = page.data[page.data.length - 1]!.id;
        }
        all.reverse();
        events = all.slice(0, limit);
        hasMore = all.length > limit;
      }
      const changes = events.map((e) => eventToChange(e, this.opts.logger)).filter((c): c is ProcessorChange => c !== null);
      await this.fillDisputeReferences(stripe, changes);
      return { changes, nextCursor: events.length > 0 ? events[events.length - 1]!.id : cursor, hasMore };
    } catch (e) {
      if (refused(e)) throw new KeyRefused();
      throw unavailable(e) ?? e;
    }
  }

  /** A dispute carries no reference of its own: it is the PaymentIntent's. */
  private async fillDisputeReferences(stripe: Stripe, changes: ProcessorChange[]): Promise<void> {
    for (const c of changes) {
      if (c.status !== 'late_returned' || c.reference || !c.processorPaymentId.startsWith('pi_')) continue;
      const pi = await stripe.paymentIntents.retrieve(c.processorPaymentId);
      c.reference = refOf(pi.metadata, pi.description);
    }
  }
}
