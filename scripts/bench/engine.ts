// The engine the benchmarks run on. SQLite by default: every runtime and spawned server on a file in a temp
// folder. PostgreSQL when DATABASE_URL names a server (postgres://…, a user that may create databases): every
// runtime and spawned server then gets a database of its own, cloned from the migrated template the tests use
// (tests/helpers/pg.ts), dropped when the benchmark ends; a start measured from nothing gets an empty one.
//
// DATABASE_URL is the server here, never a database the benchmarks write into: a spawned service is always
// given the URL of the database made for it.
import { SQL } from 'bun';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { isPostgresUrl } from '../../src/platform/pg';
import type { Runtime } from '../../src/runtime';
import { freshPgDatabase, pgUrlOf, psql } from '../../tests/helpers/pg';

/** The VAULT_KEY a service on PostgreSQL starts with (kept in a folder's key file). */
export { vaultKeyIn } from '../../tests/helpers/pg';

/** The PostgreSQL server the benchmarks run on, or null on SQLite. */
export const PG_SERVER_URL: string | null = isPostgresUrl(process.env.DATABASE_URL) ? process.env.DATABASE_URL : null;
export const onPostgres = PG_SERVER_URL !== null;
export const ENGINE_NAME = onPostgres ? 'PostgreSQL' : 'SQLite';

export interface BenchDatabase {
  url: string;
  name: string;
  drop(): void;
}

/** A new database cloned from the migrated template (PostgreSQL only). */
export function freshBenchDatabase(): BenchDatabase {
  if (!onPostgres) throw new Error('freshBenchDatabase: the benchmarks run on SQLite (DATABASE_URL is not a postgres URL)');
  return freshPgDatabase();
}

let empties = 0;
/** A new empty database, no migrations applied (PostgreSQL only): what a first start of the service finds. */
export function emptyBenchDatabase(): BenchDatabase {
  if (!onPostgres) throw new Error('emptyBenchDatabase: the benchmarks run on SQLite (DATABASE_URL is not a postgres URL)');
  const name = `drs_bench_${process.pid}_${++empties}_${Date.now().toString(36)}`;
  psql(`CREATE DATABASE "${name}"`);
  return {
    url: pgUrlOf(name),
    name,
    drop: () => {
      try {
        psql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } catch {
        /* the server is gone: nothing to drop */
      }
    },
  };
}

/** One line about the engine for the report: SQLite's settings, or the server's version and durability settings. */
export function engineDescription(): string {
  if (!onPostgres) return 'SQLite (WAL, synchronous=FULL, a temp file per benchmark)';
  const setting = (name: string) => {
    try {
      return psql(`SHOW ${name}`);
    } catch {
      return '?';
    }
  };
  const version = setting('server_version').split(' ')[0];
  const fsync = setting('fsync');
  const sync = setting('synchronous_commit');
  const warning = fsync === 'off' || sync === 'off' ? ' — commits are not made durable on this server, so write figures are optimistic' : '';
  return `PostgreSQL ${version} (fsync=${fsync}, synchronous_commit=${sync}${warning}; a database per runtime, cloned from the migrated template)`;
}

const pgPlaceholders = (text: string): string => {
  let i = 0;
  return text.replace(/\?/g, () => `$${++i}`);
};

/**
 * The rows of a query on the runtime's database, either engine: `?` placeholders (no `?` in literals). What a
 * benchmark checks or counts with, never what it measures. PostgreSQL returns bigints (count(*)) as strings:
 * read counts through `count`.
 */
export async function queryRows<T = Record<string, unknown>>(rt: Runtime, text: string, ...params: (string | number | null)[]): Promise<T[]> {
  if (rt.pg) return [...((await rt.pg.sql.unsafe(pgPlaceholders(text), params)) as T[])];
  return rt.sqlite.query(text).all(...params) as T[];
}

/** The `n` of the first row of a query (a COUNT(*) AS n), as a number on either engine. */
export async function countRows(rt: Runtime, text: string, ...params: (string | number | null)[]): Promise<number> {
  const [row] = await queryRows<{ n: number | string | null }>(rt, text, ...params);
  return Number(row?.n ?? 0);
}

/**
 * A connection of its own to a spawned server's database, beside the server (as an operator's client would
 * be): SQLite's file in `dir`, or the server's PostgreSQL database. `?` placeholders.
 */
export interface SideConnection {
  all<T = Record<string, unknown>>(text: string, ...params: (string | number | null)[]): Promise<T[]>;
  count(text: string, ...params: (string | number | null)[]): Promise<number>;
  run(text: string, ...params: (string | number | null)[]): Promise<void>;
  /** Statements in one transaction (PostgreSQL: one connection's BEGIN/COMMIT; SQLite: one immediate transaction). */
  transaction(fn: (run: (text: string, ...params: (string | number | null)[]) => Promise<void>) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export function sideConnection(server: { dir: string; databaseUrl: string | null }): SideConnection {
  if (server.databaseUrl) {
    const sql = new SQL(server.databaseUrl, { max: 2 });
    const all = async <T>(text: string, ...params: (string | number | null)[]) => [...((await sql.unsafe(pgPlaceholders(text), params)) as T[])];
    return {
      all,
      count: async (text, ...params) => Number((await all<{ n: unknown }>(text, ...params))[0]?.n ?? 0),
      run: async (text, ...params) => void (await sql.unsafe(pgPlaceholders(text), params)),
      transaction: async (fn) =>
        void (await sql.begin(async (tx) => {
          await fn(async (text, ...params) => void (await tx.unsafe(pgPlaceholders(text), params)));
        })),
      close: () => sql.close(),
    };
  }
  const db = new Database(join(server.dir, 'service.sqlite'));
  db.exec('PRAGMA busy_timeout = 10000');
  const all = async <T>(text: string, ...params: (string | number | null)[]) => db.query(text).all(...params) as T[];
  return {
    all,
    count: async (text, ...params) => Number((await all<{ n: unknown }>(text, ...params))[0]?.n ?? 0),
    run: async (text, ...params) => void db.query(text).run(...params),
    transaction: async (fn) => {
      db.exec('BEGIN IMMEDIATE');
      try {
        await fn(async (text, ...params) => void db.query(text).run(...params));
        db.exec('COMMIT');
      } catch (e) {
        db.exec('ROLLBACK');
        throw e;
      }
    },
    close: async () => db.close(),
  };
}

/**
 * The plan of a query on the runtime's database, one line per step joined by '; ': SQLite's EXPLAIN QUERY
 * PLAN, or PostgreSQL's EXPLAIN. `?` placeholders, bound as literals (numbers only), so that PostgreSQL plans
 * the query as the store's bigint comparisons are planned.
 */
export async function queryPlan(rt: Runtime, text: string, ...params: number[]): Promise<string> {
  if (!rt.pg) return rt.sqlite.query<{ detail: string }, number[]>(`EXPLAIN QUERY PLAN ${text}`).all(...params).map((r) => r.detail).join('; ');
  let i = 0;
  const bound = text.replace(/\?/g, () => String(params[i++]));
  const rows = (await rt.pg.sql.unsafe(`EXPLAIN ${bound}`)) as Record<string, string>[];
  return rows.map((r) => String(Object.values(r)[0]).trim()).join('; ');
}
