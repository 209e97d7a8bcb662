// Shared pieces of the benchmarks: temp runtimes, generated authorizers, statistics, child processes, wrk,
// and the result shape the report is built from.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { createRuntime, type Runtime } from '../../src/runtime';
import type { Clock } from '../../src/platform/clock';
import type { AuthedLender } from '../../src/http/auth';
import { createLender } from '../../src/modules/lenders/service';
import { serviceEnv } from './startup';
import { countRows, freshBenchDatabase, onPostgres, queryRows, vaultKeyIn, type BenchDatabase } from './engine';

export const ROOT = join(import.meta.dir, '../..');
export const BENCH_OUT = join(ROOT, '.bench');

// ---------------------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------------------

export interface Metric {
  label: string;
  value: string;
  /** Shown next to the value; absent for figures that are reported without a target. */
  target?: string;
  pass?: boolean;
}

export interface BenchResult {
  metrics: Metric[];
  notes: string[];
}

export interface Bench {
  name: string;
  title: string;
  /** Hard bound of the whole benchmark (setup included); the runner abandons it after this. */
  timeoutMs: number;
  /** Why this benchmark has no meaning on PostgreSQL, when it has none: the runner then says so instead of running it. */
  notOnPostgres?: string;
  /** Why this benchmark has no meaning on SQLite, when it needs PostgreSQL: the runner then says so instead of running it. */
  notOnSqlite?: string;
  run(ctx: BenchContext): Promise<BenchResult>;
}

export interface BenchContext {
  /** Progress lines (stderr), not part of the report. */
  log(msg: string): void;
  /** Registered clean-ups run when the benchmark ends, also on failure or timeout. */
  defer(fn: () => unknown): void;
}

// ---------------------------------------------------------------------------------------------------------
// Statistics and formatting
// ---------------------------------------------------------------------------------------------------------

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!;
}

export const median = (xs: number[]): number => percentile(xs, 50);
export const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Fixed decimals picked by magnitude: 12345, 123.4, 1.23, 0.123. */
export function num(n: number, digits?: number): string {
  if (!Number.isFinite(n)) return String(n);
  const d = digits ?? (Math.abs(n) >= 1000 ? 0 : Math.abs(n) >= 100 ? 1 : Math.abs(n) >= 1 ? 2 : 3);
  return n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

export const ms = (n: number, digits?: number): string => `${num(n, digits)} ms`;
export const mb = (bytes: number): string => `${num(bytes / (1024 * 1024), 1)} MB`;

// ---------------------------------------------------------------------------------------------------------
// Runtime on a temp database
// ---------------------------------------------------------------------------------------------------------

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `drs-bench-${prefix}-`));
}

export const nullLog = { write(_msg: string) {} };

export interface BenchRuntime {
  dir: string;
  rt: Runtime;
  lender: AuthedLender;
  apiKey: string;
  /** The runtime's own PostgreSQL database (null on SQLite). */
  database: BenchDatabase | null;
  close(): Promise<void>;
}

/**
 * A runtime exactly as the service builds it, on a fresh database: a file in a temp folder on SQLite, a
 * database cloned from the migrated template on PostgreSQL (DATABASE_URL names the server; engine.ts).
 */
export async function benchRuntime(env: Record<string, string> = {}, opts: { clock?: Clock; dir?: string } = {}): Promise<BenchRuntime> {
  const dir = opts.dir ?? tempDir('rt');
  const database = onPostgres ? freshBenchDatabase() : null;
  const config = loadConfig({
    DATABASE_PATH: join(dir, 'service.sqlite'),
    // On PostgreSQL the service runs with VAULT_KEY (it refuses to start without): the one in the key file.
    ...(database ? { DATABASE_URL: database.url, VAULT_KEY: vaultKeyIn(join(dir, 'vault.key')) } : {}),
    VAULT_KEY_FILE: join(dir, 'vault.key'),
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_BURST: '10000000',
    // The benchmarks queue far more than a lender may wait on; the bound itself is tested, not measured.
    MAX_PENDING_AUTHORIZERS_PER_LENDER: '100000000',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    ...env,
  });
  // Logs are written as in production (info, every hook), into a sink that drops them.
  const rt = createRuntime(config, { clock: opts.clock, logDestination: nullLog, defaultMetrics: false });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    try {
      rt.handle.close();
      await rt.pg?.close();
    } catch {
      /* already closed */
    }
    database?.drop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { lender, apiKey } = await createLender(rt, 'bench', rt.clock.now());
    const [key] = await queryRows<{ id: string }>(rt, 'SELECT id FROM api_keys WHERE lender_id = ?', lender.id);
    return { dir, rt, lender: { ...lender, keyId: key!.id }, apiKey, database, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Setup only, on SQLite: skips fsync while filling a database; put back to FULL (the service's setting) before
 * measuring. On PostgreSQL nothing: synchronous_commit stays as the server has it.
 */
export function setSynchronous(rt: Runtime, mode: 'OFF' | 'NORMAL' | 'FULL'): void {
  if (rt.pg) return;
  rt.sqlite.exec(`PRAGMA synchronous = ${mode}`);
}

/** Batches not yet completed, on either engine. */
export const openBatches = (rt: Runtime): Promise<number> => countRows(rt, "SELECT COUNT(*) AS n FROM batches WHERE status != 'completed'");

/** How the runtime's commits are made durable, for the notes: SQLite's synchronous=FULL or the server's setting. */
export async function durability(rt: Runtime): Promise<string> {
  if (!rt.pg) return 'synchronous=FULL';
  const [row] = await rt.pg.sql`SELECT current_setting('synchronous_commit') AS sc, current_setting('fsync') AS fs`;
  return `PostgreSQL, synchronous_commit=${row.sc}, fsync=${row.fs}`;
}

// ---------------------------------------------------------------------------------------------------------
// Generated authorizers (sandbox values: routing 110000000 is Sandbox Bank, last 7 digits = balance cents)
// ---------------------------------------------------------------------------------------------------------

export const SANDBOX_BANK = '110000000';

const FIRST = 'Ada Grace Alan Katherine Edsger Barbara Donald Frances John Margaret Dennis Radia Ken Shafi Leslie Hedy Tim Sophie Linus Anita Niklaus Adele Bjarne Evelyn Guido Jean Yukihiro Mary Brian Carol Rob Annie Whitfield Joan Vint Lynn Ivan Karen Robin Cynthia James Ellen Peter Dorothy Butler Ida Claude Rosalind Marvin Jennifer'.split(' ');
const LAST = 'Lovelace Hopper Turing Johnson Dijkstra Liskov Knuth Allen Backus Hamilton Ritchie Perlman Thompson Goldwasser Lamport Lamarr Berners-Lee Wilson Torvalds Borg Wirth Goldberg Stroustrup Boyd Rossum Sammet Matsumoto Keller Kernighan Shaw Pike Easley Diffie Clarke Cerf Conway Sutherland Jones Milner Dwork Gosling Spertus Norvig Vaughan Lampson Rhodes Shannon Franklin Minsky Widom Garcia Nguyen Patel Kim Okafor Rossi Schmidt Cohen Silva Novak'.split(' ');
const STREETS = ['Main St', 'Oak Ave', 'Maple Dr', 'Cedar Ln', 'Elm St', 'Park Blvd', 'Lake Rd', 'Hill St'];

/** Pseudo-random digits for the i-th borrower, the same on every run (mulberry32 seeded by borrower and field). */
function spread(i: number, salt: number, digits: number): string {
  let t = (Math.imul(i + 1, 0x9e3779b1) ^ Math.imul(salt, 0x85ebca6b)) >>> 0;
  let out = '';
  while (out.length < digits) {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    out += String(((r ^ (r >>> 14)) >>> 0) % 10_000).padStart(4, '0');
  }
  return out.slice(0, digits);
}

export function authorizer(id: string, i: number, opts: { metadata?: boolean; varied?: boolean } = {}) {
  // `varied`: names, tax ids, phones and addresses that differ from one borrower to the next, as a lender's
  // do (a payload of one repeated borrower compresses far better than a real one).
  const v = opts.varied;
  return {
    authorizer_unique_id: id,
    first_name: v ? FIRST[Number(spread(i, 8, 4)) % FIRST.length]! : 'Ada',
    last_name: v ? LAST[Number(spread(i, 9, 4)) % LAST.length]! : 'Lovelace',
    phone_number: v ? `${2 + (i % 8)}${spread(i, 1, 2)}555${spread(i, 2, 4)}` : '2025550143',
    ssn: v ? `${1 + (i % 8)}${spread(i, 3, 2)}-${spread(i, 4, 2)}-${spread(i, 5, 4)}` : '123-45-6789',
    account_number: v ? `${1 + (i % 9)}${spread(i, 7, 9 + (i % 4))}` : String(1_000_000_000 + ((i * 7919) % 9_000_000)),
    routing_number: SANDBOX_BANK,
    address: v ? { street_address_line1: `${Number(spread(i, 10, 4)) + 1} ${STREETS[Number(spread(i, 11, 2)) % STREETS.length]}`, zip_code: spread(i, 6, 5) } : { zip_code: '02139' },
    ...(opts.metadata ? { metadata: { branch: i % 2 ? 'north' : 'south', loan_amount: 100 + (i % 900), vip: i % 7 === 0 } } : {}),
  };
}

export function authorizers(prefix: string, n: number, opts: { metadata?: boolean; varied?: boolean } = {}) {
  return Array.from({ length: n }, (_, i) => authorizer(`${prefix}-${i}`, i, opts));
}

// ---------------------------------------------------------------------------------------------------------
// Time bounds and child processes
// ---------------------------------------------------------------------------------------------------------

export async function withTimeout<T>(p: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` until it returns true; throws after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 10): Promise<void> {
  const t0 = performance.now();
  while (!(await check())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not reached within ${Math.round(timeoutMs / 1000)} s`);
    await Bun.sleep(everyMs);
  }
}

/**
 * `n` borrowers enrolled through the server's API, 1000 a request (prefix-i identifiers, varied borrowers,
 * each with what `over(i)` sets); throws unless every one is enrolled.
 */
export async function enrollThroughApi(server: Pick<BenchServer, 'url' | 'apiKey'>, prefix: string, n: number, over: (i: number) => Record<string, unknown> = () => ({})): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const borrowers = authorizers(`${prefix}-${i}`, Math.min(1000, n - i), { varied: true }).map((a, j) => ({
      ...a,
      date_of_birth: { day: 10, month: 12, year: 1985 },
      phone_number: '2025550143',
      collectable_amount: 42500,
      days_past_due: 35,
      ...over(i + j),
    }));
    const res = await fetch(`${server.url}/v1/payment_enrollments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ borrowers }),
    });
    const body = (await res.json()) as { results?: { outcome: string }[] };
    if (res.status !== 207 || body.results?.some((r) => r.outcome !== 'enrolled')) throw new Error(`enrolling the bench borrowers answered ${res.status}`);
  }
}

export interface BenchServer {
  /** The server's folder: its vault key, and its SQLite file on SQLite. */
  dir: string;
  /** Its PostgreSQL database (null on SQLite). */
  databaseUrl: string | null;
  port: number;
  apiKey: string;
  url: string;
  proc: Bun.Subprocess<'pipe', 'pipe', 'pipe'>;
  stop(): Promise<void>;
}

/**
 * Starts scripts/bench/server.ts (the real app, listening on 127.0.0.1) in its own process on a fresh
 * database: in `dir` on SQLite, a database of its own on PostgreSQL (dropped when it stops). It exits when
 * its stdin closes, when it gets SIGTERM, or after maxMs.
 */
export async function startBenchServer(dir: string, env: Record<string, string>, opts: { maxMs?: number } = {}): Promise<BenchServer> {
  const database = onPostgres ? freshBenchDatabase() : null;
  const proc = Bun.spawn([process.execPath, ...profileFlags('server'), 'run', join(import.meta.dir, 'server.ts')], {
    cwd: ROOT,
    env: serviceEnv(dir, {
      ...(database ? { DATABASE_URL: database.url } : {}),
      PORT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_BURST: '10000000',
      MAX_PENDING_AUTHORIZERS_PER_LENDER: '100000000',
      BENCH_MAX_MS: String(opts.maxMs ?? 180_000),
      ...env,
    }),
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let dropped = false;
  const stop = async () => {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await proc.exited;
      clearTimeout(killer);
    }
    if (database && !dropped) {
      dropped = true;
      database.drop();
    }
  };
  try {
    const line = await withTimeout(firstLine(proc.stdout), 20_000, 'bench server start');
    const info = JSON.parse(line) as { port: number; apiKey: string };
    return { ...info, dir, databaseUrl: database?.url ?? null, url: `http://127.0.0.1:${info.port}`, proc, stop };
  } catch (e) {
    await stop();
    const err = await new Response(proc.stderr).text().catch(() => '');
    throw new Error(`${(e as Error).message}${err ? `: ${err.trim().slice(0, 500)}` : ''}`);
  }
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('bench server exited before it was ready');
    buf += decoder.decode(value, { stream: true });
    const nl = buf.indexOf('\n');
    if (nl >= 0) {
      reader.releaseLock();
      return buf.slice(0, nl);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// wrk
// ---------------------------------------------------------------------------------------------------------

export interface WrkResult {
  requests: number;
  rps: number;
  p50: number;
  p75: number;
  p90: number;
  p99: number;
  non2xx: number;
  socketErrors: number;
  raw: string;
}

/** Duration in ms from wrk's "1.23ms" / "456.78us" / "1.02s" / "2.00m". */
function wrkTime(s: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(s.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

export async function runWrk(args: { url: string; script?: string; threads: number; connections: number; seconds: number; headers?: Record<string, string> }): Promise<WrkResult> {
  if (!Bun.which('wrk')) throw new Error('this benchmark needs wrk, the HTTP load generator: apt-get install wrk');
  const cmd = ['wrk', `-t${args.threads}`, `-c${args.connections}`, `-d${args.seconds}s`, '--latency', '--timeout', '10s'];
  for (const [k, v] of Object.entries(args.headers ?? {})) cmd.push('-H', `${k}: ${v}`);
  if (args.script) cmd.push('-s', args.script);
  cmd.push(args.url);
  const proc = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const killer = setTimeout(() => proc.kill('SIGKILL'), (args.seconds + 20) * 1000);
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  clearTimeout(killer);
  if (proc.exitCode !== 0) throw new Error(`wrk failed (${proc.exitCode}): ${err.trim() || out.trim()}`);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm').exec(out);
    return m ? wrkTime(m[1]!) : NaN;
  };
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const se = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = se ? se.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  return { requests, rps, p50: pct('50'), p75: pct('75'), p90: pct('90'), p99: pct('99'), non2xx, socketErrors, raw: out };
}

/**
 * `bun run bench --cpu-prof …`: the runner and every server it spawns write a CPU profile (Chrome's format and
 * a Markdown summary) to .bench/profiles when they exit. Empty when not profiling.
 */
export const PROFILING = process.env.BENCH_CPU_PROF === '1';
export function profileFlags(name: string, always = false): string[] {
  if (!PROFILING && !always) return [];
  const dir = join(BENCH_OUT, 'profiles');
  mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`];
}

export function ensureBenchDir(): string {
  mkdirSync(BENCH_OUT, { recursive: true });
  return BENCH_OUT;
}
