import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import type { Auth } from '../../http/auth';
import { DeliveryList, DeliveryQuery, SecretView } from './model';
import { getSecret, listDeliveries, rotateSecret } from './service';

const tags = ['Webhooks'];

export const webhookRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/webhooks', normalize: false })
    .use(auth)
    .get('/secret', ({ lender }) => getSecret({ ctx: { lender, deps } }), {
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
