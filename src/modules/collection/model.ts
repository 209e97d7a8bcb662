import { t } from 'elysia';
import { AUTHORIZATION_METHODS, EVENT_SOURCES, EVENT_STATUSES, NOTICE_CHANNELS, NOTICE_CLASSES, RAILS } from '../../../db/schema/enums';
import { RegEElectionSchema } from '../collection-policy/model';
import { Int, OneOf } from '../../platform/schema';

export const PaymentEvent = t.Object({
  event_id: t.String({ description: 'Unique, stable, never reissued; use as an idempotency key' }),
  reference: t.String({ description: 'The payment: DRS-{authorizer_unique_id}-{payment_id} for payments the service initiates' }),
  status: OneOf(EVENT_STATUSES),
  amount: Int({ description: 'Cents; the same for every event of a reference' }),
  return_code: t.Optional(t.Union([t.String(), t.Null()], { description: 'ACH R-code; only on returned and late_returned' })),
  authorizer_unique_id: t.String(),
  occurred_at: t.String({ format: 'date-time' }),
  source: OneOf(EVENT_SOURCES),
  message: t.Optional(t.String()),
});

export const EventList = t.Object(
  { authorizer_unique_id: t.String(), events: t.Array(PaymentEvent, { description: 'Oldest first; events of several payments interleaved' }) },
  {
    examples: [
      {
        authorizer_unique_id: 'loan-1001',
        events: [
          {
            event_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
            reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000001',
            status: 'processing',
            amount: 42500,
            authorizer_unique_id: 'loan-1001',
            occurred_at: '2026-11-21T10:00:02.000Z',
            source: 'processor',
          },
          {
            event_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6c',
            reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000001',
            status: 'settled',
            amount: 42500,
            authorizer_unique_id: 'loan-1001',
            occurred_at: '2026-11-21T10:01:02.000Z',
            source: 'processor',
          },
        ],
      },
    ],
  },
);


const Day = t.String({ format: 'date' });
const Instant = t.String({ format: 'date-time' });

/** What PAYMENT_NOTICE_DUE carries: every content field the model forms need that the service holds. */
export const PaymentNoticeDueFields = {
  payment_id: t.String({ description: 'The payment (POST /v1/payments/{payment_id}/notice confirms its notice)' }),
  reference: t.String({ description: 'DRS-{authorizer_unique_id}-{payment_id}: the reference the debit carries' }),
  authorizer_unique_id: t.String({ description: 'The borrower' }),
  merchant_ref: t.Union([t.String(), t.Null()], { description: 'The lender’s own reference of the borrower’s loan, as enrolled' }),
  amount: Int({ description: 'Cents: the amount debited' }),
  debit_on: t.String({ format: 'date', description: 'The day of the debit (the lender’s time zone)' }),
  payment_channel: OneOf(RAILS, { description: 'ach or card: how the debit is made' }),
  notice_class: OneOf(NOTICE_CLASSES, { description: 'first, unusual or reinitiation (the payday rule’s notices), or regular when only Regulation E asks' }),
  requirements: t.Array(OneOf(['cfpb', 'reg_e'] as const), { description: 'cfpb: 12 CFR 1041.9(b); reg_e: 12 CFR 1005.10(d) (the amount varies)' }),
  notice_channel: OneOf(NOTICE_CHANNELS, { description: 'The channel the window was set for (the policy’s notice_channel)' }),
  notice_due_from: t.Union([Instant, t.Null()], { description: 'Send it no earlier than this' }),
  notice_due_by: t.Union([Instant, t.Null()], { description: 'Send it no later than this' }),
  failed_attempt: t.Union(
    [t.Object({ attempted_on: t.Union([Day, t.Null()]), amount: Int({ description: 'Cents' }), return_code: t.Union([t.String(), t.Null()]) }), t.Null()],
    { description: 'For a reinitiation: the returned attempt it presents again (its date, amount and return code); null otherwise' },
  ),
};

export const PAYMENT_NOTICE_DUE_EXAMPLE = {
  payment_id: '019a4f3e-0000-7000-8000-000000000002',
  reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000002',
  authorizer_unique_id: 'loan-1001',
  merchant_ref: 'L-1001',
  amount: 42500,
  debit_on: '2026-12-07',
  payment_channel: 'ach',
  notice_class: 'reinitiation',
  requirements: ['cfpb'],
  notice_channel: 'electronic',
  notice_due_from: '2026-11-30T15:00:00.000Z',
  notice_due_by: '2026-12-03T05:59:59.999Z',
  failed_attempt: { attempted_on: '2026-11-24', amount: 42500, return_code: 'R01' },
};

/** POST /v1/payments/{id}/notice. */
export const NoticeSentBody = t.Object(
  {
    sent_at: t.String({ format: 'date-time', description: 'When the lender sent the notice (not in the future; inside the payment’s window for this channel)' }),
    channel: OneOf(NOTICE_CHANNELS, { description: 'How it was sent: its window is the one for this channel' }),
    evidence_ref: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'The lender’s reference to its copy of the notice' })),
  },
  { additionalProperties: false, examples: [{ sent_at: '2026-12-01T16:00:00Z', channel: 'electronic', evidence_ref: 'mail-log-7781' }] },
);

export const PaymentNoticeView = t.Object(
  {
    payment_id: t.String(),
    reference: t.String(),
    authorizer_unique_id: t.String(),
    status: t.String({ description: 'The payment’s status: scheduled until its day' }),
    amount: Int({ description: 'Cents' }),
    debit_on: t.Union([Day, t.Null()]),
    notice_class: t.Union([OneOf(NOTICE_CLASSES), t.Null()]),
    requirements: t.Array(t.String()),
    notice_due_from: t.Union([Instant, t.Null()]),
    notice_due_by: t.Union([Instant, t.Null()]),
    notice_sent_at: t.Union([Instant, t.Null()]),
    notice_sent_channel: t.Union([OneOf(NOTICE_CHANNELS), t.Null()]),
    evidence_ref: t.Union([t.String(), t.Null()]),
  },
  {
    examples: [
      {
        payment_id: '019a4f3e-0000-7000-8000-000000000002',
        reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000002',
        authorizer_unique_id: 'loan-1001',
        status: 'scheduled',
        amount: 42500,
        debit_on: '2026-12-07',
        notice_class: 'unusual',
        requirements: ['cfpb'],
        notice_due_from: '2026-11-30T15:00:00.000Z',
        notice_due_by: '2026-12-03T05:59:59.999Z',
        notice_sent_at: '2026-12-01T16:00:00.000Z',
        notice_sent_channel: 'electronic',
        evidence_ref: 'mail-log-7781',
      },
    ],
  },
);

const Transfer = t.Object(
  {
    date: t.String({ format: 'date', description: 'The day of the transfer (the lender’s time zone), on or after the day the authorization was obtained' }),
    max_amount_cents: Int({ minimum: 1, maximum: 100_000_000, description: 'The most the transfer may be, in cents (a debit is at most this and at most the collectable amount)' }),
    channel: OneOf(RAILS, { description: 'ach or card: the payment channel the borrower authorized for it' }),
  },
  { additionalProperties: false },
);

/** POST /v1/payment_enrollments/{id}/authorizations. */
export const AuthorizationBody = t.Object(
  {
    obtained_at: t.String({ format: 'date-time', description: 'When the borrower gave it: not in the future, no earlier than the consumer-rights notice was sent, after a revocation' }),
    method: OneOf(AUTHORIZATION_METHODS, { description: 'signed (a written or electronic signature), recorded_call (an oral authorization recorded), electronic' }),
    evidence_ref: t.String({ minLength: 1, maxLength: 200, description: 'The lender’s reference to its copy of the authorization' }),
    transfers: t.Array(Transfer, { minItems: 1, maxItems: 60, description: 'Each further transfer: its date, its maximum amount and its channel (12 CFR 1041.8(c)(2))' }),
    fee_max_amount_cents: t.Optional(
      Int({ minimum: 0, maximum: 100_000_000, description: 'The stated maximum of a late or returned-item fee the authorization allows (1041.8(c)(3)(iii)(B)); recorded with it. The service debits no fees' }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        obtained_at: '2026-12-02T15:00:00Z',
        method: 'signed',
        evidence_ref: 'auth-2026-12-02-7781',
        transfers: [
          { date: '2026-12-15', max_amount_cents: 20000, channel: 'ach' },
          { date: '2026-12-31', max_amount_cents: 22500, channel: 'ach' },
        ],
      },
    ],
  },
);

const Reauthorization = t.Object({
  obtained_at: t.String({ format: 'date-time' }),
  method: OneOf(AUTHORIZATION_METHODS),
  evidence_ref: t.String(),
  transfers: t.Array(Transfer),
  fee_max_amount_cents: t.Optional(Int()),
  recorded_at: t.String({ format: 'date-time' }),
});

export const AuthorizationList = t.Object(
  {
    authorizer_unique_id: t.String(),
    authorizations: t.Array(Reauthorization, { description: 'Every new authorization recorded for the borrower, latest first (at most 100): each kept for good; the first is the one in force' }),
  },
  {
    examples: [
      {
        authorizer_unique_id: 'loan-1001',
        authorizations: [
          {
            obtained_at: '2026-12-02T15:00:00.000Z',
            method: 'signed',
            evidence_ref: 'auth-2026-12-02-7781',
            transfers: [{ date: '2026-12-15', max_amount_cents: 20000, channel: 'ach' }],
            recorded_at: '2026-12-02T15:04:11.000Z',
          },
        ],
      },
    ],
  },
);

export const AuthorizationAnswer = t.Object(
  {
    authorizer_unique_id: t.String(),
    state: t.String({ description: 'The borrower’s monitor state' }),
    blocked_reason: t.Union([t.String(), t.Null()], { description: 'null once the payday rule’s block lifted' }),
    reauthorization: Reauthorization,
  },
  {
    examples: [
      {
        authorizer_unique_id: 'loan-1001',
        state: 'monitored',
        blocked_reason: null,
        reauthorization: {
          obtained_at: '2026-12-02T15:00:00.000Z',
          method: 'signed',
          evidence_ref: 'auth-2026-12-02-7781',
          transfers: [{ date: '2026-12-15', max_amount_cents: 20000, channel: 'ach' }],
          recorded_at: '2026-12-02T15:04:11.000Z',
        },
      },
    ],
  },
);

/** POST /v1/payment_enrollments/{id}/payments. */
export const ConsumerPaymentBody = t.Object(
  {
    consumer_initiated: t.Literal(true, { description: 'The borrower asked for this single payment (12 CFR 1041.8(d)); the only kind this creates' }),
    amount_cents: Int({ minimum: 1, maximum: 100_000_000, description: 'Cents, at most the borrower’s collectable amount' }),
    date: t.String({ format: 'date', description: 'The day it goes out (the lender’s time zone): today or later' }),
  },
  { additionalProperties: false, examples: [{ consumer_initiated: true, amount_cents: 10000, date: '2026-12-03' }] },
);

export const ConsumerPaymentAnswer = t.Object(
  {
    payment_id: t.String(),
    reference: t.String(),
    authorizer_unique_id: t.String(),
    amount: Int({ description: 'Cents' }),
    debit_on: t.String({ format: 'date' }),
    notice_class: t.Literal('consumer_initiated'),
    status: t.Literal('initiating'),
  },
  {
    examples: [
      {
        payment_id: '019a4f3e-0000-7000-8000-000000000003',
        reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000003',
        authorizer_unique_id: 'loan-1001',
        amount: 10000,
        debit_on: '2026-12-03',
        notice_class: 'consumer_initiated',
        status: 'initiating',
      },
    ],
  },
);

/** POST /v1/payment_enrollments/{id}/reg_e_election. */
export const RegEElectionBody = t.Object(
  { election: t.Union([RegEElectionSchema, t.Null()], { description: 'The borrower’s election; null goes back to the policy’s reg_e_election' }) },
  { additionalProperties: false, examples: [{ election: { type: 'outside_range', min_cents: 5000, max_cents: 30000 } }] },
);
export const RegEElectionAnswer = t.Object(
  {
    authorizer_unique_id: t.String(),
    election: t.Union([RegEElectionSchema, t.Object({ type: t.Literal('none') })], { description: 'The election that now applies' }),
    from_policy: t.Boolean({ description: 'true when it is the policy’s (the borrower has none of its own)' }),
  },
  { examples: [{ authorizer_unique_id: 'loan-1001', election: { type: 'outside_range', min_cents: 5000, max_cents: 30000 }, from_policy: false }] },
);
