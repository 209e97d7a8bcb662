import { sql } from 'drizzle-orm';
import { index, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { cents, count, flag, fraction, ident, ms } from './columns';
import { MONITOR_STATES, RAILS, PAY_FREQUENCIES, PAY_CYCLE_SOURCES, REVOCATION_CHANNELS } from './enums';
import { lenders } from './lenders';
import { bankAccounts } from './bank-accounts';

// One record per borrower per lender: the enrollment and its monitor. Personal data (names, tax id, account
// number, date of birth, street, phone, zip) is one vault-sealed value, and the card token another; erasure
// overwrites both with null and keeps the row, so payment history keeps its borrower.
export const enrollments = sqliteTable(
  'enrollments',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    state: text('state', { enum: MONITOR_STATES }).notNull(),
    // Why it is held or stopped (a held reason, or the return code that stopped it).
    reason: text('reason'),
    // Why a due payment was not initiated (no_processor_key, verification_required); null when nothing blocks.
    blockedReason: text('blocked_reason'),
    windowStartedAt: ms('window_started_at'),
    windowEndsAt: ms('window_ends_at'),
    collectableAmountCents: cents('collectable_amount_cents').notNull(),
    daysPastDue: count('days_past_due').notNull(),
    merchantRef: ident('merchant_ref'),
    rail: text('rail', { enum: RAILS }).notNull(),
    routingNumber: text('routing_number'),
    bankName: text('bank_name'),
    sealed: text('sealed'), // personal data; null once erased
    metadata: text('metadata'), // JSON object or null
    cardTokenSealed: text('card_token_sealed'),
    cardLast4: text('card_last4'),
    cardBrand: text('card_brand'),
    lastReadCents: cents('last_read_cents'),
    lastReadAt: ms('last_read_at'),
    nextReadAt: ms('next_read_at'),
    // The pay cycle learned from the borrower's history (pay-cycles/infer.ts), when it was learned and from what.
    payCycleFrequency: text('pay_cycle_frequency', { enum: PAY_FREQUENCIES }),
    payCycleNextPayday: ms('pay_cycle_next_payday'),
    payCycleConfidence: fraction('pay_cycle_confidence'),
    payCycleSource: text('pay_cycle_source', { enum: PAY_CYCLE_SOURCES }),
    payCycleAt: ms('pay_cycle_at'),
    // A second schedule that explains the history almost as well (biweekly against semimonthly): read around too.
    payCycleAlternativeFrequency: text('pay_cycle_alternative_frequency', { enum: PAY_FREQUENCIES }),
    payCycleAlternativeNextPayday: ms('pay_cycle_alternative_next_payday'),
    // Whether the borrower's pay has come a day before its payday: the morning before a payday is read too.
    payCycleLandsEarly: flag('pay_cycle_lands_early'),
    // The lender's choice for this borrower over its policy's cfpb_covered; null: the policy decides.
    cfpbCovered: flag('cfpb_covered'),
    // The borrower's authorization to debit, as the lender last sent it.
    authorizationAt: ms('authorization_at'),
    authorizationRef: text('authorization_ref'),
    // The borrower revoked the authorization, as the lender received it (Regulation E, 12 CFR 1005.10(c)): no
    // debit from then on until an authorization dated after it; how it came, and the lender's evidence.
    revokedAt: ms('revoked_at'),
    revocationChannel: text('revocation_channel', { enum: REVOCATION_CHANNELS }),
    revocationRef: text('revocation_ref'),
    // The borrower's new authorization under the payday rule (12 CFR 1041.8(c)), as the lender last recorded it:
    // when it was obtained, and the whole record as JSON (its transfers' dates, maximum amounts and channels,
    // how it was obtained, the evidence). While a covered borrower is under it, debits go only on its dates.
    reauthorizedAt: ms('reauthorized_at'),
    reauthorization: text('reauthorization'),
    // The borrower's Regulation E election for varying amounts (12 CFR 1005.10(d)(2)), JSON; null: the policy's.
    regEElection: text('reg_e_election'),
    // Payments since the last enrollment: an original and at most two reinitiations.
    paymentsUsed: count('payments_used').notNull().default(0),
    enrolledAt: ms('enrolled_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
    erasedAt: ms('erased_at'),
    // The bank account an ACH borrower's debits go to (bank_accounts); null for a card borrower, after erasure,
    // and for a borrower stored before accounts were known until the start-up job links it.
    bankAccountId: ident('bank_account_id').references(() => bankAccounts.id),
  },
  (t) => [
    uniqueIndex('enrollments_lender_borrower_uq').on(t.lenderId, t.authorizerUniqueId),
    // The monitoring due check and the lapse job read these partial indexes only: O(due), not O(borrowers).
    index('enrollments_read_due_idx').on(t.nextReadAt).where(sql`${t.state} = 'monitored'`),
    index('enrollments_lapse_due_idx').on(t.windowEndsAt).where(sql`${t.state} = 'monitored'`),
    index('enrollments_held_idx').on(t.lenderId).where(sql`${t.state} = 'held'`),
    // Borrowers of one state, in id order (the portal's filter and its counts by state).
    index('enrollments_lender_state_idx').on(t.lenderId, t.state, t.authorizerUniqueId),
    // The borrowers on a bank account, by id (a return's state told to each of them; the account's view).
    index('enrollments_bank_account_idx').on(t.bankAccountId, t.authorizerUniqueId),
    // ACH borrowers with personal data not linked to their bank account yet (stored before accounts were known).
    index('enrollments_unlinked_idx').on(t.id).where(sql`${t.bankAccountId} IS NULL AND ${t.rail} = 'ach' AND ${t.sealed} IS NOT NULL`),
  ],
);
