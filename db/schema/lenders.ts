import { integer, sqliteTable, text, index } from 'drizzle-orm/sqlite-core';

export const lenders = sqliteTable('lenders', {
  id: text('id').primaryKey(),
  name: text('name').notNull().unique(),
  // Debit-card balance reads need the operator's approval (`cli lender approve-cards`).
  debitCardApproved: integer('debit_card_approved', { mode: 'boolean' }).notNull().default(false),
  createdAt: integer('created_at').notNull(),
});

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    lenderId: text('lender_id')
      .notNull()
      .references(() => lenders.id),
    // First characters of the key, shown to operators to tell keys apart; never enough to authenticate.
    prefix: text('prefix').notNull().unique(),
    keyHash: text('key_hash').notNull().unique(),
    createdAt: integer('created_at').notNull(),
    lastUsedAt: integer('last_used_at'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [index('api_keys_lender_idx').on(t.lenderId)],
);
