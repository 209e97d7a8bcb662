import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { BANK_DATA_PROVIDERS, PLAID_ENVIRONMENTS } from './enums';
import { lenders } from './lenders';

// A lender's credentials at a bank-data source (Plaid, Stripe Financial Connections): the accounts its
// borrowers linked there are read through them. The credentials are sealed with the vault and erased when
// the connection is deleted; at most one live connection per provider and lender.
export const bankDataConnections = sqliteTable(
  'bank_data_connections',
  {
    id: text('id').primaryKey(),
    lenderId: text('lender_id')
      .notNull()
      .references(() => lenders.id),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    // Plaid only: which Plaid environment the client_id and secret belong to.
    environment: text('environment', { enum: PLAID_ENVIRONMENTS }),
    // Plaid: { client_id, secret }; Stripe: { api_key }. Null once deleted.
    credentialsSealed: text('credentials_sealed'),
    last4: text('last4').notNull(),
    lastReadAt: integer('last_read_at'),
    createdAt: integer('created_at').notNull(),
    deletedAt: integer('deleted_at'),
  },
  (t) => [
    uniqueIndex('bank_data_connections_provider_uq')
      .on(t.lenderId, t.provider)
      .where(sql`${t.deletedAt} IS NULL`),
    index('bank_data_connections_lender_idx').on(t.lenderId, t.createdAt),
  ],
);

// Links a provider said need the borrower to sign in again (relink), by a digest of the link: a link here is
// not read again, and its lender's endpoints were told once. A new link has another digest and is read.
export const bankLinkRelinks = sqliteTable(
  'bank_link_relinks',
  {
    lenderId: text('lender_id').notNull(),
    linkDigest: text('link_digest').notNull(),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    authorizerUniqueId: text('authorizer_unique_id').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.lenderId, t.linkDigest] })],
);

// Calls made to a provider through a connection, per endpoint and UTC day (YYYY-MM-DD): what a lender's reads
// cost at Plaid or Stripe. Counted in memory and added here in batches (modules/bank-data-connections/usage.ts).
export const providerCalls = sqliteTable(
  'provider_calls',
  {
    connectionId: text('connection_id').notNull(),
    endpoint: text('endpoint').notNull(),
    day: text('day').notNull(),
    lenderId: text('lender_id').notNull(),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    calls: integer('calls').notNull(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.endpoint, t.day] })],
);
