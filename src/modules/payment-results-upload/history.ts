import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { NotFound } from '../../platform/errors';
import { keysetPage, type PageQuery } from '../../platform/pagination';
import { type UploadRow } from './store';

// The history of recorded uploads: GET /v1/payment_results/uploads (newest first, paged) and one upload's
// counts and problems. Dry runs record nothing and are not in it.

const counts = (u: UploadRow) => ({
  rowCount: u.rowCount,
  dataRowCount: u.dataRowCount,
  matched: u.matched,
  needsAttention: u.needsAttention,
  problemCount: u.problemCount,
});

const summary = (u: UploadRow) => ({ id: u.id, recordedAt: iso(u.recordedAt), creator: u.creator, format: u.format, ...counts(u) });

type Position = { t: number; i: string };

/** GET /v1/payment_results/uploads: the lender's recorded uploads, newest first. */
export async function listUploads({ ctx, input }: { ctx: Ctx; input: PageQuery }) {
  const scope = `result-uploads:${ctx.lender.id}`;
  const start: Position = { t: Number.MAX_SAFE_INTEGER, i: '' };
  const limit = input.limit ?? 20;
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope,
    query: input,
    limit,
    start,
    fetch: (after, take) => ctx.deps.stores.uploads.uploadsBefore(ctx, ctx.lender.id, after, take),
    positionOf: (u) => ({ t: u.recordedAt, i: u.id }),
  });
  return { uploads: page.map(summary), has_more: hasMore, next_page_token: nextPageToken };
}

/** GET /v1/payment_results/uploads/{id}: its counts and its problems (another lender's is not found). */
export async function getUpload({ ctx, input }: { ctx: Ctx; input: { id: string } }) {
  const u = await ctx.deps.stores.uploads.uploadOf(ctx, ctx.lender.id, input.id);
  if (!u) throw new NotFound('Upload', input.id);
  return { ...summary(u), problems: JSON.parse(u.problems) as { row: number; reason: string; severity: 'error' | 'warning' }[] };
}

/** Who an API upload is from, for the history: the key's display prefix. */
export async function apiCreator(ctx: Ctx, keyId: string): Promise<string | null> {
  const prefix = await ctx.deps.stores.uploads.apiKeyPrefix(ctx, keyId);
  return prefix !== null ? `API key ${prefix}…` : null;
}
