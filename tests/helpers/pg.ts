// PostgreSQL for tests: with DATABASE_URL=postgres://… (a user that may create databases), each test context
// gets a database of its own, cloned from a template the real pg migrations were applied to (made once per
// set of migrations, reused by later runs), and dropped when the context closes. Cloning is synchronous
// (psql), so a context is made as on SQLite, at a file's top level.
import type { SQL } from 'bun';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isPostgresUrl, PG_MIGRATIONS_DIR } from '../../src/platform/pg';
import { jsonOf } from './pg-sync';

/** The server the suite runs on, when it runs on PostgreSQL. */
export const PG_URL = process.env.DATABASE_URL;
export const onPostgres = isPostgresUrl(PG_URL);

const templates = new Map<string, string>();
let made = 0;

/**
 * The VAULT_KEY of a service on PostgreSQL, which refuses to start without one: the key kept in `file`, made
 * there (mode 0600) on first use. A test that opens the same database again with `VAULT_KEY_FILE` reads the
 * same key, as on SQLite.
 */
export function vaultKeyIn(file: string): string {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

/** The URL of database `name` on the suite's server (or on `server`). */
export function pgUrlOf(name: string, server = PG_URL!): string {
  const u = new URL(server);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs one SQL command on the suite's server (its maintenance database), synchronously. */
export function psql(command: string, url = PG_URL!): string {
  const r = Bun.spawnSync(['psql', url, '-v', 'ON_ERROR_STOP=1', '-qAtc', command], { stderr: 'pipe', stdout: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`psql ${command.slice(0, 60)}: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}

/** The migrated template's name: one per set of migrations, so a changed migration gets a new one. */
function templateName(): string {
  const journal = readFileSync(join(PG_MIGRATIONS_DIR, 'meta/_journal.json'));
  const h = createHash('sha256').update(journal);
  for (const e of (JSON.parse(journal.toString()) as { entries: { tag: string }[] }).entries) {
    h.update(readFileSync(join(PG_MIGRATIONS_DIR, `${e.tag}.sql`)));
  }
  return `drs_template_${h.digest('hex').slice(0, 12)}`;
}

function ensureTemplate(server: string): string {
  const known = templates.get(server);
  if (known) return known;
  const name = templateName();
  const exists = psql(`SELECT 1 FROM pg_database WHERE datname = '${name}'`, server) === '1';
  if (!exists) {
    // Built under another name and renamed, so a run cut short never leaves a half-migrated template behind.
    const building = `${name}_${process.pid}`;
    psql(`CREATE DATABASE "${building}"`, server);
    const r = Bun.spawnSync(['bun', join(import.meta.dir, 'pg-migrate.ts'), pgUrlOf(building, server)], { stderr: 'pipe', stdout: 'pipe' });
    if (r.exitCode !== 0) throw new Error(`migrating the pg template: ${r.stderr.toString()}`);
    try {
      psql(`ALTER DATABASE "${building}" RENAME TO "${name}"`, server);
    } catch (e) {
      // Another test process made it first.
      psql(`DROP DATABASE IF EXISTS "${building}"`, server);
      if (!/already exists/.test((e as Error).message)) throw e;
    }
  }
  templates.set(server, name);
  return name;
}

/**
 * A new database cloned from the migrated template, on the suite's server or on `server`; `drop()` removes it.
 */
export function freshPgDatabase(server = PG_URL!): { url: string; name: string; drop(): void } {
  const tpl = ensureTemplate(server);
  const name = `drs_t_${process.pid}_${++made}_${Date.now().toString(36)}`;
  psql(`CREATE DATABASE "${name}" TEMPLATE "${tpl}"`, server);
  return {
    url: pgUrlOf(name, server),
    name,
    drop: () => {
      try {
        psql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, server);
      } catch {
        /* the server is gone: nothing to drop */
      }
    },
  };
}

type Param = string | number | bigint | boolean | null | Uint8Array;

/** A value as a SQL literal. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (v instanceof Uint8Array) return `'\\x${Buffer.from(v).toString('hex')}'::bytea`;
  return `'${String(v).replaceAll("'", "''")}'`;
}

/** SQLite's placeholders (`?`, `?N`, `$name`, `:name`, `@name`) replaced by the literals of `params`. */
function bind(text: string, params: unknown[]): string {
  const named = params.length === 1 && params[0] !== null && typeof params[0] === 'object' && !(params[0] instanceof Uint8Array) ? (params[0] as Record<string, unknown>) : null;
  let next = 0;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "'") {
      const end = text.indexOf("'", i + 1);
      out += text.slice(i, end + 1);
      i = end;
    } else if (ch === '?') {
      const m = /^\d+/.exec(text.slice(i + 1));
      if (m) {
        out += literal(params[Number(m[0]) - 1]);
        i += m[0].length;
      } else out += literal(params[next++]);
    } else if ((ch === '$' || ch === ':' || ch === '@') && named && /[A-Za-z_]/.test(text[i + 1] ?? '')) {
      const m = /^[A-Za-z_]\w*/.exec(text.slice(i + 1))!;
      out += literal(named[m[0]] ?? named[`${ch}${m[0]}`]);
      i += m[0].length;
    } else out += ch;
  }
  return out;
}

/**
 * The rows of a query (or of a write with RETURNING), as JSON, read on a connection kept for the test's reads
 * (pg-sync.ts), or from psql when the answer is too large for it. PostgreSQL folds an unquoted alias to
 * lower case (`AS lenderId` names the column lenderid) where SQLite keeps it as written: the aliases of the
 * statement are given back their case.
 */
function jsonRows(url: string, statement: string): Record<string, unknown>[] {
  const { query, recase } = asJsonQuery(statement);
  return recase(JSON.parse(jsonOf(url, query) ?? psql(query, url)) as Record<string, unknown>[]);
}

/** A statement's rows as one JSON array (numbers as numbers, bigints included), and the aliases' case given back. */
function asJsonQuery(statement: string): { query: string; recase: (rows: Record<string, unknown>[]) => Record<string, unknown>[] } {
  const s = statement.trim().replace(/;\s*$/, '');
  const query = /^\s*(SELECT|WITH|VALUES)\b/i.test(s) ? `SELECT coalesce(json_agg(q), '[]') AS j FROM (${s}) q` : `WITH q AS (${s}) SELECT coalesce(json_agg(q), '[]') AS j FROM q`;
  const cased = new Map<string, string>();
  for (const m of s.matchAll(/\bAS\s+([A-Za-z_]\w*)/gi)) if (m[1] !== m[1]!.toLowerCase()) cased.set(m[1]!.toLowerCase(), m[1]!);
  const recase = (rows: Record<string, unknown>[]) =>
    cased.size === 0 ? rows : rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [cased.get(k) ?? k, v])));
  return { query, recase };
}

/**
 * The rows of a query with SQLite's placeholders, read as jsonRows reads them but on a connection of the
 * runtime's pool rather than a psql process each: for tests that read the database after every step.
 */
export async function pooledRows(sql: SQL, text: string, params: unknown[]): Promise<Record<string, unknown>[]> {
  const { query, recase } = asJsonQuery(bind(text, params));
  const [row] = (await sql.unsafe(query)) as { j: unknown }[];
  const j = row?.j;
  return recase((typeof j === 'string' ? JSON.parse(j) : j) as Record<string, unknown>[]);
}

/**
 * What a test reads and writes its database with directly, on PostgreSQL: the part of bun:sqlite's Database a
 * test uses (`query(text).get/all/run`, `run`, `exec`), each call one psql command with SQLite's placeholders
 * bound as literals. SQL that only SQLite speaks fails here, naming the statement.
 */
export class PsqlDatabase {
  constructor(readonly url: string) {}

  query<R = Record<string, unknown>, _P = unknown>(text: string) {
    const url = this.url;
    return {
      get: (...params: Param[] | [Record<string, Param>]): R | null => (jsonRows(url, bind(text, params))[0] as R | undefined) ?? null,
      all: (...params: Param[] | [Record<string, Param>]): R[] => jsonRows(url, bind(text, params)) as R[],
      run: (...params: Param[] | [Record<string, Param>]) => this.run(text, ...params),
      values: (...params: Param[] | [Record<string, Param>]): unknown[][] => jsonRows(url, bind(text, params)).map((r) => Object.values(r)),
    };
  }

  run(text: string, ...params: Param[] | [Record<string, Param>]): { changes: number; lastInsertRowid: number } {
    const r = Bun.spawnSync(['psql', this.url, '-v', 'ON_ERROR_STOP=1', '-Atc', bind(text, params)], { stderr: 'pipe', stdout: 'pipe' });
    if (r.exitCode !== 0) throw new Error(`psql ${text.slice(0, 80)}: ${r.stderr.toString().trim()}`);
    const tag = /(?:INSERT \d+|UPDATE|DELETE) (\d+)\s*$/.exec(r.stdout.toString().trim());
    return { changes: tag ? Number(tag[1]) : 0, lastInsertRowid: 0 };
  }

  exec(text: string): void {
    psql(text, this.url);
  }

  close(): void {}
}
