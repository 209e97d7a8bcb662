// One Stripe account of the fake: its PaymentMethods, PaymentIntents, Charges, Disputes, Refunds and Events,
// and the transitions Stripe would make (a confirm, and the later outcomes a test drives through the control
// surface). Each change appends its events, oldest first, with a snapshot of the object as Stripe's do.
import type Stripe from 'stripe';
import { list, obj, str, type Form } from './form';
import * as o from './objects';

export interface Answer {
  status: number;
  body: unknown;
}

export const ok = (body: unknown): Answer => ({ status: 200, body });

/** Stripe's error envelope. */
export const stripeError = (status: number, type: string, message: string, extra: Record<string, unknown> = {}): Answer => ({
  status,
  body: { error: { type, message, ...extra } },
});

/** What every account of one fake server shares: ids, the clock, and the switches tests flip. */
export interface World {
  ids: o.Ids;
  now(): number;
  /** The next ACH PaymentIntent comes back `requires_action` (bank account verification). */
  requireAction: boolean;
}

/** Stripe's test cards and test PaymentMethods, by the outcome they stand for. */
const DECLINES: Record<string, { decline: string; message: string; network: string }> = {
  '4000000000009995': { decline: 'insufficient_funds', message: 'Your card has insufficient funds.', network: '51' },
  '4000000000000002': { decline: 'generic_decline', message: 'Your card was declined.', network: '05' },
  '4000000000009979': { decline: 'stolen_card', message: 'Your card was declined.', network: '43' },
};
const TEST_CARD_TOKENS: Record<string, string> = {
  pm_card_visa: '4242424242424242',
  pm_card_visa_debit: '4000056655665556',
  pm_card_chargeDeclinedInsufficientFunds: '4000000000009995',
  pm_card_chargeDeclined: '4000000000000002',
  pm_card_chargeDeclinedStolenCard: '4000000000009979',
};
const FAILURE_MESSAGES: Record<string, string> = {
  insufficient_funds: "The customer's account has insufficient funds to cover this payment.",
  account_closed: "The customer's bank account has been closed.",
  no_account: "The customer's bank account could not be located.",
  debit_not_authorized: 'The customer has notified their bank that this payment was unauthorized.',
};

/** The create parameters the pinned API version knows; anything else is refused as Stripe does. */
const INTENT_PARAMS = new Set(
  ('amount currency allowed_payment_method_types amount_details application_fee_amount automatic_payment_methods capture_method ' +
    'confirm confirmation_method confirmation_token customer customer_account description error_on_requires_action ' +
    'excluded_payment_method_types expand hooks mandate mandate_data metadata off_session on_behalf_of payment_details ' +
    'payment_method payment_method_configuration payment_method_data payment_method_options radar_options receipt_email ' +
    'return_url setup_future_usage shipping statement_descriptor statement_descriptor_suffix transfer_data transfer_group use_stripe_sdk').split(' '),
);

const luhn = (digits: string): boolean =>
  [...digits].reverse().reduce((sum, ch, i) => {
    const d = Number(ch) * (i % 2 ? 2 : 1);
    return sum + (d > 9 ? d - 9 : d);
  }, 0) %
    10 ===
  0;

const abaChecksum = (r: string): boolean =>
  /^\d{9}$/.test(r) && (3 * (+r[0]! + +r[3]! + +r[6]!) + 7 * (+r[1]! + +r[4]! + +r[7]!) + (+r[2]! + +r[5]! + +r[8]!)) % 10 === 0;

const invalid = (message: string, param: string, code = 'parameter_invalid'): Answer => stripeError(400, 'invalid_request_error', message, { code, param });

export class FakeAccount {
  readonly paymentMethods = new Map<string, Stripe.PaymentMethod>();
  readonly paymentIntents = new Map<string, Stripe.PaymentIntent>();
  readonly charges = new Map<string, Stripe.Charge>();
  readonly disputes = new Map<string, Stripe.Dispute>();
  readonly refunds = new Map<string, Stripe.Refund>();
  /** Oldest first. */
  readonly events: Stripe.Event[] = [];
  readonly customers = new Map<string, Stripe.Customer>();
  /** The test card number behind a card PaymentMethod picks its outcome; it never leaves the fake. */
  private readonly cardNumbers = new Map<string, string>();
  /** PaymentMethods used by a PaymentIntent while attached to no Customer: Stripe refuses them a second use. */
  private readonly usedOnce = new Set<string>();

  constructor(private readonly world: World) {}

  private emit<T extends Stripe.Event['type']>(type: T, object: o.EventObject<T>, idempotencyKey: string | null = null): void {
    this.events.push(o.event(this.world.ids.next('evt'), this.world.now(), type, object, idempotencyKey));
  }

  createCustomer(p: Form): Answer {
    const unknown = Object.keys(p).find((k) => !['description', 'metadata', 'expand'].includes(k));
    if (unknown) return invalid(`Received unknown parameter: ${unknown}`, unknown, 'parameter_unknown');
    const id = this.world.ids.next('cus');
    const customer = { id, object: 'customer', created: Math.floor(this.world.now() / 1000), description: str(p.description) ?? null, livemode: false, metadata: {} } as unknown as Stripe.Customer;
    this.customers.set(id, customer);
    return ok(customer);
  }

  /** POST /v1/payment_methods/{id}/attach: the PaymentMethod may then be used again, with its Customer. */
  attachPaymentMethod(id: string, p: Form): Answer {
    const pm = this.paymentMethods.get(id);
    if (!pm) return stripeError(404, 'invalid_request_error', `No such PaymentMethod: '${id}'`, { code: 'resource_missing', param: 'payment_method' });
    const customer = str(p.customer);
    if (!customer || !this.customers.has(customer)) return invalid(`No such customer: '${customer ?? ''}'`, 'customer', 'resource_missing');
    if (this.usedOnce.has(id)) return invalid('This PaymentMethod was previously used without being attached to a Customer and may not be attached now.', 'payment_method', 'payment_method_unexpected_state');
    pm.customer = customer;
    return ok(pm);
  }

  createPaymentMethod(p: Form): Answer {
    const made = this.paymentMethodFrom(p, 'payment_method');
    return typeof made === 'string' ? ok(this.paymentMethods.get(made)) : made;
  }

  /** A PaymentMethod from `type` + details (a create, or `payment_method_data`): its id, or Stripe's refusal. */
  private paymentMethodFrom(p: Form, prefix: string): string | Answer {
    const id = this.world.ids.next('pm');
    if (str(p.type) === 'card') {
      const card = obj(p.card) ?? {};
      const number = str(card.number) ?? '';
      const expMonth = Number(str(card.exp_month));
      const expYear = Number(str(card.exp_year));
      if (!/^\d{12,19}$/.test(number) || !luhn(number)) {
        return stripeError(402, 'card_error', 'Your card number is incorrect.', { code: 'incorrect_number', param: 'card[number]' });
      }
      if (!(expMonth >= 1 && expMonth <= 12)) return stripeError(402, 'card_error', "Your card's expiration month is invalid.", { code: 'invalid_expiry_month', param: 'card[exp_month]' });
      const today = new Date();
      if (!(expYear > today.getUTCFullYear() || (expYear === today.getUTCFullYear() && expMonth >= today.getUTCMonth() + 1))) {
        return stripeError(402, 'card_error', "Your card's expiration year is invalid.", { code: 'invalid_expiry_year', param: 'card[exp_year]' });
      }
      this.cardNumbers.set(id, number);
      this.paymentMethods.set(id, o.cardPaymentMethod(id, this.world.now(), { number, expMonth, expYear }));
      return id;
    }
    if (str(p.type) === 'us_bank_account') {
      const bank = obj(p.us_bank_account) ?? {};
      const routingNumber = str(bank.routing_number) ?? '';
      const accountNumber = str(bank.account_number) ?? '';
      const name = str(obj(p.billing_details)?.name) ?? null;
      // Stripe can echo a value it refuses in the message: the adapter must never pass such a message on as is.
      if (!abaChecksum(routingNumber)) return invalid(`Invalid routing number: ${routingNumber}`, `${prefix}[us_bank_account][routing_number]`, 'routing_number_invalid');
      if (!/^\d{4,17}$/.test(accountNumber)) return invalid(`Invalid account number: ${accountNumber}`, `${prefix}[us_bank_account][account_number]`, 'account_number_invalid');
      if (!name) return invalid('Missing required param: billing_details[name].', `${prefix}[billing_details][name]`, 'parameter_missing');
      this.paymentMethods.set(id, o.bankPaymentMethod(id, this.world.now(), { routingNumber, accountNumber, name }));
      return id;
    }
    return invalid(`Invalid ${prefix}[type]: must be one of card or us_bank_account`, `${prefix}[type]`);
  }

  /** A PaymentMethod for a PaymentIntent: an id of this account, or one of Stripe's test tokens. */
  private resolvePaymentMethod(id: string): string | Answer {
    if (this.paymentMethods.has(id)) return id;
    const number = TEST_CARD_TOKENS[id];
    if (number) return this.paymentMethodFrom({ type: 'card', card: { number, exp_month: '12', exp_year: String(new Date().getUTCFullYear() + 3) } }, 'payment_method');
    if (id.startsWith('pm_usBankAccount_')) {
      return this.paymentMethodFrom({ type: 'us_bank_account', us_bank_account: { routing_number: '110000000', account_number: '000123456789' }, billing_details: { name: 'Test' } }, 'payment_method');
    }
    return invalid(`No such PaymentMethod: '${id}'`, 'payment_method', 'resource_missing');
  }

  createPaymentIntent(p: Form, idempotencyKey: string | null): Answer {
    const unknown = Object.keys(p).find((k) => !INTENT_PARAMS.has(k));
    if (unknown) return invalid(`Received unknown parameter: ${unknown}`, unknown, 'parameter_unknown');
    const amount = str(p.amount);
    if (!amount) return invalid('Missing required param: amount.', 'amount', 'parameter_missing');
    if (!/^\d+$/.test(amount)) return invalid('Invalid integer: amount', 'amount');
    if (Number(amount) < 50) return invalid('Amount must be at least $0.50 usd', 'amount', 'amount_too_small');
    const currency = str(p.currency);
    if (!currency) return invalid('Missing required param: currency.', 'currency', 'parameter_missing');
    const types = list(p.allowed_payment_method_types);
    let pmId: string | null = null;
    if (str(p.payment_method)) {
      const r = this.resolvePaymentMethod(str(p.payment_method)!);
      if (typeof r !== 'string') return r;
      pmId = r;
    } else if (obj(p.payment_method_data)) {
      const r = this.paymentMethodFrom(obj(p.payment_method_data)!, 'payment_method_data');
      if (typeof r !== 'string') return r;
      pmId = r;
    }
    const pm = pmId ? this.paymentMethods.get(pmId)! : undefined;
    const allowed = types.length > 0 ? types : [pm?.type ?? 'card'];
    if (pm && !allowed.includes(pm.type)) {
      return invalid(`The PaymentMethod provided (${pm.type}) is not allowed for this PaymentIntent.`, 'payment_method', 'payment_intent_incompatible_payment_method');
    }
    const customer = str(p.customer) ?? null;
    if (customer && !this.customers.has(customer)) return invalid(`No such customer: '${customer}'`, 'customer', 'resource_missing');
    if (pm && pm.customer && pm.customer !== customer) {
      return invalid(
        customer ? 'The provided PaymentMethod belongs to another Customer.' : 'The provided PaymentMethod is attached to a Customer: pass that Customer as customer.',
        'payment_method',
        'payment_method_unexpected_state',
      );
    }
    if (pm && !pm.customer && this.usedOnce.has(pm.id)) {
      return invalid(
        'The provided PaymentMethod was previously used with a PaymentIntent without Customer attachment, shared with a connected account without Customer attachment, or was detached from a Customer. It may not be used again. To use a PaymentMethod multiple times, you must attach it to a Customer first.',
        'payment_method',
        'payment_method_unexpected_state',
      );
    }
    const confirm = str(p.confirm) === 'true';
    if (confirm && pm && !pm.customer) this.usedOnce.add(pm.id);
    if (confirm && !pm) return invalid("You cannot confirm this PaymentIntent because it's missing a payment method.", 'payment_method', 'payment_intent_unexpected_state');
    if (confirm && pm?.type === 'us_bank_account' && !obj(p.mandate_data) && !str(p.mandate)) {
      return invalid('A mandate is required to confirm a us_bank_account PaymentIntent: pass mandate_data or mandate.', 'mandate_data', 'parameter_missing');
    }
    const metadata = Object.fromEntries(Object.entries(obj(p.metadata) ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const pi = o.paymentIntent({
      id: this.world.ids.next('pi'),
      created: this.world.now(),
      amount: Number(amount),
      currency,
      description: str(p.description) ?? null,
      metadata,
      paymentMethod: pmId,
      types: allowed,
    });
    pi.status = pm ? 'requires_confirmation' : 'requires_payment_method';
    this.paymentIntents.set(pi.id, pi);
    this.emit('payment_intent.created', pi, idempotencyKey);
    if (!confirm || !pm) return ok(pi);
    return pm.type === 'card' ? this.chargeCard(pi, pm, idempotencyKey) : this.debitBank(pi, pm, idempotencyKey);
  }

  private chargeCard(pi: Stripe.PaymentIntent, pm: Stripe.PaymentMethod, key: string | null): Answer {
    const decline = DECLINES[this.cardNumbers.get(pm.id) ?? ''];
    const ch = o.charge(this.world.ids.next('ch'), this.world.now(), pi, pm, decline ? 'failed' : 'succeeded');
    this.charges.set(ch.id, ch);
    pi.latest_charge = ch.id;
    if (!decline) {
      pi.status = 'succeeded';
      pi.amount_received = pi.amount;
      this.emit('charge.succeeded', ch, key);
      this.emit('payment_intent.succeeded', pi, key);
      return ok(pi);
    }
    Object.assign(ch, { failure_code: 'card_declined', failure_message: decline.message });
    ch.outcome = { ...ch.outcome!, network_decline_code: decline.network, network_status: 'declined_by_network', reason: decline.decline, seller_message: 'The bank returned the decline code `' + decline.decline + '`.', type: 'issuer_declined' };
    const err = { code: 'card_declined', decline_code: decline.decline, message: decline.message, charge: ch.id, doc_url: 'https://docs.stripe.com/error-codes/card-declined' };
    pi.status = 'requires_payment_method';
    pi.payment_method = null;
    pi.last_payment_error = { ...err, type: 'card_error', payment_method: pm, payment_method_type: 'card' };
    this.emit('charge.failed', ch, key);
    this.emit('payment_intent.payment_failed', pi, key);
    return stripeError(402, 'card_error', decline.message, { ...err, payment_intent: pi, payment_method: pm });
  }

  private debitBank(pi: Stripe.PaymentIntent, pm: Stripe.PaymentMethod, key: string | null): Answer {
    if (this.world.requireAction) {
      this.world.requireAction = false;
      pi.status = 'requires_action';
      pi.next_action = {
        type: 'verify_with_microdeposits',
        verify_with_microdeposits: {
          arrival_date: this.world.now() + 2 * 86_400,
          hosted_verification_url: `https://payments.stripe.com/microdeposit/${pi.id}`,
          microdeposit_type: 'descriptor_code',
        },
      };
      this.emit('payment_intent.requires_action', pi, key);
      return ok(pi);
    }
    const ch = o.charge(this.world.ids.next('py'), this.world.now(), pi, pm, 'pending');
    this.charges.set(ch.id, ch);
    pi.latest_charge = ch.id;
    pi.status = 'processing';
    this.emit('charge.pending', ch, key);
    this.emit('payment_intent.processing', pi, key);
    return ok(pi);
  }

  /** The PaymentIntent and its latest charge, for a transition a test drives. */
  private attempt(piId: string, want: { intent?: Stripe.PaymentIntent.Status[]; charge?: Stripe.Charge.Status[] }) {
    const pi = this.paymentIntents.get(piId);
    if (!pi) throw new Error(`fake Stripe: no PaymentIntent ${piId}`);
    const ch = pi.latest_charge ? this.charges.get(pi.latest_charge as string) : undefined;
    if (want.intent && !want.intent.includes(pi.status)) throw new Error(`fake Stripe: ${piId} is ${pi.status}, not ${want.intent.join(' or ')}`);
    if (want.charge && (!ch || !want.charge.includes(ch.status))) throw new Error(`fake Stripe: the charge of ${piId} is ${ch?.status ?? 'missing'}`);
    return { pi, ch: ch! };
  }

  succeed(piId: string): void {
    const { pi, ch } = this.attempt(piId, { intent: ['processing'], charge: ['pending'] });
    Object.assign(ch, { status: 'succeeded', paid: true, captured: true, amount_captured: ch.amount });
    Object.assign(pi, { status: 'succeeded', amount_received: pi.amount });
    this.emit('charge.succeeded', ch);
    this.emit('payment_intent.succeeded', pi);
  }

  /**
   * `intentCode`: the PaymentIntent's error code when it differs from the charge's (its enum lacks some ACH
   * codes); `blockedCode`: the network code Stripe puts on the PaymentMethod it blocks.
   */
  fail(piId: string, failureCode: string, networkCode?: string | null, opts: { intentCode?: string; blockedCode?: string } = {}): void {
    const { pi, ch } = this.attempt(piId, { intent: ['processing'], charge: ['pending'] });
    const message = FAILURE_MESSAGES[failureCode] ?? `The payment failed (${failureCode}).`;
    Object.assign(ch, { status: 'failed', failure_code: failureCode, failure_message: message });
    ch.outcome = { ...ch.outcome!, network_decline_code: networkCode ?? null, network_status: 'declined_by_network', reason: null, seller_message: message, type: 'issuer_declined' };
    const stored = this.paymentMethods.get(ch.payment_method ?? '');
    const pm: Stripe.PaymentMethod | undefined =
      stored && opts.blockedCode && stored.us_bank_account
        ? { ...stored, us_bank_account: { ...stored.us_bank_account, status_details: { blocked: { network_code: opts.blockedCode, reason: 'bank_account_closed' } } } }
        : stored;
    pi.status = 'requires_payment_method';
    pi.payment_method = null;
    pi.last_payment_error = {
      type: 'invalid_request_error',
      code: opts.intentCode ?? failureCode,
      message,
      charge: ch.id,
      payment_method: pm,
      payment_method_type: pm?.type ?? 'us_bank_account',
      ...(networkCode ? { network_decline_code: networkCode } : {}),
    };
    this.emit('charge.failed', ch);
    this.emit('payment_intent.payment_failed', pi);
  }

  /** `olderShape`: the dispute as older API versions render it, naming only the charge. */
  dispute(piId: string, reason: string, networkReasonCode?: string | null, olderShape = false): void {
    const { ch } = this.attempt(piId, { charge: ['succeeded'] });
    ch.disputed = true;
    const d = o.dispute(this.world.ids.next('dp'), this.world.now(), ch, reason, networkReasonCode ?? null);
    if (olderShape) Object.assign(d, { payment_intent: null, network_reason_code: undefined });
    this.disputes.set(d.id, d);
    this.emit('charge.dispute.created', d);
  }

  refund(piId: string, amount?: number): void {
    const { pi, ch } = this.attempt(piId, { charge: ['succeeded'] });
    const r = o.refund(this.world.ids.next('re'), this.world.now(), ch, amount ?? pi.amount - ch.amount_refunded);
    this.refunds.set(r.id, r);
    ch.amount_refunded += r.amount;
    ch.refunded = ch.amount_refunded >= ch.amount;
    this.emit('refund.created', r);
    this.emit('charge.refunded', ch);
  }

  /** The charge's open dispute closes: won (the money comes back to the merchant) or lost. */
  closeDispute(piId: string, outcome: 'won' | 'lost'): void {
    const { ch } = this.attempt(piId, { charge: ['succeeded'] });
    const d = [...this.disputes.values()].reverse().find((x) => x.charge === ch.id);
    if (!d) throw new Error(`no dispute on ${piId}`);
    d.status = outcome;
    this.emit('charge.dispute.closed', d);
  }

  /** The charge's latest refund fails: the money stays with the merchant (refund.failed). */
  failRefund(piId: string): void {
    const { ch } = this.attempt(piId, { charge: ['succeeded'] });
    const r = [...this.refunds.values()].reverse().find((x) => x.charge === ch.id);
    if (!r) throw new Error(`no refund on ${piId}`);
    Object.assign(r, { status: 'failed', failure_reason: 'lost_or_stolen_card' });
    ch.amount_refunded -= r.amount;
    ch.refunded = ch.amount_refunded >= ch.amount;
    this.emit('refund.failed', r);
  }

  cancel(piId: string): void {
    const { pi } = this.attempt(piId, { intent: ['requires_payment_method', 'requires_confirmation', 'requires_action', 'requires_capture', 'processing'] });
    Object.assign(pi, { status: 'canceled', canceled_at: this.world.now(), cancellation_reason: 'requested_by_customer' });
    this.emit('payment_intent.canceled', pi);
  }

  /** Events past Stripe's retention: the oldest `count` are gone, and so is any cursor that named them. */
  expireEvents(count: number): void {
    this.events.splice(0, count);
  }

  listEvents(q: Form): Answer {
    const types = list(q.types);
    const type = str(q.type);
    const matches = (e: Stripe.Event) =>
      (types.length === 0 || types.includes(e.type)) && (!type || (type.endsWith('.*') ? e.type.startsWith(type.slice(0, -1)) : e.type === type));
    return listPage([...this.events].reverse(), q, '/v1/events', matches);
  }

  /** `created[gte]` / `created[lte]` (seconds) and `expand[]=data.latest_charge`, as the adapter reads them. */
  listPaymentIntents(q: Form): Answer {
    const unknown = Object.keys(q).find((k) => !['limit', 'starting_after', 'ending_before', 'created', 'expand', 'customer'].includes(k));
    if (unknown) return invalid(`Received unknown parameter: ${unknown}`, unknown, 'parameter_unknown');
    const created = (q.created ?? {}) as Form;
    const gte = str(created.gte) === undefined ? -Infinity : Number(str(created.gte));
    const lte = str(created.lte) === undefined ? Infinity : Number(str(created.lte));
    const expand = list(q.expand);
    const bad = expand.find((e) => e !== 'data.latest_charge');
    if (bad) return invalid(`This property cannot be expanded (${bad}).`, 'expand');
    const page = listPage([...this.paymentIntents.values()].reverse(), q, '/v1/payment_intents', (pi) => pi.created >= gte && pi.created <= lte);
    if (page.status !== 200 || !expand.length) return page;
    const body = page.body as { data: Stripe.PaymentIntent[] };
    return ok({ ...body, data: body.data.map((pi) => this.withCharge(pi)) });
  }

  withCharge(pi: Stripe.PaymentIntent): Stripe.PaymentIntent {
    const id = typeof pi.latest_charge === 'string' ? pi.latest_charge : null;
    return { ...pi, latest_charge: id ? (this.charges.get(id) ?? id) : pi.latest_charge };
  }

  /** POST /v1/payment_intents/{id}/cancel: only a PaymentIntent that has not started to move money. */
  cancelIntent(id: string): Answer {
    const pi = this.paymentIntents.get(id);
    if (!pi) return invalid(`No such payment_intent: '${id}'`, 'id', 'resource_missing');
    if (!['requires_payment_method', 'requires_confirmation', 'requires_action', 'requires_capture'].includes(pi.status)) {
      return invalid(`You cannot cancel this PaymentIntent because it has a status of ${pi.status}.`, 'intent', 'payment_intent_unexpected_state');
    }
    Object.assign(pi, { status: 'canceled', canceled_at: this.world.now(), cancellation_reason: 'requested_by_customer' });
    this.emit('payment_intent.canceled', pi);
    return ok(pi);
  }

  /** GET /v1/disputes?payment_intent=…, newest first. */
  listDisputes(q: Form): Answer {
    const unknown = Object.keys(q).find((k) => !['limit', 'starting_after', 'ending_before', 'payment_intent', 'charge'].includes(k));
    if (unknown) return invalid(`Received unknown parameter: ${unknown}`, unknown, 'parameter_unknown');
    const pi = str(q.payment_intent);
    const ch = str(q.charge);
    return listPage([...this.disputes.values()].reverse(), q, '/v1/disputes', (d) => (!pi || d.payment_intent === pi) && (!ch || d.charge === ch));
  }
}

/** Stripe's list pagination over a newest-first list: `limit`, `starting_after` (older), `ending_before` (newer). */
function listPage<T extends { id: string }>(newestFirst: T[], q: Form, url: string, matches: (item: T) => boolean): Answer {
  const limitText = str(q.limit) ?? '10';
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 100) return invalid('This value must be greater than or equal to 1 and less than or equal to 100.', 'limit');
  const after = str(q.starting_after);
  const before = str(q.ending_before);
  if (after && before) return invalid('You may only specify one of these parameters: ending_before, starting_after.', 'ending_before');
  const cursor = after ?? before;
  const at = cursor ? newestFirst.findIndex((x) => x.id === cursor) : -1;
  if (cursor && at < 0) return invalid(`No such ${url.split('/').pop()!.replace(/s$/, '')}: '${cursor}'`, after ? 'starting_after' : 'ending_before', 'resource_missing');
  let data: T[];
  let hasMore: boolean;
  if (before) {
    const newer = newestFirst.slice(0, at).filter(matches);
    data = newer.slice(Math.max(0, newer.length - limit));
    hasMore = newer.length > limit;
  } else {
    const older = newestFirst.slice(at + 1).filter(matches);
    data = older.slice(0, limit);
    hasMore = older.length > limit;
  }
  return ok({ object: 'list', data, has_more: hasMore, url });
}
