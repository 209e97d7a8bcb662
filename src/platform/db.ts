import { Database, type Statement } from 'bun:sqlite';
import { gateOf } from './write-gate';
import { OverlappingWriteError, txLockOf } from './tx-lock';
import { syncLaterThrough, WalSync } from './wal-sync';
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite';
import { migrate } from 'drizzle-orm/bun-sqlite/migrator';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as schema from '../../db/schema';

/** Drizzle on bun:sqlite, with its SQLite connection as `$client` (drizzle sets it) for raw prepared statements. */
export type Orm = BunSQLiteDatabase<typeof schema> & { $client: Database };

/**
 * The database for reading: the query builder without its writing methods. Writes go through the `Tx` of an
 * open transaction (platform/context.ts), so a write outside `withTransaction` does not type-check.
 */
export type Db = Omit<Orm, 'insert' | 'update' | 'delete' | 'run' | 'transaction'>;

export interface DbHandle {
  sqlite: Database;
  db: Orm;
  /**
   * A second connection, read-only, for reads made outside a transaction: while a transaction is open across
   * awaits on the writing connection, a read there would see its uncommitted writes. WAL gives this one the
   * last committed state. The same connection as `db` for an in-memory database, which has no second one.
   */
  reader: Db;
  /** Set when the database is PostgreSQL (platform/pg.ts `pgDbHandle`): the SQLite members then throw. */
  pg?: import('./pg-types').PgHandle;
  /** Called first by close(): what holds the file besides this connection (a worker) lets go of it. */
  beforeClose: (() => void)[];
  close(): void;
}

// Anchored to this file, not the working directory, so the CLI and tests find the same migrations.
export const MIGRATIONS_DIR = join(import.meta.dir, '../../db/migrations');

export class SchemaTooNewError extends Error {
  constructor(applied: number, known: number) {
    super(
      `The database was written by a newer version of this service (it has ${applied} migrations, this version knows ${known}). ` +
        'Run the newer version, or restore a backup made by this one.',
    );
    this.name = 'SchemaTooNewError';
  }
}

export class DatabaseInUseError extends Error {
  constructor(path: string, holderPid: number | null) {
    super(
      `Another service process${holderPid ? ` (PID ${holderPid})` : ''} is serving the database ${path}. ` +
        'One process serves a database file: stop that one first, or give this one its own DATABASE_PATH.',
    );
    this.name = 'DatabaseInUseError';
  }
}

/**
 * One service process per database file: an exclusive SQLite lock on `<path>.lock`, held for the life of the
 * process. The operating system drops it when the process ends, however it ends (kill -9, a crash), so the
 * next start takes over at once; two live processes, even in different containers sharing the volume,
 * cannot both hold it. The holder writes its PID in the file's header (user_version) for the refusal's message.
 * The operator CLI does not take it (its commands are safe beside a running service), but for `db copy`, which
 * holds it while it reads the file so that no service starts on it meanwhile.
 */
export function lockDatabase(path: string): { release(): void } {
  if (path === ':memory:') return { release() {} };
  const dir = dirname(path);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lockPath = `${path}.lock`;
  const lock = new Database(lockPath, { create: true });
  try {
    lock.exec('PRAGMA busy_timeout = 0');
    // In exclusive locking mode the first write takes the lock and keeps it until the connection closes.
    lock.exec('PRAGMA locking_mode = EXCLUSIVE');
    lock.exec(`PRAGMA user_version = ${process.pid}`);
  } catch (e) {
    lock.close();
    if ((e as { code?: string }).code?.startsWith('SQLITE_BUSY') || (e as { code?: string }).code?.startsWith('SQLITE_LOCKED')) {
      throw new DatabaseInUseError(path, holderPid(lockPath));
    }
    throw e;
  }
  chmodSync(lockPath, 0o600);
  return { release: () => lock.close() };
}

/** The PID the lock's holder wrote: the database header's user_version, bytes 60–63, big-endian. */
function holderPid(lockPath: string): number | null {
  try {
    const fd = openSync(lockPath, 'r');
    try {
      const header = Buffer.alloc(64);
      if (readSync(fd, header, 0, 64, 0) < 64) return null;
      return header.readUInt32BE(60) || null;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

export function openDatabase(path: string, opts: { migrate?: boolean; walSync?: boolean } = {}): DbHandle {
  if (path !== ':memory:') {
    // Personal data lives here: the folder and the files are the service user's alone.
    const dir = dirname(path);
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec('PRAGMA journal_mode = WAL');
  if (path !== ':memory:') {
    for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
  }
  sqlite.exec('PRAGMA busy_timeout = 5000');
  sqlite.exec('PRAGMA foreign_keys = ON');
  // Deleted and overwritten content is zeroed, not left in free pages: erasure of personal data is real, for
  // every writer alike (a setting of the connection, never toggled by one of them).
  sqlite.exec('PRAGMA secure_delete = ON');
  // FULL: a committed payment or monitoring change survives a power cut, not just a process crash.
  sqlite.exec('PRAGMA synchronous = FULL');
  // The service's connection: work whose commits nobody outside learns of directly commits without a sync of its
  // own, the WAL synced off the event loop (platform/wal-sync.ts). The WAL is beside the file SQLite opened,
  // a symbolic link resolved as SQLite resolves it.
  const walSync = opts.walSync && path !== ':memory:' ? new WalSync(`${realpathSync(path)}-wal`) : null;
  if (walSync) syncLaterThrough(sqlite, walSync);
  // A page cache of up to 16 MB (SQLite's default is 2 MB): an upload's transaction touches the pages of
  // several indexes at once, and with the small cache it spills them to the WAL and reads them back.
  sqlite.exec('PRAGMA cache_size = -16384');
  const db = onConnection(drizzle(preparedOnce(sqlite), { schema }), sqlite);
  if (opts.migrate !== false) applyMigrations(sqlite, db);
  const readerSqlite = path === ':memory:' ? null : openReader(path);
  const reader: Db = readerSqlite ? onConnection(drizzle(preparedOnce(readerSqlite), { schema }), readerSqlite) : db;
  const beforeClose: (() => void)[] = [];
  return {
    sqlite,
    db,
    reader,
    beforeClose,
    close() {
      for (const fn of beforeClose.splice(0)) fn();
      readerSqlite?.close();
      try {
        sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      } finally {
        sqlite.close();
        // The WAL's handle, once a sync in flight has ended (the checkpoint above has synced what it held).
        void walSync?.close().catch(() => undefined);
      }
    },
  };
}

/** Statements kept per connection, by their text; past this the oldest is let go (a list of N ids is its own text). */
export const STATEMENTS_KEPT = 2000;

/**
 * The connection as Drizzle sees it: each statement text prepared once and the statement reused, instead of
 * prepared again on every call (SQLite's prepare cost as much as running the statement on the hot paths).
 * Safe because a bun:sqlite statement runs to its end within one synchronous call (Drizzle never iterates),
 * so no two uses of one statement overlap. A statement let go is not finalized: a query prepared by hand may
 * still hold it, and it is freed with its last reference. Everything else is the connection itself.
 */
export function preparedOnce(sqlite: Database, kept = STATEMENTS_KEPT): Database {
  const statements = new Map<string, Statement>();
  const prepare = (text: string): Statement => {
    let stmt = statements.get(text);
    if (stmt === undefined) {
      if (statements.size >= kept) statements.delete(statements.keys().next().value!);
      stmt = sqlite.prepare(text);
      statements.set(text, stmt);
    }
    return stmt;
  };
  return new Proxy(sqlite, {
    get(target, key) {
      if (key === 'prepare') return prepare;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * `$client` is the connection itself, not the statement cache in front of it: the transaction lock and the
 * write gate are found by the connection's identity, and raw statements use bun:sqlite's own `query` cache.
 */
function onConnection<T extends { $client: Database }>(db: T, sqlite: Database): T {
  db.$client = sqlite;
  return db;
}

/** The read-only connection beside the writer (opened after it, so the WAL and its index exist). */
function openReader(path: string): Database {
  const reader = new Database(path, { readonly: true, strict: true });
  reader.exec('PRAGMA busy_timeout = 5000');
  // SQLite's default page cache (2 MB): its reads are lists, pages and exports that pass over their rows
  // once, so a larger cache would only hold what the operating system's file cache holds already.
  return reader;
}

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

export function knownMigrations(): Journal['entries'] {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as Journal;
  return journal.entries;
}

/** Applies pending migrations; refuses a file that has migrations this version does not know. */
export function applyMigrations(sqlite: Database, db: Orm): void {
  const known = knownMigrations();
  const latestKnown = Math.max(...known.map((e) => e.when));
  const hasTable = sqlite
    .query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get();
  if (hasTable) {
    const row = sqlite
      .query('SELECT COUNT(*) AS n, MAX(created_at) AS latest FROM __drizzle_migrations')
      .get() as { n: number; latest: number | null };
    if (row.n > known.length || (row.latest ?? 0) > latestKnown) throw new SchemaTooNewError(row.n, known.length);
  }
  migrate(db, { migrationsFolder: MIGRATIONS_DIR });
}

/** Migrations applied to this file and whether they cover every one this version knows. */
export function migrationStatus(sqlite: Database): { applied: number; known: number; upToDate: boolean } {
  const known = knownMigrations().length;
  const row = sqlite.query('SELECT COUNT(*) AS n FROM __drizzle_migrations').get() as { n: number };
  return { applied: row.n, known, upToDate: row.n === known };
}

/**
 * Runs fn inside BEGIN IMMEDIATE: the write lock is taken up front, so a read-then-write on money or
 * monitoring state cannot interleave with another writer.
 */
export function immediate<T>(sqlite: Database, fn: () => T): T {
  // A write that did not await the gate's turn while a worker writes waits on SQLite's busy timeout: counted,
  // so that a path that forgot the gate shows in /metrics (db_write_gate_bypassed_total) and in tests.
  const gate = gateOf(sqlite);
  if (gate.held) gate.bypassed++;
  // Inside another caller's open asynchronous transaction, these writes would commit or roll back with it.
  if (txLockOf(sqlite).heldByAnother()) throw new OverlappingWriteError();
  return sqlite.transaction(fn).immediate();
}

/** Whether the database lives in memory, on its one connection only (another thread cannot open it). */
export const inMemory = (db: Db): boolean => db.$client.filename === ':memory:';

/** Whether the database answers, and whether its migrations are those this version knows (readiness). */
export function databaseReady(db: Db): { database: boolean; migrations: boolean } {
  try {
    db.$client.query('SELECT 1').get();
  } catch {
    return { database: false, migrations: false };
  }
  try {
    return { database: true, migrations: migrationStatus(db.$client).upToDate };
  } catch {
    return { database: true, migrations: false };
  }
}
