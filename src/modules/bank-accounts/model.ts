import { t } from 'elysia';
import { BANK_ACCOUNT_STATES } from '../../../db/schema/enums';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';

/** One of the lender's bank accounts: never its fingerprint or its number. */
export const BankAccountView = t.Object(
  {
    id: t.String(),
    last4: t.String({ description: 'The last four characters of the account number' }),
    state: OneOf(BANK_ACCOUNT_STATES, {
      description:
        'ok; invalid (R02, R03, R04, R12, R13, R20), frozen (R16), unauthorized (R05, R07, R10, R11, R29, R51), deceased (R14, R15): set by a return of any borrower’s debit to it, and no payment is made or sent to it for any borrower on it while it holds (unauthorized: but for a borrower whose authorization is dated after last_return_at). It never goes back to ok by itself',
    }),
    state_since: t.String({ format: 'date-time', description: 'When it took its state (for ok, when the account was first enrolled)' }),
    return_codes: t.Array(t.String(), { description: 'The return codes that set or kept its state, each once, in the order they came' }),
    state_reference: t.Union([t.String(), t.Null()], { description: 'The reference of the payment whose return set its state; null while ok' }),
    last_return_at: t.Union([t.String({ format: 'date-time' }), t.Null()], {
      description: 'Its latest return that set or kept its state: a borrower’s authorization must be later than it to debit an unauthorized account again',
    }),
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
