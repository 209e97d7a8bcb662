import { t } from 'elysia';
import { pageTokenQuery } from '../../platform/pagination';
import { DELIVERY_STATES, ENDPOINT_EVENT_TYPES, WEBHOOK_TYPES } from '../../../db/schema/enums';
import { Type } from '@sinclair/typebox';
import { Int, OneOf } from '../../platform/schema';
import { textSchema } from '../../platform/fields';

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

const EventType = OneOf(ENDPOINT_EVENT_TYPES, {
  description:
    'PAYMENT_EVENT: each payment event read from a processor, as GET /v1/payment_events shows it; RETURN_RATE_ALERT: a return-rate class changed status (ok, warning, exceeded) over the last 60 days; ENROLLMENT_BLOCKED: a borrower stopped, or waiting on the lender (a blocked_reason); PAYMENT_SCHEDULED: a payment scheduled after a notice period, to tell the borrower; BANK_LINK_RELINK_REQUIRED: a borrower’s linked account (bank_link) needs the borrower (relink, revoked, closed, not transactable), once per episode; BANK_LINK_REPAIRED: the provider says it is well again; BANK_LINK_EXPIRING: its consent ends soon; ACCOUNT_CHANGE_NOTIFIED: a bank’s Notification of Change on one of the lender’s bank accounts was received (debits to it held until applied); ACCOUNT_CORRECTED: it was applied to every borrower on the account; RIGHTS_NOTICE_DUE: a covered borrower’s second consecutive attempt failed for funds, and the consumer-rights notice of the CFPB payday rule is due within three business days; PAYMENT_NOTICE_DUE: a payment needs a notice (the payday rule’s first-payment, unusual-withdrawal or reinitiation notice, or Regulation E’s varying-amount notice) sent inside its window before it goes out; FRAUD_ALERT_RAISED: a fraud-monitoring rule raised an alert (a hold rule’s keeps the borrower’s debits until cleared)',
});

export const EndpointCreate = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'HTTPS URL; the rules of every webhook URL of the service apply' }),
    event_types: Type.Array(EventType, { minItems: 1, maxItems: ENDPOINT_EVENT_TYPES.length, description: 'A non-empty subset of the event types' }),
    description: Type.Optional(textSchema({ minLength: 1, maxLength: 255, description: 'Shown with the endpoint' })),
  },
  { additionalProperties: false, examples: [{ url: 'https://lender.example/hooks/drs', event_types: ['PAYMENT_EVENT', 'ENROLLMENT_BLOCKED'] }] },
);

export const Endpoint = t.Object(
  {
    id: t.String(),
    url: t.String(),
    event_types: t.Array(EventType),
    description: t.Union([t.String(), t.Null()]),
    created_at: t.String({ format: 'date-time' }),
  },
  {
    examples: [
      { id: '01936f3a-0000-7000-8000-000000000001', url: 'https://lender.example/hooks/drs', event_types: ['PAYMENT_EVENT'], description: null, created_at: '2026-11-21T10:00:00.000Z' },
    ],
  },
);

export const EndpointList = t.Object({ endpoints: t.Array(Endpoint) });
