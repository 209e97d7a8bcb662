import { and, asc, eq } from 'drizzle-orm';
import { webhookEndpoints } from '../../../db/schema';
import type { EndpointEventType } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { dbOf, transaction, type Tx } from '../../platform/context';
import { Conflict, InvalidInput, NotFound } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { validateWebhookUrl } from './service';
import { validated } from '../../platform/validation';
import { EndpointCreate } from './model';
import * as q from './queries';

// A lender's own webhook endpoints: its payment events and collection notices are pushed to them through the
// outbox, in the transaction of the change that causes them, signed with the lender's secret and retried.

export const MAX_ENDPOINTS = 10;

type Row = typeof webhookEndpoints.$inferSelect;
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
  return transaction(ctx, ({ tx }) => {
    const n = tx.select({ id: webhookEndpoints.id }).from(webhookEndpoints).where(eq(webhookEndpoints.lenderId, ctx.lender.id)).all().length;
    if (n >= MAX_ENDPOINTS) throw new Conflict(`A lender has at most ${MAX_ENDPOINTS} webhook endpoints; delete one first`);
    const row: Row = { id: newId(), lenderId: ctx.lender.id, url: input.url, eventTypes: JSON.stringify(types), description: input.description ?? null, createdAt: now };
    tx.insert(webhookEndpoints).values(row).run();
    return view(row);
  });
}

/** GET /v1/webhook_endpoints: the lender's, oldest first. */
export function listEndpoints({ ctx }: { ctx: Ctx }) {
  const rows = dbOf(ctx).select().from(webhookEndpoints).where(eq(webhookEndpoints.lenderId, ctx.lender.id)).orderBy(asc(webhookEndpoints.createdAt)).all();
  return { endpoints: rows.map(view) };
}

/** DELETE /v1/webhook_endpoints/{id}: another lender's or an unknown one is not found. */
export async function deleteEndpoint({ ctx, input }: { ctx: Ctx; input: { id: string } }): Promise<void> {
  await transaction(ctx, ({ tx }) => {
    const gone = tx
      .delete(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, input.id), eq(webhookEndpoints.lenderId, ctx.lender.id)))
      .returning({ id: webhookEndpoints.id })
      .all();
    if (gone.length === 0) throw new NotFound('Webhook endpoint', input.id);
  });
}

/** One delivery to every endpoint of the lender subscribed to this type, in the caller's transaction. */
export function pushToEndpoints(tx: Tx, now: number, lenderId: string, type: EndpointEventType, payload: Record<string, unknown>): void {
  const rows = q.endpointsOf(tx, lenderId);
  for (const e of rows) {
    if (!(JSON.parse(e.eventTypes) as string[]).includes(type)) continue;
    const event_uuid = crypto.randomUUID();
    const body = JSON.stringify({ event_uuid, type, ...payload });
    q.insertDelivery(tx, { id: event_uuid, lenderId, type, url: e.url, body, now });
  }
}
