// 10. Collection. 10,000 monitored borrowers due at once, the sandbox processor answering each payment in
// 50 ms: from the due check to the last processor answer recorded, against the ideal the processor
// concurrency sets. And polling: a backlog of 50,000 sandbox changes read through one key.
import type { Bench, BenchContext } from './common';
import { authorizers, benchRuntime, durability, ms, num, setSynchronous } from './common';
import { countRows, onPostgres } from './engine';
import { enroll } from '../../src/modules/enrollments/service';
import { monitoringReadsJob } from '../../src/modules/enrollments/monitoring';
import { balanceProcessingJob } from '../../src/modules/balance-requests/processing';
import { createConnection } from '../../src/modules/payment-connections/service';
import { dispatchPayments } from '../../src/modules/collection/dispatch';
import { pollProcessors } from '../../src/modules/collection/poll';
import { newId } from '../../src/platform/ids';

/** A tick's signal that never aborts. */
const never = new AbortController().signal;

const BORROWERS = 10_000;
const LATENCY_MS = 50;
const DISPATCH_CONCURRENCY = 16;
const TARGET_RATIO = 1.3;
const BACKLOG = 50_000;
const TARGET_RATE = 20_000;
const KEY = 'sbx_bench_collection_0000001';

interface Progress {
  /** Payments answered by the processor, as last counted. */
  done: number;
  /** When the due check started (performance.now()), 0 before. */
  startedAt: number;
}

/** The collection part: stops after `deadline` (performance.now()); `progress` says how far it got meanwhile. */
async function collect(ctx: BenchContext, deadline: number, progress: Progress) {
  const b = await benchRuntime({ SANDBOX_PROCESSOR_LATENCY_MS: String(LATENCY_MS) });
  ctx.defer(() => b.close());
  const c = { lender: b.lender, deps: b.rt };
  await createConnection({ ctx: c, input: { body: { api_key: KEY, rail_scope: 'both', is_default: true } } });
  for (let i = 0; i < BORROWERS / 1000; i++) {
    const borrowers = authorizers(`col${i}`, 1000).map((a) => ({
      ...a,
      account_number: '0009000000',
      date_of_birth: { day: 10, month: 12, year: 1985 },
      collectable_amount: 42500,
      days_past_due: 35,
    }));
    const r = await enroll({ ctx: c, input: { body: { borrowers } } });
    if (r.enrolled !== 1000) throw new Error('bench enrollment failed');
  }
  ctx.log(`${BORROWERS} borrowers enrolled; all due`);
  const answered = () => countRows(b.rt, "SELECT COUNT(*) AS n FROM payments WHERE status != 'initiating'");
  const t0 = performance.now();
  progress.startedAt = t0;
  let readsDoneAt = 0;
  while ((progress.done = await answered()) < BORROWERS) {
    // The reading jobs' own ticks, as the service runs them (their commits synced later, platform/wal-sync.ts).
    await monitoringReadsJob.tick(b.rt, never);
    await balanceProcessingJob.tick(b.rt, never);
    if (!readsDoneAt) readsDoneAt = performance.now();
    await dispatchPayments(b.rt, { concurrency: DISPATCH_CONCURRENCY });
    if (performance.now() > deadline) break;
  }
  const done = await answered();
  const wall = (performance.now() - t0) / 1000;
  const ideal = (BORROWERS * LATENCY_MS) / DISPATCH_CONCURRENCY / 1000;
  ctx.log(`collection ${num(wall)} s vs ideal ${num(ideal)} s (${done} of ${BORROWERS} answered)`);
  return { wall, ideal, done, readsMs: readsDoneAt - t0, durability: await durability(b.rt) };
}

/** The polling part: a backlog of sandbox changes read through one key, page after page. */
async function poll(ctx: BenchContext) {
  // A backlog of 50,000 changes at the sandbox (half of them DRS- references of enrolled borrowers).
  // The runtime's own sandbox processor (its tables in the runtime's database, either engine), with a
  // settlement period of 0 so that each payment's second change is due at once.
  const p = await benchRuntime({ SANDBOX_SETTLEMENT_MS: '0' });
  ctx.defer(() => p.close());
  const pc = { lender: p.lender, deps: p.rt };
  await createConnection({ ctx: pc, input: { body: { api_key: KEY, rail_scope: 'both', is_default: true } } });
  const enrolled = authorizers('poll', 1000).map((a) => ({ ...a, account_number: '0000000001', date_of_birth: { day: 1, month: 1, year: 1980 }, collectable_amount: 100, days_past_due: 1 }));
  await enroll({ ctx: pc, input: { body: { borrowers: enrolled } } });
  const sandbox = p.rt.processors.byName('sandbox');
  setSynchronous(p.rt, 'OFF'); // setup only
  const tb = performance.now();
  // On PostgreSQL each create is a transaction of its own on the pool: several at once fill the backlog sooner.
  const creators = onPostgres ? 8 : 1;
  let next = 0;
  await Promise.all(
    Array.from({ length: creators }, async () => {
      for (let i = next++; i < BACKLOG / 2; i = next++) {
        // Each ACH payment of cents 00 gives two changes: processing, then settled (settlement period 0).
        const reference = i % 2 === 0 ? `DRS-poll-${i % 1000}-${i}` : `INV-${i}`;
        await sandbox.createDebit(KEY, { paymentId: newId(), reference, amountCents: 1000, rail: 'ach', instrument: { kind: 'bank_account', routingNumber: '110000000', accountNumber: '1' }, borrower: { name: 'x' } });
      }
    }),
  );
  setSynchronous(p.rt, 'FULL');
  ctx.log(`backlog of ${num(BACKLOG, 0)} sandbox changes made in ${ms(performance.now() - tb, 0)}`);
  const tp = performance.now();
  let changes = 0;
  for (;;) {
    const r = await pollProcessors(p.rt);
    changes += r.changes;
    if (r.changes === 0) break;
  }
  const pollSeconds = (performance.now() - tp) / 1000;
  await p.close();
  return { changes, pollSeconds, rate: changes / pollSeconds };
}

export const collectionBench: Bench = {
  name: 'collection',
  title: 'Collection of 10,000 due borrowers (50 ms processor), and polling a 50,000-change backlog',
  // On PostgreSQL the 25,000 sandbox payments of the polling set-up are 25,000 transactions over the network.
  timeoutMs: onPostgres ? 360_000 : 240_000,
  async run(ctx) {
    // Polling first, so that its figure is had even when the collection cannot finish in the time left.
    const t0 = performance.now();
    const { changes, pollSeconds, rate } = await poll(ctx);
    // One pass of the jobs may take long on a slow machine: what was answered by the time left is reported then.
    const deadline = t0 + this.timeoutMs - 15_000;
    const progress: Progress = { done: 0, startedAt: 0 };
    const ideal = (BORROWERS * LATENCY_MS) / DISPATCH_CONCURRENCY / 1000;
    const cut = Bun.sleep(Math.max(0, deadline - performance.now())).then(() => ({
      wall: progress.startedAt ? (performance.now() - progress.startedAt) / 1000 : 0,
      ideal,
      done: progress.done,
      readsMs: 0,
      durability: onPostgres ? 'PostgreSQL' : 'synchronous=FULL',
    }));
    const { wall, done, readsMs, durability: dur } = await Promise.race([collect(ctx, deadline - 5_000, progress), cut]);
    const finished = done >= BORROWERS;
    return {
      metrics: [
        {
          label: `${num(BORROWERS)} due borrowers: reads, decisions and initiations, processor at ${LATENCY_MS} ms, concurrency ${DISPATCH_CONCURRENCY}`,
          value: finished ? `${num(wall)} s (reads and decisions ${ms(readsMs)})` : `not finished: ${num(done, 0)} of ${num(BORROWERS, 0)} answered in ${num(wall)} s, the time left`,
        },
        { label: `ideal ${num(BORROWERS)} × ${LATENCY_MS} ms / ${DISPATCH_CONCURRENCY}`, value: `${num(ideal)} s` },
        { label: 'wall / ideal', value: finished ? `${num(wall / ideal)}×` : `> ${num(wall / ideal)}×`, target: `≤ ${TARGET_RATIO}×`, pass: finished && wall / ideal <= TARGET_RATIO },
        { label: `polling a backlog of ${num(changes)} sandbox changes (pages of 500, one transaction each)`, value: `${num(rate, 0)} changes/s (${num(pollSeconds)} s)`, target: `≥ ${num(TARGET_RATE, 0)}/s`, pass: rate >= TARGET_RATE },
      ],
      notes: [
        `Collection runs the jobs as the service does (due check, balance pipeline with the decision in its transaction, dispatch), with ${dur}.`,
        'Polling is measured first, on a runtime of its own. ' +
          'Half of the polled references are DRS- references of 1000 enrolled borrowers (matched, recorded as events with ledger entries), half are not (ingested only).',
      ],
    };
  },
};
