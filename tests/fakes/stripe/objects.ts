// Stripe's objects as the fake returns them, typed with the SDK's own types and shaped after Stripe's
// published fixtures (fixtures3.json): `object`, prefixed ids, seconds since the epoch, null where Stripe
// has nothing to say. Only what a debit touches carries real values.
import type Stripe from 'stripe';

export const FAKE_API_VERSION = '2026-10-28.endive';

/** Ids shaped like Stripe's (`pi_1Fake…`), unique per fake server. */
export class Ids {
  private n = 0;
  next(prefix: string): string {
    return `${prefix}_1Fake${(++this.n).toString(36).padStart(10, '0')}`;
  }
}

const address = (): Stripe.Address => ({ city: null, country: null, line1: null, line2: null, postal_code: null, state: null });

export function cardPaymentMethod(id: string, created: number, card: { number: string; expMonth: number; expYear: number }): Stripe.PaymentMethod {
  const brand = card.number.startsWith('4') ? 'visa' : /^5[1-5]/.test(card.number) ? 'mastercard' : card.number.startsWith('3') ? 'amex' : 'unknown';
  return {
    id,
    object: 'payment_method',
    allow_redisplay: 'unspecified',
    billing_details: { address: address(), email: null, name: null, phone: null, tax_id: null },
    card: {
      brand,
      checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'unchecked' },
      country: 'US',
      display_brand: brand,
      exp_month: card.expMonth,
      exp_year: card.expYear,
      fingerprint: `fp${card.number.slice(-6)}`,
      funding: 'debit',
      generated_from: null,
      last4: card.number.slice(-4),
      networks: { available: [brand], preferred: null },
      regulated_status: 'unregulated',
      three_d_secure_usage: { supported: true },
      wallet: null,
    },
    created,
    customer: null,
    customer_account: null,
    livemode: false,
    metadata: {},
    type: 'card',
  };
}

export function bankPaymentMethod(id: string, created: number, bank: { routingNumber: string; accountNumber: string; name: string | null }): Stripe.PaymentMethod {
  return {
    id,
    object: 'payment_method',
    billing_details: { address: address(), email: null, name: bank.name, phone: null, tax_id: null },
    created,
    customer: null,
    customer_account: null,
    livemode: false,
    metadata: {},
    type: 'us_bank_account',
    us_bank_account: {
      account_holder_type: 'individual',
      account_type: 'checking',
      bank_name: 'STRIPE TEST BANK',
      financial_connections_account: null,
      fingerprint: `fp${bank.accountNumber.slice(-6)}`,
      last4: bank.accountNumber.slice(-4),
      networks: { preferred: 'ach', supported: ['ach'] },
      routing_number: bank.routingNumber,
      status_details: null,
    },
  };
}

export function paymentIntent(init: {
  id: string;
  created: number;
  amount: number;
  currency: string;
  description: string | null;
  metadata: Stripe.Metadata;
  paymentMethod: string | null;
  types: string[];
}): Stripe.PaymentIntent {
  return {
    id: init.id,
    object: 'payment_intent',
    allowed_payment_method_types: init.types,
    amount: init.amount,
    amount_capturable: 0,
    amount_details: { tip: {} },
    amount_received: 0,
    application: null,
    application_fee_amount: null,
    automatic_payment_methods: null,
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic',
    client_secret: `${init.id}_secret_fake`,
    confirmation_method: 'automatic',
    created: init.created,
    currency: init.currency,
    customer: null,
    customer_account: null,
    description: init.description,
    excluded_payment_method_types: null,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    managed_payments: null,
    metadata: init.metadata,
    next_action: null,
    on_behalf_of: null,
    payment_method: init.paymentMethod,
    payment_method_configuration_details: null,
    payment_method_options: {},
    payment_method_types: init.types,
    payment_record: null,
    processing: null,
    receipt_email: null,
    review: null,
    setup_future_usage: null,
    shipping: null,
    source: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: 'requires_confirmation',
    transfer_group: null,
  };
}

function chargeDetails(pm: Stripe.PaymentMethod | undefined): Stripe.Charge.PaymentMethodDetails {
  if (pm?.card) {
    const c = pm.card;
    return {
      type: 'card',
      card: {
        amount_authorized: null,
        authorization_code: null,
        brand: c.brand,
        checks: c.checks,
        country: c.country,
        electronic_commerce_indicator: null,
        exp_month: c.exp_month,
        exp_year: c.exp_year,
        funding: c.funding,
        installments: null,
        last4: c.last4,
        mandate: null,
        network: c.brand,
        network_transaction_id: null,
        regulated_status: null,
        three_d_secure: null,
        transaction_link_id: null,
        wallet: null,
      },
    };
  }
  const b = pm?.us_bank_account;
  return {
    type: 'us_bank_account',
    us_bank_account: {
      account_holder_type: b?.account_holder_type ?? 'individual',
      account_type: b?.account_type ?? 'checking',
      bank_name: b?.bank_name ?? null,
      fingerprint: b?.fingerprint ?? null,
      last4: b?.last4 ?? null,
      payment_reference: null,
      routing_number: b?.routing_number ?? null,
    },
  };
}

/** The charge of a PaymentIntent's attempt: Stripe copies the intent's description and metadata onto it. */
export function charge(id: string, created: number, pi: Stripe.PaymentIntent, pm: Stripe.PaymentMethod | undefined, status: Stripe.Charge.Status): Stripe.Charge {
  return {
    id,
    object: 'charge',
    amount: pi.amount,
    amount_captured: status === 'succeeded' ? pi.amount : 0,
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: null,
    billing_details: pm?.billing_details ?? { address: address(), email: null, name: null, phone: null, tax_id: null },
    calculated_statement_descriptor: null,
    captured: status === 'succeeded',
    created,
    currency: pi.currency,
    customer: null,
    description: pi.description,
    disputed: false,
    failure_balance_transaction: null,
    failure_code: null,
    failure_message: null,
    fraud_details: {},
    livemode: false,
    metadata: { ...pi.metadata },
    on_behalf_of: null,
    outcome: { advice_code: null, network_advice_code: null, network_decline_code: null, network_status: 'approved_by_network', reason: null, seller_message: 'Payment complete.', type: 'authorized' },
    paid: status === 'succeeded',
    payment_intent: pi.id,
    payment_method: pm?.id ?? null,
    payment_method_details: chargeDetails(pm),
    receipt_email: null,
    receipt_number: null,
    receipt_url: null,
    refunded: false,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status,
    transfer_data: null,
    transfer_group: null,
  };
}

const NO_EVIDENCE: Stripe.Dispute.Evidence = {
  access_activity_log: null,
  billing_address: null,
  cancellation_policy: null,
  cancellation_policy_disclosure: null,
  cancellation_rebuttal: null,
  customer_communication: null,
  customer_email_address: null,
  customer_name: null,
  customer_purchase_ip: null,
  customer_signature: null,
  duplicate_charge_documentation: null,
  duplicate_charge_explanation: null,
  duplicate_charge_id: null,
  enhanced_evidence: {},
  product_description: null,
  receipt: null,
  refund_policy: null,
  refund_policy_disclosure: null,
  refund_refusal_explanation: null,
  service_date: null,
  service_documentation: null,
  shipping_address: null,
  shipping_carrier: null,
  shipping_date: null,
  shipping_documentation: null,
  shipping_tracking_number: null,
  uncategorized_file: null,
  uncategorized_text: null,
};

/** A dispute as Stripe's newer API versions render it: the charge, the PaymentIntent, a network reason code. */
export function dispute(id: string, created: number, ch: Stripe.Charge, reason: string, networkReasonCode: string | null): Stripe.Dispute {
  const card = ch.payment_method_details?.card;
  return {
    id,
    object: 'dispute',
    amount: ch.amount,
    balance_transactions: [],
    charge: ch.id,
    created,
    currency: ch.currency,
    enhanced_eligibility_types: [],
    evidence: NO_EVIDENCE,
    evidence_details: { due_by: created + 7 * 86_400, enhanced_eligibility: {}, has_evidence: false, past_due: false, submission_count: 0, submission_method: 'not_submitted' },
    intended_submission_method: null,
    is_charge_refundable: false,
    livemode: false,
    metadata: {},
    network_reason_code: networkReasonCode,
    payment_intent: ch.payment_intent,
    // Stripe details a dispute's method for cards, wallets and Klarna only; an ACH dispute has none.
    ...(card
      ? { payment_method_details: { type: 'card' as const, card: { brand: card.brand ?? 'visa', case_type: 'chargeback' as const, network: card.network ?? 'visa', network_reason_code: networkReasonCode } } }
      : {}),
    reason,
    status: 'needs_response',
  };
}

export function refund(id: string, created: number, ch: Stripe.Charge, amount: number): Stripe.Refund {
  return {
    id,
    object: 'refund',
    amount,
    balance_transaction: null,
    charge: ch.id,
    created,
    currency: ch.currency,
    customer: null,
    customer_account: null,
    metadata: {},
    payment_intent: ch.payment_intent,
    payment_method: ch.payment_method,
    reason: null,
    receipt_number: null,
    source_transfer_reversal: null,
    status: 'pending',
    transfer_reversal: null,
  };
}

export type EventObject<T extends Stripe.Event['type']> = Extract<Stripe.Event, { type: T }>['data']['object'];

/** An event carries a snapshot of its object at the time of the change, as Stripe's do. */
export function event<T extends Stripe.Event['type']>(id: string, created: number, type: T, object: EventObject<T>, key: string | null): Stripe.Event {
  return {
    id,
    object: 'event',
    api_version: FAKE_API_VERSION,
    created,
    data: { object: structuredClone(object as object) },
    livemode: false,
    pending_webhooks: 0,
    request: { id: null, idempotency_key: key },
    type,
  } as unknown as Stripe.Event;
}

export const balance = (): Stripe.Balance => ({
  object: 'balance',
  available: [{ amount: 0, currency: 'usd', source_types: { card: 0 } }],
  livemode: false,
  pending: [{ amount: 0, currency: 'usd', source_types: { card: 0 } }],
});

/** GET /v1/account for a key: each key of the fake is its own account, named from the key so it is stable. */
export const accountObject = (key: string): Stripe.Account =>
  ({
    id: `acct_${new Bun.CryptoHasher('sha256').update(key).digest('hex').slice(0, 16)}`,
    object: 'account',
    business_profile: null,
    business_type: null,
    charges_enabled: true,
    country: 'US',
    created: 1_700_000_000,
    default_currency: 'usd',
    details_submitted: true,
    email: null,
    payouts_enabled: true,
    type: 'standard',
  }) as Stripe.Account;
