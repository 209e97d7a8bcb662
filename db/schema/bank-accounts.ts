import { sql } from 'drizzle-orm';
import { blob, index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { BANK_ACCOUNT_STATES } from './enums';
import { lenders } from './lenders';

// A lender's bank accounts as the service knows them from its borrowers' enrollments: one record per lender per
// account, whichever borrowers are on it (a household, a re-enrolled loan), with the state the returns of debits
// to it set. The account is recognised by its fingerprint, an HMAC-SHA-256 of `routing:account` under the
// service's fingerprint key (service_secrets), never by its number; only its last four are kept in the clear.
export const bankAccounts = sqliteTable(
  'bank_accounts',
  {
    id: text('id').primaryKey(),
    lenderId: text('lender_id')
      .notNull()
      .references(() => lenders.id),
    fingerprint: blob('fingerprint', { mode: 'buffer' }).notNull(),
    last4: text('last4').notNull(),
    state: text('state', { enum: BANK_ACCOUNT_STATES }).notNull(),
    // When it took its state (its creation while ok).
    stateSince: integer('state_since').notNull(),
    // The return codes that set or kept its state, each once, in the order they came (comma-separated), and the
    // reference of the payment whose return set the state.
    returnCodes: text('return_codes'),
    stateReference: text('state_reference'),
    // The latest return that set or kept a blocking state: an authorization must be later than it to lift
    // `unauthorized` for a borrower.
    lastReturnAt: integer('last_return_at'),
    // Its borrowers are still to be told of a state recorded at this time (collection/account-blocks.ts); null
    // once every one was.
    blocksDueAt: integer('blocks_due_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('bank_accounts_fingerprint_uq').on(t.lenderId, t.fingerprint),
    // The listing: the lender's accounts by id, all of them or of one state.
    index('bank_accounts_lender_idx').on(t.lenderId, t.id),
    index('bank_accounts_lender_state_idx').on(t.lenderId, t.state, t.id),
    index('bank_accounts_blocks_due_idx').on(t.blocksDueAt).where(sql`${t.blocksDueAt} IS NOT NULL`),
  ],
);

// Secrets the service makes for itself, each made once and sealed with the vault (`vault rotate` re-seals them,
// so their value outlives a rotation): the bank-account fingerprint key.
export const serviceSecrets = sqliteTable('service_secrets', {
  name: text('name').primaryKey(),
  secretSealed: text('secret_sealed').notNull(),
  createdAt: integer('created_at').notNull(),
});
