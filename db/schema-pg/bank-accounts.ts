// Generated from db/schema/bank-accounts.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { bytes, ident, ms } from './columns';
import { ACCOUNT_TYPES, BANK_ACCOUNT_STATES, CHANGE_SOURCES, CHANGE_STATUSES, VALIDATION_METHODS } from '../schema/enums';
import { lenders } from './lenders';

// A lender's bank accounts as the service knows them from its borrowers' enrollments: one record per lender per
// account, whichever borrowers are on it (a household, a re-enrolled loan), with the state the returns of debits
// to it set. The account is recognised by its fingerprint, an HMAC-SHA-256 of `routing:account` under the
// service's fingerprint key (service_secrets), never by its number; only its last four are kept in the clear.
export const bankAccounts = pgTable(
  'bank_accounts',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    fingerprint: bytes('fingerprint').notNull(),
    last4: text('last4').notNull(),
    state: text('state', { enum: BANK_ACCOUNT_STATES }).notNull(),
    // When it took its state (its creation while ok).
    stateSince: ms('state_since').notNull(),
    // The return codes that set or kept its state, each once, in the order they came (comma-separated), and the
    // reference of the payment whose return set the state.
    returnCodes: text('return_codes'),
    stateReference: ident('state_reference'),
    // The latest return that set or kept a blocking state: an authorization must be later than it to lift
    // `unauthorized` for a borrower.
    lastReturnAt: ms('last_return_at'),
    // Its borrowers are still to be told of a state recorded at this time (collection/account-blocks.ts); null
    // once every one was.
    blocksDueAt: ms('blocks_due_at'),
    // Checking or savings, when a Notification of Change said (C05, C06, C07); null: as the processor takes it.
    accountType: text('account_type', { enum: ACCOUNT_TYPES }),
    // A Notification of Change received and not yet applied (account_changes): no debit goes to the account
    // until it is (at once under the policy's `automatic`, on the lender's word under `review`).
    pendingChangeId: ident('pending_change_id'),
    // When a correction last changed its routing or account number: validation evidence older than it no
    // longer counts (Nacha's WEB rule: a changed account number is validated again).
    numberChangedAt: ms('number_changed_at'),
    // Its latest validation evidence: how, by what (the provider, the processor's method), the lender's
    // reference, and when.
    validationMethod: text('validation_method', { enum: VALIDATION_METHODS }),
    validationSource: text('validation_source'),
    validationReference: text('validation_reference'),
    validatedAt: ms('validated_at'),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('bank_accounts_fingerprint_uq').on(t.lenderId, t.fingerprint),
    // The listing: the lender's accounts by id, all of them or of one state.
    index('bank_accounts_lender_idx').on(t.lenderId, t.id),
    index('bank_accounts_lender_state_idx').on(t.lenderId, t.state, t.id),
    index('bank_accounts_blocks_due_idx').on(t.blocksDueAt).where(sql`${t.blocksDueAt} IS NOT NULL`),
  ],
);

// Notifications of Change: a receiving bank's correction of an account's details (C01 account number, C02
// routing number, C03 both, C05 account type, C06 number and type, C07 all three, C09 individual id, C13
// addenda format), read from a results upload, the bank-data source or a processor. The corrected data is
// sealed: it holds an account number. One per lender per source key (a re-upload records nothing twice).
export const accountChanges = pgTable(
  'account_changes',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    bankAccountId: ident('bank_account_id')
      .notNull()
      .references(() => bankAccounts.id),
    code: text('code').notNull(),
    source: text('source', { enum: CHANGE_SOURCES }).notNull(),
    sourceKey: text('source_key').notNull(),
    // The payment the bank answered with the correction, as the source named it.
    reference: ident('reference'),
    correctedSealed: text('corrected_sealed'),
    oldLast4: text('old_last4').notNull(),
    newLast4: text('new_last4'),
    status: text('status', { enum: CHANGE_STATUSES }).notNull(),
    receivedAt: ms('received_at').notNull(),
    // Six banking days after receipt: Nacha's time to make the change.
    dueBy: ms('due_by').notNull(),
    appliedAt: ms('applied_at'),
    // automatic, lender, or none (recorded only).
    appliedBy: text('applied_by'),
  },
  (t) => [
    uniqueIndex('account_changes_source_uq').on(t.lenderId, t.sourceKey),
    index('account_changes_account_idx').on(t.bankAccountId, t.receivedAt),
    index('account_changes_lender_idx').on(t.lenderId, t.receivedAt),
    index('account_changes_received_idx').on(t.receivedAt).where(sql`${t.status} = 'received'`),
  ],
);

// Secrets the service makes for itself, each made once and sealed with the vault (`vault rotate` re-seals them,
// so their value outlives a rotation): the bank-account fingerprint key.
export const serviceSecrets = pgTable('service_secrets', {
  name: ident('name').primaryKey(),
  secretSealed: text('secret_sealed').notNull(),
  createdAt: ms('created_at').notNull(),
});
