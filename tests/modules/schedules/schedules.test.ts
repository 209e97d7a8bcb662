import { afterAll, describe, expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { startAllDueRuns } from '../../../src/modules/schedules/runs';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { nextRunAfter, randomTimeOfDay } from '../../../src/modules/schedules/times';

// 2026-11-21T12:00:00Z
const ctx = useTestContext({}, { clockAt: '2026-11-21T12:00:00.000Z' });

const received: { type: string; body: Record<string, any> }[] = [];
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as Record<string, any>;
    received.push({ type: body.type, body });
    return new Response('ok');
  },
});
afterAll(() => receiver.stop(true));
const hook = `http://127.0.0.1:${receiver.port}/schedules`;

let nameCounter = 0;
async function create(over: Record<string, unknown> = {}, key = ctx.lender.key) {
  const body = {
    name: `schedule-${++nameCounter}`,
    interval_days: 7,
    time_of_day: '09:30',
    authorizers: [bankAuthorizer(`s-${nameCounter}-a`), bankAuthorizer(`s-${nameCounter}-b`)],
    ...over,
  };
  return ctx.json('POST', '/v1/monitoring/scheduled_balance_request', { body, key });
}

/** Moves the clock through [from, to] hour by hour, running the scheduler and pipeline; returns run times. */
async function live(scheduleId: string, untilIso: string): Promise<string[]> {
  const until = Date.parse(untilIso);
  while (ctx.clock.now() < until) {
    ctx.clock.advance(3600_000);
    await startAllDueRuns(ctx.rt);
    await processBalances(ctx.rt);
  }
  return ctx.sql
    .query<{ at: number }, [string]>('SELECT submitted_at AS at FROM batches WHERE schedule_id = ? ORDER BY submitted_at')
    .all(scheduleId)
    .map((r) => new Date(r.at).toISOString());
}

describe('run times', () => {
  const base = { createdAt: Date.parse('2026-11-21T12:00:00Z'), timeOfDay: '09:30' };
  const runs = (t: { intervalDays: number; startsAt: string | null; expiresAt: string }) => {
    const out: string[] = [];
    let at = base.createdAt;
    for (;;) {
      const next = nextRunAfter({ ...base, ...t }, at);
      if (next === null) return out;
      out.push(new Date(next).toISOString().slice(0, 16));
      at = next;
    }
  };

  test('interval 1 without a start: the next 09:30, then daily to the expiry date', () => {
    expect(runs({ intervalDays: 1, startsAt: null, expiresAt: '2026-11-25' })).toEqual([
      '2026-11-22T09:30', '2026-11-23T09:30', '2026-11-24T09:30', '2026-11-25T09:30',
    ]);
  });

  test('interval 7 with a start; expiry off the grid adds a final run on the expiry date', () => {
    expect(runs({ intervalDays: 7, startsAt: '2026-12-01', expiresAt: '2026-12-20' })).toEqual([
      '2026-12-01T09:30', '2026-12-08T09:30', '2026-12-15T09:30', '2026-12-20T09:30',
    ]);
  });

  test('expiry on a run day is one run, not two', () => {
    expect(runs({ intervalDays: 7, startsAt: '2026-12-01', expiresAt: '2026-12-15' })).toEqual([
      '2026-12-01T09:30', '2026-12-08T09:30', '2026-12-15T09:30',
    ]);
  });

  test('interval 30 over a year', () => {
    const r = runs({ intervalDays: 30, startsAt: '2026-12-01', expiresAt: '2027-11-20' });
    expect(r[0]).toBe('2026-12-01T09:30');
    expect(r[1]).toBe('2026-12-31T09:30');
    expect(r).toHaveLength(13); // 12 on the grid (to 2027-10-27) + the final on 2027-11-20
    expect(r[r.length - 1]).toBe('2027-11-20T09:30');
  });

  test('a time later today runs today when there is no start', () => {
    expect(nextRunAfter({ createdAt: base.createdAt, timeOfDay: '18:00', intervalDays: 1, startsAt: null, expiresAt: '2026-11-30' }, base.createdAt - 1)).toBe(
      Date.parse('2026-11-21T18:00:00Z'),
    );
  });

  test('random default time is a minute inside 08:00 to 11:00 UTC', () => {
    for (const r of [0, 0.5, 0.9999999]) {
      const t = randomTimeOfDay(() => r);
      expect(t >= '08:00' && t <= '11:00').toBe(true);
    }
    for (let i = 0; i < 200; i++) {
      const t = randomTimeOfDay();
      expect(t).toMatch(/^(08|09|10):[0-5]\d$|^11:00$/);
    }
  });
});

describe('create', () => {
  test('201 with the first run, default expiry 30 days, total authorizers; get shows the full view', async () => {
    const { status, body } = await create({ time_of_day: undefined, starts_at: undefined });
    expect(status).toBe(201);
    expect(body).toMatchObject({ status: 'ACTIVE', total_authorizers: 2, expires_at: '2026-12-21' });
    const next = new Date(body.next_run_at);
    const minutes = next.getUTCHours() * 60 + next.getUTCMinutes();
    expect(minutes).toBeGreaterThanOrEqual(480);
    expect(minutes).toBeLessThanOrEqual(660);
    const got = await ctx.json('GET', `/v1/monitoring/schedules/${body.schedule_id}`);
    expect(got.body).toMatchObject({
      schedule_id: body.schedule_id,
      name: body.name,
      status: 'ACTIVE',
      interval_days: 7,
      starts_at: null,
      expires_at: '2026-12-21',
      last_run_at: null,
      next_run_at: body.next_run_at,
      total_authorizers: 2,
      webhook: null,
      threshold_amount: null,
    });
  });

  test('start_at is accepted for starts_at', async () => {
    const { status, body } = await create({ start_at: '2026-12-02' });
    expect(status).toBe(201);
    expect(body.next_run_at).toBe('2026-12-02T09:30:00.000Z');
  });

  test('rules: name length, interval range, time format, expiry limits, webhook with thresholds, invalid authorizer', async () => {
    const bad = async (over: Record<string, unknown>, field: RegExp) => {
      const r = await create(over);
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body.error)).toMatch(field);
    };
    await bad({ name: 'x'.repeat(256) }, /name/);
    await bad({ interval_days: 0 }, /interval_days/);
    await bad({ interval_days: 31 }, /interval_days/);
    await bad({ time_of_day: '24:00' }, /time_of_day/);
    await bad({ time_of_day: '9:30' }, /time_of_day/);
    await bad({ expires_at: '2027-11-22' }, /365/);
    await bad({ starts_at: '2026-12-10', expires_at: '2026-12-01' }, /before/);
    await bad({ starts_at: '2026-11-01' }, /starts_at/);
    await bad({ threshold_amount: 100 }, /webhook/);
    await bad({ authorizers: [bankAuthorizer('t-1', { threshold_amount: 5 })] }, /webhook/);
    const invalid = await create({ authorizers: [bankAuthorizer('good-1'), bankAuthorizer('broken-1', { routing_number: '11000000' })] });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.message).toContain('broken-1');
    const ok = await create({ expires_at: '2027-11-21', threshold_amount: 100, webhook: hook });
    expect(ok.status).toBe(201);
  });

  test('a duplicate name is 409 for the same lender, fine for another', async () => {
    const first = await create({ name: 'Nightly' });
    expect(first.status).toBe(201);
    const again = await create({ name: 'Nightly' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    const other = ctx.newLender();
    expect((await create({ name: 'Nightly' }, other.key)).status).toBe(201);
  });
});

describe('runs', () => {
  test('a whole schedule life: runs on the grid and a final run on expires_at, then COMPLETED', async () => {
    const { body } = await create({ interval_days: 7, time_of_day: '13:00', starts_at: '2026-11-22', expires_at: '2026-12-10' });
    const runs = await live(body.schedule_id, '2026-12-12T00:00:00Z');
    expect(runs).toEqual(['2026-11-22T13:00:00.000Z', '2026-11-29T13:00:00.000Z', '2026-12-06T13:00:00.000Z', '2026-12-10T13:00:00.000Z']);
    const got = await ctx.json('GET', `/v1/monitoring/schedules/${body.schedule_id}`);
    expect(got.body.status).toBe('COMPLETED');
    expect(got.body.next_run_at).toBeNull();
    expect(got.body.last_run_at).toBe('2026-12-10T13:00:00.000Z');
    // Each run is a batch with source "schedule" and appears in the authorizer's history.
    const batchId = ctx.sql.query<{ id: string }, [string]>('SELECT id FROM batches WHERE schedule_id = ? LIMIT 1').get(body.schedule_id)!.id;
    expect((await ctx.json('GET', `/v1/balance_requests/${batchId}`)).body).toMatchObject({ source: 'schedule', schedule_id: body.schedule_id, status: 'completed' });
    const history = await ctx.json('GET', `/v1/monitoring/authorizers/${body.name.replace('schedule', 's')}-a/history`);
    expect(history.body.total_count).toBe(4);
  });

  test('a week of downtime catches up with one run, then continues at the next future slot', async () => {
    ctx.clock.set('2027-01-01T00:00:00Z');
    const { body } = await create({ interval_days: 1, time_of_day: '10:00', starts_at: '2027-01-01', expires_at: '2027-01-20' });
    ctx.clock.set('2027-01-01T10:30:00Z');
    await startAllDueRuns(ctx.rt);
    await processBalances(ctx.rt);
    // Down from 2027-01-01T10:30 to 2027-01-08T12:00: seven slots missed.
    ctx.clock.set('2027-01-08T12:00:00Z');
    await startAllDueRuns(ctx.rt);
    await startAllDueRuns(ctx.rt);
    await processBalances(ctx.rt);
    const got = await ctx.json('GET', `/v1/monitoring/schedules/${body.schedule_id}`);
    expect(got.body.next_run_at).toBe('2027-01-09T10:00:00.000Z');
    const count = ctx.sql.query<{ n: number }, [string]>('SELECT COUNT(*) AS n FROM batches WHERE schedule_id = ?').get(body.schedule_id)!.n;
    expect(count).toBe(2);
  });

  test('thresholds: the authorizer’s own overrides the schedule’s, and meeting it is enough', async () => {
    ctx.clock.set('2027-02-01T00:00:00Z');
    received.length = 0;
    const { body } = await create({
      time_of_day: '01:00',
      interval_days: 1,
      expires_at: '2027-02-10',
      webhook: hook,
      threshold_amount: 100, // $100.00
      authorizers: [
        bankAuthorizer('th-equal', { account_number: '0000010000' }), // $100.00: meets the schedule threshold
        bankAuthorizer('th-below', { account_number: '0000009999' }), // $99.99
        bankAuthorizer('th-own-high', { account_number: '0000050000', threshold_amount: 1000 }), // $500 < own $1000
        bankAuthorizer('th-own-low', { account_number: '0000000500', threshold_amount: 5 }), // $5.00 meets own $5
        bankAuthorizer('th-failed', { account_number: '99993200' }),
      ],
    });
    ctx.clock.set('2027-02-01T01:00:00Z');
    await startAllDueRuns(ctx.rt);
    await processBalances(ctx.rt);
    await deliverDueWebhooks(ctx.rt);
    const mine = received.filter((r) => r.body.schedule_id === body.schedule_id);
    const alerts = mine.filter((r) => r.type === 'BALANCE_THRESHOLD_ALERT');
    const completed = mine.filter((r) => r.type === 'BALANCE_BATCH_COMPLETED');
    expect(completed).toHaveLength(1);
    expect(completed[0]!.body.schedule_id).toBe(body.schedule_id);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.body).toMatchObject({ schedule_id: body.schedule_id, batch_id: completed[0]!.body.batch_id });
    expect(alerts[0]!.body.timestamp).toMatch(/Z$/);
    expect(alerts[0]!.body.alerts).toEqual([
      { authorizer_unique_id: 'th-equal', institution_name: 'Sandbox Bank', balance: 100, threshold_amount: 100 },
      { authorizer_unique_id: 'th-own-low', institution_name: 'Sandbox Bank', balance: 5, threshold_amount: 5 },
    ]);
  });
});

describe('update, remove, delete, list', () => {
  test('patch recomputes next_run_at; needs a field; expiry rules; name conflict 409', async () => {
    ctx.clock.set('2027-03-01T00:00:00Z');
    const { body } = await create({ interval_days: 7, time_of_day: '09:00', starts_at: '2027-03-02' });
    const id = body.schedule_id;
    expect((await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: {} })).status).toBe(400);
    const res = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { time_of_day: '15:45', interval_days: 3 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ schedule_id: id, next_run_at: '2027-03-02T15:45:00.000Z' });
    expect((await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { expires_at: '2027-02-01' } })).status).toBe(400);
    expect((await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { expires_at: '2028-03-05' } })).status).toBe(400);
    const exp = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { expires_at: '2027-04-01T00:00:00Z' } });
    expect(exp.status).toBe(200);
    expect(exp.body.expires_at).toBe('2027-04-01');
    const other = await create({ name: 'Taken name' });
    expect(other.status).toBe(201);
    const conflict = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { name: 'Taken name' } });
    expect(conflict.status).toBe(409);
    expect((await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { merchant: 'x' } })).status).toBe(400);
  });

  test('removing authorizers keeps the rest; removing all disables; PATCH of DISABLED or COMPLETED is 409', async () => {
    ctx.clock.set('2027-04-01T00:00:00Z');
    const { body } = await create({ authorizers: [bankAuthorizer('r-1'), bankAuthorizer('r-2'), bankAuthorizer('r-3')] });
    const id = body.schedule_id;
    const first = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}/authorizers`, { body: { authorizer_unique_ids: ['r-1', 'nobody'] } });
    expect(first.body).toEqual({ removed_count: 1, remaining_count: 2 });
    const rest = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}/authorizers`, { body: { authorizer_unique_ids: ['r-2', 'r-3'] } });
    expect(rest.body).toEqual({ removed_count: 2, remaining_count: 0 });
    const got = await ctx.json('GET', `/v1/monitoring/schedules/${id}`);
    expect(got.body).toMatchObject({ status: 'DISABLED', next_run_at: null, total_authorizers: 0 });
    const patch = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { interval_days: 2 } });
    expect(patch.status).toBe(409);
    expect(patch.body.error.message).toContain('DISABLED');

    const done = await create({ interval_days: 1, time_of_day: '01:00', starts_at: '2027-04-01', expires_at: '2027-04-01' });
    ctx.clock.set('2027-04-01T02:00:00Z');
    await startAllDueRuns(ctx.rt);
    expect((await ctx.json('GET', `/v1/monitoring/schedules/${done.body.schedule_id}`)).body.status).toBe('COMPLETED');
    const p2 = await ctx.json('PATCH', `/v1/monitoring/schedules/${done.body.schedule_id}`, { body: { name: 'again' } });
    expect(p2.status).toBe(409);
    expect(p2.body.error.message).toContain('COMPLETED');
  });

  test('delete disables and keeps history; list is paginated and filtered', async () => {
    const lender = ctx.newLender();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create({}, lender.key)).body.schedule_id);
    const del = await ctx.json('DELETE', `/v1/monitoring/schedules/${ids[0]}`, { key: lender.key });
    expect(del.body).toMatchObject({ schedule_id: ids[0], status: 'DISABLED' });
    expect((await ctx.json('GET', `/v1/monitoring/schedules/${ids[0]}`, { key: lender.key })).body.status).toBe('DISABLED');
    const seen: string[] = [];
    let token: string | null = null;
    do {
      const res: { body: { schedules: { schedule_id: string }[]; next_page_token: string | null } } = await ctx.json(
        'GET',
        `/v1/monitoring/schedules?limit=2${token ? `&next_page_token=${encodeURIComponent(token)}` : ''}`,
        { key: lender.key },
      );
      seen.push(...res.body.schedules.map((s) => s.schedule_id));
      token = res.body.next_page_token;
    } while (token);
    expect(seen.sort()).toEqual([...ids].sort());
    const active = await ctx.json('GET', '/v1/monitoring/schedules?status=ACTIVE', { key: lender.key });
    expect(active.body.schedules).toHaveLength(4);
  });

  test('another lender’s schedule is not found everywhere', async () => {
    const { body } = await create();
    const other = ctx.newLender();
    const id = body.schedule_id;
    expect((await ctx.json('GET', `/v1/monitoring/schedules/${id}`, { key: other.key })).status).toBe(404);
    expect((await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { key: other.key, body: { interval_days: 2 } })).status).toBe(404);
    expect((await ctx.json('PATCH', `/v1/monitoring/schedules/${id}/authorizers`, { key: other.key, body: { authorizer_unique_ids: ['x'] } })).status).toBe(404);
    expect((await ctx.json('DELETE', `/v1/monitoring/schedules/${id}`, { key: other.key })).status).toBe(404);
    expect((await ctx.json('GET', '/v1/monitoring/schedules', { key: other.key })).body.schedules).toEqual([]);
  });
});
