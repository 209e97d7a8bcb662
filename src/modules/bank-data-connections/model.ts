import { Type, type Static } from '@sinclair/typebox';
import { t } from 'elysia';
import { BANK_DATA_PROVIDERS, PLAID_ENVIRONMENTS } from '../../../db/schema/enums';
import { Int, OneOf } from '../../platform/schema';
import { CREDENTIAL_PATTERN } from '../../platform/fields';

const secret = (description: string) => Type.String({ minLength: 1, maxLength: 255, pattern: CREDENTIAL_PATTERN, description });

const Identity = Type.Boolean({
  description:
    'The connection has the identity product (Plaid Identity; Stripe Financial Connections ownership): fraud monitoring’s owner_mismatch asks a linked account’s owners through it when a borrower is enrolled with a bank_link, each call counted in the usage. false when absent',
});

export const CreateBankDataConnectionBody = Type.Union(
  [
    Type.Object(
      {
        provider: Type.Literal('plaid'),
        client_id: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$', description: 'The Plaid client_id' }),
        secret: secret('The Plaid secret of the environment. Sealed at once; never returned.'),
        environment: OneOf(PLAID_ENVIRONMENTS, { description: 'The Plaid environment the client_id and secret belong to' }),
        identity: Type.Optional(Identity),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        provider: Type.Literal('stripe'),
        api_key: Type.String({
          minLength: 8,
          maxLength: 255,
          pattern: '^(sk|rk)_(live|test)_[A-Za-z0-9_]+$',
          description: 'A Stripe secret or restricted key (sk_live_/sk_test_/rk_live_/rk_test_) allowed to read Financial Connections accounts. Sealed at once; never returned.',
        }),
        webhook_secret: Type.Optional(
          Type.String({
            minLength: 10,
            maxLength: 255,
            pattern: '^whsec_[A-Za-z0-9]+$',
            description:
              'Optional: the signing secret (whsec_…) of a Stripe webhook endpoint pointed at POST /v1/bank_data_webhooks/stripe/{id} of this connection, for the Financial Connections account events. Sealed at once; never returned.',
          }),
        ),
        identity: Type.Optional(Identity),
      },
      { additionalProperties: false },
    ),
  ],
  {
    // Both shapes are objects: said once for the document's readers, who look for a type first.
    type: 'object',
    examples: [
      { provider: 'plaid', client_id: '5f2a9c0d1e3b4a0012345678', secret: 'sandbox-secret-0000000000001234', environment: 'sandbox' },
      { provider: 'stripe', api_key: 'rk_live_000000000000000000004242', webhook_secret: 'whsec_0000000000000000000000000000abcd' },
    ],
  },
);
export type CreateBankDataConnection = Static<typeof CreateBankDataConnectionBody>;

const example = {
  id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
  provider: 'plaid',
  environment: 'sandbox',
  secret_last4: '1234',
  key_last4: null,
  identity: false,
  created_at: '2026-11-21T10:00:00.000Z',
  last_read_at: null,
};

export const BankDataConnection = t.Object(
  {
    id: t.String({ format: 'uuid' }),
    provider: OneOf(BANK_DATA_PROVIDERS),
    environment: t.Nullable(OneOf(PLAID_ENVIRONMENTS, { description: 'Plaid only' })),
    secret_last4: t.Nullable(t.String({ description: 'Plaid: the last four characters of the secret' })),
    key_last4: t.Nullable(t.String({ description: 'Stripe: the last four characters of the key' })),
    identity: t.Boolean({ description: 'The connection has the identity product: linked accounts’ owners are asked through it (fraud monitoring’s owner_mismatch)' }),
    created_at: t.String({ format: 'date-time' }),
    last_read_at: t.Nullable(t.String({ format: 'date-time', description: 'The last balance read through this connection' })),
  },
  { examples: [example] },
);

export const BankDataConnectionList = t.Object(
  { connections: t.Array(BankDataConnection, { description: 'Oldest first; at most one per provider' }) },
  { examples: [{ connections: [example] }] },
);

export const UsageQuery = t.Object({
  month: t.Optional(t.String({ pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$', description: 'The month, UTC, as YYYY-MM (default: the current month)', examples: ['2026-11'] })),
});

const usageExample = {
  connection_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
  provider: 'plaid',
  month: '2026-11',
  total_calls: 7,
  endpoints: [
    { endpoint: '/accounts/balance/get', calls: 6 },
    { endpoint: '/transactions/sync', calls: 1 },
  ],
  days: [
    { date: '2026-11-20', endpoint: '/accounts/balance/get', calls: 4 },
    { date: '2026-11-21', endpoint: '/accounts/balance/get', calls: 2 },
    { date: '2026-11-21', endpoint: '/transactions/sync', calls: 1 },
  ],
};

export const BankDataConnectionUsage = t.Object(
  {
    connection_id: t.String({ format: 'uuid' }),
    provider: OneOf(BANK_DATA_PROVIDERS),
    month: t.String({ description: 'The month counted, UTC, YYYY-MM' }),
    total_calls: Int({ description: 'Requests sent to the provider through this connection in the month' }),
    endpoints: t.Array(t.Object({ endpoint: t.String(), calls: Int() }), {
      description: 'The month’s calls per endpoint, most first. Plaid: the path (`/accounts/balance/get`, `/transactions/sync`); Stripe: the method and path with ids replaced (`GET /v1/financial_connections/accounts/{id}`, `POST /v1/financial_connections/accounts/{id}/refresh`)',
    }),
    days: t.Array(t.Object({ date: t.String({ format: 'date' }), endpoint: t.String(), calls: Int() }), {
      description: 'Calls per UTC day and endpoint, oldest first; days without calls are left out',
    }),
  },
  { examples: [usageExample] },
);
