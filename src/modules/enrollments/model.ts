import { t } from 'elysia';
import { HELD_REASONS, MONITOR_STATES, RAILS } from '../../../db/schema/enums';
import { objectSchema, type FieldSpec } from '../../platform/fields';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';
import { AUTHORIZER_FIELDS } from '../authorizers/fields';
import { MERCHANT_REF } from '../payment-connections/model';

export const MAX_BORROWERS = 1000;
export const MAX_COLLECTABLE_CENTS = 10_000_000;

const { debit_card_number: _c, cvv: _v, expiration_month: _m, expiration_year: _y, ...identity } = AUTHORIZER_FIELDS;

export const CARD_FIELDS: Record<string, FieldSpec> = {
  debit_card_number: { kind: 'string', max: 23, description: 'Tokenized at the processor; never stored' },
  cvv: { kind: 'string', max: 4 },
  expiration_month: { kind: 'int', min: 1, max: 12 },
  expiration_year: { kind: 'int', min: 2000, max: 2100 },
};

export const CHARGE_INSTRUMENT: FieldSpec = {
  kind: 'object',
  description: 'Exactly one of processor_token (with card_last4) or card; omitted means ACH from the bank account',
  fields: {
    processor_token: { kind: 'string', min: 1, max: 255, description: 'Opaque processor token (Stripe pm_…)' },
    card_last4: { kind: 'string', max: 4, pattern: /^\d{4}$/, description: '4 digits; required with processor_token' },
    card: { kind: 'object', required: ['debit_card_number', 'expiration_month', 'expiration_year'], fields: CARD_FIELDS },
  },
};

/** A borrower of an enrollment request: the identity fields (no card fields: cards go in charge_instrument) and the debt. */
export const BORROWER_FIELDS: Record<string, FieldSpec> = {
  ...identity,
  collectable_amount: { kind: 'int', min: 1, max: MAX_COLLECTABLE_CENTS, description: 'Cents; no single payment exceeds it' },
  days_past_due: { kind: 'int', min: 0, max: 100_000, description: 'As of the request' },
  merchant_ref: { kind: 'string', min: 1, max: 64, pattern: MERCHANT_REF, description: 'a processor key tag; omitted means the default key' },
  charge_instrument: CHARGE_INSTRUMENT,
};
export const BORROWER_REQUIRED = [
  'authorizer_unique_id',
  'first_name',
  'last_name',
  'phone_number',
  'date_of_birth',
  'address',
  'account_number',
  'routing_number',
  'collectable_amount',
  'days_past_due',
];

const borrowerExample = {
  authorizer_unique_id: 'loan-1001',
  first_name: 'Ada',
  last_name: 'Lovelace',
  phone_number: '2025550143',
  date_of_birth: { day: 10, month: 12, year: 1985 },
  address: { zip_code: '02139' },
  ssn: '123-45-6789',
  account_number: '0001234567',
  routing_number: '110000000',
  collectable_amount: 42500,
  days_past_due: 35,
};

export const Borrower = objectSchema(BORROWER_FIELDS, BORROWER_REQUIRED, { title: 'Borrower', examples: [borrowerExample] });
export const EnrollmentBody = t.Object(
  { borrowers: t.Array(Borrower, { minItems: 1, maxItems: MAX_BORROWERS }) },
  { additionalProperties: false, examples: [{ borrowers: [borrowerExample] }] },
);

export const OUTCOMES = ['enrolled', 'updated', 'held', 'failed'] as const;
export const FAILED_REASONS = ['duplicate_in_request', 'tokenization_failed', 'card_tokenization_failed', 'chunk_failed', 'monitor_open_failed'] as const;

export const EnrollmentResult = t.Object({
  authorizer_unique_id: t.Nullable(t.String()),
  outcome: OneOf(OUTCOMES),
  reason: t.Optional(OneOf([...HELD_REASONS, ...FAILED_REASONS] as [string, ...string[]])),
  message: t.Optional(t.String()),
});

export const EnrollmentResponse = t.Object(
  {
    results: t.Array(EnrollmentResult, { description: 'One per borrower sent, in request order' }),
    enrolled: Int(),
    updated: Int(),
    held: Int(),
    failed: Int(),
    already_enrolled: Int({ description: 'Always 0; kept so older parsers keep working' }),
  },
  {
    examples: [
      {
        results: [
          { authorizer_unique_id: 'loan-1001', outcome: 'enrolled' },
          { authorizer_unique_id: 'loan-1002', outcome: 'held', reason: 'institution_not_supported', message: 'The bank is not readable yet; monitoring starts when it is' },
          { authorizer_unique_id: 'loan-1003', outcome: 'failed', reason: 'tokenization_failed', message: 'routing_number fails the ABA checksum' },
        ],
        enrolled: 1,
        updated: 0,
        held: 1,
        failed: 1,
        already_enrolled: 0,
      },
    ],
  },
);

export const IdsBody = t.Object(
  { authorizer_unique_ids: t.Array(t.String({ minLength: 1, maxLength: 255 }), { minItems: 1, maxItems: MAX_BORROWERS }) },
  { additionalProperties: false, examples: [{ authorizer_unique_ids: ['loan-1001', 'loan-1002'] }] },
);

export const RemovalResponse = t.Object(
  {
    results: t.Array(t.Object({ authorizer_unique_id: t.String(), outcome: OneOf(['removed', 'not_monitored', 'unknown'] as const) })),
    removed: Int(),
    not_monitored: Int(),
    unknown: Int(),
  },
  {
    examples: [
      {
        results: [
          { authorizer_unique_id: 'loan-1001', outcome: 'removed' },
          { authorizer_unique_id: 'loan-1002', outcome: 'not_monitored' },
          { authorizer_unique_id: 'loan-9999', outcome: 'unknown' },
        ],
        removed: 1,
        not_monitored: 1,
        unknown: 1,
      },
    ],
  },
);

export const ErasureResponse = t.Object(
  {
    results: t.Array(t.Object({ authorizer_unique_id: t.String(), outcome: OneOf(['deleted', 'unknown'] as const) })),
    deleted: Int(),
    unknown: Int(),
  },
  { examples: [{ results: [{ authorizer_unique_id: 'loan-1001', outcome: 'deleted' }], deleted: 1, unknown: 0 }] },
);

const LedgerEntry = t.Object({
  reference: t.String(),
  kind: OneOf(['credit', 'reversal'] as const),
  amount: Int({ description: 'Cents' }),
  at: t.String({ format: 'date-time' }),
});

export const EnrollmentView = t.Object(
  {
    authorizer_unique_id: t.String(),
    state: OneOf(MONITOR_STATES),
    reason: t.Union([t.String(), t.Null()]),
    blocked_reason: t.Union([t.String(), t.Null()]),
    window_started_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    window_ends_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    collectable_amount: Int({ description: 'Cents' }),
    days_past_due: Int(),
    merchant_ref: t.Union([t.String(), t.Null()]),
    instrument: t.Object({
      rail: OneOf(RAILS),
      bank_name: t.Optional(t.Union([t.String(), t.Null()])),
      card_brand: t.Optional(t.Union([t.String(), t.Null()])),
      last4: t.Union([t.String(), t.Null()]),
    }),
    last_read: t.Union([t.Object({ balance_cents: t.Union([Int(), t.Null()]), at: t.String({ format: 'date-time' }) }), t.Null()]),
    next_read_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    payments_used: Int(),
    ledger: t.Object({ entries: t.Array(LedgerEntry), collected: Int(), reversed: Int(), net: Int() }),
  },
  {
    examples: [
      {
        authorizer_unique_id: 'loan-1001',
        state: 'monitored',
        reason: null,
        blocked_reason: null,
        window_started_at: '2026-11-21T10:00:00.000Z',
        window_ends_at: '2026-12-21T10:00:00.000Z',
        collectable_amount: 42500,
        days_past_due: 35,
        merchant_ref: null,
        instrument: { rail: 'ach', bank_name: 'Sandbox Bank', last4: '4567' },
        last_read: { balance_cents: 1234567, at: '2026-11-21T10:00:01.000Z' },
        next_read_at: '2026-11-21T14:00:01.000Z',
        payments_used: 0,
        ledger: { entries: [], collected: 0, reversed: 0, net: 0 },
      },
    ],
  },
);

export const EnrollmentList = t.Object(
  { enrollments: t.Array(EnrollmentView), has_more: t.Boolean(), next_page_token: t.Union([t.String(), t.Null()]) },
  { examples: [{ enrollments: [], has_more: false, next_page_token: null }] },
);

export const EnrollmentListQuery = t.Object({
  state: t.Optional(OneOf(MONITOR_STATES)),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  ...pageTokenQuery,
});
export { MONITOR_STATES } from '../../../db/schema/enums';
