import { sql } from 'drizzle-orm';
import { bigint, index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { BANK_DATA_PROVIDERS, LINK_HEALTHS, PLAID_ENVIRONMENTS } from '../schema/enums';
import { lenders } from './lenders';
import { flag, ident, ms } from './columns';

// A lender's credentials at a bank-data source (Plaid, Stripe Financial Connections), sealed with the vault
// and erased when the connection is deleted; at most one live connection per provider and lender.
export const bankDataConnections = pgTable(
  'bank_data_connections',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    // Plaid only: which Plaid environment the client_id and secret belong to.
    environment: text('environment', { enum: PLAID_ENVIRONMENTS }),
    // Plaid: { client_id, secret }; Stripe: { api_key }. Null once deleted.
    credentialsSealed: text('credentials_sealed'),
    last4: text('last4').notNull(),
    identity: flag('identity').notNull().default(sql`0`),
    lastReadAt: ms('last_read_at'),
    createdAt: ms('created_at').notNull(),
    deletedAt: ms('deleted_at'),
  },
  (t) => [
    uniqueIndex('bank_data_connections_provider_uq')
      .on(t.lenderId, t.provider)
      .where(sql`${t.deletedAt} IS NULL`),
    index('bank_data_connections_lender_idx').on(t.lenderId, t.createdAt),
  ],
);

// The health of linked accounts a provider once said were not ok, by a digest of the link (as on SQLite).
export const bankLinkRelinks = pgTable(
  'bank_link_relinks',
  {
    lenderId: ident('lender_id').notNull(),
    linkDigest: ident('link_digest').notNull(),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    createdAt: ms('created_at').notNull(),
    health: text('health', { enum: LINK_HEALTHS }).notNull().default('relink_required'),
    since: ms('since').notNull().default(0),
    expiresAt: ms('expires_at'),
    nextProbeAt: ms('next_probe_at'),
    probeIntervalMs: ms('probe_interval_ms'),
    linkSealed: text('link_sealed'),
  },
  (t) => [primaryKey({ columns: [t.lenderId, t.linkDigest] }), index('bank_link_relinks_probe_idx').on(t.nextProbeAt)],
);

// Which enrolled borrowers hold each linked account, and a Plaid link's Item (as on SQLite).
export const bankLinkOwners = pgTable(
  'bank_link_owners',
  {
    lenderId: ident('lender_id').notNull(),
    linkDigest: ident('link_digest').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    plaidItemId: ident('plaid_item_id'),
  },
  (t) => [primaryKey({ columns: [t.lenderId, t.linkDigest, t.authorizerUniqueId] }), index('bank_link_owners_item_idx').on(t.plaidItemId)],
);

// Provider webhooks already acted on (as on SQLite).
export const providerWebhookReceipts = pgTable(
  'provider_webhook_receipts',
  {
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    receiptKey: ident('receipt_key').notNull(),
    receivedAt: ms('received_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.receiptKey] }), index('provider_webhook_receipts_at_idx').on(t.receivedAt)],
);

// Calls made to a provider through a connection, per endpoint and UTC day (YYYY-MM-DD).
export const providerCalls = pgTable(
  'provider_calls',
  {
    connectionId: ident('connection_id').notNull(),
    endpoint: ident('endpoint').notNull(),
    day: ident('day').notNull(),
    lenderId: ident('lender_id').notNull(),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    calls: bigint('calls', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.endpoint, t.day] })],
);
