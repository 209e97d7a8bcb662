import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { NotFound } from '../../platform/errors';
import { keysetPage, type PageQuery } from '../../platform/pagination';
import { type UploadRow } from './store';

// The history of recorded uploads: GET /v1/payment_results/uploads (newest first, paged) and one upload's
// counts and problems. Dry runs record nothing and are not in it.

/**
 * A recorded upload in the API's words: snake_case, and the camelCase names the history answered with before,
 * the same values, kept until 0.4.0 (deprecated in its schema).
 */
function summary(u: UploadRow) {
  const recordedAt = iso(u.recordedAt);
  return {
    id: u.id,
    recorded_at: recordedAt,
    creator: u.creator,
    format: u.format,
    row_count: u.rowCount,
    data_row_count: u.dataRowCount,
    matched: u.matched,
    needs_attention: u.needsAttention,
    already_recorded: u.alreadyRecorded,
    problem_count: u.problemCount,
    recordedAt,
    rowCount: u.rowCount,
    dataRowCount: u.dataRowCount,
    needsAttention: u.needsAttention,
    problemCount: u.problemCount,
  };
}

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
