import type { WebhookType } from '../../../db/schema/enums';
import type { Ctx, Deps, JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { transaction } from '../../platform/context';
import { InvalidInput } from '../../platform/errors';
import { type DeliveryRow, type NewDelivery } from './store';
import { DAY_MS, isoOrNull, iso } from '../../platform/clock';
import { newId } from '../../platform/ids';
import { keysetPage } from '../../platform/pagination';
import { generateWebhookSecret } from '../../adapters/webhooks/signing';
import { checkWebhookUrl } from '../../adapters/webhooks/ssrf';
import type { SealedColumn } from '../../platform/vault';

export const ROTATION_OVERLAP_MS = DAY_MS;
/** Deliveries are kept small so receivers with body limits accept them. */
export const MAX_PAYLOAD_BYTES = 20_000;

export type { WebhookType };

/** The lender's current signing secret, or null before its first use. */
async function storedSecret(ctx: JobContext, lenderId: string): Promise<{ secret: string; createdAt: number } | null> {
  const row = await ctx.deps.stores.webhooks.currentSecret(ctx, lenderId);
  return row ? { secret: ctx.deps.vault.open(row.secretSealed), createdAt: row.createdAt } : null;
}

/**
 * The lender's current signing secret, created on first use. It writes: only inside a span that may write
 * (a transaction, a request holding a share of the write gate, a job's turn); a read calls `ensureSecret`.
 * Not found, it is read again inside the transaction that creates it, after the lender's secrets are
 * serialized, so two first uses make one secret.
 */
async function currentSecret(ctx: JobContext, lenderId: string): Promise<{ secret: string; createdAt: number }> {
  const found = await storedSecret(ctx, lenderId);
  if (found) return found;
  return transaction(ctx, async (tx) => {
    // Another first use of this lender's secret waits here, then finds the one this transaction made.
    await tx.deps.stores.webhooks.serializeSecrets(tx, lenderId);
    return (await storedSecret(tx, lenderId)) ?? createSecret(tx, lenderId);
  });
}

async function createSecret(ctx: JobContext & { tx: Tx }, lenderId: string): Promise<{ secret: string; createdAt: number }> {
  const { deps } = ctx;
  const secret = generateWebhookSecret();
  const createdAt = deps.clock.now();
  await ctx.deps.stores.webhooks.addSecret(ctx, { id: newId(), lenderId, secretSealed: deps.vault.seal(secret), createdAt });
  return { secret, createdAt };
}

/**
 * Makes sure the lender has a signing secret, for a read that finds none (a first GET /v1/webhooks/secret, a
 * delivery): the secret is created in the write gate's turn, so a read never writes while an upload holds
 * the write lock (it waits for it, without blocking the event loop).
 */
export async function ensureSecret(ctx: JobContext, lenderId: string): Promise<void> {
  await currentSecret(ctx, lenderId);
}

/** A new current secret; the previous one keeps signing for ROTATION_OVERLAP_MS. */
export function rotateSecret({ ctx }: { ctx: Ctx }) {
  const { deps } = ctx;
  const lenderId = ctx.lender.id;
  const now = deps.clock.now();
  return transaction(ctx, async (tx) => {
    // Two rotations at once leave one current secret: the second expires the one the first made.
    await tx.deps.stores.webhooks.serializeSecrets(tx, lenderId);
    await currentSecret(tx, lenderId);
    const expiresAt = now + ROTATION_OVERLAP_MS;
    await tx.deps.stores.webhooks.expireCurrentSecret(tx, lenderId, expiresAt);
    const secret = generateWebhookSecret();
    await tx.deps.stores.webhooks.addSecret(tx, { id: newId(), lenderId, secretSealed: deps.vault.seal(secret), createdAt: now });
    return { secret, created_at: iso(now), previous_secret_expires_at: iso(expiresAt) };
  });
}

/** GET /v1/webhooks/secret: the current secret (created on first use, in the write gate's turn). */
export async function readSecret({ ctx }: { ctx: Ctx }) {
  await ensureSecret(ctx, ctx.lender.id);
  return getSecret({ ctx });
}

/** The current secret and when the previous one stops signing, once `ensureSecret` has made sure there is one. */
export async function getSecret({ ctx }: { ctx: Ctx }) {
  const { deps } = ctx;
  const lenderId = ctx.lender.id;
  const { secret, createdAt } = await currentSecret(ctx, lenderId);
  const previous = await ctx.deps.stores.webhooks.previousSecretExpiry(ctx, lenderId, deps.clock.now());
  return { secret, created_at: iso(createdAt), previous_secret_expires_at: isoOrNull(previous) };
}

/** Every secret a delivery is signed with now: the current one and any still in its overlap. */
export async function signingSecrets(deps: Deps, lenderId: string, now: number): Promise<string[]> {
  await currentSecret({ deps }, lenderId);
  return (await deps.stores.webhooks.signingSecrets({ deps }, lenderId, now)).map((sealed) => deps.vault.open(sealed));
}

/** Request-time check of a webhook URL a caller sends; 400 names the field and the problem. */
export async function validateWebhookUrl(deps: Pick<Deps, 'config'>, field: string, raw: string): Promise<string> {
  const allowPrivate = deps.config.webhookAllowPrivateTargets;
  const res = await checkWebhookUrl(raw, { allowPrivate });
  if (!res.ok) {
    // What the operator's setting would allow (http, loopback and private targets on a closed network) is named.
    const setting = !allowPrivate && res.kind === 'forbidden' ? ' (allowed only when the operator sets WEBHOOK_ALLOW_PRIVATE_TARGETS=true)' : '';
    throw InvalidInput.field(field, `${field} is not an acceptable webhook URL: ${res.reason}${setting}`);
  }
  return raw;
}

type EnqueueInput = { lenderId: string; type: WebhookType; url: string; payload: Record<string, unknown> & { event_uuid: string } };

/** The outbox row of a webhook, its payload checked against the size bound first. */
function deliveryOf(ctx: JobContext, input: EnqueueInput): NewDelivery {
  const body = JSON.stringify(input.payload);
  if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) throw new Error(`webhook payload over ${MAX_PAYLOAD_BYTES} bytes`);
  return { id: input.payload.event_uuid, lenderId: input.lenderId, type: input.type, url: input.url, body, now: ctx.deps.clock.now() };
}

/**
 * Writes a delivery to the outbox. Call it inside the transaction of the change that causes it, so the
 * event exists exactly when the change does. The id is the payload's event_uuid and the webhook-id header.
 */
export async function enqueueWebhook({ ctx, input }: { ctx: JobContext & { tx: Tx }; input: EnqueueInput }): Promise<void> {
  await ctx.deps.stores.webhooks.enqueueDeliveries(ctx, [deliveryOf(ctx, input)]);
}

export interface DeliveryFilter {
  status?: 'pending' | 'delivered' | 'failed';
  type?: WebhookType;
  limit?: number;
  next_page_token?: string;
  nextPageToken?: string;
}

type Position = { c: number; i: string } | null;

export async function listDeliveries({ ctx, input: q }: { ctx: Ctx; input: DeliveryFilter }) {
  const lenderId = ctx.lender.id;
  const { page, hasMore, nextPageToken } = await keysetPage<DeliveryRow, Position>({
    tokens: ctx.deps.pageTokens,
    scope: deliveryScope(lenderId, q),
    query: q,
    limit: q.limit ?? 50,
    start: null,
    fetch: (after, take) => ctx.deps.stores.webhooks.listDeliveries(ctx, { lenderId, status: q.status, type: q.type, after, take }),
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

const deliveryScope = (lenderId: string, q: DeliveryFilter) => `deliveries:${lenderId}:${q.status ?? ''}:${q.type ?? ''}`;

/** Deliveries still waiting to be sent, for readiness and benchmarks. */
export function countPending(deps: Deps): Promise<number> {
  return deps.stores.webhooks.countPendingDeliveries({ deps });
}

/** Columns of this feature holding vault-sealed values. */
export const sealedColumns: SealedColumn[] = [{ table: 'webhook_secrets', key: 'id', column: 'secret_sealed' }];
