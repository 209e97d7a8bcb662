// Generated from db/schema/balances.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { cents, count, ident, ms, rowId, rowRef, textBytes } from './columns';
import { lenders } from './lenders';
import { BALANCE_KINDS, BATCH_SOURCES, BATCH_STATUSES, EXPORT_STATUSES, ITEM_STATES, PAYMENT_TYPES } from '../schema/enums';

export const batches = pgTable(
  'batches',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    source: text('source', { enum: BATCH_SOURCES }).notNull(),
    scheduleId: ident('schedule_id'),
    status: text('status', { enum: BATCH_STATUSES }).notNull(),
    webhookUrl: text('webhook_url'),
    creator: text('creator'),
    submittedAt: ms('submitted_at').notNull(),
    completedAt: ms('completed_at'),
    totalAuthorizers: count('total_authorizers').notNull(),
    totalProcessed: count('total_processed').notNull().default(0),
  },
  (t) => [
    index('batches_status_idx').on(t.status, t.submittedAt),
    index('batches_lender_idx').on(t.lenderId, t.submittedAt),
    index('batches_schedule_idx').on(t.scheduleId),
  ],
);

// Each lender's authorizers accepted and not yet checked: the sum of (total_authorizers - total_processed)
// over its pending and processing batches, kept by triggers on batches (migration 0018), so that every
// insert, update and delete of a batch, whatever code makes it, moves the sum in the same transaction.
// Read on every accept for the lender's bound: one row, however many batches are open.
export const balanceBacklog = pgTable('balance_backlog', {
  lenderId: ident('lender_id').primaryKey(),
  pending: count('pending').notNull(),
});

// A batch as submitted, in two rows' worth of columns instead of one row per authorizer, so accepting a
// 1000-authorizer request is two inserts. `sealed` holds the sensitive part of every authorizer (tax id,
// account and card numbers, date of birth) as one vault value: one AES-GCM pass per request. `items`
// holds the rest (identifier, routing, phone, zip, metadata, threshold) as JSON; both are compressed (zstd)
// since 0.3, `items` then stored as bytes. The processing job turns the items into batch_items rows when it
// first takes the batch up.
export const batchPayloads = pgTable('batch_payloads', {
  batchId: ident('batch_id')
    .primaryKey()
    .references(() => batches.id),
  sealed: text('sealed').notNull(),
  items: textBytes('items').notNull(),
});

// One row per submitted authorizer: the work queue of the balance job, created from batch_payloads.items
// in the transaction that moves the batch from pending to processing.
export const batchItems = pgTable(
  'batch_items',
  {
    id: rowId('id'),
    batchId: ident('batch_id')
      .notNull()
      .references(() => batches.id),
    lenderId: ident('lender_id').notNull(),
    seq: count('seq').notNull(), // position in the request and in the sealed payload
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    paymentType: text('payment_type', { enum: PAYMENT_TYPES }).notNull(),
    routingNumber: text('routing_number'),
    phone: text('phone'),
    zip: text('zip'),
    metadata: text('metadata'), // JSON object or null
    thresholdCents: cents('threshold_cents'), // schedule runs: the applicable threshold
    state: text('state', { enum: ITEM_STATES }).notNull().default('pending'),
    attempts: count('attempts').notNull().default(0),
    nextAttemptAt: ms('next_attempt_at').notNull().default(0),
    leaseUntil: ms('lease_until').notNull().default(0),
    // The claim holding the row (replica id and a nonce): a finish whose token no longer matches was taken over.
    leaseToken: text('lease_token'),
    // A linked account's balance refresh still running at the provider: when the item began waiting on it.
    waitingSince: ms('waiting_since'),
  },
  (t) => [
    uniqueIndex('batch_items_batch_seq_idx').on(t.batchId, t.seq),
    // Claims read a batch's pending items in seq order straight off this index.
    index('batch_items_pending_idx').on(t.state, t.batchId, t.seq),
  ],
);

// One result per item (the unique item_id makes a second result impossible). Ordered by id, which is
// the order results were recorded in, so pages stay stable while a batch is still running.
export const balanceResults = pgTable(
  'balance_results',
  {
    id: rowId('id'),
    itemId: rowRef('item_id').notNull().unique(),
    batchId: ident('batch_id').notNull(),
    lenderId: ident('lender_id').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    balanceCents: cents('balance_cents'),
    statusCode: count('status_code').notNull(),
    exportStatus: text('export_status', { enum: EXPORT_STATUSES }).notNull(),
    institution: text('institution'),
    // Linked accounts: which balance was reported, the provider's time for it, and why a read failed when the
    // code alone does not say (relink_required).
    balanceKind: text('balance_kind', { enum: BALANCE_KINDS }),
    balanceAsOf: ms('balance_as_of'),
    detail: text('detail'),
    recordedAt: ms('recorded_at').notNull(),
  },
  (t) => [
    index('balance_results_batch_idx').on(t.batchId, t.id),
    index('balance_results_history_idx').on(t.lenderId, t.authorizerUniqueId, t.id),
  ],
);

// 24-hour replay cache of POST /v1/balance_requests, keyed by the SHA-256 of the raw body per lender.
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    lenderId: ident('lender_id').notNull(),
    bodyHash: ident('body_hash').notNull(),
    statusCode: count('status_code').notNull(),
    responseBody: text('response_body').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.lenderId, t.bodyHash] }), index('idempotency_created_idx').on(t.createdAt)],
);
