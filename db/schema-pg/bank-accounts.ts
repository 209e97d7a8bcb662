import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { BANK_ACCOUNT_STATES } from '../schema/enums';
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

// Secrets the service makes for itself, each made once and sealed with the vault (the fingerprint key).
export const serviceSecrets = pgTable('service_secrets', {
  name: ident('name').primaryKey(),
  secretSealed: text('secret_sealed').notNull(),
  createdAt: ms('created_at').notNull(),
});
