import { SQL } from 'bun';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/bun-sql';
import type { PgDb, PgHandle, PgOrm } from './pg-types';

export type { PgDb, PgHandle, PgOrm };
import { migrate } from 'drizzle-orm/bun-sql/migrator';
import * as schema from '../../db/schema-pg';
import { SchemaTooNewError, type DbHandle } from './db';
import { absent } from './absent';

// PostgreSQL, the second engine (DATABASE_URL=postgres://…): a pool of connections on Bun's built-in SQL
// client with Drizzle's pg query builder over it. A transaction holds one connection of the pool from its
// BEGIN to its end (Bun.SQL's `begin` reserves it), so several run at once; reads outside a transaction take
// any free connection. The pg schema is db/schema-pg, its migrations db/migrations-pg.

export const PG_MIGRATIONS_DIR = join(import.meta.dir, '../../db/migrations-pg');

/** The key of the session advisory lock under which one start at a time applies the migrations. */
const MIGRATION_LOCK = 'debit-recovery-service migrations';


/** Whether a DATABASE_URL names PostgreSQL. */
export const isPostgresUrl = (url: string | null | undefined): url is string => !!url && /^postgres(ql)?:\/\//i.test(url);

/**
 * A URL's parts around its user information, which ends at the last `@` (a password may hold an `@` that was
 * not percent-encoded, which the URL parser would take for the host's start): null without a scheme; `at`
 * is -1 when there is no user information.
 */
function authorityOf(url: string): { scheme: string; userinfo: string; at: number } | null {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0];
  if (!scheme) return null;
  const at = url.lastIndexOf('@');
  return at < scheme.length ? { scheme, userinfo: '', at: -1 } : { scheme, userinfo: url.slice(scheme.length, at), at };
}

/** The password as the URL writes it, or null when it names none. */
function passwordOf(url: string): string | null {
  const a = authorityOf(url);
  const colon = a && a.at >= 0 ? a.userinfo.indexOf(':') : -1;
  return colon < 0 ? null : a!.userinfo.slice(colon + 1);
}

/**
 * The URL with its password replaced, safe to log: the password is hidden whole, whatever it holds; an `@`
 * in the rest of the URL only hides more.
 */
export function redactedUrl(url: string): string {
  const a = authorityOf(url);
  if (!a) return 'postgres://(unparsable)';
  const password = passwordOf(url);
  return password === null ? url : `${a.scheme}${a.userinfo.slice(0, a.userinfo.length - password.length)}***${url.slice(a.at)}`;
}

/** A message (a driver's error) with the URL's password taken out, as written and as decoded. */
export function redactedMessage(message: string, url: string): string {
  const password = passwordOf(url);
  if (password === null) return message;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // Not percent-encoded as written: the raw form is the one to hide.
  }
  let out = message.split(url).join(redactedUrl(url));
  for (const secret of [password, decoded]) if (secret.length >= 1) out = out.split(secret).join('***');
  return out;
}

/** Whether the URL's user information holds characters a URL must percent-encode there (an `@`, `/`, `?`, `#`). */
export function passwordNeedsEncoding(url: string): boolean {
  const a = authorityOf(url);
  return !!a && a.at >= 0 && (a.userinfo.includes('@') || /[/?#]/.test(a.userinfo));
}

/**
 * Opens the pool (connections are made on first use). `max` connections at most: each open transaction holds
 * one, so it bounds how many run at once; reads outside transactions share the rest.
 */
export function openPg(url: string, opts: { max?: number } = {}): PgHandle {
  const sql = new SQL(url, { max: opts.max ?? 10, idleTimeout: 30, connectionTimeout: 10 });
  const db = drizzle({ client: sql, schema }) as PgOrm;
  return {
    sql,
    db,
    where: redactedUrl(url),
    close: () => sql.close(),
  };
}

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

export function knownPgMigrations(): Journal['entries'] {
  return (JSON.parse(readFileSync(join(PG_MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as Journal).entries;
}

/**
 * Applies the pending pg migrations under a session advisory lock, so that starts at once (replicas) apply
 * each migration once; refuses a database that has migrations this version does not know.
 */
export async function applyPgMigrations(url: string): Promise<void> {
  const client = new SQL(url, { max: 1 });
  try {
    await client`SELECT pg_advisory_lock(hashtext(${MIGRATION_LOCK}))`;
    try {
      const known = knownPgMigrations();
      const [{ exists }] = await client`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS exists`;
      if (exists) {
        const [row] = await client`SELECT count(*)::int AS n, max(created_at)::text AS latest FROM drizzle.__drizzle_migrations`;
        const latestKnown = Math.max(...known.map((e) => e.when));
        if (row.n > known.length || Number(row.latest ?? 0) > latestKnown) throw new SchemaTooNewError(row.n, known.length);
      }
      await migrate(drizzle({ client }), { migrationsFolder: PG_MIGRATIONS_DIR });
    } finally {
      await client`SELECT pg_advisory_unlock(hashtext(${MIGRATION_LOCK}))`;
    }
  } finally {
    await client.close();
  }
}

/**
 * Takes the lock under which a start applies the migrations, on a connection of the pool kept for it, unless a
 * start holds it now (null then). Until the returned function lets it go, a service starting on the database
 * waits at its migrations: the operator's database copy holds it so that no replica starts while it runs.
 */
export async function holdMigrationLock(sql: SQL): Promise<(() => Promise<void>) | null> {
  const conn = await sql.reserve();
  try {
    const [{ ok }] = await conn`SELECT pg_try_advisory_lock(hashtext(${MIGRATION_LOCK})) AS ok`;
    if (!ok) {
      await conn.release();
      return null;
    }
  } catch (e) {
    await conn.release();
    throw e;
  }
  return async () => {
    try {
      await conn`SELECT pg_advisory_unlock(hashtext(${MIGRATION_LOCK}))`;
    } finally {
      await conn.release();
    }
  };
}

/** Migrations applied and whether they cover every one this version knows. */
export async function pgMigrationStatus(h: PgHandle): Promise<{ applied: number; known: number; upToDate: boolean }> {
  const known = knownPgMigrations().length;
  const [row] = await h.sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
  return { applied: row.n, known, upToDate: row.n === known };
}

/** Whether the server answers, and whether its migrations are those this version knows (readiness). */
export async function pgReady(h: PgHandle): Promise<{ database: boolean; migrations: boolean }> {
  try {
    await h.sql`SELECT 1`;
  } catch {
    return { database: false, migrations: false };
  }
  try {
    return { database: true, migrations: (await pgMigrationStatus(h)).upToDate };
  } catch {
    return { database: true, migrations: false };
  }
}

/** The array type of a column, for a list of its values bound as one parameter (its collation left to the column). */
export const arrayTypeOf = (column: { getSQLType(): string }): string => `${column.getSQLType().replace(/\s+COLLATE\s+.*$/i, '')}[]`;

/** The PostgreSQL error code (SQLSTATE) of an error from Bun.SQL, if it is one. */
export function pgCode(e: unknown): string | undefined {
  const err = e as { errno?: unknown; code?: unknown; cause?: { errno?: unknown } };
  const c = err?.errno ?? err?.cause?.errno;
  return typeof c === 'string' ? c : undefined;
}

/**
 * What a failed statement says went wrong, on either engine: the database's own message. On PostgreSQL
 * drizzle wraps the driver's error in one whose message is the statement and its parameters ("Failed query:
 * insert into … params: …"), with the server's reason only in its cause: kept as the reason, that text holds
 * a borrower's values and, cut to a length, loses the reason itself.
 */
export function dbErrorMessage(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = (e as { cause?: unknown }).cause;
  if (e.message.startsWith('Failed query:') && cause instanceof Error) return cause.message;
  return e.message;
}

/**
 * Whether a transaction lost to another and may simply be run again: a deadlock (40P01) or a serialization
 * failure (40001). Its writes were all rolled back: it is the transaction's fault, not that of a row in it.
 */
export const isTransientConflict = (e: unknown): boolean => {
  const code = pgCode(e);
  return code === '40P01' || code === '40001';
};

/**
 * Runs `fn` (one or more whole transactions) again when PostgreSQL undoes it in a deadlock or a serialization
 * failure, up to `attempts` times in all; any other error, or the last, is thrown.
 */
export async function againOnConflict<T>(attempts: number, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= attempts || !isTransientConflict(e)) throw e;
    }
  }
}

/**
 * Whether the database refused a value a statement wrote, on either engine: a data exception or a constraint
 * (SQLSTATE classes 22 and 23 on PostgreSQL; a constraint, a type mismatch, a value too big or out of range on
 * SQLite). The same row is refused however often it is written, unlike a lost connection or a transaction the
 * database undid.
 */
export const isRefusedValue = (e: unknown): boolean => {
  const code = pgCode(e);
  if (code !== undefined) return code.startsWith('22') || code.startsWith('23');
  const sqlite = (e as { code?: unknown } | null)?.code;
  return typeof sqlite === 'string' && /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(sqlite);
};

/** The kind of a refused value, for a log line: never the database's message, which may quote the value. */
export function refusalKind(e: unknown): string {
  const code = pgCode(e);
  if (code !== undefined) return code.startsWith('22') ? 'data_exception' : 'constraint_violation';
  return String((e as { code?: unknown } | null)?.code ?? 'unknown');
}

/** Whether an error is a unique-constraint violation (SQLSTATE 23505). */
export const isUniqueViolation = (e: unknown): boolean => pgCode(e) === '23505';

/**
 * The runtime's database handle on PostgreSQL: the pool as `pg`; the SQLite connections it does not have
 * (`sqlite`, `db`, `reader`) throw when touched, naming themselves.
 */
export function pgDbHandle(pg: PgHandle): DbHandle & { pg: PgHandle } {
  const beforeClose: (() => void)[] = [];
  return {
    pg,
    sqlite: absent('sqlite', 'on PostgreSQL'),
    db: absent('db', 'on PostgreSQL'),
    reader: absent('reader', 'on PostgreSQL'),
    beforeClose,
    close() {
      for (const fn of beforeClose.splice(0)) fn();
      void pg.close();
    },
  };
}
