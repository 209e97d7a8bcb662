// 8. Scheduler. (a) 2000 ACTIVE schedules, none due: the cost of one due check (startDueRuns) per tick, and
// the query plan of its SELECT. (b) 100 schedules due at the same minute, 100 authorizers each, 50 ms reads at
// the default concurrency: wall time from the due check until every run's batch is completed, vs the ideal.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '../../src/platform/clock';
import { createSchedule } from '../../src/modules/schedules/service';
import { startAllDueRuns, startDueRuns } from '../../src/modules/schedules/runs';
import type { Bench, BenchContext } from './common';
import { authorizers, benchRuntime, median, ms, num, percentile, ROOT, setSynchronous } from './common';
import { countRows, onPostgres, queryPlan } from './engine';
import { processAll } from './bench-processing';

const IDLE_SCHEDULES = 2000;
const TICKS = 2000;
const TARGET_TICK_MS = 2;
const DUE_SCHEDULES = 100;
const PER_SCHEDULE = 100;
const LATENCY_MS = 50;
const TARGET = 1.3;
const DAY = '2026-11-21';

const DUE_QUERY = "SELECT id FROM schedules WHERE status = 'ACTIVE' AND next_run_at <= ? ORDER BY next_run_at LIMIT ?";

/**
 * The due check's SELECT, read from the schedules' store of the engine so the plan shown is the plan of the
 * code as it is (`?` placeholders); the same query written out when the store builds it otherwise.
 */
function dueQuery(): string {
  try {
    if (onPostgres) {
      const src = readFileSync(join(ROOT, 'src/modules/schedules/store.pg.ts'), 'utf8');
      // The statement of the store's tagged template, up to its closing backtick (it quotes 'ACTIVE' inside).
      const m = /sql`(SELECT id FROM schedules WHERE [^`]+)`/.exec(src);
      return m ? m[1]!.replace(/\$\{[^}]*\}(::\w+)?|\$\d+(::\w+)?/g, '?').replace(/\s+/g, ' ').trim() : DUE_QUERY;
    }
    const src = readFileSync(join(ROOT, 'src/modules/schedules/store.sqlite.ts'), 'utf8');
    const m = /"(SELECT id FROM schedules WHERE [^"]+)"/.exec(src);
    return m ? m[1]! : DUE_QUERY;
  } catch {
    return DUE_QUERY;
  }
}

async function idleTicks(ctx: BenchContext) {
  const clock = new FakeClock(Date.parse(`${DAY}T06:00:00.000Z`));
  const b = await benchRuntime({}, { clock });
  ctx.defer(() => b.close());
  const { rt } = b;
  setSynchronous(rt, 'OFF'); // setup only
  for (let i = 0; i < IDLE_SCHEDULES; i++) {
    const minute = 10 * 60 + (i % (14 * 60));
    const tod = `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;
    await createSchedule({ ctx: { lender: b.lender, deps: rt }, input: { body: { name: `idle-${i}`, interval_days: 1 + (i % 7), time_of_day: tod, authorizers: authorizers(`i${i}`, 1) } } });
  }
  setSynchronous(rt, 'FULL');
  ctx.log(`${IDLE_SCHEDULES} schedules created`);
  const active = await countRows(rt, "SELECT COUNT(*) AS n FROM schedules WHERE status = 'ACTIVE'");
  // As the service's database would be after a while (SQLite: the planner needs no statistics for this plan).
  if (rt.pg) await rt.pg.sql`ANALYZE schedules`;
  for (let i = 0; i < 200; i++) await startDueRuns(rt);
  const times: number[] = [];
  for (let i = 0; i < TICKS; i++) {
    const t0 = performance.now();
    const { started } = await startDueRuns(rt);
    times.push(performance.now() - t0);
    if (started !== 0) throw new Error('a schedule was due');
  }
  const sql = dueQuery();
  const plan = await queryPlan(rt, sql, clock.now(), 100);
  return { active, times, plan };
}

async function dueRuns(ctx: BenchContext) {
  const clock = new FakeClock(Date.parse(`${DAY}T09:00:00.000Z`));
  const b = await benchRuntime({ SANDBOX_LATENCY_MS: String(LATENCY_MS) }, { clock });
  ctx.defer(() => b.close());
  const { rt } = b;
  for (let i = 0; i < DUE_SCHEDULES; i++) {
    await createSchedule({ ctx: { lender: b.lender, deps: rt }, input: { body: { name: `due-${i}`, interval_days: 1, time_of_day: '10:00', authorizers: authorizers(`d${i}`, PER_SCHEDULE) } } });
  }
  clock.set(`${DAY}T10:00:00.000Z`);
  const n = DUE_SCHEDULES * PER_SCHEDULE;
  const ideal = (n * LATENCY_MS) / rt.config.balanceConcurrency / 1000;
  const t0 = performance.now();
  const { started } = await startAllDueRuns(rt);
  const tickMs = performance.now() - t0;
  if (started !== DUE_SCHEDULES) throw new Error(`${started} runs started, expected ${DUE_SCHEDULES}`);
  const r = await processAll(rt, ideal * 3 * 1000);
  const seconds = (performance.now() - t0) / 1000;
  const done = await countRows(rt, "SELECT COUNT(*) AS n FROM batches WHERE source = 'schedule' AND status = 'completed'");
  const lastRun = await countRows(rt, 'SELECT COUNT(*) AS n FROM schedules WHERE last_run_at IS NOT NULL');
  if (done !== DUE_SCHEDULES) throw new Error(`${done} run batches completed, expected ${DUE_SCHEDULES}`);
  return { n, ideal, seconds, tickMs, lastRun, concurrency: rt.config.balanceConcurrency, calls: r.calls };
}

export const schedulerBench: Bench = {
  name: 'scheduler',
  title: 'Scheduler: due check cost and 100 simultaneous runs',
  // On PostgreSQL the 2000 schedules of the set-up are 2000 transactions over the network, with commits that wait.
  timeoutMs: onPostgres ? 300_000 : 150_000,
  async run(ctx) {
    const idle = await idleTicks(ctx);
    const tick = median(idle.times);
    ctx.log(`due check median ${num(tick, 3)} ms; ${idle.plan}`);
    // SQLite: SEARCH … USING INDEX schedules_due_idx; PostgreSQL: Index (Only) Scan using schedules_due_idx.
    const usesIndex = /USING (COVERING )?INDEX schedules_due_idx|Index (Only )?Scan using schedules_due_idx/i.test(idle.plan);
    const due = await dueRuns(ctx);
    const ratio = due.seconds / due.ideal;
    return {
      metrics: [
        {
          label: `startDueRuns with ${idle.active} ACTIVE schedules, none due (median of ${TICKS} ticks)`,
          value: `${ms(tick, 3)} (p99 ${ms(percentile(idle.times, 99), 3)})`,
          target: `< ${TARGET_TICK_MS} ms`,
          pass: tick < TARGET_TICK_MS,
        },
        { label: 'due query plan uses schedules_due_idx', value: usesIndex ? 'yes' : 'no', target: 'yes', pass: usesIndex },
        { label: `${DUE_SCHEDULES} runs × ${PER_SCHEDULE} authorizers due at once: due check → all batches completed`, value: `${num(due.seconds)} s (due check ${ms(due.tickMs, 0)})` },
        { label: `ideal ${due.n} × ${LATENCY_MS} ms / ${due.concurrency}`, value: `${num(due.ideal)} s` },
        { label: 'wall / ideal', value: `${num(ratio, 2)}×`, target: `≤ ${TARGET}×`, pass: ratio <= TARGET },
      ],
      notes: [
        `${onPostgres ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${dueQuery()} → ${idle.plan}`,
        `${due.lastRun} schedules have last_run_at set; ${due.calls} processBalances call(s).`,
      ],
    };
  },
};
