import { Elysia, t } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { ErrorEnvelope, errors } from '../../http/errors';
import { rawJsonBody } from '../../http/body';
import { Int } from '../../platform/schema';
import { receivePlaid, receiveStripe } from './service';

// The providers call these, not the lender: no API key; the provider's signature is the authentication (the
// request gate lets /v1/bank_data_webhooks/ through unauthenticated, http/gate.ts).

const tags = ['Balance checks'];
const early = (description: string) => maturity('Early Access', description);
/** A provider's webhook is a few kilobytes. */
const WEBHOOK_BODY_LIMIT = 64 * 1024;

const Received = t.Object(
  {
    received: t.Literal(true),
    acted: Int({ minimum: 0, description: 'Borrowers whose linked account or history the webhook moved' }),
  },
  { examples: [{ received: true, acted: 1 }] },
);
const PlaidWebhook = t.Object(
  {
    webhook_type: t.String({ description: 'ITEM or TRANSACTIONS' }),
    webhook_code: t.String({ description: 'ERROR, PENDING_DISCONNECT, PENDING_EXPIRATION, USER_PERMISSION_REVOKED, USER_ACCOUNT_REVOKED, LOGIN_REPAIRED, SYNC_UPDATES_AVAILABLE' }),
    item_id: t.String(),
  },
  { additionalProperties: true, examples: [{ webhook_type: 'ITEM', webhook_code: 'LOGIN_REPAIRED', item_id: 'wz666MBjYWTp2PDzzggYhM6oWWmBb', environment: 'production' }] },
);
const StripeEvent = t.Object(
  { id: t.String(), type: t.String(), data: t.Object({ object: t.Object({}, { additionalProperties: true }) }) },
  {
    additionalProperties: true,
    examples: [{ id: 'evt_1Fc0000000000001', object: 'event', type: 'financial_connections.account.reactivated', data: { object: { id: 'fca_1Abc', object: 'financial_connections.account', status: 'active' } } }],
  },
);

export const bankDataWebhookRoutes = (deps: Deps) =>
  new Elysia({ prefix: '/v1/bank_data_webhooks', normalize: false })
    .model({ ErrorEnvelope })
    .post('/plaid', ({ body, request }) => receivePlaid(deps, body.bytes, request.headers.get('plaid-verification')), {
      ...rawJsonBody(PlaidWebhook, { limit: WEBHOOK_BODY_LIMIT }),
      response: { 200: Received, ...errors(400, 401, 409, 413, 415, 503) },
      detail: {
        tags,
        summary: 'Plaid webhooks (called by Plaid)',
        security: [],
        ...early(
          'Point an Item’s webhook here. No API key: the Plaid-Verification JWT is checked (ES256 only; its key fetched by ' +
            'kid with /webhook_verification_key/get using the credentials of a lender holding the Item, refused once ' +
            'expired; issued within 5 minutes; the SHA-256 of the raw body equal to request_body_sha256, compared in ' +
            'constant time): 401 otherwise, and a replay is 409; neither changes anything. ITEM ERROR (ITEM_LOGIN_REQUIRED), ' +
            'PENDING_DISCONNECT, PENDING_EXPIRATION, USER_PERMISSION_REVOKED, USER_ACCOUNT_REVOKED and LOGIN_REPAIRED move the ' +
            'link’s health episode as a probe would; TRANSACTIONS SYNC_UPDATES_AVAILABLE asks for the borrowers’ history. An Item ' +
            'no read has named yet is answered alike and acted on by nothing. Probes stay the default: nothing depends on a webhook.',
        ),
      },
    })
    .post(
      '/stripe/:connection_id',
      ({ body, params, request }) => receiveStripe(deps, params.connection_id, body.bytes, request.headers.get('stripe-signature')),
      {
        params: t.Object({ connection_id: t.String({ format: 'uuid', description: 'id of the lender’s Stripe bank-data connection' }) }),
        ...rawJsonBody(StripeEvent, { limit: WEBHOOK_BODY_LIMIT }),
        response: { 200: Received, ...errors(400, 401, 404, 409, 413, 415) },
        detail: {
          tags,
          summary: 'Stripe Financial Connections webhooks (called by Stripe)',
          security: [],
          ...early(
            'Point a Stripe webhook endpoint here, for the financial_connections.account events, and register its signing ' +
              'secret on the connection (webhook_secret). No API key: Stripe-Signature is checked with that secret (5 minutes ' +
              'of tolerance): 401 otherwise, and an event id received before is 409; neither changes anything. deactivated, ' +
              'reactivated, disconnected, upcoming_deactivation, account_numbers_updated and refreshed_balance move the ' +
              'health of the borrowers holding the account as a probe would; refreshed_transactions asks for their history. ' +
              '404 for no live Stripe connection of that id, 409 when it has no webhook_secret.',
          ),
        },
      },
    );
