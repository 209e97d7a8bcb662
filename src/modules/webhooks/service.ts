import { and, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { webhookDeliveries, webhookSecrets } from '../../../db/schema';
import type { WebhookType } from '../../../db/schema/enums';
import type { Ctx, Deps, JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { dbOf, transaction, withTransaction } from '../../platform/context';
import { InvalidInput } from '../../platform/errors';
import * as q from './queries';
import { DAY_MS, isoOrNull, iso } from '../../platform/clock';
import { newId } from '../../platform/ids';
import { keysetPage, olderThan } from '../../platform/pagination';
import { generateWebhookSecret } from '../../adapters/webhooks/signing';
import { checkWebhookUrl } from '../../adapters/webhooks/ssrf';
import type { SealedColumn } from '../../platform/vault';

export const ROTATION_OVERLAP_MS = DAY_MS;
/** Deliveries are kept small so receivers with body limits accept them. */
export const MAX_PAYLOAD_BYTES = 20_000;

export type { WebhookType };

/** The lender's current signing secret, or null before its first use. */
function storedSecret(ctx: JobContext, lenderId: string): { secret: string; createdAt: number } | null {
  const row = dbOf(ctx)
    .select()
    .from(webhookSecrets)
    .where(and(eq(webhookSecrets.lenderId, lenderId), isNull(webhookSecrets.expiresAt)))
    .get();
  return row ? { secret: ctx.deps.vault.open(row.secretSealed), createdAt: row.createdAt } : null;
}

/**
 * The lender's current signing secret, created on first use. It writes: only inside a span that may write
 * (a transaction, a request holding a share of the write gate, a job's turn); a read calls `ensureSecret`.
 */
function currentSecret(ctx: JobContext, lenderId: string): { secret: string; createdAt: number } {
  const found = storedSecret(ctx, lenderId);
  if (found) return found;
  const { deps } = ctx;
  const secret = generateWebhookSecret();
  const createdAt = deps.clock.now();
  withTransaction(ctx, ({ tx }) =>
    tx.insert(webhookSecrets).values({ id: newId(), lenderId, secretSealed: deps.vault.seal(secret), createdAt, expiresAt: null }).run(),
  );
  return { secret, createdAt };
}

/**
 * Makes sure the lender has a signing secret, for a read that finds none (a first GET /v1/webhooks/secret, a
 * delivery): the secret is created in the write gate's turn, so a read never writes while an upload holds
 * the write lock (it waits for it, without blocking the event loop).
 */
export async function ensureSecret(ctx: JobContext, lenderId: string): Promise<void> {
  if (storedSecret(ctx, lenderId)) return;
  await transaction(ctx, (tx) => currentSecret(tx, lenderId));
}

/** A new current secret; the previous one keeps signing for ROTATION_OVERLAP_MS. */
export function rotateSecret({ ctx }: { ctx: Ctx }) {
  const { deps } = ctx;
  const lenderId = ctx.lender.id;
  const now = deps.clock.now();
  return transaction(ctx, (tx) => {
    currentSecret(tx, lenderId);
    const expiresAt = now + ROTATION_OVERLAP_MS;
    tx.tx
      .update(webhookSecrets)
      .set({ expiresAt })
      .where(and(eq(webhookSecrets.lenderId, lenderId), isNull(webhookSecrets.expiresAt)))
      .run();
    const secret = generateWebhookSecret();
    tx.tx
      .insert(webhookSecrets)
      .values({ id: newId(), lenderId, secretSealed: deps.vault.seal(secret), createdAt: now, expiresAt: null })
      .run();
    return { secret, created_at: iso(now), previous_secret_expires_at: iso(expiresAt) };
  });
}

/** GET /v1/webhooks/secret: the current secret (created on first use, in the write gate's turn). */
export async function readSecret({ ctx }: { ctx: Ctx }) {
  await ensureSecret(ctx, ctx.lender.id);
  return getSecret({ ctx });
}

/** The current secret and when the previous one stops signing, once `ensureSecret` has made sure there is one. */
export function getSecret({ ctx }: { ctx: Ctx }) {
  const { deps } = ctx;
  const lenderId = ctx.lender.id;
  const { secret, createdAt } = currentSecret(ctx, lenderId);
  const previous = dbOf(ctx)
    .select({ expiresAt: webhookSecrets.expiresAt })
    .from(webhookSecrets)
    .where(and(eq(webhookSecrets.lenderId, lenderId), gt(webhookSecrets.expiresAt, deps.clock.now())))
    .orderBy(desc(webhookSecrets.expiresAt))
    .get();
  return { secret, created_at: iso(createdAt), previous_secret_expires_at: isoOrNull(previous?.expiresAt) };
}

/** Every secret a delivery is signed with now: the current one and any still in its overlap. */
export function signingSecrets(deps: Deps, lenderId: string, now: number): string[] {
  currentSecret({ deps }, lenderId);
  return deps.db
    .select({ sealed: webhookSecrets.secretSealed })
    .from(webhookSecrets)
    .where(and(eq(webhookSecrets.lenderId, lenderId), or(isNull(webhookSecrets.expiresAt), gt(webhookSecrets.expiresAt, now))))
    .orderBy(desc(webhookSecrets.createdAt))
    .all()
    .map((r) => deps.vault.open(r.sealed));
}

/** Request-time check of a webhook URL a caller sends; 400 names the field and the problem. */
export async function validateWebhookUrl(deps: Pick<Deps, 'config'>, field: string, raw: string): Promise<string> {
  const res = await checkWebhookUrl(raw, { allowPrivate: deps.config.webhookAllowPrivateTargets });
  if (!res.ok) throw InvalidInput.field(field, `${field} is not an acceptable webhook URL: ${res.reason}`);
  return raw;
}

/**
 * Writes a delivery to the outbox. Call it inside the transaction of the change that causes it, so the
 * event exists exactly when the change does. The id is the payload's event_uuid and the webhook-id header.
 */
export function enqueueWebhook({
  ctx,
  input,
}: {
  ctx: JobContext & { tx: Tx };
  input: { lenderId: string; type: WebhookType; url: string; payload: Record<string, unknown> & { event_uuid: string } };
}): void {
  const body = JSON.stringify(input.payload);
  if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) throw new Error(`webhook payload over ${MAX_PAYLOAD_BYTES} bytes`);
  const now = ctx.deps.clock.now();
  q.insertDelivery(ctx.tx, { id: input.payload.event_uuid, lenderId: input.lenderId, type: input.type, url: input.url, body, now });
}

export interface DeliveryFilter {
  status?: 'pending' | 'delivered' | 'failed';
  type?: WebhookType;
  limit?: number;
  next_page_token?: string;
  nextPageToken?: string;
}

export function listDeliveries({ ctx, input: q }: { ctx: Ctx; input: DeliveryFilter }) {
  const { deps } = ctx;
  const lenderId = ctx.lender.id;
  const { page, hasMore, nextPageToken } = keysetPage<typeof webhookDeliveries.$inferSelect, { c: number; i: string } | null>({
    tokens: deps.pageTokens,
    scope: `deliveries:${lenderId}:${q.status ?? ''}:${q.type ?? ''}`,
    query: q,
    limit: q.limit ?? 50,
    start: null,
    fetch: (after, take) => {
      const conds = [eq(webhookDeliveries.lenderId, lenderId)];
      if (q.status) conds.push(eq(webhookDeliveries.state, q.status));
      if (q.type) conds.push(eq(webhookDeliveries.type, q.type));
      if (after) {
        conds.push(olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, after.c, after.i));
      }
      return dbOf(ctx)
        .select()
        .from(webhookDeliveries)
        .where(and(...conds))
        .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
        .limit(take)
        .all();
    },
    positionOf: (d) => ({ c: d.createdAt, i: d.id }),
  });
  return {
    deliveries: page.map((d) => ({
      id: d.id,
      type: d.type,
      target_url: d.targetUrl,
      created_at: iso(d.createdAt),
      attempts: d.attempts,
      last_status_code: d.lastStatusCode,
      last_error: d.lastError,
      last_attempt_at: isoOrNull(d.lastAttemptAt),
      next_attempt_at: d.state === 'pending' ? isoOrNull(d.nextAttemptAt) : null,
      state: d.state,
      finished_at: isoOrNull(d.finishedAt),
    })),
    has_more: hasMore,
    next_page_token: nextPageToken,
  };
}

/** Deliveries still waiting to be sent, for readiness and benchmarks. */
export function countPending(deps: Deps): number {
  const row = deps.db
    .select({ n: sql<number>`count(*)` })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.state, 'pending'))
    .get();
  return row?.n ?? 0;
}


/** Columns of this feature holding vault-sealed values. */
export const sealedColumns: SealedColumn[] = [{ table: 'webhook_secrets', key: 'id', column: 'secret_sealed' }];
