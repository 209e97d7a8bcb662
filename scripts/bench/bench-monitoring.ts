// 13. 50,000 monitored borrowers due at once: a real server (server.ts, its own process, with the monitoring
// due-read job) holds 50,000 borrowers enrolled through the API; their next reads are then all set due in one
// write from beside it, while a third process (probe.ts) asks GET /healthz every 10 ms. Measured: the time
// until every read is queued (none due any more), and the longest time between two /healthz answers meanwhile,
// beside the longest gap of the same server idle for as long.
//
//   bun run bench monitoring
//
// On PostgreSQL the server has a database of its own and the one write from beside it is made on a connection
// of its own to that database.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Bench, BenchContext } from './common';
import { enrollThroughApi, ms, num, startBenchServer, tempDir, waitFor, withTimeout, type BenchServer } from './common';
import { sideConnection } from './engine';

const BORROWERS = 50_000;
const PROBE_PAUSE_MS = 10;
const TARGET_GAP_MS = 100;

/** The longest time between two /healthz answers of `probe` samples that end within [t0, t1]. */
export function longestGap(samples: number[], t0: number, t1: number): number {
  const ends: number[] = [];
  for (let i = 0; i < samples.length; i += 2) ends.push(samples[i]! + samples[i + 1]!);
  ends.sort((a, b) => a - b);
  let gap = 0;
  for (let i = 1; i < ends.length; i++) if (ends[i]! >= t0 && ends[i - 1]! <= t1) gap = Math.max(gap, ends[i]! - ends[i - 1]!);
  return gap;
}

export async function probeDuring<T>(server: BenchServer, work: () => Promise<T>): Promise<{ result: T; gap: number; ms: number }> {
  const probe = Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'probe.ts'), `${server.url}/healthz`, '1', String(PROBE_PAUSE_MS), '300000'], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'ignore',
  });
  try {
    await Bun.sleep(500);
    const t0 = Date.now();
    const result = await work();
    const t1 = Date.now();
    await Bun.sleep(300);
    probe.stdin.write('stop\n');
    await probe.stdin.end();
    const out = await withTimeout(new Response(probe.stdout).text(), 30_000, 'probe stop');
    const { samples } = JSON.parse(out) as { samples: number[] };
    return { result, gap: longestGap(samples, t0, t1), ms: t1 - t0 };
  } finally {
    probe.kill('SIGKILL');
  }
}

export async function runMonitoring(ctx: Pick<BenchContext, 'log'>) {
  const dir = tempDir('monitoring');
  const server = await startBenchServer(dir, { BENCH_JOBS: 'monitoring', LOG_LEVEL: 'warn' }, { maxMs: 600_000 });
  const db = sideConnection(server);
  try {
    const due = () => db.count("SELECT COUNT(*) AS n FROM enrollments WHERE state = 'monitored' AND next_read_at <= ?", Date.now());
    const t = performance.now();
    await enrollThroughApi(server, 'mon', BORROWERS);
    await waitFor(async () => (await due()) === 0, 120_000, 'the first reads queued');
    ctx.log(`${num(BORROWERS, 0)} borrowers enrolled and their first reads queued in ${ms(performance.now() - t, 0)}`);

    // The same server, idle, for a baseline.
    const idle = await probeDuring(server, () => Bun.sleep(3_000));
    // Every borrower due at once, and the job left to queue them.
    const queued = await probeDuring(server, async () => {
      await db.run("UPDATE enrollments SET next_read_at = ? WHERE state = 'monitored'", Date.now() - 1);
      await waitFor(async () => (await due()) === 0, 300_000, 'every read queued', 5);
    });
    const [row] = await db.all<{ n: number | string; biggest: number | null }>("SELECT COUNT(*) AS n, MAX(total_authorizers) AS biggest FROM batches WHERE source = 'monitoring'");
    const batches = { n: Number(row?.n ?? 0), biggest: row?.biggest ?? 0 };
    ctx.log(`queued in ${ms(queued.ms, 0)}; longest /healthz gap ${ms(queued.gap, 0)} (idle ${ms(idle.gap, 0)}); ${num(batches.n, 0)} monitoring batches, the largest ${batches.biggest}`);
    return { idleGap: idle.gap, gap: queued.gap, queueMs: queued.ms };
  } finally {
    await db.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const monitoringBench: Bench = {
  name: 'monitoring',
  title: `${num(BORROWERS, 0)} monitored borrowers due at once: time to queue every read, and the longest /healthz gap meanwhile`,
  timeoutMs: 900_000,
  async run(ctx) {
    const r = await runMonitoring(ctx);
    return {
      metrics: [
        { label: `time to queue ${num(BORROWERS, 0)} due reads (monitoring job, slices of 200)`, value: ms(r.queueMs, 0) },
        {
          label: 'longest /healthz gap while they are queued',
          value: `${ms(r.gap, 0)} (idle ${ms(r.idleGap, 0)})`,
          target: `< ${TARGET_GAP_MS} ms`,
          pass: r.gap < TARGET_GAP_MS,
        },
      ],
      notes: [
        `Borrowers enrolled through the API (1000 a request) on a server running only the monitoring due-read job; then every next read set due in one write from another connection. GET /healthz every ${PROBE_PAUSE_MS} ms from its own process; the gap is the longest time between two of its answers. The idle figure is the same server with nothing due, for as long.`,
      ],
    };
  },
};

if (import.meta.main) await runMonitoring({ log: (m) => console.error(m) });
