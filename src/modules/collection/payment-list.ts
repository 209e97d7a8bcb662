import type { PaymentStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { InvalidInput } from '../../platform/errors';
import { keysetPage, type PageQuery } from '../../platform/pagination';
import { type PaymentRow } from './store';

// The service's payments across borrowers, for the portal's Payments page and its CSV: filtered by status
// and by the day they were created (UTC, both ends included), sorted by date or amount, a page at a time off
// (lender, status, created) or (lender, created) and (lender, amount) indexes.

export const PAYMENT_SORTS = ['newest', 'oldest', 'amount_desc', 'amount_asc'] as const;
export type PaymentSort = (typeof PAYMENT_SORTS)[number];

export interface PaymentListInput extends PageQuery {
  status?: PaymentStatus;
  /** YYYY-MM-DD, UTC, included. */
  from?: string;
  /** YYYY-MM-DD, UTC, included. */
  to?: string;
  sort?: PaymentSort;
  limit: number;
}

const dayStart = (field: string, day: string): number => {
  const t = Date.parse(`${day}T00:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || !Number.isFinite(t) || new Date(t).toISOString().slice(0, 10) !== day) {
    throw InvalidInput.field(field, `${field} must be a date as YYYY-MM-DD`);
  }
  return t;
};

type Pos = { k: number; i: string };

export async function listPayments({ ctx, input }: { ctx: Ctx; input: PaymentListInput }) {
  const lenderId = ctx.lender.id;
  const sort = input.sort ?? 'newest';
  const from = input.from ? dayStart('from', input.from) : null;
  const to = input.to ? dayStart('to', input.to) + DAY_MS : null;
  if (from !== null && to !== null && to <= from) throw InvalidInput.field('to', 'to must be the same day as from or later');
  const byAmount = sort === 'amount_desc' || sort === 'amount_asc';
  const { page, hasMore, nextPageToken } = await keysetPage<PaymentRow, Pos | null>({
    tokens: ctx.deps.pageTokens,
    // The filters are part of the scope: a token is good for the listing it came from only.
    scope: `payments:${lenderId}:${sort}:${input.status ?? ''}:${input.from ?? ''}:${input.to ?? ''}`,
    query: input,
    limit: input.limit,
    start: null,
    fetch: (after, take) => ctx.deps.stores.paymentReads.paymentsPage(ctx, { lenderId, status: input.status, from, to, sort, after, take }),
    positionOf: (p) => ({ k: byAmount ? p.amountCents : p.createdAt, i: p.id }),
  });
  return {
    payments: page.map((p) => ({
      reference: p.reference,
      authorizer_unique_id: p.authorizerUniqueId,
      amount_cents: p.amountCents,
      status: p.status,
      rail: p.rail,
      attempt: p.attempt,
      return_code: p.returnCode,
      created_at: iso(p.createdAt),
      settled_at: isoOrNull(p.settledAt),
    })),
    has_more: hasMore,
    next_page_token: nextPageToken,
  };
}

