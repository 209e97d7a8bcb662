import { t } from 'elysia';
import { EVENT_SOURCES, EVENT_STATUSES } from '../../../db/schema/enums';
import { Int, OneOf } from '../../platform/schema';

export const PaymentEvent = t.Object({
  event_id: t.String({ description: 'Unique, stable, never reissued; use as an idempotency key' }),
  reference: t.String({ description: 'The payment: DRS-{authorizer_unique_id}-{payment_id} for payments the service initiates' }),
  status: OneOf(EVENT_STATUSES),
  amount: Int({ description: 'Cents; the same for every event of a reference' }),
  return_code: t.Optional(t.Union([t.String(), t.Null()], { description: 'ACH R-code; only on returned and late_returned' })),
  authorizer_unique_id: t.String(),
  occurred_at: t.String({ format: 'date-time' }),
  source: OneOf(EVENT_SOURCES),
  message: t.Optional(t.String()),
});

export const EventList = t.Object(
  { authorizer_unique_id: t.String(), events: t.Array(PaymentEvent, { description: 'Oldest first; events of several payments interleaved' }) },
  {
    examples: [
      {
        authorizer_unique_id: 'loan-1001',
        events: [
          {
            event_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
            reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000001',
            status: 'processing',
            amount: 42500,
            authorizer_unique_id: 'loan-1001',
            occurred_at: '2026-11-21T10:00:02.000Z',
            source: 'processor',
          },
          {
            event_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6c',
            reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000001',
            status: 'settled',
            amount: 42500,
            authorizer_unique_id: 'loan-1001',
            occurred_at: '2026-11-21T10:01:02.000Z',
            source: 'processor',
          },
        ],
      },
    ],
  },
);

