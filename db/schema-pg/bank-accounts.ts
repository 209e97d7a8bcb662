import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ACCOUNT_TYPES, BANK_ACCOUNT_STATES, CHANGE_SOURCES, CHANGE_STATUSES, VALIDATION_METHODS } from '../schema/enums';
import { lenders } from './lenders';
import { bytes, ident, ms } from './columns';

// A lender's bank accounts as the service knows them from its borrowers' enrollments: one record per lender per
// account, recognised by its fingerprint (an HMAC of `routing:account` under the service's fingerprint key),
// with the state the returns of debits to it set.
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
    stateSince: ms('state_since').notNull(),
    returnCodes: text('return_codes'),
    stateReference: ident('state_reference'),
    lastReturnAt: ms('last_return_at'),
    blocksDueAt: ms('blocks_due_at'),
    accountType: text('account_type', { enum: ACCOUNT_TYPES }),
    pendingChangeId: ident('pending_change_id'),
    numberChangedAt: ms('number_changed_at'),
    validationMethod: text('validation_method', { enum: VALIDATION_METHODS }),
    validationSource: text('validation_source'),
    validationReference: text('validation_reference'),
    validatedAt: ms('validated_at'),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('bank_accounts_fingerprint_uq').on(t.lenderId, t.fingerprint),
    index('bank_accounts_lender_idx').on(t.lenderId, t.id),
    index('bank_accounts_lender_state_idx').on(t.lenderId, t.state, t.id),
    index('bank_accounts_blocks_due_idx').on(t.blocksDueAt).where(sql`${t.blocksDueAt} IS NOT NULL`),
  ],
);

// Notifications of Change (db/schema/bank-accounts.ts says what each column holds).
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
    reference: ident('reference'),
    correctedSealed: text('corrected_sealed'),
    oldLast4: text('old_last4').notNull(),
    newLast4: text('new_last4'),
    status: text('status', { enum: CHANGE_STATUSES }).notNull(),
    receivedAt: ms('received_at').notNull(),
    dueBy: ms('due_by').notNull(),
    appliedAt: ms('applied_at'),
    appliedBy: text('applied_by'),
  },
  (t) => [
    uniqueIndex('account_changes_source_uq').on(t.lenderId, t.sourceKey),
    index('account_changes_account_idx').on(t.bankAccountId, t.receivedAt),
    index('account_changes_lender_idx').on(t.lenderId, t.receivedAt),
    index('account_changes_received_idx').on(t.receivedAt).where(sql`${t.status} = 'received'`),
  ],
);

// Secrets the service makes for itself, each made once and sealed with the vault (the fingerprint key).
export const serviceSecrets = pgTable('service_secrets', {
  name: ident('name').primaryKey(),
  secretSealed: text('secret_sealed').notNull(),
  createdAt: ms('created_at').notNull(),
});
