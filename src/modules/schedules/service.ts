import { connectedProviders } from '../bank-data-connections/service';
import type { Static } from 'elysia';
import type { ScheduleStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { transaction, type Tx } from '../../platform/context';
import { Conflict, InvalidInput, NotFound } from '../../platform/errors';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { newId } from '../../platform/ids';
import { centsToDollars, dollarsToCents } from '../../platform/money';
import { keysetPage } from '../../platform/pagination';
import { validateWebhookUrl } from '../webhooks/service';
import { validateAuthorizerList } from '../authorizers/rules';
import type { CreateScheduleBody, UpdateScheduleBody } from './model';
import { dateOf, nextRunAfter, parseDate, randomTimeOfDay, startOfDay, type ScheduleTiming } from './times';
import type { SealedColumn } from '../../platform/vault';
import { type ScheduleRow } from './store';

export const DEFAULT_EXPIRY_DAYS = 30;
export const MAX_EXPIRY_DAYS = 365;

export type Schedule = ScheduleRow;

/** The lender's schedule, or NotFound (another lender's schedule is not found either). */
export async function getSchedule({ ctx, input }: { ctx: Ctx; input: { id: string } }): Promise<Schedule> {
  const row = await ctx.deps.stores.schedules.scheduleOf(ctx, ctx.lender.id, input.id);
  if (!row) throw new NotFound('Schedule', input.id);
  return row;
}

/** The lender's schedule held for a change in this transaction (store.lockSchedule), or NotFound. */
async function scheduleToChange(tx: Ctx & { tx: Tx }, id: string): Promise<Schedule> {
  const row = await tx.deps.stores.schedules.lockSchedule(tx, tx.lender.id, id);
  if (!row) throw new NotFound('Schedule', id);
  return row;
}

const timing = (s: Pick<Schedule, 'intervalDays' | 'timeOfDay' | 'startsAt' | 'expiresAt' | 'createdAt'>): ScheduleTiming => s;

/** expires_at rules shared by create and update: a real date, not past the 365-day limit. */
function checkExpiry(expiresAt: string, createdAt: number, field = 'expires_at'): void {
  const ms = parseDate(expiresAt);
  if (ms === null) throw InvalidInput.field(field, `${field} must be a date, YYYY-MM-DD`);
  if (ms > startOfDay(createdAt) + MAX_EXPIRY_DAYS * DAY_MS) {
    throw InvalidInput.field(field, `${field} may be at most ${MAX_EXPIRY_DAYS} days after the schedule was created`);
  }
}

/** A schedule as the API shows it. */
export async function view(ctx: Ctx, s: Schedule) {
  const [total] = await ctx.deps.stores.schedules.authorizerCounts(ctx, [s.id]);
  return viewOf(s, total!);
}

function viewOf(s: Schedule, totalAuthorizers: number) {
  return {
    schedule_id: s.id,
    name: s.name,
    status: s.status,
    interval_days: s.intervalDays,
    time_of_day: s.timeOfDay,
    starts_at: s.startsAt,
    expires_at: s.expiresAt,
    last_run_at: isoOrNull(s.lastRunAt),
    next_run_at: isoOrNull(s.nextRunAt),
    total_authorizers: totalAuthorizers,
    webhook: s.webhook,
    threshold_amount: s.thresholdCents === null ? null : centsToDollars(s.thresholdCents),
    created_at: iso(s.createdAt),
  };
}

export async function createSchedule({ ctx, input }: { ctx: Ctx; input: { body: Static<typeof CreateScheduleBody> } }) {
  const now = ctx.deps.clock.now();
  const { body } = input;
  const startsAt = body.starts_at ?? body.start_at ?? null;
  if (startsAt !== null) {
    const ms = parseDate(startsAt);
    if (ms === null) throw InvalidInput.field('starts_at', 'starts_at must be a date, YYYY-MM-DD');
    if (ms < startOfDay(now)) throw InvalidInput.field('starts_at', 'starts_at must be today or later');
  }
  const expiresAt = body.expires_at ?? dateOf(now + DEFAULT_EXPIRY_DAYS * DAY_MS);
  checkExpiry(expiresAt, now);
  if (startsAt !== null && expiresAt < startsAt) throw InvalidInput.field('expires_at', 'expires_at must not be before starts_at');
  if (expiresAt < dateOf(now)) throw InvalidInput.field('expires_at', 'expires_at must not be in the past');

  const anyThreshold = body.threshold_amount !== undefined || body.authorizers.some((a) => a.threshold_amount !== undefined);
  if (anyThreshold && !body.webhook) throw InvalidInput.field('webhook', 'webhook is required when a threshold_amount is set');
  if (body.webhook) await validateWebhookUrl(ctx.deps, 'webhook', body.webhook);

  const { accepted, failed } = validateAuthorizerList(body.authorizers, { debitCardsApproved: ctx.lender.debitCardApproved, now, bankProviders: await connectedProviders(ctx) });
  if (failed.length > 0) {
    const first = failed[0]!;
    throw new InvalidInput(
      `Authorizer ${first.authorizer_unique_id ?? `#${first.row_number}`} is invalid: ${first.error}`,
      { failed_authorizers: failed, errors: failed.map((f) => ({ path: `/authorizers/${f.row_number - 1}`, message: f.error })) },
    );
  }
  let thresholdCents: number | null = null;
  if (body.threshold_amount !== undefined) {
    thresholdCents = dollarsToCents(body.threshold_amount);
    if (thresholdCents === null) throw InvalidInput.field('threshold_amount', 'threshold_amount must be dollars with at most two decimals');
  }

  const timeOfDay = body.time_of_day ?? randomTimeOfDay();
  const t: ScheduleTiming = { intervalDays: body.interval_days, timeOfDay, startsAt, expiresAt, createdAt: now };
  const nextRunAt = nextRunAfter(t, now - 1);
  if (nextRunAt === null) throw InvalidInput.field('expires_at', 'the schedule would never run: expires_at is before its first run');
  const id = newId();

  const row: Schedule = {
    id,
    lenderId: ctx.lender.id,
    name: body.name,
    status: 'ACTIVE',
    intervalDays: body.interval_days,
    timeOfDay,
    startsAt,
    expiresAt,
    webhook: body.webhook ?? null,
    thresholdCents,
    createdAt: now,
    updatedAt: now,
    lastRunAt: null,
    nextRunAt,
  };
  const authorizers = accepted.map((a) => ({
    authorizerUniqueId: a.authorizerUniqueId,
    paymentType: a.paymentType,
    routingNumber: a.routingNumber,
    phone: a.phone,
    zip: a.zip,
    metadata: a.metadata ? JSON.stringify(a.metadata) : null,
    thresholdCents: a.thresholdCents,
    sealed: ctx.deps.vault.sealJson(a.sensitive),
  }));
  await transaction(ctx, async (tx) => {
    // The name is checked and taken under the lender's names lock: of two creations with one name, one fails.
    await tx.deps.stores.schedules.serializeScheduleNames(tx, ctx.lender.id);
    if (await tx.deps.stores.schedules.nameTaken(tx, ctx.lender.id, body.name)) throw new Conflict(`A schedule named "${body.name}" already exists`);
    await tx.deps.stores.schedules.createSchedule(tx, row, authorizers);
  });
  return {
    schedule_id: id,
    name: body.name,
    status: 'ACTIVE' as const,
    message: `Schedule created; the first run is at ${iso(nextRunAt)}`,
    expires_at: expiresAt,
    next_run_at: iso(nextRunAt),
    total_authorizers: accepted.length,
  };
}

export function updateSchedule({ ctx, input }: { ctx: Ctx; input: { id: string; body: Static<typeof UpdateScheduleBody> } }) {
  const { id, body } = input;
  if (Object.values(body).every((v) => v === undefined)) {
    throw new InvalidInput('Send at least one of name, interval_days, time_of_day, expires_at');
  }
  const now = ctx.deps.clock.now();
  let expiresAt: string | undefined;
  if (body.expires_at !== undefined) {
    const m = /^(\d{4}-\d{2}-\d{2})(T.*)?$/.exec(body.expires_at);
    if (!m || (m[2] && Number.isNaN(Date.parse(body.expires_at)))) throw InvalidInput.field('expires_at', 'expires_at must be an ISO 8601 date');
    expiresAt = m[1]!;
    if (expiresAt <= dateOf(now)) throw InvalidInput.field('expires_at', 'expires_at must be in the future');
  }
  return transaction(ctx, async (tx) => {
    const s = await scheduleToChange(tx, id);
    if (s.status !== 'ACTIVE') throw new Conflict(`Only an ACTIVE schedule can be updated; this one is ${s.status}`, { status: s.status });
    if (body.name !== undefined) await tx.deps.stores.schedules.serializeScheduleNames(tx, ctx.lender.id);
    if (body.name !== undefined && (await tx.deps.stores.schedules.nameTaken(tx, ctx.lender.id, body.name, id))) {
      throw new Conflict(`A schedule named "${body.name}" already exists`);
    }
    if (expiresAt !== undefined) {
      checkExpiry(expiresAt, s.createdAt);
      if (s.startsAt && expiresAt < s.startsAt) throw InvalidInput.field('expires_at', 'expires_at must not be before starts_at');
    }
    const next: Schedule = {
      ...s,
      name: body.name ?? s.name,
      intervalDays: body.interval_days ?? s.intervalDays,
      timeOfDay: body.time_of_day ?? s.timeOfDay,
      expiresAt: expiresAt ?? s.expiresAt,
      updatedAt: now,
    };
    // Recomputed from the new timing; a run already made is never repeated before `now`.
    next.nextRunAt = nextRunAfter(timing(next), Math.max(now, s.lastRunAt ?? 0) - 1);
    if (next.nextRunAt === null) throw InvalidInput.field('expires_at', 'with these values the schedule would never run again');
    await tx.deps.stores.schedules.updateSchedule(tx, id, {
      name: next.name,
      intervalDays: next.intervalDays,
      timeOfDay: next.timeOfDay,
      expiresAt: next.expiresAt,
      updatedAt: now,
      nextRunAt: next.nextRunAt,
    });
    return {
      schedule_id: id,
      name: next.name,
      message: 'Schedule updated',
      expires_at: next.expiresAt,
      next_run_at: isoOrNull(next.nextRunAt),
    };
  });
}

/** No further runs; the schedule, its authorizers' history and its batches are kept. */
const markDisabled = (ctx: Ctx & { tx: Tx }, id: string): Promise<void> => ctx.deps.stores.schedules.disableSchedule(ctx, id, ctx.deps.clock.now());

export function removeAuthorizers({ ctx, input }: { ctx: Ctx; input: { id: string; authorizerIds: string[] } }) {
  const { id } = input;
  return transaction(ctx, async (tx) => {
    const s = await scheduleToChange(tx, id);
    const removed = await tx.deps.stores.schedules.removeAuthorizers(tx, id, [...new Set(input.authorizerIds)]);
    const [remaining] = await tx.deps.stores.schedules.authorizerCounts(tx, [id]);
    if (remaining === 0 && s.status === 'ACTIVE') await markDisabled(tx, id);
    return { removed_count: removed, remaining_count: remaining! };
  });
}

export function disableSchedule({ ctx, input }: { ctx: Ctx; input: { id: string } }) {
  return transaction(ctx, async (tx) => {
    await scheduleToChange(tx, input.id);
    await markDisabled(tx, input.id);
    return { schedule_id: input.id, status: 'DISABLED' as const, message: 'Schedule disabled; its history is kept' };
  });
}

type ListInput = { status?: ScheduleStatus; limit?: number; next_page_token?: string; nextPageToken?: string };

export async function listSchedules({ ctx, input }: { ctx: Ctx; input: ListInput }) {
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: scheduleScope(ctx, input),
    query: input,
    limit: input.limit ?? 50,
    start: { i: '' },
    fetch: (after, take) => ctx.deps.stores.schedules.listSchedules(ctx, { lenderId: ctx.lender.id, status: input.status, afterId: after.i, take }),
    positionOf: (s) => ({ i: s.id }),
  });
  const counts = await ctx.deps.stores.schedules.authorizerCounts(ctx, page.map((s) => s.id));
  return { schedules: page.map((s, i) => viewOf(s, counts[i]!)), has_more: hasMore, next_page_token: nextPageToken };
}

const scheduleScope = (ctx: Ctx, input: ListInput) => `schedules:${ctx.lender.id}:${input.status ?? ''}`;

/** Columns of this feature holding vault-sealed values. */
export const sealedColumns: SealedColumn[] = [{ table: 'schedule_authorizers', key: 'id', column: 'sealed' }];
