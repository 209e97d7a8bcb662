// The benchmark suite: every benchmark in sequence, each on its own temp database, bounded in time, loopback
// only. Prints a report with each figure beside its target and writes it to .bench/report.md (on PostgreSQL,
// .bench/report-postgres.md). The report names the engine.
//
//   bun run bench                 all of them (about 4 to 5 minutes)
//   DATABASE_URL=postgres://… bun run bench [NAME ...]
//                                 the same on PostgreSQL: the URL names the server (a user that may create
//                                 databases); each benchmark's runtimes and servers get databases of their own
//   bun run bench export csv      only these, by name
//   bun run bench --list          the names
//   bun run bench --help          how to run them
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { Bench, BenchResult, Metric } from './common';
import { ensureBenchDir, profileFlags, ROOT, withTimeout } from './common';
import { engineDescription, ENGINE_NAME, onPostgres } from './engine';
import { startupBench } from './bench-startup';
import { syncBench } from './bench-sync';
import { acceptBench } from './bench-accept';
import { processingBench } from './bench-processing';
import { exportBench } from './bench-export';
import { csvBench } from './bench-csv';
import { webhooksBench } from './bench-webhooks';
import { schedulerBench } from './bench-scheduler';
import { enrollmentBench } from './bench-enrollment';
import { collectionBench } from './bench-collection';
import { uploadBench } from './bench-upload';
import { stallsBench } from './bench-stalls';
import { monitoringBench } from './bench-monitoring';
import { cadenceBench } from './bench-cadence';
import { linkedPlaidBench, linkedStripeBench } from './bench-linked';
import { budgetsPlaidBench, budgetsStripeBench } from './bench-budgets';
import { replicasBench } from './bench-replicas';
import { bodiesBench } from './bench-bodies';
import { fairBench } from './bench-fair';
import { readsBench } from './bench-reads';

export const BENCHES: Bench[] = [startupBench, syncBench, acceptBench, processingBench, exportBench, csvBench, webhooksBench, schedulerBench, enrollmentBench, collectionBench, uploadBench, stallsBench, monitoringBench, linkedPlaidBench, linkedStripeBench, budgetsPlaidBench, budgetsStripeBench, cadenceBench, replicasBench, bodiesBench, fairBench, readsBench];

interface Ran {
  bench: Bench;
  index: number;
  seconds: number;
  result: BenchResult | null;
  error: string | null;
  /** Why it was not run on this engine. */
  skipped?: string;
}

async function runOne(bench: Bench): Promise<Omit<Ran, 'bench' | 'index'>> {
  if (onPostgres && bench.notOnPostgres) return { seconds: 0, result: null, error: null, skipped: `not run on PostgreSQL: ${bench.notOnPostgres}` };
  if (!onPostgres && bench.notOnSqlite) return { seconds: 0, result: null, error: null, skipped: `not run on SQLite: ${bench.notOnSqlite}` };
  const deferred: (() => unknown)[] = [];
  const ctx = {
    log: (msg: string) => console.error(`  [${bench.name}] ${msg}`),
    defer: (fn: () => unknown) => void deferred.push(fn),
  };
  const t0 = performance.now();
  let result: BenchResult | null = null;
  let error: string | null = null;
  try {
    result = await withTimeout(bench.run(ctx), bench.timeoutMs, bench.name);
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  for (const fn of deferred.reverse()) {
    try {
      await fn();
    } catch (e) {
      console.error(`  [${bench.name}] clean-up failed: ${(e as Error).message}`);
    }
  }
  return { seconds: (performance.now() - t0) / 1000, result, error };
}

const cell = (s: string) => s.replace(/\|/g, '\\|');
const verdict = (m: Metric) => (m.pass === undefined ? '' : m.pass ? '**PASS**' : '**MISS**');

function report(ran: Ran[], totalSeconds: number, engine: string): string {
  const commit = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD'], { cwd: ROOT }).stdout.toString().trim() || 'unknown';
  const metrics = ran.flatMap((r) => r.result?.metrics ?? []);
  const passed = metrics.filter((m) => m.pass === true).length;
  const missed = metrics.filter((m) => m.pass === false).length;
  const errors = ran.filter((r) => r.error).length;
  const lines = [
    `# Benchmark report (${ENGINE_NAME})`,
    '',
    `Engine: ${engine}`,
    '',
    `${new Date().toISOString()} · commit ${commit} (plus uncommitted changes, if any) · Bun ${Bun.version} · ` +
      `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'} · ${process.platform}/${process.arch} · total ${totalSeconds.toFixed(0)} s`,
    '',
    `**${passed} PASS, ${missed} MISS${errors ? `, ${errors} ERROR` : ''}** (of ${passed + missed} figures with a target)`,
  ];
  for (const r of ran) {
    lines.push('', `## ${r.index}. ${r.bench.title} \`${r.bench.name}\` (${r.seconds.toFixed(1)} s)`, '');
    if (r.error) lines.push(`**ERROR**: ${r.error}`, '');
    if (r.skipped) lines.push(`**NOT RUN**: ${r.skipped}`, '');
    if (r.result && r.result.metrics.length > 0) {
      lines.push('| figure | value | target | |', '|---|---|---|---|');
      for (const m of r.result.metrics) lines.push(`| ${cell(m.label)} | ${cell(m.value)} | ${cell(m.target ?? '—')} | ${verdict(m)} |`);
    }
    for (const n of r.result?.notes ?? []) lines.push(`- ${n}`);
  }
  return lines.join('\n') + '\n';
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== '--cpu-prof');
  if (process.argv.includes('--cpu-prof') && process.env.BENCH_CPU_PROF !== '1') {
    // The runner again, profiled, and every server it spawns with it (common.ts profileFlags).
    const child = Bun.spawn([process.execPath, ...profileFlags('runner', true), 'run', import.meta.path, ...args], {
      env: { ...process.env, BENCH_CPU_PROF: '1' },
      stdio: ['inherit', 'inherit', 'inherit'],
    });
    const code = await child.exited;
    console.error(`CPU profiles (.cpuprofile for Chrome's DevTools, .md to read) in ${join(ensureBenchDir(), 'profiles')}`);
    return code;
  }
  if (args.includes('--help') || args.includes('-h')) {
    console.log(
      [
        'Usage: bun run bench [NAME ...]',
        '',
        '  bun run bench            every benchmark in sequence (several minutes), report in .bench/report.md',
        '  bun run bench NAME ...   only these (names: bun run bench --list)',
        '  bun run bench --list     the names and what each measures',
        '  bun run bench --cpu-prof NAME ...',
        '                           the same, with a CPU profile of the runner and of every server it starts',
        '                           (.bench/profiles: .cpuprofile for DevTools, .md to read)',
        '',
        'Everything runs on this machine over loopback. `accept` needs wrk (apt-get install wrk).',
        '',
        'On PostgreSQL: DATABASE_URL=postgres://user@host:port/db bun run bench [NAME ...]. The URL names the',
        'server (its user may create databases); every runtime and spawned server gets a database of its own,',
        'cloned from the migrated template (tests/helpers/pg.ts), dropped at the end. Report in .bench/report-postgres.md.',
      ].join('\n'),
    );
    return 0;
  }
  if (args.includes('--list') || args.includes('-l')) {
    for (const b of BENCHES) console.log(`${b.name.padEnd(12)} ${b.title}`);
    return 0;
  }
  const unknown = args.filter((a) => !BENCHES.some((b) => b.name === a));
  if (unknown.length > 0) {
    console.error(`unknown benchmark ${unknown.join(', ')}; one of: ${BENCHES.map((b) => b.name).join(', ')}`);
    return 2;
  }
  const selected = BENCHES.map((bench, i) => ({ bench, index: i + 1 })).filter(({ bench }) => args.length === 0 || args.includes(bench.name));

  // A benchmark abandoned at its time limit may still have work in flight; what it throws later is not ours to die on.
  process.on('unhandledRejection', (e) => console.error(`  (late error, ignored: ${(e as Error)?.message ?? e})`));

  const engine = engineDescription();
  console.error(`engine: ${engine}`);
  const t0 = performance.now();
  const ran: Ran[] = [];
  for (const { bench, index } of selected) {
    console.error(`▶ ${index}. ${bench.title} (${bench.name}), at most ${Math.round(bench.timeoutMs / 1000)} s`);
    const r = await runOne(bench);
    console.error(`  ${r.error ? `✗ ${r.error}` : r.skipped ? `– ${r.skipped}` : '✓'} ${r.seconds.toFixed(1)} s`);
    ran.push({ bench, index, ...r });
  }
  const text = report(ran, (performance.now() - t0) / 1000, engine);
  const out = join(ensureBenchDir(), onPostgres ? 'report-postgres.md' : 'report.md');
  writeFileSync(out, text);
  console.log(text);
  console.error(`report written to ${out}`);
  return ran.some((r) => r.error) ? 1 : 0;
}

if (import.meta.main) process.exit(await main());
