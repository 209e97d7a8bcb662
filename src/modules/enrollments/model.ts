import { Type } from '@sinclair/typebox';
import { t } from 'elysia';
import { BALANCE_KINDS, HELD_REASONS, LENDER_VALIDATION_METHODS, REVOCATION_CHANNELS, LINK_HEALTHS, MONITOR_STATES, RAILS, PAY_FREQUENCIES, PAY_CYCLE_SOURCES } from '../../../db/schema/enums';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';
import { textSchema } from '../../platform/fields';
import { Address, AuthorizerId, BankLinkView, DateOfBirth, IDENTITY_PROPERTIES, Metadata } from '../authorizers/fields';
import { MERCHANT_REF } from '../payment-connections/model';
import { ReusedFrom } from '../balance-requests/model';
import { BLOCKED_REASONS } from './monitor';
import { RightsNoticeView } from '../rights-notices/model';

/** A linked account's health (balance-requests/link-health.ts). */
const LinkHealthView = t.Object(
  {
    status: OneOf(LINK_HEALTHS, {
      description:
        'ok; relink_required: the borrower must sign in again (read again by itself once the provider says the same link is well); expiring: consent ends at expires_at (still read); revoked, closed, not_transactable: no debit (blocked_reason account_revoked, account_closed, account_not_transactable) until the provider says it is well again',
    }),
    since: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Since when it has had this health (null: always ok)' }),
    expires_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'expiring: the provider’s date' }),
  },
  { description: 'The link’s health as its provider last said; while not ok the link is probed with the provider’s free call, not read' },
);

export const MAX_BORROWERS = 1000;
export const MAX_COLLECTABLE_CENTS = 10_000_000;

export const CardFields = Type.Object(
  {
    debit_card_number: Type.String({ maxLength: 23, description: 'Tokenized at the processor; never stored' }),
    cvv: Type.Optional(Type.String({ maxLength: 4 })),
    expiration_month: Int({ minimum: 1, maximum: 12 }),
    expiration_year: Int({ minimum: 2000, maximum: 2100 }),
  },
  { additionalProperties: false },
);

export const ChargeInstrument = Type.Object(
  {
    processor_token: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Opaque processor token (Stripe pm_…)' })),
    card_last4: Type.Optional(Type.String({ maxLength: 4, pattern: '^\\d{4}$', description: '4 digits; required with processor_token' })),
    card: Type.Optional(CardFields),
  },
  { additionalProperties: false, description: 'Exactly one of processor_token (with card_last4) or card; omitted means ACH from the bank account' },
);

/** The borrower's authorization to debit, as the lender obtained it. */
export const Authorization = Type.Object(
  {
    obtained_at: Type.String({ format: 'date-time', description: 'When the borrower authorized the debit; not in the future. A later one lifts a stop that waits on a new authorization' }),
    reference: Type.Optional(textSchema({ minLength: 1, maxLength: 255, description: "The lender's reference of the authorization" })),
  },
  { additionalProperties: false },
);

/** The lender's own evidence that the bank account was validated before its first debit (Nacha's WEB debit rule). */
export const AccountValidation = Type.Object(
  {
    method: OneOf(LENDER_VALIDATION_METHODS, {
      description: 'prenote (a zero-dollar prenotification that was not returned), micro_deposits (amounts the borrower confirmed), third_party (an account-validation service), other',
    }),
    reference: Type.Optional(textSchema({ minLength: 1, maxLength: 255, description: "The lender's reference of the validation (the prenote's trace number, the service's id)" })),
    validated_at: Type.String({ format: 'date-time', description: 'When the account was validated; not in the future' }),
  },
  {
    additionalProperties: false,
    description:
      'How the lender validated the bank account (ACH only). Kept on the account as its evidence when it is later than the evidence it has; a bank_link, or the sandbox, is evidence by itself. Under the policy’s require_account_validation, no debit goes to an account without evidence given since its number last changed',
  },
);

/** A borrower's revocation of its authorization as the lender received it (Regulation E, 12 CFR 1005.10(c)). */
export const RevocationBody = Type.Object(
  {
    received_at: Type.String({ format: 'date-time', description: 'When the lender received the revocation; not in the future' }),
    channel: OneOf(REVOCATION_CHANNELS, { description: 'How it came: written (a letter), electronic (an email, a form), phone, in_person, other' }),
    evidence_ref: Type.Optional(textSchema({ minLength: 1, maxLength: 255, description: "The lender's reference of its record of it (a ticket, a recording's id)" })),
  },
  { additionalProperties: false, examples: [{ received_at: '2026-11-24T15:00:00.000Z', channel: 'electronic', evidence_ref: 'ticket-8812' }] },
);
export const RevocationView = t.Object({ received_at: t.String({ format: 'date-time' }), channel: OneOf(REVOCATION_CHANNELS), evidence_ref: t.Union([t.String(), t.Null()]) });
export const RevocationAnswer = t.Object(
  {
    authorizer_unique_id: t.String(),
    state: OneOf(MONITOR_STATES),
    blocked_reason: t.Union([t.String(), t.Null()], { description: 'authorization_revoked while the revocation holds for a monitored borrower' }),
    revocation: RevocationView,
  },
  {
    examples: [
      {
        authorizer_unique_id: 'loan-1001',
        state: 'monitored',
        blocked_reason: 'authorization_revoked',
        revocation: { received_at: '2026-11-24T15:00:00.000Z', channel: 'electronic', evidence_ref: 'ticket-8812' },
      },
    ],
  },
);

/** A borrower of an enrollment request: the identity fields (cards go in charge_instrument) and the debt. */
const BORROWER_PROPERTIES = {
  ...IDENTITY_PROPERTIES,
  first_name: textSchema({ maxLength: 255 }),
  last_name: textSchema({ maxLength: 255 }),
  phone_number: Type.String({ maxLength: 32, description: 'US phone number; exported as E.164' }),
  date_of_birth: DateOfBirth,
  address: Address,
  account_number: Type.String({ maxLength: 34, description: 'Bank account number; not validated for length or format' }),
  routing_number: Type.String({ maxLength: 9, description: 'ABA routing number, 9 digits; leading zeros significant' }),
  metadata: Type.Optional(Metadata),
  collectable_amount: Int({ minimum: 1, maximum: MAX_COLLECTABLE_CENTS, description: 'Cents; no single payment exceeds it' }),
  days_past_due: Int({ minimum: 0, maximum: 100_000, description: 'As of the request' }),
  merchant_ref: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, pattern: MERCHANT_REF.source, description: 'a processor key tag; omitted means the default key' }),
  ),
  charge_instrument: Type.Optional(ChargeInstrument),
  cfpb_covered: Type.Optional(
    Type.Boolean({ description: "Overrides the collection policy's cfpb_covered for this borrower (the payday rule's two-failure stop)" }),
  ),
  authorization: Type.Optional(Authorization),
  account_validation: Type.Optional(AccountValidation),
};

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

/** One borrower: checked alone, so a borrower that does not fit fails by itself (tokenization_failed). */
export const Borrower = Type.Object(BORROWER_PROPERTIES, { additionalProperties: false, title: 'Borrower', examples: [borrowerExample] });
/** The request as the OpenAPI document shows it, every borrower included. */
export const EnrollmentBody = t.Object(
  { borrowers: t.Array(Borrower, { minItems: 1, maxItems: MAX_BORROWERS }) },
  { additionalProperties: false, examples: [{ borrowers: [borrowerExample] }] },
);
/**
 * The request as the route checks it: the list, and in each borrower a well-formed authorizer_unique_id (the
 * results are told apart by it; a malformed one makes the request malformed: 400 naming it). The rest of a
 * borrower is checked against Borrower one by one, so a failing borrower never fails the others.
 */
export const EnrollmentRequest = t.Object(
  {
    borrowers: t.Array(Type.Object({ authorizer_unique_id: AuthorizerId }, { additionalProperties: true }), {
      minItems: 1,
      maxItems: MAX_BORROWERS,
    }),
  },
  { additionalProperties: false },
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
  { authorizer_unique_ids: t.Array(AuthorizerId, { minItems: 1, maxItems: MAX_BORROWERS }) },
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
    blocked_reason: t.Union([OneOf(BLOCKED_REASONS), t.Null()], {
      description:
        'Why no payment is initiated although the borrower is monitored: no_processor_key, verification_required, return_rate_paused, late_return_window, stale_balance, current_only, account_revoked, account_closed, account_not_transactable (each clears by itself or on a re-send); a collection rule that stands until the lender acts (reauthorization_required, reinitiation_limit, reinitiation_window, amount_changed; the borrower is not read meanwhile, and a re-send with a later authorization or a new amount asks the rules again); or the state of the borrower’s bank account, set by a return of any borrower’s debit to it (account_invalid, account_frozen, account_unauthorized, account_deceased: not read meanwhile; account_unauthorized lifts on a re-send with an authorization.obtained_at after the account’s last return, or with another account); account_change_pending (a Notification of Change on the account not applied yet: at once under the policy’s automatic, on the lender’s word under review) or validation_required (the policy requires validation evidence and the account has none since its number last changed: a re-send with account_validation or a bank_link lifts it). null when nothing blocks.',
    }),
    window_started_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    window_ends_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    collectable_amount: Int({ description: 'Cents' }),
    days_past_due: Int(),
    merchant_ref: t.Union([t.String(), t.Null()]),
    bank_account_id: t.Union([t.String(), t.Null()], {
      description: 'The bank account (GET /v1/bank_accounts/{id}) an ACH borrower’s debits go to; null for a card borrower and after erasure',
    }),
    instrument: t.Object({
      rail: OneOf(RAILS),
      bank_name: t.Optional(t.Union([t.String(), t.Null()])),
      card_brand: t.Optional(t.Union([t.String(), t.Null()])),
      last4: t.Union([t.String(), t.Null()]),
    }),
    last_read: t.Union([
      t.Object({
        balance_cents: t.Union([Int(), t.Null()]),
        at: t.String({ format: 'date-time' }),
        balance_kind: t.Optional(OneOf(BALANCE_KINDS, { description: 'Linked accounts (bank_link) only: available, or current when the provider had no available balance' })),
        as_of: t.Optional(t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Linked accounts only: the provider’s time for the balance' })),
        reused_from: t.Optional(ReusedFrom),
      }),
      t.Null(),
    ]),
    bank_link: t.Union([t.Composite([BankLinkView, t.Object({ health: LinkHealthView })]), t.Null()], {
      description: 'The borrower’s linked account, if one was sent: never its access token; with its health as the provider last said',
    }),
    next_read_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    pay_cycle: t.Union(
      [
        t.Object({
          frequency: OneOf(PAY_FREQUENCIES),
          next_payday: t.Union([t.String({ format: 'date' }), t.Null()], { description: 'The next predicted payday (UTC date); null when the cycle is irregular or unknown' }),
          confidence: t.Number({ minimum: 0, maximum: 1 }),
          source: OneOf(PAY_CYCLE_SOURCES, { description: 'What it was learned from: balances, the borrower’s balance reads (each rise a deposit); transactions, the account’s last 90 days of credits (a linked account at Plaid or Stripe, the HTTP provider, the sandbox’s 9997 accounts) with the balance rises after them' }),
        }),
        t.Null(),
      ],
      {
        description:
          'The pay cycle learned from the borrower’s history: its account’s transactions once read (shortly after enrollment, where the source keeps them), else its balance reads from the first monitoring read; null before. Reads are timed around its paydays when the collection policy’s read_cadence is payday',
      },
    ),
    payments_used: Int({ description: "Presentments of the debt's open chain: the original and its reinitiations (at most 1 + max_reinitiations), kept across removal and re-send; 0 when the next payment starts a new chain" }),
    cfpb_covered: t.Union([t.Boolean(), t.Null()], { description: "This borrower's override of the policy's cfpb_covered; null: the policy decides" }),
    authorization: t.Union([t.Object({ obtained_at: t.String({ format: 'date-time' }), reference: t.Union([t.String(), t.Null()]) }), t.Null()]),
    revocation: t.Union([RevocationView, t.Null()], {
      description: 'The borrower’s latest revocation of its authorization, as the lender recorded it (POST …/revocation); while no authorization is dated after it, no debit',
    }),
    scheduled_payment: t.Union(
      [
        t.Object({
          payment_id: t.String({ description: 'The payment (POST /v1/payments/{payment_id}/notice confirms its notice)' }),
          reference: t.String(),
          amount: Int({ description: 'Cents' }),
          debit_on: t.String({ format: 'date', description: 'The day it is debited, not before (the lender’s time zone)' }),
          notice_class: t.Union([t.String(), t.Null()], { description: 'first, regular, unusual or reinitiation (docs/payments.md, Payment notices)' }),
          notice: t.Union(
            [
              t.Object({
                requirements: t.Array(t.String(), { description: 'cfpb (12 CFR 1041.9(b)), reg_e (12 CFR 1005.10(d))' }),
                due_from: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Send it no earlier than this' }),
                due_by: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Send it no later than this: unconfirmed by then, the payment is voided' }),
                sent_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the lender confirmed sending it; null until then' }),
              }),
              t.Null(),
            ],
            { description: 'The notice it waits for; null when it needs none (only the policy’s notice_days)' },
          ),
        }),
        t.Null(),
      ],
      { description: 'A payment waiting for its day: a notice period (notice_days) or a notice the rules ask for; null when none' },
    ),
    reauthorization: t.Union(
      [
        t.Object({
          obtained_at: t.String({ format: 'date-time' }),
          method: t.String(),
          evidence_ref: t.String(),
          transfers: t.Array(t.Object({ date: t.String({ format: 'date' }), max_amount_cents: Int(), channel: t.String() })),
          fee_max_amount_cents: t.Optional(Int()),
          recorded_at: t.String({ format: 'date-time' }),
        }),
        t.Null(),
      ],
      { description: 'The borrower’s new authorization under the payday rule (POST …/authorizations): while covered, debits go only on its dates, within its amounts and channel; null when none' },
    ),
    reg_e_election: t.Union([t.Object({ type: t.String() }, { additionalProperties: true }), t.Null()], {
      description: 'The borrower’s Regulation E election (POST …/reg_e_election); null: the policy’s reg_e_election',
    }),
    rights_notice: t.Union([RightsNoticeView, t.Null()], {
      description:
        'The latest consumer-rights notice (12 CFR 1041.9(c)) owed the borrower after its second consecutive failed attempt for funds, under the CFPB payday rule: due_by, whether it is overdue, and when and how the lender recorded sending it (POST /v1/payment_enrollments/{authorizer_unique_id}/rights_notice); null when none was ever due',
    }),
    payments: t.Array(
      t.Object({
        reference: t.String(),
        amount: Int({ description: 'Cents' }),
        status: t.String({ description: 'initiating until the processor answers, then the latest event status' }),
        attempt: Int({ description: '1 for an original (or a payment under a new authorization), 2 and 3 for reinitiations' }),
        reinitiation_of: t.Union([t.String(), t.Null()], { description: "The original's reference, for a reinitiation" }),
        notice_class: t.Union([t.String(), t.Null()], { description: 'first, regular, unusual, reinitiation or consumer_initiated (docs/payments.md, Payment notices); null for a payment made before classes were kept' }),
        created_at: t.String({ format: 'date-time' }),
        reported: t.Union(
          [
            t.Object({
              status: t.String({ description: 'The status the lender uploaded for this payment' }),
              return_code: t.Union([t.String(), t.Null()]),
              reported_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the upload recorded it' }),
              held_because: t.Union([t.String(), t.Null()], {
                description: 'Why the report stands unconfirmed (the processor says otherwise, still processing, cannot be asked); null while the processor is being asked',
              }),
            }),
            t.Null(),
          ],
          {
            description:
              "A lender's uploaded outcome of this payment that its processor has not confirmed. The payment's status is the processor's word: the report decides nothing (no ledger entry, no reinitiation) until the processor says the same, except that an uploaded R08 or unauthorized return stops the borrower at once. null when there is none, or once the processor confirmed it",
          },
        ),
      }),
      { description: "The borrower's payments, oldest first" },
    ),
    ledger: t.Object({
      entries: t.Array(LedgerEntry),
      collected: Int({ description: 'Cents credited' }),
      reversed: Int({ description: 'Cents reversed' }),
      net: Int({ description: 'Cents: collected less reversed' }),
    }),
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
        bank_account_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
        instrument: { rail: 'ach', bank_name: 'Sandbox Bank', last4: '4567' },
        last_read: { balance_cents: 1234567, at: '2026-11-21T10:00:01.000Z' },
        bank_link: null,
        next_read_at: '2026-11-24T08:00:00.000Z',
        pay_cycle: { frequency: 'biweekly', next_payday: '2026-11-27', confidence: 0.92, source: 'balances' },
        payments_used: 0,
        cfpb_covered: null,
        authorization: null,
        revocation: null,
        scheduled_payment: null,
        reauthorization: null,
        reg_e_election: null,
        rights_notice: null,
        payments: [],
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

/** The answer of POST /v1/payment_enrollments/{id}/bank_link/check: the link, never its token, and its health. */
export const BankLinkCheckResponse = t.Object(
  {
    authorizer_unique_id: t.String(),
    bank_link: t.Composite([BankLinkView, t.Object({ health: LinkHealthView })]),
  },
  {
    examples: [
      { authorizer_unique_id: 'loan-1001', bank_link: { provider: 'plaid', account_last4: 'x7Qa', health: { status: 'ok', since: '2026-11-21T10:00:00.000Z', expires_at: null } } },
    ],
  },
);
