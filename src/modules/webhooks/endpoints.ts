import type { EndpointEventType } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { transaction } from '../../platform/context';
import type { TxCtx } from '../../platform/store';
import { Conflict, InvalidInput, NotFound } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { validateWebhookUrl } from './service';
import { validated } from '../../platform/validation';
import { EndpointCreate } from './model';
import type { EndpointRow, NewDelivery, WebhookStore } from './store';

// A lender's own webhook endpoints: its payment events and collection notices are pushed to them through the
// outbox, in the transaction of the change that causes them, signed with the lender's secret and retried.

export const MAX_ENDPOINTS = 10;

type Row = EndpointRow;
const view = (e: Row) => ({
  id: e.id,
  url: e.url,
  event_types: JSON.parse(e.eventTypes) as EndpointEventType[],
  description: e.description,
  created_at: iso(e.createdAt),
});

/** POST /v1/webhook_endpoints. */
export async function createEndpoint({ ctx, input: sent }: { ctx: Ctx; input: { url: string; event_types: EndpointEventType[]; description?: string } }) {
  // The API's rules whoever asks (the route has checked them; the portal's form has its own shape).
  const input = validated(EndpointCreate, sent);
  const types = [...new Set(input.event_types)];
  if (types.length === 0) throw InvalidInput.field('event_types', 'event_types must name at least one event type');
  await validateWebhookUrl(ctx.deps, 'url', input.url);
  const now = ctx.deps.clock.now();
  return transaction(ctx, async (tx) => {
    // The count holds until the insert: another creation for this lender waits for this one to end.
    await tx.deps.stores.webhooks.serializeEndpoints(tx, ctx.lender.id);
    const n = await tx.deps.stores.webhooks.countEndpoints(tx, ctx.lender.id);
    if (n >= MAX_ENDPOINTS) throw new Conflict(`A lender has at most ${MAX_ENDPOINTS} webhook endpoints; delete one first`);
    const row: Row = { id: newId(), lenderId: ctx.lender.id, url: input.url, eventTypes: JSON.stringify(types), description: input.description ?? null, createdAt: now };
    await tx.deps.stores.webhooks.addEndpoint(tx, row);
    return view(row);
  });
}

/** GET /v1/webhook_endpoints: the lender's, oldest first. */
export async function listEndpoints({ ctx }: { ctx: Ctx }) {
  const rows = await ctx.deps.stores.webhooks.listEndpoints(ctx, ctx.lender.id);
  return { endpoints: rows.map(view) };
}

/** DELETE /v1/webhook_endpoints/{id}: another lender's or an unknown one is not found. */
export async function deleteEndpoint({ ctx, input }: { ctx: Ctx; input: { id: string } }): Promise<void> {
  await transaction(ctx, async (tx) => {
    if (!(await tx.deps.stores.webhooks.deleteEndpoint(tx, ctx.lender.id, input.id))) throw new NotFound('Webhook endpoint', input.id);
  });
}

/**
 * The endpoints a batch of events is pushed to, read once per lender for the batch (a feed's page) rather than
 * once per event: put in the ctx of the batch's transaction as `targetsOf`.
 */
export interface TargetsMemo {
  targetsOf?: Map<string, ReturnType<WebhookStore['endpointTargets']>>;
}

/** One delivery to every endpoint of the lender subscribed to this type, in the caller's transaction. */
export async function pushToEndpoints(ctx: TxCtx & TargetsMemo, now: number, lenderId: string, type: EndpointEventType, payload: Record<string, unknown>): Promise<void> {
  let targets = ctx.targetsOf?.get(lenderId);
  if (!targets) {
    targets = ctx.deps.stores.webhooks.endpointTargets(ctx, lenderId);
    ctx.targetsOf?.set(lenderId, targets);
  }
  const deliveries = deliveriesTo(await targets, now, lenderId, type, payload);
  if (deliveries.length > 0) await ctx.deps.stores.webhooks.enqueueDeliveries(ctx, deliveries);
}

function deliveriesTo(
  targets: { url: string; eventTypes: string }[],
  now: number,
  lenderId: string,
  type: EndpointEventType,
  payload: Record<string, unknown>,
): NewDelivery[] {
  const deliveries: NewDelivery[] = [];
  for (const e of targets) {
    if (!(JSON.parse(e.eventTypes) as string[]).includes(type)) continue;
    const event_uuid = crypto.randomUUID();
    const body = JSON.stringify({ event_uuid, type, ...payload });
    deliveries.push({ id: event_uuid, lenderId, type, url: e.url, body, now });
  }
  return deliveries;
}
