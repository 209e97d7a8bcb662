import { t } from 'elysia';
import { pageTokenQuery } from '../../platform/pagination';
import { DELIVERY_STATES, WEBHOOK_TYPES } from '../../../db/schema/enums';
import { Int, OneOf } from '../../platform/schema';

export const SecretView = t.Object(
  {
    secret: t.String({ description: 'Signing secret (Standard Webhooks, whsec_ prefix)' }),
    created_at: t.String({ format: 'date-time' }),
    previous_secret_expires_at: t.Nullable(t.String({ format: 'date-time', description: 'While set, deliveries are also signed with the previous secret' })),
  },
  {
    examples: [
      { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', created_at: '2026-11-21T10:00:00.000Z', previous_secret_expires_at: null },
    ],
  },
);

export const DeliveryState = OneOf(DELIVERY_STATES);

export const Delivery = t.Object({
  id: t.String({ description: 'Also the webhook-id header and the payload event_uuid' }),
  type: OneOf(WEBHOOK_TYPES),
  target_url: t.String(),
  created_at: t.String({ format: 'date-time' }),
  attempts: Int(),
  last_status_code: t.Nullable(Int()),
  last_error: t.Nullable(t.String()),
  last_attempt_at: t.Nullable(t.String({ format: 'date-time' })),
  next_attempt_at: t.Nullable(t.String({ format: 'date-time' })),
  state: DeliveryState,
  finished_at: t.Nullable(t.String({ format: 'date-time' })),
});

export const DeliveryList = t.Object(
  { deliveries: t.Array(Delivery), has_more: t.Boolean(), next_page_token: t.Nullable(t.String()) },
  {
    examples: [
      {
        deliveries: [
          {
            id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
            type: 'BALANCE_BATCH_COMPLETED',
            target_url: 'https://hooks.example.com/balances',
            created_at: '2026-11-21T10:00:00.000Z',
            attempts: 1,
            last_status_code: 200,
            last_error: null,
            last_attempt_at: '2026-11-21T10:00:00.250Z',
            next_attempt_at: null,
            state: 'delivered',
            finished_at: '2026-11-21T10:00:00.300Z',
          },
        ],
        has_more: false,
        next_page_token: null,
      },
    ],
  },
);

export const DeliveryQuery = t.Object({
  status: t.Optional(DeliveryState),
  type: t.Optional(OneOf(WEBHOOK_TYPES)),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  ...pageTokenQuery,
});
