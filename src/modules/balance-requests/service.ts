import { connectedProviders } from '../bank-data-connections/service';
import type { BatchSource } from '../../../db/schema/enums';
import type { Ctx, JobContext } from '../../deps';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { afterCommit, type Tx } from '../../platform/context';
import { InvalidInput, NotFound, RateLimited } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { centsToDollarsOrNull } from '../../platform/money';
import { keysetPage, type PageQuery } from '../../platform/pagination';
import type { StoreCtx } from '../../platform/store';
import { validateWebhookUrl } from '../webhooks/service';
import { validateAuthorizerList, type FailedAuthorizer, type NormalizedAuthorizer } from '../authorizers/rules';
import type { BalanceRequest } from './model';
import { packBatch, type PackedBatch } from './payload';
import { prepareCsvOffLoop, prepareOffLoop } from './accept-offload';
import { type BalanceRow, type Batch, type LatestResult, type NewBatch, type StoredPayload } from './store';
import { storedReadingProblem } from '../../adapters/bank-data/plausible';
import type { ExportStatus } from './status';
import { errorMessageFor } from './status';
import { detailOf, type ReusedFrom } from './link-reads';
import type { SealedColumn } from '../../platform/vault';

/** What a lender over its queue bound is told to wait before sending again. */
export const QUEUE_FULL_RETRY_AFTER_S = 30;
export const IDEMPOTENCY_TTL_MS = DAY_MS;

/** The answer to a balance request as it is kept for a replay: the first answer, as it was sent. */
interface StoredSubmission {
  batch_id: string;
  submitted_at: string;
  message: string;
  failed_authorizers: FailedAuthorizer[];
  warnings?: string[];
}

/** The answer sent: the kept one, and whether it is an identical earlier request's answer sent again. */
export interface SubmissionResponse extends StoredSubmission {
  replayed: boolean;
}

export type { Batch };

/** The 429 of a lender over its bound on authorizers waiting to be checked. */
function overBacklog(pending: number, max: number, adding: number, what: string): RateLimited {
  return new RateLimited(
    QUEUE_FULL_RETRY_AFTER_S,
    `${pending} authorizers of this lender are waiting to be checked and at most ${max} may wait; ${what} would add ${adding}`,
    `Retry after ${QUEUE_FULL_RETRY_AFTER_S} seconds, when earlier batches have progressed`,
  );
}

/**
 * Refuses (429) a balance request before its body is read when the lender's backlog is already at its bound:
 * any batch would pass it. A body that would pass it only by its own size is refused once counted.
 */
export async function refuseWhenBacklogFull(ctx: Ctx): Promise<void> {
  const max = ctx.deps.config.maxPendingAuthorizersPerLender;
  const pending = await ctx.deps.stores.balances.pendingAuthorizers(ctx, ctx.lender.id);
  if (pending >= max) {
    throw new RateLimited(
      QUEUE_FULL_RETRY_AFTER_S,
      `${pending} authorizers of this lender are waiting to be checked and at most ${max} may wait; no batch is taken until earlier ones have progressed`,
      `Retry after ${QUEUE_FULL_RETRY_AFTER_S} seconds, when earlier batches have progressed`,
    );
  }
}

/**
 * Refuses (429) work that would take the lender past its bound on authorizers waiting to be checked; call it
 * under the write lock, before the batch is inserted.
 */
export async function refuseOverBacklog(ctx: JobContext & { tx: Tx }, lenderId: string, adding: number, what: string): Promise<void> {
  const max = ctx.deps.config.maxPendingAuthorizersPerLender;
  // The lender's other accepts wait until this transaction ends: its batch is counted by the next one.
  await ctx.deps.stores.balances.serializeBacklog(ctx, lenderId);
  const pending = await ctx.deps.stores.balances.pendingAuthorizers(ctx, lenderId);
  if (pending + adding > max) throw overBacklog(pending, max, adding, what);
}

interface BatchInput {
  lenderId: string;
  source: BatchSource;
  scheduleId?: string | null;
  webhookUrl?: string | null;
  /** The display name of the dashboard user who submitted; null for API submissions. */
  creator?: string | null;
  /** The accepted authorizers, or their payload already packed and sealed (packBatch, maybe in a worker). */
  authorizers: NormalizedAuthorizer[] | PackedBatch;
  now: number;
}

/** A new batch's row and payload: the authorizers packed and sealed unless they already are. */
function newBatch(ctx: Pick<Ctx, 'deps'>, input: BatchInput): { batch: NewBatch; payload: StoredPayload } {
  const packed = Array.isArray(input.authorizers) ? packBatch(input.authorizers, sealerOf(ctx)) : input.authorizers;
  return {
    batch: {
      id: newId(),
      lenderId: input.lenderId,
      source: input.source,
      scheduleId: input.scheduleId ?? null,
      webhookUrl: input.webhookUrl ?? null,
      creator: input.creator ?? null,
      now: input.now,
      total: packed.count,
    },
    payload: { sealed: packed.sealed, items: packed.items },
  };
}

/** The balance pipeline's job (processing.ts), woken when a batch is queued rather than at its next tick. */
export const BALANCE_PROCESSING_JOB = 'balance-processing';

/**
 * Inserts a batch and its payload in the caller's transaction: two rows whatever the batch's size. The
 * processing job creates the per-authorizer queue rows when it takes the batch up, woken once this commits.
 */
export async function insertBatch({ ctx, input }: { ctx: JobContext & { tx: Tx }; input: BatchInput }): Promise<string> {
  const { batch, payload } = newBatch(ctx, input);
  await ctx.deps.stores.balances.insertBatch(ctx, batch, payload);
  afterCommit(ctx, () => ctx.deps.wakeups?.wake(BALANCE_PROCESSING_JOB));
  return batch.id;
}

const acceptedMessage = (n: number) => `Batch accepted: ${n} authorizer${n === 1 ? '' : 's'} queued for a balance check`;

/** The first answer to a body seen from the same lender in the last 24 hours, if there is one. */
async function replayOf(ctx: StoreCtx, lenderId: string, bodyHash: string | undefined, now: number) {
  const hit = bodyHash ? await ctx.deps.stores.balances.cachedResponse(ctx, lenderId, bodyHash, now - IDEMPOTENCY_TTL_MS) : undefined;
  return hit ? replayed(hit) : null;
}

/** An earlier answer sent again: its body says so (an answer kept before it did has no such field). */
const replayed = (hit: { statusCode: number; responseBody: string }) => ({
  status: hit.statusCode,
  body: { ...(JSON.parse(hit.responseBody) as StoredSubmission), replayed: true } as SubmissionResponse,
  replayed: true,
});

/**
 * The replay key of a balance CSV: the file's bytes and its webhook_url, as the JSON route's is its body's
 * bytes (which hold its webhook_url). The tag keeps a file's key from ever being a JSON body's.
 */
const csvReplayKey = (fileHash: string, webhookUrl: string | null) =>
  new Bun.CryptoHasher('sha256').update(`balance_requests/csv\0${JSON.stringify(webhookUrl)}\0${fileHash}`).digest('hex');

/** The deps' vault as packBatch's sealer. */
const sealerOf = (ctx: Pick<Ctx, 'deps'>) => (plaintext: Uint8Array) => ctx.deps.vault.sealBytes(plaintext);

/**
 * POST /v1/balance_requests, from the body's bytes: read, checked, validated and sealed off the event loop
 * when the body is large (accept-offload.ts), then accepted here. A JSON body seen from the same lender in
 * the last 24 hours returns the first answer (no second batch).
 */
export async function submitBalanceRequestBody({ ctx, input }: { ctx: Ctx; input: { bytes: Uint8Array } }) {
  const now = ctx.deps.clock.now();
  const prepared = await prepareOffLoop(ctx.deps, input.bytes, { debitCardsApproved: ctx.lender.debitCardApproved, now, bankProviders: await connectedProviders(ctx) });
  return (
    (await replayOf(ctx, ctx.lender.id, prepared.bodyHash, now)) ??
    acceptBatch({
      ctx,
      input: { accepted: prepared.accepted, failed: prepared.failed, webhookUrl: prepared.webhookUrl, source: 'api', bodyHash: prepared.bodyHash, now },
    })
  );
}

/** The same, from a body already read and checked against its schema (the service's own callers). */
export async function submitBalanceRequest({ ctx, input }: { ctx: Ctx; input: { body: BalanceRequest; bodyHash?: string } }) {
  const now = ctx.deps.clock.now();
  const { accepted, failed } = validateAuthorizerList(input.body.authorizers, { debitCardsApproved: ctx.lender.debitCardApproved, now, bankProviders: await connectedProviders(ctx) });
  return (
    (await replayOf(ctx, ctx.lender.id, input.bodyHash, now)) ??
    acceptBatch({
      ctx,
      input: { accepted: packBatch(accepted, sealerOf(ctx)), failed, webhookUrl: input.body.webhook_url ?? null, source: 'api', bodyHash: input.bodyHash, now },
    })
  );
}

/**
 * A balance CSV file: read, checked and sealed off the event loop when it is large, then accepted as one batch.
 * Through the API (`replay`), the same file with the same webhook_url from the same lender within 24 hours
 * returns the first answer, as an identical JSON body does; from the portal each upload is a batch.
 */
export async function submitBalanceCsv({
  ctx,
  input,
}: {
  ctx: Ctx;
  input: {
    /** The file's bytes (handed over: the caller has no further use for them). */
    file: Uint8Array;
    webhookUrl: string | null;
    creator?: string | null;
    /** Replay an identical file sent within 24 hours (the API's route). */
    replay?: boolean;
  };
}) {
  const now = ctx.deps.clock.now();
  const prepared = await prepareCsvOffLoop(ctx.deps, input.file, { debitCardsApproved: ctx.lender.debitCardApproved, now, bankProviders: await connectedProviders(ctx) });
  const bodyHash = input.replay ? csvReplayKey(prepared.fileHash, input.webhookUrl) : undefined;
  const result =
    (await replayOf(ctx, ctx.lender.id, bodyHash, now)) ??
    (await acceptBatch({
      ctx,
      input: { accepted: prepared.accepted, failed: prepared.failed, webhookUrl: input.webhookUrl, source: 'csv', bodyHash, warnings: prepared.warnings, creator: input.creator ?? null, now },
    }));
  return { ...result, body: { ...result.body, warnings: result.body.warnings ?? prepared.warnings } };
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
  const { batch, payload } = newBatch(ctx, {
    lenderId: ctx.lender.id,
    source: input.source,
    webhookUrl: input.webhookUrl,
    creator: input.creator ?? null,
    authorizers: input.accepted,
    now,
  });
  const body: StoredSubmission = {
    batch_id: batch.id,
    submitted_at: iso(now),
    message: acceptedMessage(count),
    failed_authorizers: allFailed,
  };
  if (input.warnings) body.warnings = input.warnings;
  const max = ctx.deps.config.maxPendingAuthorizersPerLender;
  // Requests accepted at about the same moment share one commit (and its fsync); an identical request that
  // came meanwhile and the lender's bound are checked again under the write lock.
  const outcome = await ctx.deps.stores.balances.acceptBatch(ctx, {
    batch,
    payload,
    replay: input.bodyHash ? { bodyHash: input.bodyHash, since: now - IDEMPOTENCY_TTL_MS, responseBody: JSON.stringify(body) } : null,
    maxPending: max,
  });
  if (outcome.kind === 'replay') return replayed(outcome.hit);
  if (outcome.kind === 'over_backlog') throw overBacklog(outcome.pending, max, count, 'this request');
  // Committed: the pipeline takes it up now.
  ctx.deps.wakeups?.wake(BALANCE_PROCESSING_JOB);
  return { status: 201, body: { ...body, replayed: false }, replayed: false };
}

async function findBatch(ctx: Ctx, batchId: string): Promise<Batch> {
  const b = await ctx.deps.stores.balances.batchOf(ctx, ctx.lender.id, batchId);
  if (!b) throw new NotFound('Batch', batchId);
  return b;
}

export async function getBatchStatus({ ctx, input }: { ctx: Ctx; input: { batchId: string } }) {
  const b = await findBatch(ctx, input.batchId);
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
export async function listBalances({ ctx, input }: { ctx: Ctx; input: { batchId: string } & PageQuery }) {
  const b = await findBatch(ctx, input.batchId);
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `balances:${ctx.lender.id}:${b.id}`,
    query: input,
    limit: input.limit ?? 100,
    start: { r: 0 },
    fetch: (after, take) => ctx.deps.stores.balances.resultsPage(ctx, b.id, after.r, take),
    positionOf: (r) => ({ r: r.id }),
    // While the batch runs there is more to come: the token then resumes after the last result seen.
    moreAnyway: b.status !== 'completed',
  });
  return {
    batch_id: b.id,
    total_processed: b.totalProcessed,
    balances: page.map(shown).map((r) => ({
      authorizer_unique_id: r.aid,
      balance: centsToDollarsOrNull(r.cents),
      timestamp: iso(r.at),
      balance_status_code: r.code,
      ...linkedFields({ ...r, reusedFrom: detailOf(r.detail).reusedFrom }),
    })),
    has_more: hasMore,
    next_page_token: nextPageToken,
  };
}

/**
 * A stored result as it is shown: one whose balance or time no reading may have (written before the sources'
 * answers were checked, adapters/bank-data/plausible.ts) reads as the failed read it was, naming why.
 */
function shown<R extends BalanceRow & { exportStatus?: ExportStatus }>(r: R): R {
  const problem = storedReadingProblem(r.cents, r.asOf, r.at);
  return problem === null ? r : { ...r, cents: null, code: 9000, kind: null, asOf: null, exportStatus: 'RETRIEVAL_FAILED', detail: problem };
}

/**
 * A linked account's read says which balance it is and the provider's time for it, and which earlier read's
 * answer it took when it took one; other reads say nothing.
 */
function linkedFields(r: { kind: 'available' | 'current' | null; asOf: number | null; reusedFrom: ReusedFrom | null }) {
  return {
    ...(r.kind === null ? {} : { balance_kind: r.kind, as_of: isoOrNull(r.asOf) }),
    ...(r.reusedFrom ? { reused_from: { batch_id: r.reusedFrom.batchId, authorizer_unique_id: r.reusedFrom.aid, timestamp: iso(r.reusedFrom.at) } } : {}),
  };
}

/** Every balance read of one authorizer for the lender, newest first. */
export async function authorizerHistory({ ctx, input }: { ctx: Ctx; input: { authorizerId: string } & PageQuery }) {
  const total = await ctx.deps.stores.balances.historyCount(ctx, ctx.lender.id, input.authorizerId);
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `history:${ctx.lender.id}:${input.authorizerId}`,
    query: input,
    limit: input.limit ?? 10,
    start: { r: Number.MAX_SAFE_INTEGER },
    fetch: (before, take) => ctx.deps.stores.balances.historyPage(ctx, ctx.lender.id, input.authorizerId, before.r, take),
    positionOf: (r) => ({ r: r.id }),
  });
  return {
    authorizer_unique_id: input.authorizerId,
    total_count: total,
    history: page.map(shown).map((r) => {
      const ok = r.code === 0;
      const { cause, reusedFrom } = detailOf(r.detail);
      return {
        run_at: iso(r.at),
        batch_id: r.batchId,
        balance_amount: centsToDollarsOrNull(r.cents),
        status: ok ? ('success' as const) : ('failed' as const),
        ...(ok ? {} : { error_message: errorMessageFor(r.code, r.exportStatus, cause) }),
        ...linkedFields({ ...r, reusedFrom }),
      };
    }),
    next_page_token: nextPageToken,
    has_more: hasMore,
  };
}

/** Authorizers accepted and not yet checked, all lenders together (readiness and metrics). */
export function queueDepth(deps: StoreCtx['deps']): Promise<number> {
  return deps.stores.balances.pendingAuthorizers({ deps }, null);
}

/** Threshold hits of a completed batch: every result whose balance meets or exceeds its item's threshold. */
export function thresholdHits({ ctx, input }: { ctx: JobContext; input: { batchId: string } }) {
  return ctx.deps.stores.balances.thresholdHits(ctx, input.batchId);
}

/**
 * An authorizer's latest result of a lender as a read shows it: which balance it read, the provider's time for
 * it, and the earlier read whose answer it took (linked accounts; nothing otherwise).
 */
export async function latestLinkedFields(ctx: StoreCtx, lenderId: string, aid: string) {
  const r = await ctx.deps.stores.balances.latestResultOf(ctx, lenderId, aid);
  return r ? linkedFields({ kind: r.balanceKind, asOf: r.balanceAsOf, reusedFrom: detailOf(r.detail).reusedFrom }) : {};
}

/** A borrower's last read as its enrollment keeps it: the balance set on it and when. */
export interface LastRead {
  aid: string;
  cents: number | null;
  at: number;
}

/**
 * Borrowers' last reads as their enrollments show them, by authorizer, their latest results read in one
 * statement for all of them (a page of enrollments). A balance or a provider's time no reading may have (stored
 * before the sources' answers were checked) shows as a read without a balance, never as a number a debit was
 * decided on nor a time that cannot be written.
 */
export async function lastReadViews(ctx: StoreCtx, lenderId: string, reads: readonly LastRead[]) {
  const latest = new Map((await ctx.deps.stores.balances.latestResultsAmong(ctx, lenderId, reads.map((r) => r.aid))).map((r) => [r.aid, r]));
  return new Map(reads.map((read) => [read.aid, lastReadView(read, latest.get(read.aid))]));
}

export type LastReadView = ReturnType<typeof lastReadView>;

function lastReadView({ cents, at }: LastRead, r: LatestResult | undefined) {
  if (storedReadingProblem(cents, r?.balanceAsOf ?? null, at) !== null) return { balance_cents: null, at: iso(at) };
  return { balance_cents: cents, at: iso(at), ...(r ? linkedFields({ kind: r.balanceKind, asOf: r.balanceAsOf, reusedFrom: detailOf(r.detail).reusedFrom }) : {}) };
}

/** Columns of this feature holding vault-sealed values. */
export const sealedColumns: SealedColumn[] = [
  { table: 'batch_payloads', key: 'batch_id', column: 'sealed' },
  // A linked account kept with its health episode, for probing it.
  { table: 'bank_link_relinks', key: 'link_digest', column: 'link_sealed' },
];

/**
 * The lender's batches, newest first, paged (the portal's list): the batches the lender sent (API, CSV,
 * schedules) by default, or the monitoring reads, or every batch.
 */
export async function listBatches({ ctx, input }: { ctx: Ctx; input: PageQuery & { limit: number; kind?: 'sent' | 'monitoring' | 'all' } }) {
  const kind = input.kind ?? 'sent';
  const { page, hasMore, nextPageToken } = await keysetPage<Batch, { t: number; i: string }>({
    tokens: ctx.deps.pageTokens,
    scope: `batches:${ctx.lender.id}:${kind}`,
    query: input,
    limit: input.limit,
    start: { t: Number.MAX_SAFE_INTEGER, i: '' },
    fetch: (after, take) => ctx.deps.stores.balances.batchesPage(ctx, ctx.lender.id, kind, after, take),
    positionOf: (b) => ({ t: b.submittedAt, i: b.id }),
  });
  return { batches: page, hasMore, nextPageToken };
}
