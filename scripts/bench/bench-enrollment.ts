// 9. Enrollment and monitoring. A 1000-borrower ACH enrollment (sandbox) beside a 1000-authorizer balance
// request on the same run, both in process through their service functions (the HTTP layer is the same for
// both); the same enrollment once 50,000 borrowers are enrolled (BENCH_ENROLLED); and the monitoring due check
// with 100,000 monitored borrowers of which none is due.
import type { Bench } from './common';
import { authorizers, benchRuntime, durability, median, ms, num, percentile, setSynchronous } from './common';
import { queryPlan } from './engine';
import { submitBalanceRequest } from '../../src/modules/balance-requests/service';
import { enroll } from '../../src/modules/enrollments/service';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { FakeClock } from '../../src/platform/clock';

const RUNS = 15;
/** Borrowers enrolled before the last runs, and those runs. */
const GROWN = Number(process.env.BENCH_ENROLLED ?? 50_000);
const GROWN_RUNS = 7;
const BORROWERS = 100_000;
const TICKS = 2000;
const TARGET_RATIO = 3;
const TARGET_TICK_MS = 2;

// Each run's borrowers on bank accounts of their own (the run in the number): the same 1000 accounts under every
// run would put 15 borrowers on each, which fraud monitoring's shared_account rule rightly flags, 1000 alerts a run.
const borrowers = (prefix: string, run: number) =>
  authorizers(prefix, 1000, { varied: true }).map((a) => ({
    ...a,
    account_number: `${String(run + 10)}${a.account_number}`,
    date_of_birth: { day: 10, month: 12, year: 1985 },
    collectable_amount: 42500,
    days_past_due: 35,
  }));

export const enrollmentBench: Bench = {
  name: 'enrollment',
  title: 'Enrollment of 1000 borrowers, and the monitoring due check',
  timeoutMs: 180_000,
  async run(ctx) {
    const b = await benchRuntime();
    ctx.defer(() => b.close());
    const c = { lender: b.lender, deps: b.rt };
    const balanceMs: number[] = [];
    const enrollMs: number[] = [];
    for (let r = 0; r < RUNS + 2; r++) {
      // Alternated, so drift of the machine touches both alike; the first two runs of each are warm-up.
      const t0 = performance.now();
      const sub = await submitBalanceRequest({ ctx: c, input: { body: { authorizers: authorizers(`bal${r}`, 1000, { varied: true }) } } });
      const t1 = performance.now();
      const en = await enroll({ ctx: c, input: { body: { borrowers: borrowers(`enr${r}`, r) } } });
      const t2 = performance.now();
      if (sub.body.failed_authorizers.length > 0 || en.enrolled !== 1000) throw new Error('bench input failed validation');
      if (r >= 2) {
        balanceMs.push(t1 - t0);
        enrollMs.push(t2 - t1);
      }
    }
    const ratio = median(enrollMs) / median(balanceMs);
    ctx.log(`enrollment ${ms(median(enrollMs))} vs balance request ${ms(median(balanceMs))}`);

    // The same enrollment once the lender has many borrowers: its search entries and bank accounts are keyed
    // by hashes, so each new entry lands on a page of its own in a growing index, and the commit writes them all.
    for (let r = RUNS + 2; r < GROWN / 1000; r++) await enroll({ ctx: c, input: { body: { borrowers: borrowers(`enr${r}`, r) } } });
    const grownMs: number[] = [];
    for (let r = GROWN / 1000; r < GROWN / 1000 + GROWN_RUNS; r++) {
      const input = { body: { borrowers: borrowers(`enr${r}`, r) } };
      const t0 = performance.now();
      await enroll({ ctx: c, input });
      grownMs.push(performance.now() - t0);
    }
    ctx.log(`with ${num(GROWN, 0)} enrolled already: ${ms(median(grownMs))}`);

    // The due check: 100,000 monitored borrowers whose next read is an hour away.
    const clock = new FakeClock(Date.parse('2026-11-21T12:00:00.000Z'));
    const m = await benchRuntime({}, { clock });
    ctx.defer(() => m.close());
    const now = clock.now();
    if (m.rt.pg) {
      // The same rows in one statement; then statistics, as autovacuum would gather them on a real database.
      await m.rt.pg.sql`
        INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, window_started_at, window_ends_at, collectable_amount_cents,
          days_past_due, rail, routing_number, sealed, next_read_at, enrolled_at, updated_at)
        SELECT 'e' || i, ${m.lender.id}, 'b' || i, 'monitored', ${now}::bigint, ${now + 30 * 86_400_000}::bigint, 100, 1, 'ach', '110000000', 'sealed',
          ${now + 3_600_000}::bigint + (i % 3000000), ${now}::bigint, ${now}::bigint
        FROM generate_series(0, ${BORROWERS - 1}::int) AS i`;
      await m.rt.pg.sql`ANALYZE enrollments`;
    } else {
      setSynchronous(m.rt, 'OFF'); // setup only
      const insert = m.rt.sqlite.query(
        `INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, window_started_at, window_ends_at, collectable_amount_cents,
           days_past_due, rail, routing_number, sealed, next_read_at, enrolled_at, updated_at)
         VALUES (?, ?, ?, 'monitored', ?, ?, 100, 1, 'ach', '110000000', 'sealed', ?, ?, ?)`,
      );
      m.rt.sqlite.transaction(() => {
        for (let i = 0; i < BORROWERS; i++) {
          insert.run(`e${i}`, m.lender.id, `b${i}`, now, now + 30 * 86_400_000, now + 3_600_000 + (i % 3_000_000), now, now);
        }
      })();
      setSynchronous(m.rt, 'FULL');
      m.rt.sqlite.exec('ANALYZE');
    }
    for (let i = 0; i < 200; i++) await queueDueReads(m.rt);
    const ticks: number[] = [];
    for (let i = 0; i < TICKS; i++) {
      const t0 = performance.now();
      const { queued } = await queueDueReads(m.rt);
      ticks.push(performance.now() - t0);
      if (queued !== 0) throw new Error('a read was due');
    }
    // SQLite is told the index (as the store does); PostgreSQL has no such hint and picks its own plan.
    const plan = await queryPlan(
      m.rt,
      `SELECT id FROM enrollments ${m.rt.pg ? '' : 'INDEXED BY enrollments_read_due_idx '}WHERE state = 'monitored' AND next_read_at <= ? AND sealed IS NOT NULL ORDER BY next_read_at LIMIT ?`,
      now,
      100,
    );

    return {
      metrics: [
        { label: `POST /v1/payment_enrollments service, 1000 ACH borrowers (median of ${RUNS})`, value: ms(median(enrollMs)) },
        { label: `POST /v1/balance_requests service, 1000 authorizers (median of ${RUNS})`, value: ms(median(balanceMs)) },
        { label: 'enrollment / balance request', value: `${num(ratio)}×`, target: `≤ ${TARGET_RATIO}×`, pass: ratio <= TARGET_RATIO },
        {
          label: `the same enrollment with ${num(GROWN, 0)} borrowers enrolled already (median of ${GROWN_RUNS}; BENCH_ENROLLED sets the count)`,
          value: `${ms(median(grownMs))}, ${num(median(grownMs) / median(enrollMs))}× the enrollment above`,
        },
        {
          label: `monitoring due check, ${num(BORROWERS)} monitored, none due (median of ${TICKS} ticks)`,
          value: `${ms(median(ticks), 3)} (p99 ${ms(percentile(ticks, 99), 3)})`,
          target: `< ${TARGET_TICK_MS} ms`,
          pass: median(ticks) < TARGET_TICK_MS,
        },
      ],
      notes: [
        `Both requests go through their service functions with the real database (${await durability(b.rt)}), sealing and one transaction each; the HTTP layer in front of them is the same for both.`,
        `Due check plan: ${plan}.`,
      ],
    };
  },
};
