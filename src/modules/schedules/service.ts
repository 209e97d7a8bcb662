import type { Static } from 'elysia';
import type { Deps } from '../../platform/deps';
import type { AuthedLender } from '../../platform/auth';
import { BadRequest, Conflict, NotFound } from '../../platform/errors';
import { immediate } from '../../platform/db';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { newId } from '../../platform/ids';
import { tokenFrom } from '../../platform/pagination';
import { validateWebhookUrl } from '../webhooks/service';
import { validateAuthorizers } from '../balance-requests/validation';
import type { CreateScheduleBody, UpdateScheduleBody } from './model';
import { dateOf, nextRunAfter, parseDate, randomTimeOfDay, startOfDay, type ScheduleTiming } from './times';

export const DEFAULT_EXPIRY_DAYS = 30;
export const MAX_EXPIRY_DAYS = 365;

export interface ScheduleRow {
  id: string;
  lenderId: string;
  name: string;
  status: 'ACTIVE' | 'COMPLETED' | 'DISABLED';
  intervalDays: number;
  timeOfDay: string;
  startsAt: string | null;
  expiresAt: string;
  webhook: string | null;
  thresholdCents: number | null;
  createdAt: number;
  updatedAt: number;
  lastRunAt: number | null;
  nextRunAt: number | null;
}

export const SELECT_SCHEDULE = `SELECT id, lender_id AS lenderId, name, status, interval_days AS intervalDays, time_of_day AS timeOfDay,
  starts_at AS startsAt, expires_at AS expiresAt, webhook, threshold_cents AS thresholdCents, created_at AS createdAt,
  updated_at AS updatedAt, last_run_at AS lastRunAt, next_run_at AS nextRunAt FROM schedules`;

export function getSchedule(deps: Deps, lenderId: string, id: string): ScheduleRow {
  const row = deps.sqlite.query<ScheduleRow, [string, string]>(`${SELECT_SCHEDULE} WHERE id = ? AND lender_id = ?`).get(id, lenderId);
  if (!row) throw new NotFound('Schedule not found');
  return row;
}

const countAuthorizers = (deps: Deps, scheduleId: string): number =>
  deps.sqlite.query<{ n: number }, [string]>('SELECT COUNT(*) AS n FROM schedule_authorizers WHERE schedule_id = ?').get(scheduleId)!.n;

const timing = (s: Pick<ScheduleRow, 'intervalDays' | 'timeOfDay' | 'startsAt' | 'expiresAt' | 'createdAt'>): ScheduleTiming => s;

function nameTaken(deps: Deps, lenderId: string, name: string, exceptId?: string): boolean {
  const row = deps.sqlite
    .query<{ id: string }, [string, string]>('SELECT id FROM schedules WHERE lender_id = ? AND name = ?')
    .get(lenderId, name);
  return !!row && row.id !== exceptId;
}

/** expires_at rules shared by create and update: a real date, not past the 365-day limit. */
function checkExpiry(expiresAt: string, createdAt: number, field = 'expires_at'): void {
  const ms = parseDate(expiresAt);
  if (ms === null) throw BadRequest.field(field, `${field} must be a date, YYYY-MM-DD`);
  if (ms > startOfDay(createdAt) + MAX_EXPIRY_DAYS * DAY_MS) {
    throw BadRequest.field(field, `${field} may be at most ${MAX_EXPIRY_DAYS} days after the schedule was created`);
  }
}

export function view(deps: Deps, s: ScheduleRow) {
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
    total_authorizers: countAuthorizers(deps, s.id),
    webhook: s.webhook,
    threshold_amount: s.thresholdCents === null ? null : s.thresholdCents / 100,
    created_at: iso(s.createdAt),
  };
}

export async function createSchedule(deps: Deps, lender: AuthedLender, body: Static<typeof CreateScheduleBody>) {
  const now = deps.clock.now();
  const startsAt = body.starts_at ?? body.start_at ?? null;
  if (startsAt !== null) {
    const ms = parseDate(startsAt);
    if (ms === null) throw BadRequest.field('starts_at', 'starts_at must be a date, YYYY-MM-DD');
    if (ms < startOfDay(now)) throw BadRequest.field('starts_at', 'starts_at must be today or later');
  }
  const expiresAt = body.expires_at ?? dateOf(now + DEFAULT_EXPIRY_DAYS * DAY_MS);
  checkExpiry(expiresAt, now);
  if (startsAt !== null && expiresAt < startsAt) throw BadRequest.field('expires_at', 'expires_at must not be before starts_at');
  if (expiresAt < dateOf(now)) throw BadRequest.field('expires_at', 'expires_at must not be in the past');

  const anyThreshold = body.threshold_amount !== undefined || body.authorizers.some((a) => a.threshold_amount !== undefined);
  if (anyThreshold && !body.webhook) throw BadRequest.field('webhook', 'webhook is required when a threshold_amount is set');
  if (body.webhook) await validateWebhookUrl(deps, 'webhook', body.webhook);

  const { accepted, failed } = validateAuthorizers(
    body.authorizers.map((candidate, i) => ({ candidate, rowNumber: i + 1 })),
    { debitCardsApproved: lender.debitCardApproved, now },
  );
  if (failed.length > 0) {
    const first = failed[0]!;
    throw new BadRequest(
      `Authorizer ${first.authorizer_unique_id ?? `#${first.row_number}`} is invalid: ${first.error}`,
      { failed_authorizers: failed, errors: failed.map((f) => ({ path: `/authorizers/${f.row_number - 1}`, message: f.error })) },
    );
  }

  const timeOfDay = body.time_of_day ?? randomTimeOfDay();
  const t: ScheduleTiming = { intervalDays: body.interval_days, timeOfDay, startsAt, expiresAt, createdAt: now };
  const nextRunAt = nextRunAfter(t, now - 1);
  if (nextRunAt === null) throw BadRequest.field('expires_at', 'the schedule would never run: expires_at is before its first run');
  const thresholdCents = body.threshold_amount === undefined ? null : Math.round(body.threshold_amount * 100);
  const id = newId();

  immediate(deps.sqlite, () => {
    if (nameTaken(deps, lender.id, body.name)) throw new Conflict(`A schedule named "${body.name}" already exists`);
    deps.sqlite
      .query(
        `INSERT INTO schedules (id, lender_id, name, status, interval_days, time_of_day, starts_at, expires_at, webhook,
           threshold_cents, created_at, updated_at, next_run_at) VALUES (?, ?, ?, 'ACTIVE', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, lender.id, body.name, body.interval_days, timeOfDay, startsAt, expiresAt, body.webhook ?? null, thresholdCents, now, now, nextRunAt);
    const insert = deps.sqlite.prepare(
      `INSERT INTO schedule_authorizers (schedule_id, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents, sealed)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const a of accepted) {
      insert.run(id, a.authorizerUniqueId, a.paymentType, a.routingNumber, a.phone, a.zip, a.metadata ? JSON.stringify(a.metadata) : null, a.thresholdCents, deps.vault.sealJson(a.sensitive));
    }
    insert.finalize();
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

export function updateSchedule(deps: Deps, lenderId: string, id: string, body: Static<typeof UpdateScheduleBody>) {
  if (Object.values(body).every((v) => v === undefined)) {
    throw new BadRequest('Send at least one of name, interval_days, time_of_day, expires_at');
  }
  const now = deps.clock.now();
  let expiresAt: string | undefined;
  if (body.expires_at !== undefined) {
    const m = /^(\d{4}-\d{2}-\d{2})(T.*)?$/.exec(body.expires_at);
    if (!m || (m[2] && Number.isNaN(Date.parse(body.expires_at)))) throw BadRequest.field('expires_at', 'expires_at must be an ISO 8601 date');
    expiresAt = m[1]!;
    if (expiresAt <= dateOf(now)) throw BadRequest.field('expires_at', 'expires_at must be in the future');
  }
  return immediate(deps.sqlite, () => {
    const s = getSchedule(deps, lenderId, id);
    if (s.status !== 'ACTIVE') throw new Conflict(`Only an ACTIVE schedule can be updated; this one is ${s.status}`, { status: s.status });
    if (body.name !== undefined && nameTaken(deps, lenderId, body.name, id)) {
      throw new Conflict(`A schedule named "${body.name}" already exists`);
    }
    if (expiresAt !== undefined) {
      checkExpiry(expiresAt, s.createdAt);
      if (s.startsAt && expiresAt < s.startsAt) throw BadRequest.field('expires_at', 'expires_at must not be before starts_at');
    }
    const next: ScheduleRow = {
      ...s,
      name: body.name ?? s.name,
      intervalDays: body.interval_days ?? s.intervalDays,
      timeOfDay: body.time_of_day ?? s.timeOfDay,
      expiresAt: expiresAt ?? s.expiresAt,
      updatedAt: now,
    };
    // Recomputed from the new timing; a run already made is never repeated before `now`.
    next.nextRunAt = nextRunAfter(timing(next), Math.max(now, s.lastRunAt ?? 0) - 1);
    if (next.nextRunAt === null) throw BadRequest.field('expires_at', 'with these values the schedule would never run again');
    deps.sqlite
      .query('UPDATE schedules SET name = ?, interval_days = ?, time_of_day = ?, expires_at = ?, updated_at = ?, next_run_at = ? WHERE id = ?')
      .run(next.name, next.intervalDays, next.timeOfDay, next.expiresAt, now, next.nextRunAt, id);
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
function markDisabled(deps: Deps, id: string): void {
  deps.sqlite.query("UPDATE schedules SET status = 'DISABLED', next_run_at = NULL, updated_at = ? WHERE id = ?").run(deps.clock.now(), id);
}

export function removeAuthorizers(deps: Deps, lenderId: string, id: string, ids: string[]) {
  return immediate(deps.sqlite, () => {
    const s = getSchedule(deps, lenderId, id);
    const del = deps.sqlite.prepare('DELETE FROM schedule_authorizers WHERE schedule_id = ? AND authorizer_unique_id = ?');
    let removed = 0;
    for (const aid of new Set(ids)) removed += del.run(id, aid).changes;
    del.finalize();
    const remaining = countAuthorizers(deps, id);
    if (remaining === 0 && s.status === 'ACTIVE') markDisabled(deps, id);
    return { removed_count: removed, remaining_count: remaining };
  });
}

export function disableSchedule(deps: Deps, lenderId: string, id: string) {
  return immediate(deps.sqlite, () => {
    getSchedule(deps, lenderId, id);
    markDisabled(deps, id);
    return { schedule_id: id, status: 'DISABLED' as const, message: 'Schedule disabled; its history is kept' };
  });
}

export function listSchedules(
  deps: Deps,
  lenderId: string,
  q: { status?: 'ACTIVE' | 'COMPLETED' | 'DISABLED'; limit?: number; next_page_token?: string; nextPageToken?: string },
) {
  const limit = q.limit ?? 50;
  const scope = `schedules:${lenderId}:${q.status ?? ''}`;
  const token = tokenFrom(q);
  const after = token ? deps.pageTokens.decode<{ i: string }>(scope, token).i : '';
  const rows = deps.sqlite
    .query<ScheduleRow, [string, string, string | null, string | null, number]>(
      `${SELECT_SCHEDULE} WHERE lender_id = ? AND id > ? AND (? IS NULL OR status = ?) ORDER BY id LIMIT ?`,
    )
    .all(lenderId, after, q.status ?? null, q.status ?? null, limit + 1);
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return {
    schedules: page.map((s) => view(deps, s)),
    has_more: hasMore,
    next_page_token: hasMore ? deps.pageTokens.encode(scope, { i: page[page.length - 1]!.id }) : null,
  };
}
