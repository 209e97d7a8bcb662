import { connectedProvidersNow as connectedProviders } from '../bank-data-connections/service';
import { and, asc, count, desc, eq, gt, lt, ne } from 'drizzle-orm';
import { balanceResults, batches } from '../../../db/schema';
import type { BatchSource } from '../../../db/schema/enums';
import type { Ctx, JobContext } from '../../deps';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { dbOf, type Tx } from '../../platform/context';
import type { Db } from '../../platform/db';
import { groupCommit } from '../../platform/group-commit';
import { InvalidInput, NotFound, RateLimited } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { centsToDollarsOrNull } from '../../platform/money';
import { keysetPage, olderThan, type PageQuery } from '../../platform/pagination';
import { validateWebhookUrl } from '../webhooks/service';
import { validateAuthorizerList, validateAuthorizers, type AuthorizerCandidate, type FailedAuthorizer, type NormalizedAuthorizer } from '../authorizers/rules';
import type { BalanceRequest } from './model';
import { packBatch, type PackedBatch } from './payload';
import { prepareOffLoop } from './accept-offload';
import * as q from './queries';
import { errorMessageFor } from './status';
import type { SealedColumn } from '../../platform/vault';

/** What a lender over its queue bound is told to wait before sending again. */
export const QUEUE_FULL_RETRY_AFTER_S = 30;
export const IDEMPOTENCY_TTL_MS = DAY_MS;

export interface SubmissionResponse {
  batch_id: string;
  submitted_at: string;
  message: string;
  failed_authorizers: FailedAuthorizer[];
  warnings?: string[];
}

export type Batch = typeof batches.$inferSelect;

/**
 * Inserts a batch and its payload in the caller's transaction: two rows whatever the batch's size. The
 * processing job creates the per-authorizer queue rows when it takes the batch up.
 */
/**
 * Refuses (429) work that would take the lender past its bound on authorizers waiting to be checked; call it
 * under the write lock, before the batch is inserted.
 */
export function refuseOverBacklog(ctx: JobContext & { tx: Tx }, lenderId: string, adding: number, what: string): void {
  const max = ctx.deps.config.maxPendingAuthorizersPerLender;
  const pending = q.pendingAuthorizers(ctx.tx, lenderId);
  if (pending + adding > max) {
    throw new RateLimited(
      QUEUE_FULL_RETRY_AFTER_S,
      `${pending} authorizers of this lender are waiting to be checked and at most ${max} may wait; ${what} would add ${adding}`,
      `Retry after ${QUEUE_FULL_RETRY_AFTER_S} seconds, when earlier batches have progressed`,
    );
  }
}

export function insertBatch({
  ctx,
  input,
}: {
  ctx: JobContext & { tx: Tx };
  input: {
    lenderId: string;
    source: BatchSource;
    scheduleId?: string | null;
    webhookUrl?: string | null;
    /** The display name of the dashboard user who submitted; null for API submissions. */
    creator?: string | null;
    /** The accepted authorizers, or their payload already packed and sealed (packBatch, maybe in a worker). */
    authorizers: NormalizedAuthorizer[] | PackedBatch;
    now: number;
  };
}): string {
  const packed = Array.isArray(input.authorizers) ? packBatch(input.authorizers, sealerOf(ctx)) : input.authorizers;
  const batchId = newId();
  q.insertBatchRow(ctx.tx, {
    id: batchId,
    lenderId: input.lenderId,
    source: input.source,
    scheduleId: input.scheduleId ?? null,
    webhookUrl: input.webhookUrl ?? null,
    creator: input.creator ?? null,
    now: input.now,
    total: packed.count,
  });
  q.insertBatchPayload(ctx.tx, batchId, packed.sealed, packed.items);
  return batchId;
}

const acceptedMessage = (n: number) => `Batch accepted: ${n} authorizer${n === 1 ? '' : 's'} queued for a balance check`;

/** The first answer to a body seen from the same lender in the last 24 hours, if there is one. */
function replayOf(db: Db, lenderId: string, bodyHash: string | undefined, now: number) {
  const hit = bodyHash ? q.findCachedResponse(db, lenderId, bodyHash, now - IDEMPOTENCY_TTL_MS) : null;
  return hit ? { status: hit.statusCode, body: JSON.parse(hit.responseBody) as SubmissionResponse, replayed: true } : null;
}

/** The deps' vault as packBatch's sealer. */
const sealerOf = (ctx: Pick<Ctx, 'deps'>) => (plaintext: Uint8Array) => ctx.deps.vault.sealBytes(plaintext);

/**
 * POST /v1/balance_requests, from the body's bytes: read, checked, validated and sealed off the event loop
 * when the body is large (accept-offload.ts), then accepted here. A JSON body seen from the same lender in
 * the last 24 hours returns the first answer (no second batch).
 */
export async function submitBalanceRequestBody({ ctx, input }: { ctx: Ctx; input: { bytes: Uint8Array } }) {
  const now = ctx.deps.clock.now();
  const prepared = await prepareOffLoop(ctx.deps, input.bytes, { debitCardsApproved: ctx.lender.debitCardApproved, now, bankProviders: connectedProviders(ctx) });
  return (
    replayOf(ctx.deps.db, ctx.lender.id, prepared.bodyHash, now) ??
    acceptBatch({
      ctx,
      input: { accepted: prepared.accepted, failed: prepared.failed, webhookUrl: prepared.webhookUrl, source: 'api', bodyHash: prepared.bodyHash, now },
    })
  );
}

/** The same, from a body already read and checked against its schema (the service's own callers). */
export async function submitBalanceRequest({ ctx, input }: { ctx: Ctx; input: { body: BalanceRequest; bodyHash?: string } }) {
  const now = ctx.deps.clock.now();
  const { accepted, failed } = validateAuthorizerList(input.body.authorizers, { debitCardsApproved: ctx.lender.debitCardApproved, now, bankProviders: connectedProviders(ctx) });
  return (
    replayOf(ctx.deps.db, ctx.lender.id, input.bodyHash, now) ??
    acceptBatch({
      ctx,
      input: { accepted: packBatch(accepted, sealerOf(ctx)), failed, webhookUrl: input.body.webhook_url ?? null, source: 'api', bodyHash: input.bodyHash, now },
    })
  );
}

/** POST /v1/balance_requests/csv: rows already read from the file, their rules checked here. */
export async function submitBalanceCsv({
  ctx,
  input,
}: {
  ctx: Ctx;
  input: {
    candidates: { candidate: AuthorizerCandidate; rowNumber: number }[];
    preFailed: FailedAuthorizer[];
    webhookUrl: string | null;
    warnings: string[];
    creator?: string | null;
  };
}) {
  const now = ctx.deps.clock.now();
  const { accepted, failed } = validateAuthorizers(input.candidates, { debitCardsApproved: ctx.lender.debitCardApproved, now, bankProviders: connectedProviders(ctx) });
  const result = await acceptBatch({
    ctx,
    input: { accepted: packBatch(accepted, sealerOf(ctx)), failed: [...input.preFailed, ...failed], webhookUrl: input.webhookUrl, source: 'csv', warnings: input.warnings, creator: input.creator ?? null, now },
  });
  return { ...result, body: { ...result.body, warnings: result.body.warnings ?? input.warnings } };
}

/**
 * Accepts what passed validation as one batch. Rule failures come back in failed_authorizers and the rest
 * proceeds; when none is left the request is a 400.
 */
async function acceptBatch({
  ctx,
  input,
}: {
  ctx: Ctx;
  input: {
    /** The authorizers that passed, packed and sealed. */
    accepted: PackedBatch;
    failed: FailedAuthorizer[];
    webhookUrl: string | null;
    source: 'api' | 'csv';
    bodyHash?: string;
    warnings?: string[];
    creator?: string | null;
    now: number;
  };
}): Promise<{ status: number; body: SubmissionResponse; replayed: boolean }> {
  const { now } = input;
  if (input.webhookUrl) await validateWebhookUrl(ctx.deps, 'webhook_url', input.webhookUrl);
  const allFailed = input.failed.sort((a, b) => a.row_number - b.row_number);
  const { count } = input.accepted;
  if (count === 0) {
    throw new InvalidInput('No authorizer in the request passed validation', { failed_authorizers: allFailed }, 'Correct the listed authorizers and send them again');
  }
  // Requests accepted at about the same moment share one commit (and its fsync).
  return groupCommit(ctx, (tx) => {
    // Checked again under the write lock: two identical requests at once still make one batch.
    const replay = replayOf(tx.tx, ctx.lender.id, input.bodyHash, now);
    if (replay) return replay;
    // One lender cannot queue unbounded work: counted under the write lock, so two requests at once cannot
    // both squeeze under the bound.
    const max = ctx.deps.config.maxPendingAuthorizersPerLender;
    const pending = q.pendingAuthorizers(tx.tx, ctx.lender.id);
    if (pending + count > max) {
      throw new RateLimited(
        QUEUE_FULL_RETRY_AFTER_S,
        `${pending} authorizers of this lender are waiting to be checked and at most ${max} may wait; this request would add ${count}`,
        `Retry after ${QUEUE_FULL_RETRY_AFTER_S} seconds, when earlier batches have progressed`,
      );
    }
    const batchId = insertBatch({
      ctx: tx,
      input: { lenderId: ctx.lender.id, source: input.source, webhookUrl: input.webhookUrl, creator: input.creator ?? null, authorizers: input.accepted, now },
    });
    const body: SubmissionResponse = {
      batch_id: batchId,
      submitted_at: iso(now),
      message: acceptedMessage(count),
      failed_authorizers: allFailed,
    };
    if (input.warnings) body.warnings = input.warnings;
    if (input.bodyHash) q.cacheResponse(tx.tx, ctx.lender.id, input.bodyHash, JSON.stringify(body), now);
    return { status: 201, body, replayed: false };
  });
}

function findBatch(ctx: Ctx, batchId: string): Batch {
  const b = dbOf(ctx)
    .select()
    .from(batches)
    .where(and(eq(batches.id, batchId), eq(batches.lenderId, ctx.lender.id)))
    .get();
  if (!b) throw new NotFound('Batch', batchId);
  return b;
}

export function getBatchStatus({ ctx, input }: { ctx: Ctx; input: { batchId: string } }) {
  const b = findBatch(ctx, input.batchId);
  return {
    batch_id: b.id,
    status: b.status,
    source: b.source,
    schedule_id: b.scheduleId,
    creator: b.creator,
    submitted_at: iso(b.submittedAt),
    completed_at: isoOrNull(b.completedAt),
    total_authorizers: b.totalAuthorizers,
    total_processed: b.totalProcessed,
  };
}

/** GET /v1/balances: results in the order they were recorded, so each appears once across pages. */
export function listBalances({ ctx, input }: { ctx: Ctx; input: { batchId: string } & PageQuery }) {
  const b = findBatch(ctx, input.batchId);
  const { page, hasMore, nextPageToken } = keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `balances:${ctx.lender.id}:${b.id}`,
    query: input,
    limit: input.limit ?? 100,
    start: { r: 0 },
    fetch: (after, take) =>
      dbOf(ctx)
        .select({
          id: balanceResults.id,
          aid: balanceResults.authorizerUniqueId,
          cents: balanceResults.balanceCents,
          code: balanceResults.statusCode,
          at: balanceResults.recordedAt,
          kind: balanceResults.balanceKind,
          asOf: balanceResults.balanceAsOf,
        })
        .from(balanceResults)
        .where(and(eq(balanceResults.batchId, b.id), gt(balanceResults.id, after.r)))
        .orderBy(asc(balanceResults.id))
        .limit(take)
        .all(),
    positionOf: (r) => ({ r: r.id }),
    // While the batch runs there is more to come: the token then resumes after the last result seen.
    moreAnyway: b.status !== 'completed',
  });
  return {
    batch_id: b.id,
    total_processed: b.totalProcessed,
    balances: page.map((r) => ({
      authorizer_unique_id: r.aid,
      balance: centsToDollarsOrNull(r.cents),
      timestamp: iso(r.at),
      balance_status_code: r.code,
      ...linkedFields(r),
    })),
    has_more: hasMore,
    next_page_token: nextPageToken,
  };
}

/** A linked account's read says which balance it is and the provider's time for it; other reads say nothing. */
function linkedFields(r: { kind: 'available' | 'current' | null; asOf: number | null }) {
  return r.kind === null ? {} : { balance_kind: r.kind, as_of: isoOrNull(r.asOf) };
}

/** Every balance read of one authorizer for the lender, newest first. */
export function authorizerHistory({ ctx, input }: { ctx: Ctx; input: { authorizerId: string } & PageQuery }) {
  const mine = and(eq(balanceResults.lenderId, ctx.lender.id), eq(balanceResults.authorizerUniqueId, input.authorizerId));
  const db = dbOf(ctx);
  const total = db.select({ n: count() }).from(balanceResults).where(mine).get()!.n;
  const { page, hasMore, nextPageToken } = keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `history:${ctx.lender.id}:${input.authorizerId}`,
    query: input,
    limit: input.limit ?? 10,
    start: { r: Number.MAX_SAFE_INTEGER },
    fetch: (before, take) =>
      db
        .select({
          id: balanceResults.id,
          batchId: balanceResults.batchId,
          cents: balanceResults.balanceCents,
          code: balanceResults.statusCode,
          exportStatus: balanceResults.exportStatus,
          at: balanceResults.recordedAt,
          kind: balanceResults.balanceKind,
          asOf: balanceResults.balanceAsOf,
          detail: balanceResults.detail,
        })
        .from(balanceResults)
        .where(and(mine, lt(balanceResults.id, before.r)))
        .orderBy(desc(balanceResults.id))
        .limit(take)
        .all(),
    positionOf: (r) => ({ r: r.id }),
  });
  return {
    authorizer_unique_id: input.authorizerId,
    total_count: total,
    history: page.map((r) => {
      const ok = r.code === 0;
      return {
        run_at: iso(r.at),
        batch_id: r.batchId,
        balance_amount: centsToDollarsOrNull(r.cents),
        status: ok ? ('success' as const) : ('failed' as const),
        ...(ok ? {} : { error_message: errorMessageFor(r.code, r.exportStatus, r.detail) }),
        ...linkedFields(r),
      };
    }),
    next_page_token: nextPageToken,
    has_more: hasMore,
  };
}

/** Authorizers accepted and not yet checked, all lenders together (readiness and metrics). */
export function queueDepth(deps: Pick<JobContext['deps'], 'db'>): number {
  return q.pendingAuthorizers(deps.db, null);
}

/** Threshold hits of a completed batch: every result whose balance meets or exceeds its item's threshold. */
export function thresholdHits({ ctx, input }: { ctx: JobContext; input: { batchId: string } }) {
  return q.thresholdHits(ctx.tx ?? ctx.deps.db, input.batchId);
}


/** Columns of this feature holding vault-sealed values. */
export const sealedColumns: SealedColumn[] = [{ table: 'batch_payloads', key: 'batch_id', column: 'sealed' }];

/** The lender's most recent batches, newest first (the portal's list). */
/**
 * The lender's batches, newest first, paged (the portal's list): the batches the lender sent (API, CSV,
 * schedules) by default, or the monitoring reads, or every batch.
 */
export function listBatches({ ctx, input }: { ctx: Ctx; input: PageQuery & { limit: number; kind?: 'sent' | 'monitoring' | 'all' } }) {
  const kind = input.kind ?? 'sent';
  const { page, hasMore, nextPageToken } = keysetPage<typeof batches.$inferSelect, { t: number; i: string }>({
    tokens: ctx.deps.pageTokens,
    scope: `batches:${ctx.lender.id}:${kind}`,
    query: input,
    limit: input.limit,
    start: { t: Number.MAX_SAFE_INTEGER, i: '' },
    fetch: (after, take) => {
      const conds = [eq(batches.lenderId, ctx.lender.id), olderThan(batches.submittedAt, batches.id, after.t, after.i)];
      if (kind === 'sent') conds.push(ne(batches.source, 'monitoring'));
      if (kind === 'monitoring') conds.push(eq(batches.source, 'monitoring'));
      return dbOf(ctx).select().from(batches).where(and(...conds)).orderBy(desc(batches.submittedAt), desc(batches.id)).limit(take).all();
    },
    positionOf: (b) => ({ t: b.submittedAt, i: b.id }),
  });
  return { batches: page, hasMore, nextPageToken };
}
