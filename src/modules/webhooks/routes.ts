import { Elysia } from 'elysia';
import type { Deps } from '../../platform/deps';
import { errors } from '../../platform/errors';
import type { Auth } from '..';
import { DeliveryList, DeliveryQuery, SecretView } from './model';
import { listDeliveries, rotateSecret, secretView } from './service';

const tags = ['Webhooks'];

export const webhookRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/webhooks', normalize: false })
    .use(auth)
    .get('/secret', ({ lender }) => secretView(deps, lender.id), {
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
      return rotateSecret(deps, lender.id);
    }, {
      auth: true,
      response: { 201: SecretView, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'Rotate the webhook signing secret',
        description: 'Issues a new secret. For 24 hours deliveries carry signatures by both the new and the previous secret.',
      },
    })
    .get('/deliveries', ({ lender, query }) => listDeliveries(deps, lender.id, query), {
      auth: true,
      query: DeliveryQuery,
      response: { 200: DeliveryList, ...errors(400, 401, 429) },
      detail: {
        tags,
        summary: 'List webhook deliveries',
        description: 'Newest first. Filter by state and event type. Each entry shows attempts, the last status or error and the next attempt.',
      },
    });
