// Startup time: from spawning `bun run src/index.ts` to the first 200 from /healthz.
//
//   bun run scripts/bench/startup.ts [runs]        prints the medians for a fresh and an existing database
//
// `measureStartup` is exported for the main bench (scripts/bench/index.ts). With DATABASE_URL=postgres://…
// (the server) every start gets a PostgreSQL database: an empty one for a fresh start (the start applies the
// migrations), one kept from a first start for the existing case.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyBenchDatabase, onPostgres, vaultKeyIn, type BenchDatabase } from './engine';

const ROOT = join(import.meta.dir, '../..');
const POLL_MS = 5;

export interface StartupOptions {
  /** Number of starts; the median is reported. Default 5. */
  runs?: number;
  /**
   * `fresh`: every start on an empty folder (creates the vault key, migrates, creates the default lender).
   * `existing`: every start on a database a previous start created (the usual restart). Default `fresh`.
   */
  database?: 'fresh' | 'existing';
  /** Give up on one start after this long. Default 15 s. */
  timeoutMs?: number;
  /** Extra environment for the service. */
  env?: Record<string, string>;
}

export interface StartupResult {
  database: 'fresh' | 'existing';
  runsMs: number[];
  medianMs: number;
  minMs: number;
  maxMs: number;
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/**
 * Environment of a benchmarked service process: its own database and vault key in `dir`, loopback only,
 * and none of the caller's settings that would change what is measured. The caller's DATABASE_URL (on
 * PostgreSQL, the server the benchmarks make their databases on) is never passed on: a service on PostgreSQL
 * is given the URL of its own database in `extra`.
 */
export function serviceEnv(dir: string, extra: Record<string, string>): Record<string, string | undefined> {
  // On PostgreSQL the service refuses to start without VAULT_KEY: the one kept in the folder's key file.
  const pgKey = extra.DATABASE_URL && extra.VAULT_KEY === undefined ? { VAULT_KEY: vaultKeyIn(join(dir, 'vault.key')) } : {};
  return {
    ...process.env,
    BOOTSTRAP_API_KEY: '',
    VAULT_KEY: '',
    TLS_CERT_FILE: '',
    TLS_KEY_FILE: '',
    PUBLIC_BASE_URL: '',
    HOST: '127.0.0.1',
    DATABASE_PATH: join(dir, 'service.sqlite'),
    DATABASE_URL: '',
    VAULT_KEY_FILE: join(dir, 'vault.key'),
    ...pgKey,
    ...extra,
  };
}

/** Starts the service once in `dir`, returns milliseconds to the first /healthz 200, then stops it with SIGTERM. */
async function startOnce(dir: string, timeoutMs: number, extraEnv: Record<string, string>): Promise<number> {
  const port = freePort();
  const t0 = performance.now();
  const proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
    cwd: ROOT,
    env: serviceEnv(dir, { PORT: String(port), LOG_LEVEL: 'warn', ...extraEnv }),
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  });
  try {
    const url = `http://127.0.0.1:${port}/healthz`;
    for (;;) {
      if (proc.exitCode !== null) {
        const err = await new Response(proc.stderr).text();
        throw new Error(`service exited with ${proc.exitCode} before answering /healthz: ${err.trim()}`);
      }
      if (performance.now() - t0 > timeoutMs) throw new Error(`no /healthz 200 within ${timeoutMs} ms`);
      try {
        const res = await fetch(url);
        if (res.status === 200) return performance.now() - t0;
      } catch {
        /* not listening yet */
      }
      await Bun.sleep(POLL_MS);
    }
  } finally {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await proc.exited;
      clearTimeout(killer);
    }
  }
}

export async function measureStartup(opts: StartupOptions = {}): Promise<StartupResult> {
  const runs = opts.runs ?? 5;
  const database = opts.database ?? 'fresh';
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const env = opts.env ?? {};
  const dirs: string[] = [];
  const databases: BenchDatabase[] = [];
  // A folder (vault key, SQLite file) and, on PostgreSQL, an empty database: what a first start finds.
  const newPlace = () => {
    const dir = mkdtempSync(join(tmpdir(), 'drs-bench-startup-'));
    dirs.push(dir);
    const db = onPostgres ? emptyBenchDatabase() : null;
    if (db) databases.push(db);
    return { dir, env: db ? { ...env, DATABASE_URL: db.url } : env };
  };
  try {
    const runsMs: number[] = [];
    const shared = database === 'existing' ? newPlace() : null;
    // The existing-database case needs a database first; that start is not counted.
    if (shared) await startOnce(shared.dir, timeoutMs, shared.env);
    for (let i = 0; i < runs; i++) {
      const place = shared ?? newPlace();
      runsMs.push(await startOnce(place.dir, timeoutMs, place.env));
    }
    return {
      database,
      runsMs: runsMs.map((ms) => Math.round(ms * 10) / 10),
      medianMs: Math.round(median(runsMs) * 10) / 10,
      minMs: Math.round(Math.min(...runsMs) * 10) / 10,
      maxMs: Math.round(Math.max(...runsMs) * 10) / 10,
    };
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    for (const db of databases) db.drop();
  }
}

export const formatStartup = (r: StartupResult): string =>
  `startup to first /healthz 200 (${r.database} database): median ${r.medianMs} ms over ${r.runsMs.length} runs ` +
  `[min ${r.minMs}, max ${r.maxMs}; ${r.runsMs.join(', ')}]`;

if (import.meta.main) {
  const runs = Number(process.argv[2] ?? 5);
  if (!Number.isInteger(runs) || runs < 1) {
    console.error('usage: bun run scripts/bench/startup.ts [runs]');
    process.exit(2);
  }
  for (const database of ['fresh', 'existing'] as const) {
    console.log(formatStartup(await measureStartup({ runs, database })));
  }
}
