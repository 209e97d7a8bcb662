import { expect, test } from 'bun:test';
import { contract, inTurns } from './contract';
import type { TxCtx } from '../../src/platform/store';
import { bankAuthorizer } from '../helpers/fixtures';
import { startAllDueRuns } from '../../src/modules/schedules/runs';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { dateOf } from '../../src/modules/schedules/times';

const DAY = 86_400_000;
// Never called: a webhook is stored, not delivered, in these tests.
const HOOK = 'http://127.0.0.1:9/schedules';

contract('schedules', (t) => {
  const { ctx, store, storeCtx } = t;
  let n = 0;

  /** A schedule made through the API; its id. */
  async function create(over: Record<string, unknown> = {}, key = ctx.lender.key): Promise<string> {
    const id = ++n;
    const r = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', {
      key,
      body: { name: `contract-${id}`, interval_days: 7, time_of_day: '09:30', authorizers: [bankAuthorizer(`c-${id}-a`), bankAuthorizer(`c-${id}-b`)], ...over },
    });
    expect(r.status).toBe(201);
    return r.body.schedule_id as string;
  }

  /** The date `days` after the clock's day. */
  const day = (days: number) => dateOf(ctx.clock.now() + days * DAY);

  /** Runs every due schedule, so that what a test makes due next is all that is due. */
  const drainDue = () => startAllDueRuns(ctx.rt);

  /** Two transactions that each begin with `take`: the second is seen waiting, and goes on once the first has ended. */
  const secondWaitsForFirst = (take: (tx: TxCtx) => Promise<unknown>) =>
    inTurns(t, async (tx) => void (await take(tx)), async () => undefined, async () => undefined);

  test('a schedule is read back whole, numbers as numbers, absent as null; another lender’s is not found', async () => {
    const id = await create({ name: 'Read back', webhook: HOOK, threshold_amount: 12.5, starts_at: day(2), expires_at: day(20) });
    const row = await store.scheduleOf(storeCtx, ctx.lender.id, id);
    expect(row).toEqual({
      id,
      lenderId: ctx.lender.id,
      name: 'Read back',
      status: 'ACTIVE',
      intervalDays: 7,
      timeOfDay: '09:30',
      startsAt: day(2),
      expiresAt: day(20),
      webhook: HOOK,
      thresholdCents: 1250,
      createdAt: ctx.clock.now(),
      updatedAt: ctx.clock.now(),
      lastRunAt: null,
      nextRunAt: Date.parse(`${day(2)}T09:30:00Z`),
    });
    const plain = await store.scheduleOf(storeCtx, ctx.lender.id, await create());
    expect(plain).toMatchObject({ startsAt: null, webhook: null, thresholdCents: null, lastRunAt: null });
    const other = ctx.newLender();
    expect(await store.scheduleOf(storeCtx, other.id, id)).toBeUndefined();
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, 'no-such-schedule')).toBeUndefined();
  });

  test('authorizers are kept in the order they were added, with their fields; counts follow the ids asked', async () => {
    const id = await create({
      webhook: HOOK,
      authorizers: [
        bankAuthorizer('zed', { threshold_amount: 7.25, metadata: { loan: 'L-1' } }),
        bankAuthorizer('alpha'),
        bankAuthorizer('mid'),
      ],
    });
    const rows = await store.scheduleAuthorizers(storeCtx, id);
    expect(rows.map((r) => r.authorizerUniqueId)).toEqual(['zed', 'alpha', 'mid']);
    expect(rows[0]).toMatchObject({ scheduleId: id, paymentType: 'ACCOUNT_NUMBER', routingNumber: '110000000', thresholdCents: 725, metadata: '{"loan":"L-1"}' });
    expect(typeof rows[0]!.id).toBe('number');
    expect(rows[0]!.id).toBeLessThan(rows[1]!.id);
    expect(rows[1]).toMatchObject({ thresholdCents: null, metadata: null, phone: null });
    // The sensitive fields are sealed, never stored as sent.
    expect(rows[0]!.sealed).not.toContain('0001234567');

    const two = await create();
    expect(await store.authorizerCounts(storeCtx, [two, 'no-such-schedule', id])).toEqual([2, 0, 3]);
    expect(await store.authorizerCounts(storeCtx, [])).toEqual([]);
    expect(await store.scheduleAuthorizers(storeCtx, 'no-such-schedule')).toEqual([]);
  });

  test('createSchedule writes nothing when its transaction rolls back; a name is checked under the names lock', async () => {
    const row = { ...(await store.scheduleOf(storeCtx, ctx.lender.id, await create()))!, id: 'contract-rolled-back', name: 'Rolled back' };
    const failed = t.inTx(async (tx) => {
      await store.serializeScheduleNames(tx, ctx.lender.id);
      expect(await store.nameTaken(tx, ctx.lender.id, 'Rolled back')).toBe(false);
      await store.createSchedule(tx, row, [
        { authorizerUniqueId: 'rb-1', paymentType: 'ACCOUNT_NUMBER', routingNumber: null, phone: null, zip: null, metadata: null, thresholdCents: null, sealed: 'x' },
      ]);
      // Seen inside the transaction that wrote it.
      expect(await store.nameTaken(tx, ctx.lender.id, 'Rolled back')).toBe(true);
      expect(await store.authorizerCounts(tx, [row.id])).toEqual([1]);
      throw new Error('rolled back');
    });
    await expect(failed).rejects.toThrow('rolled back');
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, row.id)).toBeUndefined();
    expect(await store.scheduleAuthorizers(storeCtx, row.id)).toEqual([]);
    expect(await store.nameTaken(storeCtx, ctx.lender.id, 'Rolled back')).toBe(false);

    // Without authorizers it is a schedule all the same.
    await t.inTx((tx) => store.createSchedule(tx, { ...row, id: 'contract-no-authorizers', name: 'No authorizers' }, []));
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, 'contract-no-authorizers')).toMatchObject({ name: 'No authorizers', status: 'ACTIVE' });
    expect(await store.authorizerCounts(storeCtx, ['contract-no-authorizers'])).toEqual([0]);
  });

  test('nameTaken: the lender’s own names only, exactly as written, not counting the schedule named', async () => {
    const id = await create({ name: 'Nightly' });
    expect(await store.nameTaken(storeCtx, ctx.lender.id, 'Nightly')).toBe(true);
    expect(await store.nameTaken(storeCtx, ctx.lender.id, 'Nightly', id)).toBe(false);
    expect(await store.nameTaken(storeCtx, ctx.lender.id, 'Nightly', 'another-id')).toBe(true);
    expect(await store.nameTaken(storeCtx, ctx.lender.id, 'nightly')).toBe(false);
    expect(await store.nameTaken(storeCtx, ctx.newLender().id, 'Nightly')).toBe(false);
    // The API refuses the same name for the same lender.
    const again = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', {
      body: { name: 'Nightly', interval_days: 1, authorizers: [bankAuthorizer('dup-1')] },
    });
    expect(again.status).toBe(409);
  });

  test('listSchedules: the lender’s own, by id, after the key, at most `take`, filtered by status', async () => {
    const lender = ctx.newLender();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await create({}, lender.key));
    await create(); // the first lender's: never listed for the other
    expect((await ctx.json('DELETE', `/v1/monitoring/schedules/${ids[1]}`, { key: lender.key })).status).toBe(200);
    const sorted = [...ids].sort();
    const all = await store.listSchedules(storeCtx, { lenderId: lender.id, afterId: '', take: 10 });
    expect(all.map((s) => s.id)).toEqual(sorted);
    const page = await store.listSchedules(storeCtx, { lenderId: lender.id, afterId: sorted[0]!, take: 2 });
    expect(page.map((s) => s.id)).toEqual(sorted.slice(1, 3));
    const active = await store.listSchedules(storeCtx, { lenderId: lender.id, status: 'ACTIVE', afterId: '', take: 10 });
    expect(active.map((s) => s.id)).toEqual(sorted.filter((s) => s !== ids[1]));
    const disabled = await store.listSchedules(storeCtx, { lenderId: lender.id, status: 'DISABLED', afterId: '', take: 10 });
    expect(disabled.map((s) => s.id)).toEqual([ids[1]]);
    expect(typeof disabled[0]!.updatedAt).toBe('number');
    expect(await store.listSchedules(storeCtx, { lenderId: lender.id, afterId: sorted[3]!, take: 10 })).toEqual([]);
    // The API pages through the same.
    const listed = await ctx.json('GET', '/v1/monitoring/schedules?limit=10', { key: lender.key });
    expect(listed.body.schedules.map((s: { schedule_id: string }) => s.schedule_id)).toEqual(sorted);
  });

  test('updateSchedule sets the fields given; lockSchedule reads the lender’s own in the transaction; a rollback keeps the old', async () => {
    const id = await create({ starts_at: day(3), expires_at: day(40) });
    const before = (await store.scheduleOf(storeCtx, ctx.lender.id, id))!;
    ctx.clock.advance(60_000);
    const patched = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}`, { body: { name: 'Renamed', time_of_day: '15:45', interval_days: 3 } });
    expect(patched.status).toBe(200);
    const after = (await store.scheduleOf(storeCtx, ctx.lender.id, id))!;
    expect(after).toMatchObject({ name: 'Renamed', timeOfDay: '15:45', intervalDays: 3, updatedAt: ctx.clock.now(), createdAt: before.createdAt });
    expect(after.nextRunAt).toBe(Date.parse(`${day(3)}T15:45:00Z`));

    const other = ctx.newLender();
    const rolledBack = t.inTx(async (tx) => {
      expect(await store.lockSchedule(tx, other.id, id)).toBeUndefined();
      const held = await store.lockSchedule(tx, ctx.lender.id, id);
      expect(held).toEqual(after);
      await store.updateSchedule(tx, id, { name: 'Never', intervalDays: 1, timeOfDay: '01:00', expiresAt: day(5), updatedAt: 1, nextRunAt: 2 });
      expect(await store.scheduleOf(tx, ctx.lender.id, id)).toMatchObject({ name: 'Never', intervalDays: 1, nextRunAt: 2 });
      throw new Error('rolled back');
    });
    await expect(rolledBack).rejects.toThrow('rolled back');
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, id)).toEqual(after);
  });

  test('disableSchedule: DISABLED with no next run, and no longer due or runnable', async () => {
    const id = await create({ starts_at: day(1), expires_at: day(30) });
    ctx.clock.advance(120_000);
    const del = await ctx.json('DELETE', `/v1/monitoring/schedules/${id}`);
    expect(del.status).toBe(200);
    const row = (await store.scheduleOf(storeCtx, ctx.lender.id, id))!;
    expect(row).toMatchObject({ status: 'DISABLED', nextRunAt: null, updatedAt: ctx.clock.now() });
    const far = ctx.clock.now() + 60 * DAY;
    expect(await store.dueSchedule(storeCtx, id, far)).toBeUndefined();
    expect(await store.dueScheduleIds(storeCtx, far, 1000)).not.toContain(id);
    // The run a caller read before the change is not taken: the schedule is no longer ACTIVE.
    expect(await t.inTx((tx) => store.recordRunStarted(tx, id, Date.parse(`${day(1)}T09:30:00Z`), null, ctx.clock.now()))).toBe(false);
    // Disabling again changes nothing but the time.
    await t.inTx((tx) => store.disableSchedule(tx, id, ctx.clock.now() + 1));
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, id)).toMatchObject({ status: 'DISABLED', nextRunAt: null, updatedAt: ctx.clock.now() + 1 });
  });

  test('removeAuthorizers: how many of these were the schedule’s; another schedule’s are kept', async () => {
    const id = await create({ authorizers: [bankAuthorizer('rm-1'), bankAuthorizer('rm-2'), bankAuthorizer('rm-3')] });
    const other = await create({ authorizers: [bankAuthorizer('rm-1'), bankAuthorizer('rm-9')] });
    expect(await t.inTx((tx) => store.removeAuthorizers(tx, id, ['rm-1', 'nobody', 'rm-9']))).toBe(1);
    expect((await store.scheduleAuthorizers(storeCtx, id)).map((a) => a.authorizerUniqueId)).toEqual(['rm-2', 'rm-3']);
    expect((await store.scheduleAuthorizers(storeCtx, other)).map((a) => a.authorizerUniqueId)).toEqual(['rm-1', 'rm-9']);
    expect(await t.inTx((tx) => store.removeAuthorizers(tx, id, ['rm-1']))).toBe(0);
    expect(await t.inTx((tx) => store.removeAuthorizers(tx, id, []))).toBe(0);
    // Through the API: removing the rest disables the schedule.
    const rest = await ctx.json('PATCH', `/v1/monitoring/schedules/${id}/authorizers`, { body: { authorizer_unique_ids: ['rm-2', 'rm-3'] } });
    expect(rest.body).toEqual({ removed_count: 2, remaining_count: 0 });
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, id)).toMatchObject({ status: 'DISABLED', nextRunAt: null });
  });

  test('dueScheduleIds: the ACTIVE schedules due, earliest first, at most `limit`; dueSchedule the same for one', async () => {
    // Runs on a day of its own: what other tests left due runs first, so only these are due then.
    const start = day(5);
    const late = await create({ time_of_day: '14:00', starts_at: start });
    const early = await create({ time_of_day: '13:00', starts_at: start });
    const later = await create({ time_of_day: '16:00', starts_at: start });
    ctx.clock.set(`${start}T12:00:00Z`);
    await drainDue();
    const now = Date.parse(`${start}T14:30:00Z`);
    expect(await store.dueScheduleIds(storeCtx, now - 3 * 3_600_000, 100)).toEqual([]);
    expect(await store.dueScheduleIds(storeCtx, now, 100)).toEqual([early, late]);
    expect(await store.dueScheduleIds(storeCtx, now, 1)).toEqual([early]);
    // Due exactly at its time.
    expect(await store.dueScheduleIds(storeCtx, Date.parse(`${start}T13:00:00Z`), 100)).toEqual([early]);

    expect(await store.dueSchedule(storeCtx, early, now)).toMatchObject({ id: early, status: 'ACTIVE', nextRunAt: Date.parse(`${start}T13:00:00Z`) });
    expect(await store.dueSchedule(storeCtx, later, now)).toBeUndefined();
    expect(await store.dueSchedule(storeCtx, 'no-such-schedule', now)).toBeUndefined();
    ctx.clock.set(now);
    // Each due run starts once: the second pass finds nothing due.
    expect(await startAllDueRuns(ctx.rt)).toEqual({ started: 2 });
    expect(await store.dueScheduleIds(storeCtx, now, 100)).toEqual([]);
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, early)).toMatchObject({ nextRunAt: Date.parse(`${start}T13:00:00Z`) + 7 * DAY, updatedAt: now });
  });

  test('recordRunStarted takes a due run once; the final run completes the schedule; a rolled-back start stays due', async () => {
    const start = day(2);
    const id = await create({ time_of_day: '10:00', interval_days: 1, starts_at: start, expires_at: day(3) });
    const dueAt = Date.parse(`${start}T10:00:00Z`);
    const next = dueAt + DAY;
    ctx.clock.set(dueAt + 60_000);
    const now = ctx.clock.now();

    const rolledBack = t.inTx(async (tx) => {
      expect(await store.recordRunStarted(tx, id, dueAt, next, now)).toBe(true);
      throw new Error('rolled back');
    });
    await expect(rolledBack).rejects.toThrow('rolled back');
    expect(await store.dueSchedule(storeCtx, id, now)).toMatchObject({ nextRunAt: dueAt });

    // A caller that read a time the schedule is not due at takes nothing.
    expect(await t.inTx((tx) => store.recordRunStarted(tx, id, dueAt - 1, next, now))).toBe(false);
    expect(await t.inTx((tx) => store.recordRunStarted(tx, id, dueAt, next, now))).toBe(true);
    expect(await t.inTx((tx) => store.recordRunStarted(tx, id, dueAt, next, now))).toBe(false);
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, id)).toMatchObject({ status: 'ACTIVE', nextRunAt: next, updatedAt: now });

    // The last run: nothing after it, so the schedule is COMPLETED and never due again.
    expect(await t.inTx((tx) => store.recordRunStarted(tx, id, next, null, now + 1))).toBe(true);
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, id)).toMatchObject({ status: 'COMPLETED', nextRunAt: null, updatedAt: now + 1 });
    expect(await t.inTx((tx) => store.recordRunStarted(tx, id, next, null, now + 2))).toBe(false);
    expect(await store.dueSchedule(storeCtx, id, now + 10 * DAY)).toBeUndefined();
  });

  test('a run now is open until its batch completes; recordRunCompleted sets last_run_at and returns the webhook', async () => {
    const withHook = await create({ webhook: HOOK });
    const without = await create();
    expect(await store.openRunOf(storeCtx, withHook)).toBeUndefined();
    const run = await ctx.json('POST', `/v1/monitoring/schedules/${withHook}/run`);
    expect(run.status).toBe(202);
    expect(await store.openRunOf(storeCtx, withHook)).toBe(run.body.batch_id);
    expect(await store.openRunOf(storeCtx, without)).toBeUndefined();
    // A second run while the first is open is refused.
    expect((await ctx.json('POST', `/v1/monitoring/schedules/${withHook}/run`)).status).toBe(409);

    // The batch completes through the pipeline, which records the run on the schedule.
    while ((await ctx.json('GET', `/v1/balance_requests/${run.body.batch_id}`)).body.status !== 'completed') await processBalances(ctx.rt);
    expect(await store.openRunOf(storeCtx, withHook)).toBeUndefined();
    const done = (await store.scheduleOf(storeCtx, ctx.lender.id, withHook))!;
    expect(typeof done.lastRunAt).toBe('number');
    expect(done.lastRunAt).toBe(ctx.clock.now());

    const at = ctx.clock.now() + 5_000;
    expect(await t.inTx((tx) => store.recordRunCompleted(tx, withHook, at))).toBe(HOOK);
    expect(await t.inTx((tx) => store.recordRunCompleted(tx, without, at))).toBeNull();
    expect(await t.inTx((tx) => store.recordRunCompleted(tx, 'no-such-schedule', at))).toBeNull();
    expect(await store.scheduleOf(storeCtx, ctx.lender.id, without)).toMatchObject({ lastRunAt: at });
  });

  test('lockSchedule holds the schedule, serializeScheduleNames the lender’s names, each until the transaction ends', async () => {
    const id = await create();
    await secondWaitsForFirst(async (tx) => expect(await store.lockSchedule(tx, ctx.lender.id, id)).toMatchObject({ id, status: 'ACTIVE' }));
    await secondWaitsForFirst((tx) => store.serializeScheduleNames(tx, ctx.lender.id));
  });
});
