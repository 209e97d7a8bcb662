import type { EventSource, EventStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { InvalidInput } from '../../platform/errors';
import { type PaymentEventRow } from './store';

/** GET /v1/payment_events: every event of one borrower of the lender, oldest first; an unknown borrower has none. */
export async function listPaymentEvents({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId?: string } }) {
  const aid = borrowerAsked(input);
  return eventListOf(aid, await ctx.deps.stores.paymentReads.eventsOfBorrower(ctx, ctx.lender.id, aid));
}

/** The borrower GET /v1/payment_events is asked about. */
export function borrowerAsked(input: { authorizerUniqueId?: string }): string {
  const aid = input.authorizerUniqueId;
  if (!aid) throw InvalidInput.field('authorizer_unique_id', 'authorizer_unique_id is required: the identifier used at enrollment');
  return aid;
}

export const eventListOf = (aid: string, rows: PaymentEventRow[]) => ({
  authorizer_unique_id: aid,
  events: rows.map((e) => eventView({ ...e, authorizerUniqueId: aid })),
});

/** An event as the API shows it (GET /v1/payment_events, and the PAYMENT_EVENT webhook). */
export function eventView(e: {
  id: string;
  reference: string;
  status: EventStatus;
  amountCents: number;
  returnCode: string | null;
  authorizerUniqueId: string;
  occurredAt: number;
  source: EventSource;
  message: string | null;
}) {
  return {
    event_id: e.id,
    reference: e.reference,
    status: e.status,
    amount: e.amountCents,
    ...(e.status === 'returned' || e.status === 'late_returned' ? { return_code: e.returnCode } : {}),
    authorizer_unique_id: e.authorizerUniqueId,
    occurred_at: iso(e.occurredAt),
    source: e.source,
    ...(e.message ? { message: e.message } : {}),
  };
}
