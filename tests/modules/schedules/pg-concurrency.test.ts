// engine: postgres
// The schedules' check-then-write rules on PostgreSQL, where transactions run side by side under READ COMMITTED
// (on SQLite one writer at a time made them hold by themselves): 20 callers at once, each in a transaction of
// its own on a connection of its own.
// - a due run is taken once: a schedule with N runs left, called on by 20 schedulers at each of its run
//   times, starts exactly N runs, one per run time, and none after its last (one conditional UPDATE);
// - a change that reads the schedule first holds its row: no update lost, one run now at a time, no update of
//   a schedule just disabled, and removing its authorizers one by one at once disables it exactly when the
//   last one goes;
// - a name is checked and written under the lender's lock: of 20 schedules given one name at once, one gets it.
// Besides, the store's other statements are run once against the real server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { batches, lenders, schedules } from '../../../db/schema-pg';
import type { Ctx, Deps } from '../../../src/deps';
import { startDueRuns } from '../../../src/modules/schedules/runs';
import { disableSchedule, removeAuthorizers, updateSchedule } from '../../../src/modules/schedules/service';
import { type NewScheduleAuthorizer, type ScheduleRow } from '../../../src/modules/schedules/store';
import { DAY_MS, FakeClock } from '../../../src/platform/clock';
import { transaction } from '../../../src/platform/context';
import { Conflict } from '../../../src/platform/errors';
import { newId } from '../../../src/platform/ids';
import { openPg, type PgHandle } from '../../../src/platform/pg';
import { dateOf } from '../../../src/modules/schedules/times';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';
import { pgStores } from '../../../src/stores';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;

if (!onPostgres) {
  test('PostgreSQL: not applicable without DATABASE_URL=postgres://… (the schedules store on SQLite is covered by the other tests here)', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  let database: ReturnType<typeof freshPgDatabase>;
  let pg: PgHandle;
  let deps: Deps;
  const DAY0 = Date.UTC(2026, 5, 1);
  const clock = new FakeClock(DAY0);

  beforeAll(() => {
    database = freshPgDatabase();
    // More connections than callers: each transaction holds one, so all 20 are open at once.
    pg = openPg(database.url, { max: CALLERS + 5 });
    deps = { ...pgStoreDeps(pg), clock } as unknown as Deps;
  });
  afterAll(async () => {
    await pg.close();
    database.drop();
  });

  async function newLender(): Promise<Ctx> {
    const lender = { id: newId(), name: `lender ${newId()}`, debitCardApproved: false };
    await pg.db.insert(lenders).values({ ...lender, createdAt: clock.now() });
    return { deps, lender } as Ctx;
  }

  const authorizer = (i: number): NewScheduleAuthorizer => ({
    authorizerUniqueId: `auth-${String(i).padStart(3, '0')}`,
    paymentType: i % 2 ? 'DEBIT_CARD' : 'ACCOUNT_NUMBER',
    routingNumber: i % 2 ? null : '021000021',
    phone: null,
    zip: i % 3 ? '10001' : null,
    metadata: i % 2 ? JSON.stringify({ i }) : null,
    thresholdCents: i % 2 ? 100_000 + i : null,
    sealed: `sealed-${i}`,
  });

  /** A schedule of `runs` daily runs at 09:00 UTC, the first on DAY0 + 1. */
  async function newSchedule(ctx: Ctx, opts: { runs?: number; name?: string; authorizers?: number } = {}): Promise<ScheduleRow> {
    const runs = opts.runs ?? 30;
    const row: ScheduleRow = {
      id: newId(),
      lenderId: ctx.lender.id,
      name: opts.name ?? `schedule ${newId()}`,
      status: 'ACTIVE',
      intervalDays: 1,
      timeOfDay: '09:00',
      startsAt: dateOf(DAY0 + DAY_MS),
      expiresAt: dateOf(DAY0 + runs * DAY_MS),
      webhook: 'https://93.184.215.14/hooks',
      thresholdCents: null,
      createdAt: DAY0,
      updatedAt: DAY0,
      lastRunAt: null,
      nextRunAt: DAY0 + DAY_MS + 9 * 3_600_000,
    };
    const authorizers = Array.from({ length: opts.authorizers ?? 0 }, (_, i) => authorizer(i));
    await transaction(ctx, (tx) => tx.deps.stores.schedules.createSchedule(tx, row, authorizers));
    return row;
  }

  const scheduleRow = async (id: string): Promise<ScheduleRow> => (await pg.db.select().from(schedules).where(sql`${schedules.id} = ${id}`))[0]!;

  describe('a due run is taken once', () => {
    test(`a schedule with 3 runs left, ${CALLERS} schedulers at each run time: 3 runs, one each time, none after`, async () => {
      const ctx = await newLender();
      const s = await newSchedule(ctx, { runs: 3 });
      // Counts the runs taken: the scheduler's own code, its store call observed.
      const taken: number[] = [];
      const store = pgStores.schedules;
      const recordRunStarted = store.recordRunStarted;
      store.recordRunStarted = async (...args) => {
        const ok = await recordRunStarted(...args);
        if (ok) taken.push(args[4]);
        return ok;
      };
      try {
        for (let day = 1; day <= 4; day++) {
          clock.set(DAY0 + day * DAY_MS + 9 * 3_600_000 + 60_000);
          const before = taken.length;
          await Promise.all(Array.from({ length: CALLERS }, () => startDueRuns(deps)));
          expect(taken.length - before).toBe(day <= 3 ? 1 : 0);
          const row = await scheduleRow(s.id);
          if (day < 3) expect(row).toMatchObject({ status: 'ACTIVE', nextRunAt: DAY0 + (day + 1) * DAY_MS + 9 * 3_600_000 });
          else expect(row).toMatchObject({ status: 'COMPLETED', nextRunAt: null });
        }
      } finally {
        store.recordRunStarted = recordRunStarted;
        clock.set(DAY0);
      }
      expect(taken.length).toBe(3);
    });

    test(`${CALLERS} callers taking the same due run: one takes it; racing a disable, at most one does and the schedule stays disabled`, async () => {
      const ctx = await newLender();
      const s = await newSchedule(ctx);
      const now = s.nextRunAt! + 1;
      const take = () =>
        transaction({ deps }, async (tx) => {
          const due = await tx.deps.stores.schedules.dueSchedule(tx, s.id, now);
          return !!due && (await tx.deps.stores.schedules.recordRunStarted(tx, s.id, due.nextRunAt!, due.nextRunAt! + DAY_MS, now));
        });
      const results = await Promise.all(Array.from({ length: CALLERS }, take));
      expect(results.filter(Boolean).length).toBe(1);
      expect((await scheduleRow(s.id)).nextRunAt).toBe(s.nextRunAt! + DAY_MS);

      const other = await newSchedule(ctx);
      const racing = await Promise.all(
        Array.from({ length: CALLERS }, (_, i) =>
          i === 0
            ? transaction({ deps }, (tx) => tx.deps.stores.schedules.disableSchedule(tx, other.id, now)).then(() => false)
            : transaction({ deps }, (tx) => tx.deps.stores.schedules.recordRunStarted(tx, other.id, other.nextRunAt!, other.nextRunAt! + DAY_MS, now)),
        ),
      );
      const row = await scheduleRow(other.id);
      // Either the run was taken before the schedule was disabled, or not at all; disabled it stays.
      expect(racing.filter(Boolean).length).toBeLessThanOrEqual(1);
      expect(row).toMatchObject({ status: 'DISABLED', nextRunAt: null });
    });
  });

  describe('a change that reads the schedule first holds its row', () => {
    test(`${CALLERS} read-then-write changes at once: none lost`, async () => {
      const ctx = await newLender();
      const s = await newSchedule(ctx);
      await Promise.all(
        Array.from({ length: CALLERS }, () =>
          transaction(ctx, async (tx) => {
            const row = await tx.deps.stores.schedules.lockSchedule(tx, ctx.lender.id, s.id);
            await tx.deps.stores.schedules.updateSchedule(tx, s.id, { ...row!, updatedAt: row!.updatedAt + 1 });
          }),
        ),
      );
      expect((await scheduleRow(s.id)).updatedAt).toBe(s.updatedAt + CALLERS);
      expect(await transaction(ctx, (tx) => tx.deps.stores.schedules.lockSchedule(tx, 'another lender', s.id))).toBeUndefined();
    });

    test(`${CALLERS} runs now of one schedule at once: the schedule held, one batch made, the others find it open`, async () => {
      const ctx = await newLender();
      const s = await newSchedule(ctx);
      // What a run now does with the store, its batch written as the balance requests' store would.
      const runNow = () =>
        transaction(ctx, async (tx) => {
          const held = await tx.deps.stores.schedules.lockSchedule(tx, ctx.lender.id, s.id);
          if (!held || (await tx.deps.stores.schedules.openRunOf(tx, s.id))) return false;
          await (tx.tx as unknown as PgHandle['db'])
            .insert(batches)
            .values({ id: newId(), lenderId: ctx.lender.id, source: 'schedule', scheduleId: s.id, status: 'pending', submittedAt: clock.now(), totalAuthorizers: 0 });
          return true;
        });
      const results = await Promise.all(Array.from({ length: CALLERS }, runNow));
      expect(results.filter(Boolean).length).toBe(1);
      const [row] = (await pg.db.execute(sql`SELECT count(*)::int AS n FROM ${batches} WHERE schedule_id = ${s.id}`)) as unknown as { n: number }[];
      expect(row!.n).toBe(1);
    });

    test(`${CALLERS / 2} updates and ${CALLERS / 2} disables at once: disabled, with no next run, every later update refused`, async () => {
      const ctx = await newLender();
      const s = await newSchedule(ctx);
      const results = await Promise.allSettled(
        Array.from({ length: CALLERS }, (_, i) =>
          i % 2 ? disableSchedule({ ctx, input: { id: s.id } }) : updateSchedule({ ctx, input: { id: s.id, body: { interval_days: 2 + i } } }),
        ),
      );
      expect(results.filter((r, i) => i % 2 && r.status === 'fulfilled').length).toBe(CALLERS / 2);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(Conflict);
      expect(await scheduleRow(s.id)).toMatchObject({ status: 'DISABLED', nextRunAt: null });
    });

    test(`${CALLERS} removals of one authorizer each, at once: the schedule is disabled when the last one goes, and the counts add up`, async () => {
      const ctx = await newLender();
      const s = await newSchedule(ctx, { authorizers: CALLERS });
      const results = await Promise.all(
        Array.from({ length: CALLERS }, (_, i) => removeAuthorizers({ ctx, input: { id: s.id, authorizerIds: [authorizer(i).authorizerUniqueId] } })),
      );
      expect(results.every((r) => r.removed_count === 1)).toBe(true);
      expect(results.map((r) => r.remaining_count).sort((a, b) => a - b)).toEqual(Array.from({ length: CALLERS }, (_, i) => i));
      expect(await scheduleRow(s.id)).toMatchObject({ status: 'DISABLED', nextRunAt: null });
    });
  });

  describe('a lender’s schedule names', () => {
    test(`${CALLERS} new schedules with one name at once: one made, the others find it taken`, async () => {
      const ctx = await newLender();
      const results = await Promise.allSettled(
        Array.from({ length: CALLERS }, () =>
          transaction(ctx, async (tx) => {
            await tx.deps.stores.schedules.serializeScheduleNames(tx, ctx.lender.id);
            if (await tx.deps.stores.schedules.nameTaken(tx, ctx.lender.id, 'nightly')) return false;
            await tx.deps.stores.schedules.createSchedule(tx, { ...(await scheduleTemplate(ctx)), name: 'nightly' }, [authorizer(1)]);
            return true;
          }),
        ),
      );
      // Every caller answered: none met the unique index instead of the check.
      expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
      expect(results.filter((r) => r.status === 'fulfilled' && r.value).length).toBe(1);
      const [row] = (await pg.db.execute(sql`SELECT count(*)::int AS n FROM ${schedules} WHERE lender_id = ${ctx.lender.id}`)) as unknown as { n: number }[];
      expect(row!.n).toBe(1);
    });

    test(`${CALLERS} schedules renamed to one name at once: one renamed, the others refused with a conflict`, async () => {
      const ctx = await newLender();
      const made = [];
      for (let i = 0; i < CALLERS; i++) made.push(await newSchedule(ctx));
      const results = await Promise.allSettled(made.map((s) => updateSchedule({ ctx, input: { id: s.id, body: { name: 'weekly' } } })));
      expect(results.filter((r) => r.status === 'fulfilled').length).toBe(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(Conflict);
    });
  });

  async function scheduleTemplate(ctx: Ctx): Promise<ScheduleRow> {
    return {
      id: newId(),
      lenderId: ctx.lender.id,
      name: '',
      status: 'ACTIVE',
      intervalDays: 7,
      timeOfDay: '10:30',
      startsAt: null,
      expiresAt: dateOf(DAY0 + 60 * DAY_MS),
      webhook: null,
      thresholdCents: 12_345,
      createdAt: DAY0,
      updatedAt: DAY0,
      lastRunAt: null,
      nextRunAt: DAY0 + 10.5 * 3_600_000,
    };
  }

  test('the other statements: a schedule read back whole, its authorizers in order, counts, pages, due ids, runs', async () => {
    const ctx = await newLender();
    const a = await newSchedule(ctx, { authorizers: 5, name: 'a' });
    const b = await newSchedule(ctx, { authorizers: 0, name: 'b' });
    const c = await newSchedule(ctx, { authorizers: 2, name: 'c' });
    expect(await ctx.deps.stores.schedules.scheduleOf(ctx, ctx.lender.id, a.id)).toEqual(a);
    expect(await ctx.deps.stores.schedules.scheduleOf(ctx, 'another lender', a.id)).toBeUndefined();
    const auths = await ctx.deps.stores.schedules.scheduleAuthorizers(ctx, a.id);
    expect(auths.map(({ id: _id, scheduleId: _s, ...rest }) => rest)).toEqual([0, 1, 2, 3, 4].map(authorizer));
    expect(typeof auths[0]!.id).toBe('number');
    expect(await ctx.deps.stores.schedules.authorizerCounts(ctx, [c.id, b.id, a.id])).toEqual([2, 0, 5]);
    expect(await ctx.deps.stores.schedules.authorizerCounts(ctx, [])).toEqual([]);
    expect(await ctx.deps.stores.schedules.nameTaken(ctx, ctx.lender.id, 'a')).toBe(true);
    expect(await ctx.deps.stores.schedules.nameTaken(ctx, ctx.lender.id, 'a', a.id)).toBe(false);
    expect(await ctx.deps.stores.schedules.nameTaken(ctx, ctx.lender.id, 'A')).toBe(false);

    const ids = [a.id, b.id, c.id].sort();
    const page1 = await ctx.deps.stores.schedules.listSchedules(ctx, { lenderId: ctx.lender.id, afterId: '', take: 2 });
    const page2 = await ctx.deps.stores.schedules.listSchedules(ctx, { lenderId: ctx.lender.id, afterId: page1.at(-1)!.id, take: 2 });
    expect([...page1, ...page2].map((s) => s.id)).toEqual(ids);
    expect(await ctx.deps.stores.schedules.listSchedules(ctx, { lenderId: ctx.lender.id, status: 'DISABLED', afterId: '', take: 9 })).toEqual([]);

    expect(await transaction(ctx, (tx) => tx.deps.stores.schedules.removeAuthorizers(tx, a.id, ['auth-001', 'auth-003', 'nobody']))).toBe(2);
    expect(await transaction(ctx, (tx) => tx.deps.stores.schedules.removeAuthorizers(tx, a.id, []))).toBe(0);
    expect((await ctx.deps.stores.schedules.scheduleAuthorizers(ctx, a.id)).map((r) => r.authorizerUniqueId)).toEqual(['auth-000', 'auth-002', 'auth-004']);

    const due = a.nextRunAt!;
    const dueIds = await ctx.deps.stores.schedules.dueScheduleIds(ctx, due, 1000);
    expect(dueIds).toEqual(expect.arrayContaining([a.id, b.id, c.id]));
    expect(await ctx.deps.stores.schedules.dueScheduleIds(ctx, due - 1, 1000)).not.toContain(a.id);
    expect(await ctx.deps.stores.schedules.dueSchedule(ctx, a.id, due - 1)).toBeUndefined();
    expect(await ctx.deps.stores.schedules.dueSchedule(ctx, a.id, due)).toEqual(a);

    expect(await ctx.deps.stores.schedules.openRunOf(ctx, a.id)).toBeUndefined();
    const batchId = newId();
    await pg.db.insert(batches).values({ id: batchId, lenderId: ctx.lender.id, source: 'schedule', scheduleId: a.id, status: 'processing', submittedAt: due, totalAuthorizers: 0 });
    expect(await ctx.deps.stores.schedules.openRunOf(ctx, a.id)).toBe(batchId);
    expect(await transaction(ctx, (tx) => tx.deps.stores.schedules.recordRunCompleted(tx, a.id, due + 5))).toBe(a.webhook);
    expect(await transaction(ctx, (tx) => tx.deps.stores.schedules.recordRunCompleted(tx, 'no such schedule', due + 5))).toBeNull();
    expect((await scheduleRow(a.id)).lastRunAt).toBe(due + 5);
    // The last run: COMPLETED, no next run.
    expect(await transaction(ctx, (tx) => tx.deps.stores.schedules.recordRunStarted(tx, a.id, due, null, due + 6))).toBe(true);
    expect(await scheduleRow(a.id)).toMatchObject({ status: 'COMPLETED', nextRunAt: null, updatedAt: due + 6 });
    expect(await transaction(ctx, (tx) => tx.deps.stores.schedules.recordRunStarted(tx, a.id, due, null, due + 7))).toBe(false);
  });
}
