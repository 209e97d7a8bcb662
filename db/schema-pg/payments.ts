// Generated from db/schema/payments.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { sql } from 'drizzle-orm';
import { check, index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { count, flag, ident, ms, off } from './columns';
import { PROCESSOR_NAMES, RAIL_SCOPES } from '../schema/enums';
import { lenders } from './lenders';

// A lender's processor keys (the API's "payment connections"). The key itself is sealed with the vault and
// erased when the connection is deleted; the row stays, so payments and events read through it keep their
// origin. The key rules the spec states are enforced here too, by constraints and partial unique indexes,
// so two concurrent requests cannot break them.
export const paymentConnections = pgTable(
  'payment_connections',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    processor: text('processor', { enum: PROCESSOR_NAMES }).notNull(),
    label: text('label').notNull(),
    merchantRef: ident('merchant_ref'),
    railScope: text('rail_scope', { enum: RAIL_SCOPES }).notNull(),
    isDefault: flag('is_default').notNull().default(off),
    keySealed: text('key_sealed'), // null once deleted
    keyLast4: text('key_last4'),
    // Where the next read of the processor's change feed starts, and how the last one went.
    pollCursor: text('poll_cursor'),
    lastPollAt: ms('last_poll_at'),
    lastPollError: text('last_poll_error'),
    // Processor payments read through this key, and how many of them matched a borrower.
    ingested: count('ingested').notNull().default(0),
    matched: count('matched').notNull().default(0),
    // The processor account the key belongs to (Stripe's account id; the sandbox key's account): one
    // account serves one lender. Null for keys stored before it was recorded.
    accountId: ident('account_id'),
    // The last reconciliation by listing the processor's payments, and whether one is due at once (the
    // change feed lost its cursor).
    reconciledAt: ms('reconciled_at'),
    reconcileDue: flag('reconcile_due').notNull().default(off),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
    deletedAt: ms('deleted_at'),
  },
  (t) => [
    // A key is default or tagged, never both.
    check('payment_connections_default_or_tag', sql`NOT (${t.isDefault} = 1 AND ${t.merchantRef} IS NOT NULL)`),
    // At most one default per rail_scope, one key per rail_scope within a tag (live keys only).
    uniqueIndex('payment_connections_default_uq')
      .on(t.lenderId, t.railScope)
      .where(sql`${t.isDefault} = 1 AND ${t.deletedAt} IS NULL`),
    uniqueIndex('payment_connections_tag_uq')
      .on(t.lenderId, t.merchantRef, t.railScope)
      .where(sql`${t.merchantRef} IS NOT NULL AND ${t.deletedAt} IS NULL`),
    index('payment_connections_lender_idx').on(t.lenderId, t.createdAt),
    index('payment_connections_account_idx').on(t.processor, t.accountId),
  ],
);

// Which lender a processor account belongs to, for good: bound when a lender first registers a key of the
// account, kept when that key is deleted, so another lender cannot register the account and read (or be
// credited with) its earlier payments. Only the operator releases a binding (the CLI), for a real handover.
export const processorAccounts = pgTable(
  'processor_accounts',
  {
    processor: text('processor', { enum: PROCESSOR_NAMES }).notNull(),
    accountId: ident('account_id').notNull(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    // Payments made elsewhere are matched to the lender's borrowers only when created from this moment on.
    boundAt: ms('bound_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.processor, t.accountId] })],
);
