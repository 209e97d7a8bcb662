import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import type { Auth } from '../../http/auth';
import { DeliveryList, DeliveryQuery, Endpoint, EndpointCreate, EndpointList, SecretView } from './model';
import { createEndpoint, deleteEndpoint, listEndpoints } from './endpoints';
import { schemaBody } from '../../http/body';
import { t } from 'elysia';
import { listDeliveries, readSecret, rotateSecret } from './service';

const tags = ['Webhooks'];

export const webhookRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/webhooks', normalize: false })
    .use(auth)
    .get('/secret', ({ lender }) => readSecret({ ctx: { lender, deps } }), {
      auth: true,
      response: { 200: SecretView, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'Get the webhook signing secret',
        description:
          'Every webhook is signed per Standard Webhooks (headers webhook-id, webhook-timestamp, webhook-signature). ' +
          'Verify with this secret; it is created on first use.',
      },
    })
    .post('/secret/rotate', ({ lender, set }) => {
      set.status = 201;
      return rotateSecret({ ctx: { lender, deps } });
    }, {
      auth: true,
      response: { 201: SecretView, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'Rotate the webhook signing secret',
        description: 'Issues a new secret. For 24 hours deliveries carry signatures by both the new and the previous secret.',
      },
    })
    .get('/deliveries', ({ lender, query }) => listDeliveries({ ctx: { lender, deps }, input: query }), {
      auth: true,
      query: DeliveryQuery,
      response: { 200: DeliveryList, ...errors(400, 401, 429) },
      detail: {
        tags,
        summary: 'List webhook deliveries',
        description: 'Newest first. Filter by state and event type. Each entry shows attempts, the last status or error and the next attempt.',
      },
    });

export const webhookEndpointRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/webhook_endpoints', normalize: false })
    .use(auth)
    .post(
      '',
      async ({ lender, body, set }) => {
        const res = await createEndpoint({ ctx: { lender, deps }, input: body });
        set.status = 201;
        return res;
      },
      {
        auth: true,
        ...schemaBody(EndpointCreate),
        response: { 201: Endpoint, ...errors(400, 401, 409, 413, 415, 429) },
        detail: {
          tags,
          summary: 'Add a webhook endpoint',
          description:
            'Where the lender’s payment events and collection notices are pushed: through the outbox, in the transaction ' +
            'of the change that causes them, signed with the lender’s webhook secret (Standard Webhooks), retried, and ' +
            'listed in GET /v1/webhooks/deliveries. Every payload carries event_uuid and type. At most 10 endpoints ' +
            '(409 past it); the URL rules of every webhook URL apply (400).',
        },
      },
    )
    .get('', ({ lender }) => listEndpoints({ ctx: { lender, deps } }), {
      auth: true,
      response: { 200: EndpointList, ...errors(401, 429) },
      detail: { tags, summary: 'List the webhook endpoints', description: 'The lender’s endpoints, oldest first.' },
    })
    .delete(
      '/:id',
      async ({ lender, params, set }) => {
        await deleteEndpoint({ ctx: { lender, deps }, input: { id: params.id } });
        set.status = 204;
      },
      {
        auth: true,
        params: t.Object({ id: t.String({ description: 'id of the endpoint' }) }),
        response: { 204: t.Void(), ...errors(401, 404, 429) },
        detail: { tags, summary: 'Delete a webhook endpoint', description: 'Deliveries already in the outbox still go out. Another lender’s or an unknown endpoint is 404.' },
      },
    );
