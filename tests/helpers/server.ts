import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { Database } from 'bun:sqlite';
import { freshPgDatabase, onPostgres, PsqlDatabase, vaultKeyIn } from './pg';

// The real service as a child process on its own SQLite file (or, when the suite runs on PostgreSQL, its own
// database cloned from the migrated template), for crash and restart tests. On PostgreSQL a harness starts as
// many processes on its one database as a test asks (replicas, each on its own port with its own REPLICA_ID),
// all with one fixed VAULT_KEY, so each reads what another sealed; on SQLite a second process at once is
// refused by the file lock, as in production.

export const ROOT = join(import.meta.dir, '../..');
export const TEST_API_KEY = 'drs_live_' + 'R3startT3stK3y0000000000000000Ab';

export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** The vault key every process of a PostgreSQL harness shares (32 bytes, base64). */
export const TEST_VAULT_KEY = Buffer.alloc(32, 0x5a).toString('base64');

export interface ServiceProcess {
  proc: Subprocess;
  url: string;
  /** Its REPLICA_ID, when the test named it. */
  replicaId: string | undefined;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  kill(signal?: 'SIGKILL' | 'SIGTERM'): Promise<void>;
}

export class ServiceHarness {
  readonly dir = mkdtempSync(join(tmpdir(), 'drs-proc-'));
  readonly dbPath = join(this.dir, 'service.sqlite');
  /** The service's PostgreSQL database when the suite runs on PostgreSQL (unless the env names its own). */
  readonly pg: ReturnType<typeof freshPgDatabase> | null;
  private readonly running = new Set<Subprocess>();

  constructor(private readonly env: Record<string, string> = {}) {
    this.pg = onPostgres && env.DATABASE_PATH === undefined && env.DATABASE_URL === undefined ? freshPgDatabase() : null;
    // The same key in the file too, so the CLI run by a test on VAULT_KEY_FILE opens what the service sealed.
    if (this.pg) writeFileSync(join(this.dir, 'vault.key'), TEST_VAULT_KEY + '\n', { mode: 0o600 });
  }

  /** The service's database as a test reads it (read-only on SQLite unless asked); `close()` when done. */
  database(opts: { writable?: boolean } = {}): Database {
    return this.pg ? (new PsqlDatabase(this.pg.url) as unknown as Database) : new Database(this.dbPath, { readonly: !opts.writable });
  }

  /**
   * Starts a service process on the harness's database, on a port of its own. Call it again while one runs for
   * another replica (PostgreSQL only); `replicaId` sets its REPLICA_ID, `env` adds to the harness's variables.
   */
  async start(opts: { replicaId?: string; env?: Record<string, string> } = {}): Promise<ServiceProcess> {
    const port = freePort();
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_PATH: this.dbPath,
      ...(this.pg ? { DATABASE_URL: this.pg.url } : {}),
      VAULT_KEY_FILE: join(this.dir, 'vault.key'),
      BOOTSTRAP_API_KEY: TEST_API_KEY,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
      LOG_LEVEL: 'warn',
      // One replica, restarted under the same id: it takes back its own claims at start, as an operator's
      // replica with a fixed REPLICA_ID does (with the default id, a restart waits for its old leases to run out).
      REPLICA_ID: 'replica-1',
      ...this.env,
      ...(opts.replicaId ? { REPLICA_ID: opts.replicaId } : {}),
      ...opts.env,
    };
    // On PostgreSQL the service refuses to start without VAULT_KEY: the one kept in the harness's key file (a
    // test that names VAULT_KEY itself, even empty, keeps what it names).
    if (env.DATABASE_URL && env.VAULT_KEY === undefined) env.VAULT_KEY = vaultKeyIn(env.VAULT_KEY_FILE!);
    const proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
      cwd: ROOT,
      env,
      // The service logs to stdout: SERVICE_STDOUT=1 shows it beside the test's output, to see why a run failed.
      stdout: process.env.SERVICE_STDOUT ? 'inherit' : 'ignore',
      stderr: 'inherit',
    });
    this.running.add(proc);
    const url = `http://127.0.0.1:${port}`;
    // Starting takes well under a second; the deadline only ends a start that would never be ready, and is
    // generous because a busy machine may start several services at once.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        if ((await fetch(`${url}/healthz`)).ok) break;
      } catch {
        /* not up yet */
      }
      if (proc.exitCode !== null) throw new Error(`service exited with ${proc.exitCode} before it was ready`);
      if (Date.now() > deadline) throw new Error('service did not become ready in 60 s');
      await Bun.sleep(50);
    }
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(url + path, {
        method,
        headers: { authorization: `Bearer ${TEST_API_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: res.status, body: parsed as any };
    };
    const kill = async (signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL') => {
      proc.kill(signal);
      await proc.exited;
      this.running.delete(proc);
    };
    return { proc, url, replicaId: opts.replicaId, call, kill };
  }

  async cleanup(): Promise<void> {
    for (const p of this.running) {
      p.kill('SIGKILL');
      await p.exited;
    }
    this.pg?.drop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Polls until `check` returns a value, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}
