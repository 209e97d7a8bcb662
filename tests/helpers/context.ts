import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll } from 'bun:test';
import { loadConfig, requireSharedVaultKey } from '../../src/config';
import { createApp } from '../../src/app';
import { createRuntime, type Runtime } from '../../src/runtime';
import { FakeClock } from '../../src/platform/clock';
import { createLenderNow as createLender, setDebitCardApprovalNow as setDebitCardApproval } from '../../src/modules/lenders/service';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { TSchema } from '@sinclair/typebox';
import { ErrorEnvelope } from '../../src/http/errors';
import type { Processor } from '../../src/adapters/processors';
import type { Stores } from '../../src/deps';
import { openDatabase } from '../../src/platform/db';
import { freshPgDatabase, onPostgres, pooledRows, PsqlDatabase, psql, vaultKeyIn } from './pg';
import type { Database } from 'bun:sqlite';
import { newId } from '../../src/platform/ids';
import { displayPrefix, generateApiKey, hashApiKey } from '../../src/platform/api-keys';

export interface TestContext {
  dir: string;
  rt: Runtime;
  /**
   * The database as a test reads and writes it directly: the SQLite connection, or on PostgreSQL the same
   * calls made through psql (tests/helpers/pg.ts PsqlDatabase).
   */
  sql: Database;
  /**
   * The rows of a query with SQLite's placeholders, on either engine, through the runtime's own connections
   * (on PostgreSQL a pooled connection, numbers read as numbers): for a test that reads after every step.
   */
  rows<T = Record<string, unknown>>(text: string, ...params: (string | number | null)[]): Promise<T[]>;
  clock: FakeClock;
  app: ReturnType<typeof createApp>;
  logs: string[];
  lender: { id: string; key: string };
  newLender(name?: string, opts?: { cards?: boolean }): { id: string; key: string };
  /**
   * Whether `text` appears anywhere in what the database holds at rest: the SQLite file and its WAL (after a
   * checkpoint), or on PostgreSQL every row of every table (pg_dump of the data).
   */
  storedInClear(text: string): boolean;
  /** What the database holds at rest, as text (latin1 bytes of the SQLite files, or pg_dump's data). */
  storedText(): string;
  /** The env that opens this context's database again (a restart): its SQLite file, or its PostgreSQL database. */
  sameDatabase(): Record<string, string>;
  request(method: string, path: string, opts?: RequestOpts): Promise<Response>;
  json<T = any>(method: string, path: string, opts?: RequestOpts): Promise<{ status: number; body: T; res: Response }>;
  close(): void;
}

export interface RequestOpts {
  body?: unknown;
  key?: string | null;
  headers?: Record<string, string>;
  form?: FormData;
  raw?: string | Uint8Array;
}

let counter = 0;

export type RouteSchemas = { method: string; re: RegExp; response: Record<string, TSchema | string> | undefined }[];
const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/**
 * Every JSON response a test reads is checked against the response schema its route declares for that
 * status (the schema the OpenAPI document shows), so a body that drifts from the document fails the test
 * that produced it.
 */
/** The response schemas every route of the app declares, by method and path pattern. */
export function routeSchemas(app: ReturnType<typeof createApp>): RouteSchemas {
  return app.routes.map((r) => ({
    method: r.method,
    re: new RegExp('^' + r.path.replace(/:[^/]+/g, '[^/]+') + '/?$'),
    response: (r.hooks as { response?: Record<string, TSchema | string> }).response,
  }));
}

export function checkResponse(routes: RouteSchemas, method: string, path: string, status: number, body: unknown): void {
  const pathname = path.split('?')[0]!;
  const route = routes.find((r) => r.method === method && r.re.test(pathname));
  const declared = route?.response?.[String(status)];
  if (declared === undefined) return;
  const schema = declared === 'ErrorEnvelope' ? ErrorEnvelope : (declared as TSchema);
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  if (!check.Check(body)) {
    const errors = [...check.Errors(body)].slice(0, 5).map((e) => `${e.path}: ${e.message}`);
    throw new Error(`${method} ${pathname} answered ${status} with a body outside its documented schema: ${errors.join('; ')}`);
  }
}

let template: string | null = null;

/**
 * Puts at `path` a copy of a database file the real migrations were applied to, made once per test process:
 * running every migration again for each context cost about 150 ms of a context's 175 (the runtime then
 * finds nothing left to apply, and checks that as it does on every start).
 */
function migratedCopy(path: string): void {
  if (!template) {
    const dir = mkdtempSync(join(tmpdir(), 'drs-template-'));
    const file = join(dir, 'migrated.sqlite');
    openDatabase(file).close();
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    template = file;
  }
  copyFileSync(template, path);
}

/**
 * Two replicas on one fresh PostgreSQL database (REPLICA_ID replica-a and replica-b, one vault key between
 * them, as replicas must share it, and both the settings in `env`), closed and the database dropped after the
 * file.
 */
export function twoReplicas(env: Record<string, string> = {}): { a: TestContext; b: TestContext } {
  const database = freshPgDatabase();
  const a = createTestContext({ ...env, DATABASE_URL: database.url, REPLICA_ID: 'replica-a' });
  const b = createTestContext({ ...env, DATABASE_URL: database.url, REPLICA_ID: 'replica-b', VAULT_KEY_FILE: join(a.dir, 'vault.key') });
  afterAll(() => {
    a.close();
    b.close();
    database.drop();
  });
  return { a, b };
}

/**
 * A real app on a real SQLite file in a temp folder, with the real migrations and a fake clock. Unless `env`
 * names a DATABASE_PATH, the file starts as a copy of a freshly migrated one.
 */
export interface ContextOptions {
  clockAt?: string;
  stripe?: () => Processor;
  /**
   * The engine of this context whatever the suite runs on (the store contracts run one context per engine):
   * `postgres` clones a database on `pgServer`.
   */
  engine?: { name: 'sqlite' } | { name: 'postgres'; pgServer: string };
  /** The stores the service is given, in place of its engine's own (a contract wraps them to count calls). */
  wrapStores?: (stores: Stores) => Stores;
}

export function createTestContext(env: Record<string, string> = {}, opts: ContextOptions = {}): TestContext {
  const dir = mkdtempSync(join(tmpdir(), 'drs-test-'));
  // With DATABASE_URL=postgres://… the suite runs on PostgreSQL: a database of the context's own, cloned from
  // a migrated template (a context that names its own DATABASE_PATH or DATABASE_URL keeps it).
  const own = env.DATABASE_PATH === undefined && env.DATABASE_URL === undefined;
  const engine = opts.engine ?? { name: onPostgres ? 'postgres' : 'sqlite' };
  const pgDb = own && engine.name === 'postgres' ? freshPgDatabase('pgServer' in engine ? engine.pgServer : undefined) : null;
  if (env.DATABASE_PATH === undefined && !pgDb) migratedCopy(join(dir, 'service.sqlite'));
  const settings: Record<string, string> = {
    ...(pgDb ? { DATABASE_URL: pgDb.url, DATABASE_POOL_MAX: '4' } : {}),
    DATABASE_PATH: join(dir, 'service.sqlite'),
    VAULT_KEY_FILE: join(dir, 'vault.key'),
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    ...env,
  };
  // On PostgreSQL the service runs with VAULT_KEY (it refuses to start without): the one in the key file.
  if (settings.DATABASE_URL && settings.VAULT_KEY === undefined) settings.VAULT_KEY = vaultKeyIn(settings.VAULT_KEY_FILE!);
  const config = loadConfig(settings);
  requireSharedVaultKey(config);
  const clock = new FakeClock(new Date(opts.clockAt ?? '2026-11-21T12:00:00.000Z').getTime());
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const rt = createRuntime(config, { clock, logDestination: sink, defaultMetrics: false, stripe: opts.stripe });
  if (opts.wrapStores) rt.stores = opts.wrapStores(rt.stores);
  const app = createApp(rt);
  const routes: RouteSchemas = routeSchemas(app);
  const newLender = (name?: string, o: { cards?: boolean } = {}) => {
    const lenderName = name ?? `lender-${++counter}-${Date.now()}`;
    if (rt.pg) return createLenderOnPg(rt.config.databaseUrl!, lenderName, clock.now(), !!o.cards);
    const { lender, apiKey } = createLender(rt.db, lenderName, clock.now());
    if (o.cards) setDebitCardApproval(rt.db, lender.id, true);
    return { id: lender.id, key: apiKey };
  };
  const lender = newLender();

  const request = (method: string, path: string, o: RequestOpts = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const key = o.key === undefined ? lender.key : o.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: RequestInit['body'];
    if (o.form) body = o.form;
    else if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    return app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
  };
  const json = async (method: string, path: string, o: RequestOpts = {}) => {
    const res = await request(method, path, o);
    const text = await res.text();
    let body: any = text;
    let isJson = false;
    try {
      body = JSON.parse(text);
      isJson = true;
    } catch {
      /* not JSON */
    }
    if (isJson) checkResponse(routes, method, path, res.status, body);
    return { status: res.status, body, res };
  };
  const ctx: TestContext = {
    dir,
    rt,
    sql: rt.pg ? (new PsqlDatabase(rt.config.databaseUrl!) as unknown as Database) : rt.sqlite,
    rows: async <T>(text: string, ...params: (string | number | null)[]) =>
      (rt.pg ? await pooledRows(rt.pg.sql, text, params) : rt.sqlite.query(text).all(...params)) as T[],
    clock,
    app,
    logs,
    lender,
    newLender,
    storedText: () => {
      if (rt.pg) {
        const dump = Bun.spawnSync(['pg_dump', '--data-only', rt.config.databaseUrl!], { stdout: 'pipe', stderr: 'pipe' });
        if (dump.exitCode !== 0) throw new Error(`pg_dump: ${dump.stderr.toString()}`);
        // pg_dump (from 17.6, 16.10, 15.14) fences its output with \restrict and \unrestrict lines carrying a
        // random key, new on each run: they are not what the database holds.
        return dump.stdout.toString().replace(/^\\(?:un)?restrict .*\n/gm, '');
      }
      rt.sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      const files = readdirSync(dirname(rt.config.databasePath)).filter((f) => f.startsWith(basename(rt.config.databasePath)));
      return files.map((f) => readFileSync(join(dirname(rt.config.databasePath), f)).toString('latin1')).join('');
    },
    storedInClear: (text: string) => ctx.storedText().includes(text),
    sameDatabase: () => ({ DATABASE_PATH: rt.config.databasePath, ...(rt.config.databaseUrl ? { DATABASE_URL: rt.config.databaseUrl } : {}) }),
    request,
    json,
    close() {
      try {
        rt.handle.close();
      } catch {
        /* already closed */
      }
      pgDb?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return ctx;
}

/** createTestContext closed automatically after the file's tests. */
export function useTestContext(env: Record<string, string> = {}, opts: ContextOptions = {}): TestContext {
  const ctx = createTestContext(env, opts);
  afterAll(() => ctx.close());
  return ctx;
}

/**
 * A lender and its API key written on PostgreSQL synchronously (psql), as createLenderNow does on SQLite: the
 * set-up of a context runs at a file's top level, where nothing is awaited.
 */
function createLenderOnPg(url: string, name: string, now: number, cards: boolean): { id: string; key: string } {
  const id = newId();
  const key = generateApiKey();
  const q = (v: string) => `'${v.replaceAll("'", "''")}'`;
  psql(
    `INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES (${q(id)}, ${q(name)}, ${cards ? 1 : 0}, ${now});
     INSERT INTO api_keys (id, lender_id, prefix, key_hash, created_at) VALUES (${q(newId())}, ${q(id)}, ${q(displayPrefix(key))}, ${q(hashApiKey(key))}, ${now});`,
    url,
  );
  return { id, key };
}
