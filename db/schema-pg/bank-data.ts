// Generated from db/schema/bank-data.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { sql } from 'drizzle-orm';
import { index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { flag, ident, ms, off, tally } from './columns';
import { BANK_DATA_PROVIDERS, LINK_HEALTHS, PLAID_ENVIRONMENTS } from '../schema/enums';
import { lenders } from './lenders';

// A lender's credentials at a bank-data source (Plaid, Stripe Financial Connections): the accounts its
// borrowers linked there are read through them. The credentials are sealed with the vault and erased when
// the connection is deleted; at most one live connection per provider and lender.
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
    // The lender's connection has the identity product (Plaid Identity, Stripe Financial Connections ownership):
    // fraud monitoring asks a linked account's owners through it (owner_mismatch). Off unless the lender says so.
    identity: flag('identity').notNull().default(off),
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

// The health of linked accounts a provider once said were not ok, by a digest of the link (balance-requests/
// link-health.ts). An episode opens when the provider says the link needs the borrower (relink, revoked,
// closed, not transactable, or consent expiring) and closes when it says the same link is healthy again: while
// it is open the link is probed (next_probe_at), not read, and its lender's endpoints are told once per episode.
export const bankLinkRelinks = pgTable(
  'bank_link_relinks',
  {
    lenderId: ident('lender_id').notNull(),
    linkDigest: ident('link_digest').notNull(),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    createdAt: ms('created_at').notNull(),
    health: text('health', { enum: LINK_HEALTHS }).notNull().default('relink_required'),
    /** Since when the link has had this health (the episode's start, or its end for ok). */
    since: ms('since').notNull().default(0),
    /** The provider's date for an expiring consent or account. */
    expiresAt: ms('expires_at'),
    /** When the open episode is probed next; null once it closed. */
    nextProbeAt: ms('next_probe_at'),
    probeIntervalMs: ms('probe_interval_ms'),
    /** The link itself, vault-sealed, for probing it (null on rows from before probes). */
    linkSealed: text('link_sealed'),
  },
  (t) => [primaryKey({ columns: [t.lenderId, t.linkDigest] }), index('bank_link_relinks_probe_idx').on(t.nextProbeAt)],
);

// Which enrolled borrowers hold each linked account (by the link's digest), and for a Plaid link the Item it
// belongs to once a read has said: how a provider's webhook about an account or an Item finds its borrowers.
// Written when a borrower is enrolled with a bank_link; erased with the borrower.
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

// Provider webhooks already acted on (Stripe's event id, a digest of Plaid's signed token): a replay is refused
// and changes nothing. Kept for a day, past the signatures' five minutes.
export const providerWebhookReceipts = pgTable(
  'provider_webhook_receipts',
  {
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    receiptKey: ident('receipt_key').notNull(),
    receivedAt: ms('received_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.receiptKey] }), index('provider_webhook_receipts_at_idx').on(t.receivedAt)],
);

// Calls made to a provider through a connection, per endpoint and UTC day (YYYY-MM-DD): what a lender's reads
// cost at Plaid or Stripe. Counted in memory and added here in batches (modules/bank-data-connections/usage.ts).
export const providerCalls = pgTable(
  'provider_calls',
  {
    connectionId: ident('connection_id').notNull(),
    endpoint: ident('endpoint').notNull(),
    day: ident('day').notNull(),
    lenderId: ident('lender_id').notNull(),
    provider: text('provider', { enum: BANK_DATA_PROVIDERS }).notNull(),
    calls: tally('calls').notNull(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.endpoint, t.day] })],
);
