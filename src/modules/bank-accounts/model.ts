import { t } from 'elysia';
import { ACCOUNT_TYPES, BANK_ACCOUNT_STATES, CHANGE_CODES, CHANGE_SOURCES, CHANGE_STATUSES, VALIDATION_METHODS } from '../../../db/schema/enums';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';

/** A Notification of Change as the API and its events show it: never the corrected number, only its last four. */
export const AccountChangeFields = {
  bank_account_id: t.String(),
  change_id: t.String(),
  code: OneOf(CHANGE_CODES, { description: 'C01 account number, C02 routing number, C03 both, C05 account type, C06 number and type, C07 all three, C09 individual id, C13 addenda format' }),
  source: OneOf(CHANGE_SOURCES, { description: 'Where it was read: a results upload, the bank-data source, or a processor' }),
  reference: t.Union([t.String(), t.Null()], { description: 'The payment the bank answered with it' }),
  old_last4: t.String({ description: 'The account number’s last four before it' }),
  new_last4: t.Union([t.String(), t.Null()], { description: 'Its last four after it (the same when the number does not change)' }),
  status: OneOf(CHANGE_STATUSES, {
    description: 'received: to be applied at once (automatic); review: debits to the account held until the lender applies it; applied; recorded: nothing the service sends changes (C09, C13)',
  }),
  received_at: t.String({ format: 'date-time' }),
  due_by: t.String({ format: 'date-time', description: 'Six banking days after receipt (Nacha’s time to make the change): under review, apply it by then' }),
  applied_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  applied_by: t.Union([t.String(), t.Null()], { description: 'automatic, lender, or none (recorded only)' }),
};
export const AccountChangeView = t.Object(AccountChangeFields, {
  examples: [
    {
      bank_account_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
      change_id: '019a4f40-1111-7b2a-9f00-1c2d3e4f5a6b',
      code: 'C01',
      source: 'upload',
      reference: null,
      old_last4: '4567',
      new_last4: '9012',
      status: 'applied',
      received_at: '2026-11-24T15:02:11.000Z',
      due_by: '2026-12-02T23:59:59.999Z',
      applied_at: '2026-11-25T09:14:00.000Z',
      applied_by: 'lender',
    },
  ],
});

/** One of the lender's bank accounts: never its fingerprint or its number. */
export const BankAccountView = t.Object(
  {
    id: t.String(),
    last4: t.String({ description: 'The last four characters of the account number' }),
    state: OneOf(BANK_ACCOUNT_STATES, {
      description:
        'ok; invalid (R02, R03, R04, R12, R13, R20), frozen (R16), unauthorized (R05, R07, R10, R11, R29, R51), deceased (R14, R15): set by a return of any borrower’s debit to it, and no payment is made or sent to it for any borrower on it while it holds (unauthorized: but for a borrower whose authorization is dated after last_return_at). It never goes back to ok by itself; one invalid by an R12 alone (sold to another bank) is ok again once a Notification of Change with its new routing number is applied',
    }),
    state_since: t.String({ format: 'date-time', description: 'When it took its state (for ok, when the account was first enrolled)' }),
    return_codes: t.Array(t.String(), { description: 'The return codes that set or kept its state, each once, in the order they came' }),
    state_reference: t.Union([t.String(), t.Null()], { description: 'The reference of the payment whose return set its state; null while ok' }),
    last_return_at: t.Union([t.String({ format: 'date-time' }), t.Null()], {
      description: 'Its latest return that set or kept its state: a borrower’s authorization must be later than it to debit an unauthorized account again',
    }),
    account_type: t.Union([OneOf(ACCOUNT_TYPES), t.Null()], { description: 'checking or savings, as a Notification of Change (C05, C06, C07) said; null: as the processor takes it' }),
    validation: t.Union(
      [
        t.Object({
          method: OneOf(VALIDATION_METHODS, {
            description: 'bank_link (Plaid, Stripe Financial Connections, the sandbox), or the lender’s account_validation: prenote, micro_deposits, third_party, other',
          }),
          source: t.Union([t.String(), t.Null()], { description: 'The bank link’s provider (plaid, stripe, sandbox); null for the lender’s own' }),
          reference: t.Union([t.String(), t.Null()], { description: 'The lender’s reference of it' }),
          validated_at: t.String({ format: 'date-time' }),
          current: t.Boolean({ description: 'Given since the account’s number last changed: it counts for the next debit' }),
        }),
        t.Null(),
      ],
      { description: 'Its latest validation evidence (Nacha’s WEB debit rule); null: none' },
    ),
    number_changed_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When a Notification of Change last corrected its routing or account number' }),
    pending_change_id: t.Union([t.String(), t.Null()], { description: 'A Notification of Change received and not applied yet: no debit goes to the account until it is' }),
    changes: t.Array(AccountChangeView, { description: 'Its latest Notifications of Change, newest first (at most 20)' }),
    change_count: Int({ description: 'How many Notifications of Change it has had' }),
    enrollment_count: Int({ description: 'How many of the lender’s borrowers are on it' }),
    enrollments: t.Array(t.Object({ authorizer_unique_id: t.String() }), { description: 'The first 20 borrowers on it, by authorizer_unique_id' }),
    created_at: t.String({ format: 'date-time' }),
    updated_at: t.String({ format: 'date-time' }),
  },
  {
    examples: [
      {
        id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
        last4: '4567',
        state: 'unauthorized',
        state_since: '2026-11-24T15:02:11.000Z',
        return_codes: ['R10'],
        state_reference: 'DRS-loan-1001-019a4f3e-90aa-7c11-8e22-3344556677aa',
        last_return_at: '2026-11-24T15:02:11.000Z',
        account_type: null,
        validation: { method: 'bank_link', source: 'plaid', reference: null, validated_at: '2026-11-21T10:00:00.000Z', current: true },
        number_changed_at: null,
        pending_change_id: null,
        changes: [],
        change_count: 0,
        enrollment_count: 2,
        enrollments: [{ authorizer_unique_id: 'loan-1001' }, { authorizer_unique_id: 'loan-1002' }],
        created_at: '2026-11-21T10:00:00.000Z',
        updated_at: '2026-11-24T15:02:11.000Z',
      },
    ],
  },
);

export const BankAccountList = t.Object(
  { bank_accounts: t.Array(BankAccountView), has_more: t.Boolean(), next_page_token: t.Union([t.String(), t.Null()]) },
  { examples: [{ bank_accounts: [], has_more: false, next_page_token: null }] },
);

export const BankAccountListQuery = t.Object({
  state: t.Optional(OneOf(BANK_ACCOUNT_STATES)),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  ...pageTokenQuery,
});

export const BankAccountParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64, description: 'id of the bank account' }) });
export const ChangeParams = t.Object({
  id: t.String({ minLength: 1, maxLength: 64, description: 'id of the bank account' }),
  change_id: t.String({ minLength: 1, maxLength: 64, description: 'id of the Notification of Change' }),
});
