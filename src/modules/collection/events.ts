import { and, asc, eq } from 'drizzle-orm';
import { paymentEvents } from '../../../db/schema';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { dbOf } from '../../platform/context';
import { InvalidInput } from '../../platform/errors';

/** GET /v1/payment_events: every event of one borrower of the lender, oldest first; an unknown borrower has none. */
export function listPaymentEvents({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId?: string } }) {
  const aid = input.authorizerUniqueId;
  if (!aid) throw InvalidInput.field('authorizer_unique_id', 'authorizer_unique_id is required: the identifier used at enrollment');
  const rows = dbOf(ctx)
    .select()
    .from(paymentEvents)
    .where(and(eq(paymentEvents.lenderId, ctx.lender.id), eq(paymentEvents.authorizerUniqueId, aid)))
    .orderBy(asc(paymentEvents.recordedAt), asc(paymentEvents.id))
    .all();
  return {
    authorizer_unique_id: aid,
    events: rows.map((e) => ({
      event_id: e.id,
      reference: e.reference,
      status: e.status,
      amount: e.amountCents,
      ...(e.status === 'returned' || e.status === 'late_returned' ? { return_code: e.returnCode } : {}),
      authorizer_unique_id: aid,
      occurred_at: iso(e.occurredAt),
      source: e.source,
      ...(e.message ? { message: e.message } : {}),
    })),
  };
}
