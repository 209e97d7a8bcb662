import type { Deps } from '../../platform/deps';
import { BadRequest, NotFound } from '../../platform/errors';
import { immediate } from '../../platform/db';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { newId } from '../../platform/ids';
import { tokenFrom } from '../../platform/pagination';
import { validateWebhookUrl } from '../webhooks/service';
import type { AuthedLender } from '../../platform/auth';
import { validateAuthorizers, type AuthorizerCandidate, type FailedAuthorizer, type NormalizedAuthorizer } from './validation';
import { errorMessageFor } from './status';
import { packItems, packSensitive } from './payload';

export const MAX_AUTHORIZERS = 1000;
export const IDEMPOTENCY_TTL_MS = DAY_MS;

export type BatchSource = 'api' | 'csv' | 'schedule';

export interface SubmissionResponse {
  batch_id: string;
  submitted_at: string;
  message: string;
  failed_authorizers: FailedAuthorizer[];
  warnings?: string[];
}

/** The part of an authorizer kept in the clear, as stored in batch_payloads.items. */
export interface QueuedAuthorizer {
  id: string;
  type: 'ACCOUNT_NUMBER' | 'DEBIT_CARD';
  routing: string | null;
  phone: string | null;
  zip: string | null;
  meta: Record<string, string | number | boolean> | null;
  threshold: number | null;
}

/**
 * Inserts a batch and its payload in the caller's transaction: two rows whatever the batch's size. The
 * processing job creates the per-authorizer queue rows when it takes the batch up.
 */
export function insertBatch(
  deps: Deps,
  input: {
    lenderId: string;
    source: BatchSource;
    scheduleId?: string | null;
    webhookUrl?: string | null;
    authorizers: NormalizedAuthorizer[];
    now: number;
  },
): string {
  const { sqlite, vault } = deps;
  const batchId = newId();
  sqlite
    .query(
      `INSERT INTO batches (id, lender_id, source, schedule_id, status, webhook_url, submitted_at, total_authorizers, total_processed)
       VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, 0)`,
    )
    .run(batchId, input.lenderId, input.source, input.scheduleId ?? null, input.webhookUrl ?? null, input.now, input.authorizers.length);
  const items: QueuedAuthorizer[] = input.authorizers.map((a) => ({
    id: a.authorizerUniqueId,
    type: a.paymentType,
    routing: a.routingNumber,
    phone: a.phone,
    zip: a.zip,
    meta: a.metadata,
    threshold: a.thresholdCents,
  }));
  sqlite
    .query('INSERT INTO batch_payloads (batch_id, sealed, items) VALUES (?, ?, ?)')
    .run(batchId, vault.seal(packSensitive(input.authorizers.map((a) => a.sensitive))), packItems(items));
  return batchId;
}

const acceptedMessage = (n: number) =>
  `Batch accepted: ${n} authorizer${n === 1 ? '' : 's'} queued for a balance check`;

/**
 * POST /v1/balance_requests and the CSV variant. Rule failures per authorizer come back in
 * failed_authorizers and the rest proceeds; when none is left the request is a 400. A JSON body seen from
 * the same lender in the last 24 hours returns the first answer (no second batch).
 */
export async function submitBalanceRequest(
  deps: Deps,
  lender: AuthedLender,
  input: {
    candidates: { candidate: AuthorizerCandidate; rowNumber: number }[];
    preFailed?: FailedAuthorizer[];
    webhookUrl?: string | null;
    source: 'api' | 'csv';
    bodyHash?: string;
    warnings?: string[];
  },
): Promise<{ status: number; body: SubmissionResponse; replayed: boolean }> {
  const { sqlite, clock } = deps;
  const cacheGet = sqlite.query<{ statusCode: number; responseBody: string }, [string, string, number]>(
    'SELECT status_code AS statusCode, response_body AS responseBody FROM idempotency_keys WHERE lender_id = ? AND body_hash = ? AND created_at > ?',
  );
  if (input.bodyHash) {
    const hit = cacheGet.get(lender.id, input.bodyHash, clock.now() - IDEMPOTENCY_TTL_MS);
    if (hit) return { status: hit.statusCode, body: JSON.parse(hit.responseBody), replayed: true };
  }
  if (input.webhookUrl) await validateWebhookUrl(deps, 'webhook_url', input.webhookUrl);

  const now = clock.now();
  const { accepted, failed } = validateAuthorizers(input.candidates, { debitCardsApproved: lender.debitCardApproved, now });
  const allFailed = [...(input.preFailed ?? []), ...failed].sort((a, b) => a.row_number - b.row_number);
  if (accepted.length === 0) {
    throw new BadRequest('No authorizer in the request passed validation', { failed_authorizers: allFailed }, 'Correct the listed authorizers and send them again');
  }

  return immediate(sqlite, () => {
    // Checked again under the write lock: two identical requests at once still make one batch.
    if (input.bodyHash) {
      const hit = cacheGet.get(lender.id, input.bodyHash, now - IDEMPOTENCY_TTL_MS);
      if (hit) return { status: hit.statusCode, body: JSON.parse(hit.responseBody) as SubmissionResponse, replayed: true };
    }
    const batchId = insertBatch(deps, { lenderId: lender.id, source: input.source, webhookUrl: input.webhookUrl, authorizers: accepted, now });
    const body: SubmissionResponse = {
      batch_id: batchId,
      submitted_at: iso(now),
      message: acceptedMessage(accepted.length),
      failed_authorizers: allFailed,
    };
    if (input.warnings) body.warnings = input.warnings;
    if (input.bodyHash) {
      sqlite
        .query(
          `INSERT INTO idempotency_keys (lender_id, body_hash, status_code, response_body, created_at) VALUES (?, ?, 201, ?, ?)
           ON CONFLICT(lender_id, body_hash) DO UPDATE SET status_code = 201, response_body = excluded.response_body, created_at = excluded.created_at`,
        )
        .run(lender.id, input.bodyHash, JSON.stringify(body), now);
    }
    return { status: 201, body, replayed: false };
  });
}

interface BatchRow {
  id: string;
  lenderId: string;
  source: BatchSource;
  scheduleId: string | null;
  status: 'pending' | 'processing' | 'completed';
  submittedAt: number;
  completedAt: number | null;
  totalAuthorizers: number;
  totalProcessed: number;
}

export function findBatch(deps: Deps, lenderId: string, batchId: string): BatchRow | null {
  return (
    deps.sqlite
      .query<BatchRow, [string, string]>(
        `SELECT id, lender_id AS lenderId, source, schedule_id AS scheduleId, status, submitted_at AS submittedAt,
                completed_at AS completedAt, total_authorizers AS totalAuthorizers, total_processed AS totalProcessed
           FROM batches WHERE id = ? AND lender_id = ?`,
      )
      .get(batchId, lenderId) ?? null
  );
}

export function batchStatus(deps: Deps, lenderId: string, batchId: string) {
  const b = findBatch(deps, lenderId, batchId);
  if (!b) throw new NotFound('Batch not found');
  return {
    batch_id: b.id,
    status: b.status,
    source: b.source,
    schedule_id: b.scheduleId,
    submitted_at: iso(b.submittedAt),
    completed_at: isoOrNull(b.completedAt),
    total_authorizers: b.totalAuthorizers,
    total_processed: b.totalProcessed,
  };
}

export const centsToDollars = (c: number | null): number | null => (c === null ? null : c / 100);

/** GET /v1/balances: results in the order they were recorded, so each appears once across pages. */
export function listBalances(deps: Deps, lenderId: string, q: { batchId: string; limit?: number; next_page_token?: string; nextPageToken?: string }) {
  const b = findBatch(deps, lenderId, q.batchId);
  if (!b) throw new NotFound('Batch not found');
  const limit = q.limit ?? 100;
  const scope = `balances:${lenderId}:${b.id}`;
  const token = tokenFrom(q);
  const after = token ? deps.pageTokens.decode<{ r: number }>(scope, token).r : 0;
  const rows = deps.sqlite
    .query<{ id: number; aid: string; cents: number | null; code: number; at: number }, [string, number, number]>(
      `SELECT id, authorizer_unique_id AS aid, balance_cents AS cents, status_code AS code, recorded_at AS at
         FROM balance_results WHERE batch_id = ? AND id > ? ORDER BY id LIMIT ?`,
    )
    .all(b.id, after, limit + 1);
  const page = rows.slice(0, limit);
  // While the batch runs there is more to come: the token then resumes after the last result seen.
  const hasMore = rows.length > limit || b.status !== 'completed';
  const last = page[page.length - 1];
  return {
    batch_id: b.id,
    total_processed: b.totalProcessed,
    balances: page.map((r) => ({
      authorizer_unique_id: r.aid,
      balance: centsToDollars(r.cents),
      timestamp: iso(r.at),
      balance_status_code: r.code,
    })),
    has_more: hasMore,
    next_page_token: hasMore ? deps.pageTokens.encode(scope, { r: last?.id ?? after }) : null,
  };
}

/** Every balance read of one authorizer for the lender, newest first. */
export function authorizerHistory(
  deps: Deps,
  lenderId: string,
  authorizerId: string,
  q: { limit?: number; next_page_token?: string; nextPageToken?: string },
) {
  const limit = q.limit ?? 10;
  const scope = `history:${lenderId}:${authorizerId}`;
  const token = tokenFrom(q);
  const before = token ? deps.pageTokens.decode<{ r: number }>(scope, token).r : Number.MAX_SAFE_INTEGER;
  const total = deps.sqlite
    .query<{ n: number }, [string, string]>(
      'SELECT COUNT(*) AS n FROM balance_results WHERE lender_id = ? AND authorizer_unique_id = ?',
    )
    .get(lenderId, authorizerId)!.n;
  const rows = deps.sqlite
    .query<
      { id: number; batchId: string; cents: number | null; code: number; exportStatus: string; at: number },
      [string, string, number, number]
    >(
      `SELECT id, batch_id AS batchId, balance_cents AS cents, status_code AS code, export_status AS exportStatus, recorded_at AS at
         FROM balance_results WHERE lender_id = ? AND authorizer_unique_id = ? AND id < ?
        ORDER BY id DESC LIMIT ?`,
    )
    .all(lenderId, authorizerId, before, limit + 1);
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return {
    authorizer_unique_id: authorizerId,
    total_count: total,
    history: page.map((r) => {
      const ok = r.code === 0;
      return {
        run_at: iso(r.at),
        batch_id: r.batchId,
        balance_amount: centsToDollars(r.cents),
        status: ok ? ('success' as const) : ('failed' as const),
        ...(ok ? {} : { error_message: errorMessageFor(r.code, r.exportStatus) }),
      };
    }),
    next_page_token: hasMore ? deps.pageTokens.encode(scope, { r: page[page.length - 1]!.id }) : null,
    has_more: hasMore,
  };
}
