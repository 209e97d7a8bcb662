// engine: postgres
// The return-rate store on PostgreSQL: the window's debits and returns counted as SQLite counts them, and the
// lender's evaluations taking turns, so that twenty evaluations at once after a change of status see the
// change once (one alert), each reading the statuses the one before it saved.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import type { Ctx } from '../../../src/deps';
import { DAY_MS } from '../../../src/platform/clock';
import { transaction } from '../../../src/platform/context';
import { ratesOver, WATCH_DAYS } from '../../../src/modules/return-rates/service';
import { onPostgres } from '../../helpers/pg';
import { pgServiceDeps, type PgServiceDeps } from '../../helpers/pg-service-deps';

const CALLERS = 20;
/** Many transactions at once on a shared machine: seconds, not milliseconds. */
const SLOW = 120_000;

if (!onPostgres) {
  test('not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const envs: PgServiceDeps[] = [];
  const env = () => {
    const e = pgServiceDeps({ max: 10 });
    envs.push(e);
    return e;
  };
  afterAll(async () => {
    for (const e of envs) await e.close();
  }, SLOW);

  /**
   * The lender's window: 10 ACH debits of its own that reached the processor (one of them returned R10, one
   * returned R01 then again R01 later: counted once), one ACH payment never sent, a card payment returned;
   * 4 uploaded debits of references it did not make (one returned R03), and an uploaded row of its own
   * payment's reference (counted as its payment, not again).
   */
  async function fixture(e: PgServiceDeps, ctx: Ctx, now: number): Promise<void> {
    const id = ctx.lender.id;
    const at = now - 5 * DAY_MS;
    const db = e.pg.db;
    await db.execute(sql`INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, collectable_amount_cents, days_past_due, rail, enrolled_at, updated_at)
                         VALUES (${`${id}-e`}, ${id}, 'loan-1', 'monitoring', 100, 3, 'ach', ${at}, ${at})`);
    await db.execute(sql`INSERT INTO payment_connections (id, lender_id, processor, label, rail_scope, created_at, updated_at) VALUES (${`${id}-k`}, ${id}, 'sandbox', 'k', 'both', ${at}, ${at})`);
    const payment = (n: number, rail: string, status: string, firstAttemptAt: number | null) =>
      db.execute(sql`INSERT INTO payments (id, lender_id, enrollment_id, authorizer_unique_id, connection_id, rail, amount_cents, reference, status, created_at, updated_at, first_attempt_at)
                     VALUES (${`${id}-p${n}`}, ${id}, ${`${id}-e`}, 'loan-1', ${`${id}-k`}, ${rail}, 1000, ${`DRS-${n}`}, ${status}, ${at}, ${at}, ${firstAttemptAt})`);
    for (let n = 1; n <= 10; n++) await payment(n, 'ach', n <= 2 ? 'returned' : 'settled', at + n);
    await payment(11, 'ach', 'not_attempted', null);
    await payment(12, 'card', 'returned', at);
    let ev = 0;
    const event = (n: number, code: string, occurredAt: number) =>
      db.execute(sql`INSERT INTO payment_events (id, lender_id, enrollment_id, payment_id, reference, status, amount_cents, return_code, source, source_event_id, occurred_at, recorded_at)
                     VALUES (${`${id}-ev${++ev}`}, ${id}, ${`${id}-e`}, ${`${id}-p${n}`}, ${`DRS-${n}`}, 'returned', 1000, ${code}, 'processor', ${`src-${ev}`}, ${occurredAt}, ${occurredAt})`);
    await event(1, 'R10', at + 100);
    await event(2, 'R01', at + 100);
    await event(2, 'R01', at + 200);
    await event(12, 'R10', at + 100);
    const uploaded = (ref: string, status: string, returnedAt: number | null, code: string | null) =>
      db.execute(sql`INSERT INTO uploaded_results (lender_id, reference, status, amount_cents, submitted_at, returned_at, return_code, matched, updated_at)
                     VALUES (${id}, ${ref}, ${status}, 1000, ${at}, ${returnedAt}, ${code}, 0, ${at})`);
    await uploaded('UP-1', 'settled', null, null);
    await uploaded('UP-2', 'settled', null, null);
    await uploaded('UP-3', 'sent', null, null);
    await uploaded('UP-4', 'returned', at + 300, 'R03');
    await uploaded('UP-5', 'pending', null, null);
    await uploaded('DRS-3', 'returned', at + 300, 'R02');
  }

  describe('the return-rate store on PostgreSQL', () => {
    test('debits and returns of the window, once per reference; numbers, not strings', async () => {
      const e = env();
      const ctx = await e.newLender();
      const now = e.clock.now();
      await fixture(e, ctx, now);
      const from = now - WATCH_DAYS * DAY_MS;
      expect(await ctx.deps.stores.returnRates.debitsIn(ctx, ctx.lender.id, from, now)).toBe(14);
      const returns = await ctx.deps.stores.returnRates.returnsIn(ctx, ctx.lender.id, from, now);
      expect(returns.map((r) => `${r.reference}:${r.code}`).sort()).toEqual(['DRS-1:R10', 'DRS-2:R01', 'UP-4:R03']);
      // Outside the window: nothing.
      expect(await ctx.deps.stores.returnRates.debitsIn(ctx, ctx.lender.id, from - 10 * DAY_MS, from - DAY_MS)).toBe(0);
      expect(await ctx.deps.stores.returnRates.returnsIn(ctx, ctx.lender.id, from - 10 * DAY_MS, from - DAY_MS)).toEqual([]);
      const r = await ratesOver(ctx, ctx.lender.id, now, WATCH_DAYS);
      expect(r.debits).toBe(14);
      expect(r.rates.unauthorized.returns).toBe(1);
      expect(r.rates.administrative.returns).toBe(1);
      expect(r.rates.overall.returns).toBe(3);
      expect(await ctx.deps.stores.returnRates.lenderIds(ctx)).toContain(ctx.lender.id);
    }, SLOW);

    test('20 evaluations at once after a change of status: one sees the change, the others what it saved', async () => {
      const e = env();
      const ctx = await e.newLender();
      const now = e.clock.now();
      await fixture(e, ctx, now);
      await transaction(ctx, (tx) => tx.deps.stores.returnRates.saveWatchedStatuses(tx, ctx.lender.id, { unauthorized: 'ok', administrative: 'ok', overall: 'ok' }, now - DAY_MS));
      // As evaluateReturnRates does: its turn first, then the rates, the last statuses, the comparison, the save.
      const evaluate = () =>
        transaction(ctx, async (tx) => {
          await tx.deps.stores.returnRates.serializeWatch(tx, ctx.lender.id);
          const r = await ratesOver(tx, ctx.lender.id, now, WATCH_DAYS);
          const prev = (await tx.deps.stores.returnRates.watchedStatuses(tx, ctx.lender.id))!;
          await Bun.sleep(2);
          const next = { unauthorized: r.rates.unauthorized.status, administrative: r.rates.administrative.status, overall: r.rates.overall.status };
          const changed = (Object.keys(next) as (keyof typeof next)[]).filter((k) => next[k] !== prev[k]);
          await tx.deps.stores.returnRates.saveWatchedStatuses(tx, ctx.lender.id, next, now);
          return changed.length;
        });
      const changes = await Promise.all(Array.from({ length: CALLERS }, evaluate));
      // unauthorized (1 of 14) and overall (3 of 14) are exceeded, administrative (1 of 14) too: one evaluation sees it.
      expect(changes.filter((n) => n > 0)).toEqual([3]);
      expect(await ctx.deps.stores.returnRates.watchedStatuses(ctx, ctx.lender.id)).toMatchObject({ unauthorized: 'exceeded', administrative: 'exceeded', overall: 'exceeded' });
    }, SLOW);
  });
}
