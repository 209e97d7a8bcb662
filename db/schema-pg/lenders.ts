// Generated from db/schema/lenders.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { flag, ident, ms, off } from './columns';

export const lenders = pgTable('lenders', {
  id: ident('id').primaryKey(),
  name: text('name').notNull().unique(),
  // Debit-card balance reads need the operator's approval (`cli lender approve-cards`).
  debitCardApproved: flag('debit_card_approved').notNull().default(off),
  createdAt: ms('created_at').notNull(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    // First characters of the key, shown to operators to tell keys apart; never enough to authenticate.
    prefix: ident('prefix').notNull().unique(),
    keyHash: ident('key_hash').notNull().unique(),
    createdAt: ms('created_at').notNull(),
    lastUsedAt: ms('last_used_at'),
    revokedAt: ms('revoked_at'),
  },
  (t) => [index('api_keys_lender_idx').on(t.lenderId)],
);
