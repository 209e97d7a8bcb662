// engine: sqlite
// The real process: `bun run src/index.ts` spawned with its own SQLite file and vault key in a temp folder.
// Covers what only the process shows: the first-start key on stdout, signals and the WAL checkpoint, the
// restart, file modes, config errors on stderr and the exit code, and refusing a database from a newer version.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { openDatabase } from '../../src/platform/db';

const ROOT = join(import.meta.dir, '../..');
// Only ends a start that would never be ready; a busy machine may take seconds.
const READY_TIMEOUT_MS = 60_000;
const KEY_LINE = /^\s*(drs_live_[0-9A-Za-z]{32})\s*$/m;
const ANY_KEY = /drs_live_[0-9A-Za-z]{32}/g;

// Every variable the service reads: the children get only what a test sets, never the caller's environment.
const CONFIG_VARS = [
  'PORT', 'HOST', 'DATABASE_PATH', 'DATABASE_URL', 'DATABASE_POOL_MAX', 'TLS_CERT_FILE', 'TLS_KEY_FILE', 'TRUST_PROXY', 'ALLOW_INSECURE_HTTP',
  'VAULT_KEY', 'VAULT_KEY_FILE', 'BOOTSTRAP_API_KEY', 'BANK_DATA_PROVIDER', 'BANK_DATA_URL', 'BANK_DATA_TOKEN',
  'ROUTING_DIRECTORY_FILE', 'WEBHOOK_ALLOW_PRIVATE_TARGETS', 'WEBHOOK_RETRY_BASE_MS', 'WEBHOOK_MAX_AGE_MS',
  'RATE_LIMIT_PER_SECOND', 'RATE_LIMIT_BURST', 'BALANCE_CONCURRENCY', 'SANDBOX_LATENCY_MS', 'METRICS_TOKEN',
  'PUBLIC_BASE_URL', 'LOG_LEVEL', 'MAX_PENDING_AUTHORIZERS_PER_LENDER', 'SHUTDOWN_GRACE_MS',
];

const children = new Set<Subprocess>();
const dirs: string[] = [];

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await child.exited.catch(() => undefined);
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'drs-e2e-'));
  dirs.push(dir);
  return dir;
}

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

interface Server {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  port: number;
  url: string;
  dir: string;
  dbPath: string;
  vaultKeyFile: string;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout or stderr matches, or throws with what was printed. */
  waitForOutput(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exitCode(): Promise<number>;
}

function collect(stream: ReadableStream<Uint8Array>, sink: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  return (async () => {
    for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true });
    sink.text += decoder.decode();
  })().catch(() => undefined);
}

function spawnServer(dir: string, env: Record<string, string> = {}): Server {
  const port = freePort();
  const dbPath = join(dir, 'service.sqlite');
  const vaultKeyFile = join(dir, 'vault.key');
  const base: Record<string, string | undefined> = { ...process.env };
  for (const name of CONFIG_VARS) delete base[name];
  const proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
    cwd: ROOT,
    env: {
      ...base,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_PATH: dbPath,
      VAULT_KEY_FILE: vaultKeyFile,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  children.add(proc);
  const out = { text: '' };
  const err = { text: '' };
  const drained = Promise.all([collect(proc.stdout, out), collect(proc.stderr, err)]);
  const server: Server = {
    proc,
    port,
    url: `http://127.0.0.1:${port}`,
    dir,
    dbPath,
    vaultKeyFile,
    stdout: () => out.text,
    stderr: () => err.text,
    async waitForOutput(re, timeoutMs = READY_TIMEOUT_MS) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = out.text.match(re) ?? err.text.match(re);
        if (m) return m;
        if (proc.exitCode !== null || Date.now() > deadline) {
          await drained;
          const late = out.text.match(re) ?? err.text.match(re);
          if (late) return late;
          throw new Error(`expected output ${re} not printed\n--- stdout\n${out.text}\n--- stderr\n${err.text}`);
        }
        await Bun.sleep(20);
      }
    },
    async exitCode() {
      const code = await proc.exited;
      await drained;
      return code;
    },
  };
  return server;
}

/** Polls /healthz until 200; fails early with the output if the process exits first. */
async function waitReady(server: Server): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (server.proc.exitCode !== null) {
      const code = await server.exitCode();
      throw new Error(`server exited with ${code} before it was ready\n--- stdout\n${server.stdout()}\n--- stderr\n${server.stderr()}`);
    }
    try {
      const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await Bun.sleep(25);
  }
  throw new Error(`/healthz not 200 within ${READY_TIMEOUT_MS} ms\n--- stdout\n${server.stdout()}\n--- stderr\n${server.stderr()}`);
}

async function startReady(dir: string, env: Record<string, string> = {}): Promise<Server> {
  const server = spawnServer(dir, env);
  await waitReady(server);
  // The plain lines follow listen() synchronously, but the pipe may deliver them after the first answer.
  await server.waitForOutput(/API docs: /);
  return server;
}

async function stop(server: Server): Promise<number> {
  server.proc.kill('SIGTERM');
  const timer = setTimeout(() => server.proc.kill('SIGKILL'), 10_000);
  try {
    return await server.exitCode();
  } finally {
    clearTimeout(timer);
  }
}

const get = (server: Server, path: string, key?: string) =>
  fetch(`${server.url}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

/** Runs the process to its end (it is expected not to start) and returns what it printed. */
async function runToExit(dir: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const server = spawnServer(dir, env);
  const timer = setTimeout(() => server.proc.kill('SIGKILL'), READY_TIMEOUT_MS);
  try {
    const code = await server.exitCode();
    return { code, stdout: server.stdout(), stderr: server.stderr() };
  } finally {
    clearTimeout(timer);
    if (server.proc.exitCode === null) await stop(server);
  }
}

describe('first start, shutdown and restart on one database', () => {
  const dir = tempDir();
  let first: Server;
  let apiKey = '';

  test('first start on an empty database prints the new API key once and the docs URL', async () => {
    first = await startReady(dir);
    const out = first.stdout();
    const m = out.match(KEY_LINE);
    expect(m, `no drs_live_ key line in stdout:\n${out}`).not.toBeNull();
    apiKey = m![1]!;
    // Once: not repeated, and not in any log line (stdout or stderr).
    expect((out + first.stderr()).match(ANY_KEY)).toEqual([apiKey]);
    expect(out).toContain(`API docs: ${first.url}/docs`);
    expect(out).toContain('"vault_key_created":true');
  }, 40_000);

  test('the printed key authenticates: an unknown /v1 path is 404 with it, 401 with a wrong or missing key', async () => {
    const ok = await get(first, '/v1/no-such-resource', apiKey);
    expect(ok.status).toBe(404);
    expect(((await ok.json()) as any).error.code).toBe('RESOURCE_NOT_FOUND');

    const wrongKey = `drs_live_${'x'.repeat(32)}`;
    const wrong = await get(first, '/v1/no-such-resource', wrongKey);
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as any).error.code).toBe('UNAUTHORIZED');

    const missing = await get(first, '/v1/no-such-resource');
    expect(missing.status).toBe(401);
  }, 40_000);

  test('the vault key file is created with mode 0600', () => {
    expect(existsSync(first.vaultKeyFile)).toBe(true);
    expect((statSync(first.vaultKeyFile).mode & 0o777).toString(8)).toBe('600');
  }, 40_000);

  test('SIGTERM exits 0, checkpoints the WAL and leaves a database that opens', async () => {
    const wal = `${first.dbPath}-wal`;
    // The start's own writes (migrations, the default lender) sit in the WAL until the checkpoint.
    expect(existsSync(wal) && statSync(wal).size > 0).toBe(true);
    const code = await stop(first);
    expect(code, `stdout:\n${first.stdout()}\nstderr:\n${first.stderr()}`).toBe(0);
    expect(first.stdout()).toContain('"msg":"stopped"');
    expect(!existsSync(wal) || statSync(wal).size === 0, `${wal} still holds ${existsSync(wal) ? statSync(wal).size : 0} bytes`).toBe(true);

    const db = new Database(first.dbPath, { readonly: true });
    try {
      expect((db.query('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check).toBe('ok');
      expect((db.query('SELECT COUNT(*) AS n FROM lenders').get() as { n: number }).n).toBe(1);
      expect((db.query('SELECT COUNT(*) AS n FROM api_keys').get() as { n: number }).n).toBe(1);
    } finally {
      db.close();
    }
  }, 40_000);

  test('a second start on the same file prints no key, is ready with migrations applied, and the key still works', async () => {
    const second = await startReady(dir);
    try {
      expect(second.stdout()).not.toMatch(ANY_KEY);
      expect(second.stdout()).toContain('"vault_key_created":false');
      const ready = await get(second, '/readyz');
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready', engine: 'sqlite', database: true, migrations: true, jobs: true, queue_depth: 0 });
      expect((await get(second, '/v1/no-such-resource', apiKey)).status).toBe(404);
      expect((statSync(second.vaultKeyFile).mode & 0o777).toString(8)).toBe('600');
    } finally {
      expect(await stop(second)).toBe(0);
    }
  }, 40_000);
});

describe('configuration errors stop the start with one line naming the variable', () => {
  const cases: [string, string][] = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['RATE_LIMIT_BURST', '-1'],
    ['BANK_DATA_PROVIDER', 'ftp'],
    ['LOG_LEVEL', 'loud'],
    ['BOOTSTRAP_API_KEY', 'drs_live_short'],
  ];
  for (const [name, value] of cases) {
    test(`${name}=${value}`, async () => {
      const dir = tempDir();
      const { code, stderr } = await runToExit(dir, { [name]: value });
      expect(code).not.toBe(0);
      const lines = stderr.split('\n').filter((l) => l.trim() !== '');
      expect(lines, `stderr:\n${stderr}`).toHaveLength(1);
      expect(lines[0]).toContain(name);
      // A rejected secret is not echoed back.
      if (name === 'BOOTSTRAP_API_KEY') expect(lines[0]).not.toContain(value);
      // Nothing was created: config is checked before the vault and the database are touched.
      expect(existsSync(join(dir, 'service.sqlite'))).toBe(false);
      expect(existsSync(join(dir, 'vault.key'))).toBe(false);
    }, 40_000);
  }
});

describe('start-up errors past the settings themselves are one line naming the setting too, never a stack trace', () => {
  const oneLine = async (env: (dir: string) => Record<string, string>, name: string, reason: RegExp) => {
    const dir = tempDir();
    const { code, stdout, stderr } = await runToExit(dir, env(dir));
    expect(code).toBe(2);
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines, `stderr:\n${stderr}`).toHaveLength(1);
    expect(lines[0]).toContain(name);
    expect(lines[0]).toMatch(reason);
    expect(stdout + stderr).not.toMatch(/\n\s+at .*\.ts:\d+/);
  };

  test('a DATABASE_PATH the service cannot create', async () => {
    await oneLine((dir) => {
      writeFileSync(join(dir, 'a-file'), 'x');
      return { DATABASE_PATH: join(dir, 'a-file', 'service.sqlite') };
    }, 'DATABASE_PATH', /can create, read and write \([A-Z_]+\)/);
  }, 40_000);

  test('TLS files that are missing, or not a certificate and its key', async () => {
    await oneLine((dir) => ({ TLS_CERT_FILE: join(dir, 'none.pem'), TLS_KEY_FILE: join(dir, 'none-key.pem') }), 'TLS_CERT_FILE', /readable PEM certificate file \(ENOENT\)/);
    await oneLine((dir) => {
      writeFileSync(join(dir, 'junk.pem'), 'not a certificate');
      return { TLS_CERT_FILE: join(dir, 'junk.pem'), TLS_KEY_FILE: join(dir, 'junk.pem') };
    }, 'TLS_CERT_FILE', /a PEM certificate and TLS_KEY_FILE its key/);
  }, 60_000);

  test('a PORT another process listens on', async () => {
    const other = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('other') });
    try {
      await oneLine(() => ({ PORT: String(other.port) }), 'PORT', /another process listens on it/);
    } finally {
      other.stop(true);
    }
  }, 40_000);
});

test('BOOTSTRAP_API_KEY makes that key work and prints no other key', async () => {
  const key = `drs_live_${'Ab3'.repeat(10)}Zz`;
  expect(key).toMatch(/^drs_live_[0-9A-Za-z]{32}$/);
  const server = await startReady(tempDir(), { BOOTSTRAP_API_KEY: key });
  try {
    expect(server.stdout()).not.toMatch(ANY_KEY);
    // Stored for the lender named default, as a SHA-256 hash only.
    const db = new Database(server.dbPath, { readonly: true });
    try {
      const rows = db
        .query('SELECT k.key_hash AS hash, l.name AS name FROM api_keys k JOIN lenders l ON l.id = k.lender_id')
        .all() as { hash: string; name: string }[];
      expect(rows).toEqual([{ hash: new Bun.CryptoHasher('sha256').update(key).digest('hex'), name: 'default' }]);
    } finally {
      db.close();
    }
    expect((await get(server, '/v1/no-such-resource', key)).status).toBe(404);
    expect((await get(server, '/v1/no-such-resource', `drs_live_${'Ab3'.repeat(10)}Zy`)).status).toBe(401);
  } finally {
    expect(await stop(server)).toBe(0);
  }
}, 40_000);

test('BOOTSTRAP_API_KEY for a lender that holds its most live keys: the start stops with one line naming the setting and what to do, the keys untouched', async () => {
  const dir = tempDir();
  const first = await startReady(dir);
  const existing = first.stdout().match(KEY_LINE)![1]!;
  expect(await stop(first)).toBe(0);
  // 24 more live keys for the lender default: 25, the most it may hold.
  const db = new Database(join(dir, 'service.sqlite'));
  try {
    const lender = (db.query("SELECT id FROM lenders WHERE name = 'default'").get() as { id: string }).id;
    for (let i = 0; i < 24; i++) {
      db.query('INSERT INTO api_keys (id, lender_id, prefix, key_hash, created_at) VALUES (?, ?, ?, ?, ?)').run(`key-${i}`, lender, `drs_live_k${i}`, `hash-${i}`, Date.now());
    }
  } finally {
    db.close();
  }
  const key = `drs_live_${'Qx7'.repeat(10)}Zz`;
  const { code, stdout, stderr } = await runToExit(dir, { BOOTSTRAP_API_KEY: key });
  expect(code).toBe(2);
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain('BOOTSTRAP_API_KEY was not registered');
  expect(lines[0]).toContain('25 live API keys');
  expect(lines[0]).toContain('key revoke');
  expect(stdout + stderr).not.toContain(key);
  expect(stdout + stderr).not.toMatch(/\n\s+at .*\.ts:\d+/);
  // Nothing registered; the keys it had still work on the next start without the setting.
  const again = await startReady(dir);
  try {
    expect((await get(again, '/v1/no-such-resource', existing)).status).toBe(404);
    expect((await get(again, '/v1/no-such-resource', key)).status).toBe(401);
  } finally {
    expect(await stop(again)).toBe(0);
  }
}, 60_000);

test('a database migrated by a newer version stops the start with "newer version"', async () => {
  const dir = tempDir();
  const dbPath = join(dir, 'service.sqlite');
  const handle = openDatabase(dbPath);
  const latest = (handle.sqlite.query('SELECT MAX(created_at) AS t FROM __drizzle_migrations').get() as { t: number }).t;
  handle.sqlite
    .query('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)')
    .run('f'.repeat(64), latest + 86_400_000);
  handle.close();

  const { code, stdout, stderr } = await runToExit(dir, {});
  expect(code).not.toBe(0);
  expect(stderr).toContain('newer version');
  expect(stdout).not.toMatch(ANY_KEY);
  // The file is left as it was: no migration undone, no lender created.
  const db = new Database(dbPath, { readonly: true });
  try {
    expect((db.query('SELECT COUNT(*) AS n FROM __drizzle_migrations').get() as { n: number }).n).toBeGreaterThan(1);
    expect((db.query('SELECT COUNT(*) AS n FROM lenders').get() as { n: number }).n).toBe(0);
  } finally {
    db.close();
  }
}, 40_000);
