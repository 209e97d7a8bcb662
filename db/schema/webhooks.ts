import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { count, ident, ms, rowId } from './columns';
import { lenders } from './lenders';
import { DELIVERY_STATES, WEBHOOK_TYPES } from './enums';

export const webhookSecrets = sqliteTable(
  'webhook_secrets',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    secretSealed: text('secret_sealed').notNull(),
    createdAt: ms('created_at').notNull(),
    // null while current; set to rotation time + 24 h when a newer secret replaces it.
    expiresAt: ms('expires_at'),
  },
  (t) => [index('webhook_secrets_lender_idx').on(t.lenderId)],
);

// The outbox: written in the same transaction as the change that causes it, sent by the delivery job.
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: ident('id').primaryKey(), // also the webhook-id header, stable across retries
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    type: text('type', { enum: WEBHOOK_TYPES }).notNull(),
    targetUrl: text('target_url').notNull(),
    payload: text('payload').notNull(),
    state: text('state', { enum: DELIVERY_STATES }).notNull(),
    attempts: count('attempts').notNull().default(0),
    createdAt: ms('created_at').notNull(),
    firstAttemptAt: ms('first_attempt_at'),
    lastAttemptAt: ms('last_attempt_at'),
    nextAttemptAt: ms('next_attempt_at'), // null once delivered or failed
    // 0 when not leased; never null, so a delivery inserted without it is still claimed.
    leaseUntil: ms('lease_until').notNull().default(0),
    // The claim holding the row (replica id and a nonce): a finish whose token no longer matches was taken over.
    leaseToken: text('lease_token'),
    lastStatusCode: count('last_status_code'),
    lastError: text('last_error'),
    finishedAt: ms('finished_at'),
  },
  (t) => [
    index('webhook_deliveries_due_idx').on(t.state, t.nextAttemptAt),
    index('webhook_deliveries_lender_idx').on(t.lenderId, t.createdAt),
  ],
);

export const webhookAttempts = sqliteTable(
  'webhook_attempts',
  {
    id: rowId('id'),
    deliveryId: ident('delivery_id')
      .notNull()
      .references(() => webhookDeliveries.id),
    attemptedAt: ms('attempted_at').notNull(),
    statusCode: count('status_code'),
    error: text('error'),
    durationMs: ms('duration_ms').notNull(),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.deliveryId)],
);

// A lender's own webhook endpoints: where its payment events and collection notices are pushed.
export const webhookEndpoints = sqliteTable(
  'webhook_endpoints',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    url: text('url').notNull(),
    eventTypes: text('event_types').notNull(), // JSON array of EndpointEventType
    description: text('description'),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [index('webhook_endpoints_lender_idx').on(t.lenderId, t.createdAt)],
);
