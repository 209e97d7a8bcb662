import { index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { lenders } from './lenders';
import { BALANCE_KINDS, BATCH_SOURCES, BATCH_STATUSES, EXPORT_STATUSES, ITEM_STATES, PAYMENT_TYPES } from '../schema/enums';
import { bytes, cents, count, ident, ms, rowId, rowRef } from './columns';

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

// Each lender's authorizers accepted and not yet checked, kept by triggers on batches (the migration
// balance_backlog_triggers, the PL/pgSQL twin of the SQLite triggers).
export const balanceBacklog = pgTable('balance_backlog', {
  lenderId: ident('lender_id').primaryKey(),
  pending: count('pending').notNull(),
});

// A batch as submitted: the sensitive part sealed, the rest compressed bytes (bytea; a BLOB in SQLite).
export const batchPayloads = pgTable('batch_payloads', {
  batchId: ident('batch_id')
    .primaryKey()
    .references(() => batches.id),
  sealed: text('sealed').notNull(),
  items: bytes('items').notNull(),
});

// One row per submitted authorizer: the work queue of the balance job, created from batch_payloads.items.
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

// One result per item (the unique item_id makes a second result impossible), ordered by id.
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
