import { and, desc, eq } from 'drizzle-orm';
import { apiKeys, paymentResultUploads } from '../../../db/schema';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { dbOf } from '../../platform/context';
import { NotFound } from '../../platform/errors';
import { keysetPage, olderThan, type PageQuery } from '../../platform/pagination';

// The history of recorded uploads: GET /v1/payment_results/uploads (newest first, paged) and one upload's
// counts and problems. Dry runs record nothing and are not in it.

type Row = typeof paymentResultUploads.$inferSelect;

const counts = (u: Row) => ({
  rowCount: u.rowCount,
  dataRowCount: u.dataRowCount,
  matched: u.matched,
  needsAttention: u.needsAttention,
  problemCount: u.problemCount,
});

const summary = (u: Row) => ({ id: u.id, recordedAt: iso(u.recordedAt), creator: u.creator, format: u.format, ...counts(u) });

/** GET /v1/payment_results/uploads: the lender's recorded uploads, newest first. */
export function listUploads({ ctx, input }: { ctx: Ctx; input: PageQuery }) {
  const db = dbOf(ctx);
  const { page, hasMore, nextPageToken } = keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `result-uploads:${ctx.lender.id}`,
    query: input,
    limit: input.limit ?? 20,
    start: { t: Number.MAX_SAFE_INTEGER, i: '' },
    fetch: (after, take) =>
      db
        .select()
        .from(paymentResultUploads)
        .where(and(eq(paymentResultUploads.lenderId, ctx.lender.id), olderThan(paymentResultUploads.recordedAt, paymentResultUploads.id, after.t, after.i)))
        .orderBy(desc(paymentResultUploads.recordedAt), desc(paymentResultUploads.id))
        .limit(take)
        .all(),
    positionOf: (u) => ({ t: u.recordedAt, i: u.id }),
  });
  return { uploads: page.map(summary), has_more: hasMore, next_page_token: nextPageToken };
}

/** GET /v1/payment_results/uploads/{id}: its counts and its problems (another lender's is not found). */
export function getUpload({ ctx, input }: { ctx: Ctx; input: { id: string } }) {
  const u = dbOf(ctx)
    .select()
    .from(paymentResultUploads)
    .where(and(eq(paymentResultUploads.id, input.id), eq(paymentResultUploads.lenderId, ctx.lender.id)))
    .get();
  if (!u) throw new NotFound('Upload', input.id);
  return { ...summary(u), problems: JSON.parse(u.problems) as { row: number; reason: string; severity: 'error' | 'warning' }[] };
}

/** Who an API upload is from, for the history: the key's display prefix. */
export function apiCreator(ctx: Ctx, keyId: string): string | null {
  const k = dbOf(ctx).select({ prefix: apiKeys.prefix }).from(apiKeys).where(eq(apiKeys.id, keyId)).get();
  return k ? `API key ${k.prefix}…` : null;
}
