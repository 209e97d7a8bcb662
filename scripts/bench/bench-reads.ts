// 22. Monitored borrowers' reads, end to end, with every job running: a real server (server.ts, its own
// process, BENCH_JOBS=all) holds N borrowers enrolled through the API, each with a balance below what is owed
// (sandbox bank data, no debit). Their next reads are set due from beside it, a thousand a write; the jobs then queue
// them, read them from the sandbox, record each result, decide (no debit: the balance is short) and set the
// next read. Measured: borrowers processed a second (results recorded in balance_results), and the longest
// time between two GET /healthz answers (asked every 10 ms from a third process) meanwhile, beside the same
// server idle.
//
//   bun run bench reads                         20,000 borrowers
//   BENCH_READS_BORROWERS=100000 bun run bench reads
//   bun run bench --cpu-prof reads              with the server's CPU profile in .bench/profiles
import { rmSync } from 'node:fs';
import type { Bench, BenchContext } from './common';
import { enrollThroughApi, ms, num, startBenchServer, tempDir, waitFor } from './common';
import { onPostgres, sideConnection } from './engine';
import { probeDuring } from './bench-monitoring';

const BORROWERS = Number(process.env.BENCH_READS_BORROWERS ?? 20_000);
const OWED_CENTS = 42_500;
/** Targets: an idle service's gap + 35 ms, at most 50 ms; borrowers a second per engine. */
const TARGET_GAP_MS = 50;
const TARGET_RATE = onPostgres ? 3_000 : 10_000;

/** The i-th borrower's account: its last 7 digits are the sandbox balance, always below what is owed. */
const shortAccount = (i: number) => `${1 + (i % 9)}${String(Math.floor(i / 40_000)).padStart(3, '0')}${String(i % 40_000).padStart(7, '0')}`;

export async function runReads(ctx: Pick<BenchContext, 'log'>) {
  const dir = tempDir('reads');
  const server = await startBenchServer(dir, { BENCH_JOBS: 'all', LOG_LEVEL: 'warn' }, { maxMs: 1_500_000 });
  const db = sideConnection(server);
  try {
    const results = () => db.count('SELECT COUNT(*) AS n FROM balance_results');
    const t = performance.now();
    await enrollThroughApi(server, 'rd', BORROWERS, (i) => ({ account_number: shortAccount(i), collectable_amount: OWED_CENTS }));
    await waitFor(async () => (await results()) >= BORROWERS, 900_000, 'the first reads recorded', 50);
    ctx.log(`${num(BORROWERS, 0)} borrowers enrolled and their first reads recorded in ${ms(performance.now() - t, 0)}`);
    const payments = await db.count('SELECT COUNT(*) AS n FROM payments');
    if (payments > 0) throw new Error(`${payments} payments were made: the bench borrowers' balances must be short of what they owe`);

    const idle = await probeDuring(server, () => Bun.sleep(3_000));
    // While the reads run, the bench asks for the newest result's id (one index probe) and counts the results
    // after the phase's first id only once it is far enough: a COUNT(*) of the whole table every 20 ms took a
    // core's sixth on PostgreSQL from the machine the service runs on. Ids are not dense (a transaction undone
    // burns its own), so the count decides.
    const idBefore = await db.count('SELECT COALESCE(MAX(id), 0) AS n FROM balance_results');
    const recordedSince = async () =>
      (await db.count('SELECT COALESCE(MAX(id), 0) AS n FROM balance_results')) - idBefore >= BORROWERS &&
      (await db.count('SELECT COUNT(*) AS n FROM balance_results WHERE id > ?', idBefore)) >= BORROWERS;
    const lag = () => fetch(`${server.url}/bench/lag`).then((r) => r.json() as Promise<{ max: number; p99: number }>);
    await lag();
    const run = await probeDuring(server, async () => {
      const start = performance.now();
      // When the first new result is in: from there to the last is the rate the service processes them at (what
      // balance_reads_total counts). Before it, the reads wait for the due check's next tick (once a second)
      // and for this bench to set them all due.
      const first = waitFor(async () => (await db.count('SELECT COALESCE(MAX(id), 0) AS n FROM balance_results')) > idBefore, 900_000, 'the first due read recorded', 10).then(
        () => performance.now(),
      );
      // A thousand rows a write: one write of every row would hold the file's write lock from beside the
      // service for as long, and the service's own writes wait on it (that is the bench, not the service).
      const ids = (await db.all<{ id: string }>("SELECT id FROM enrollments WHERE state = 'monitored' ORDER BY id")).map((r) => r.id);
      for (let i = 0; i < ids.length; i += 1000) {
        await db.run(`UPDATE enrollments SET next_read_at = ? WHERE id IN (${ids.slice(i, i + 1000).map(() => '?').join(', ')})`, Date.now() - 1, ...ids.slice(i, i + 1000));
      }
      const setDue = performance.now() - start;
      await waitFor(recordedSince, 900_000, 'every due read recorded', 20);
      const last = performance.now();
      return { setDue, firstAfter: (await first) - start, processing: last - (await first) };
    });
    const loop = await lag();
    const rate = BORROWERS / (run.ms / 1000);
    const processingRate = BORROWERS / (run.result.processing / 1000);
    ctx.log(`the server's event loop meanwhile: a 5 ms timer late by ${ms(loop.max, 0)} at most (p99 ${ms(loop.p99, 0)})`);
    ctx.log(
      `${num(BORROWERS, 0)} due reads recorded in ${ms(run.ms, 0)} (${num(rate, 0)}/s) from the first write that set them due (all set due in ${ms(run.result.setDue, 0)}); ` +
        `the first recorded ${ms(run.result.firstAfter, 0)} after it, the last ${ms(run.result.processing, 0)} after the first (${num(processingRate, 0)}/s); ` +
        `longest /healthz gap ${ms(run.gap, 0)} (idle ${ms(idle.gap, 0)})`,
    );
    return { idleGap: idle.gap, gap: run.gap, ms: run.ms, rate, processing: run.result.processing, processingRate, firstAfter: run.result.firstAfter };
  } finally {
    await db.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const readsBench: Bench = {
  name: 'reads',
  title: `${num(BORROWERS, 0)} monitored borrowers' due reads with every job running: borrowers a second, and the longest /healthz gap`,
  timeoutMs: 1_800_000,
  async run(ctx) {
    const r = await runReads(ctx);
    const gapTarget = Math.min(TARGET_GAP_MS, r.idleGap + 35);
    return {
      metrics: [
        {
          label: `due reads processed (queued, read, recorded, decided, next read set), from the first result to the last`,
          value: `${num(r.processingRate, 0)}/s (${ms(r.processing, 0)} for ${num(BORROWERS, 0)})`,
          target: `≥ ${num(TARGET_RATE, 0)}/s`,
          pass: r.processingRate >= TARGET_RATE,
        },
        {
          label: 'the same from the first write that set them due (the due check runs once a second)',
          value: `${num(r.rate, 0)}/s (${ms(r.ms, 0)}; the first result ${ms(r.firstAfter, 0)} after that write)`,
        },
        { label: 'longest /healthz gap while they run', value: `${ms(r.gap, 0)} (idle ${ms(r.idleGap, 0)})`, target: `≤ ${ms(gapTarget, 0)}`, pass: r.gap <= gapTarget },
      ],
      notes: [
        `Borrowers enrolled through the API (1000 a request), each with a sandbox balance below the ${OWED_CENTS} cents owed, on a server running every job; once their first reads are recorded, every next read is set due from another connection (a thousand rows a write). The rate is the borrowers over the time from the first new result in balance_results to the last (the rate balance_reads_total counts); the second figure counts from the first write that set them due, so it adds the wait for the due check's next tick (it runs once a second) and the bench's own writes. GET /healthz every 10 ms from its own process. BENCH_READS_BORROWERS sets the count.`,
      ],
    };
  },
};

if (import.meta.main) await runReads({ log: (m) => console.error(m) });
