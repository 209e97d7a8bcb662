// Moving a deployment between the engines: `bun run cli db copy --to postgres://…` copies the stopped service's
// SQLite file into an empty PostgreSQL database, `--to sqlite:PATH` copies its PostgreSQL database into a new
// SQLite file. The source is left as it is (read only), so going back is starting the old service again.
//
// What is copied is every table of the Drizzle schemas, in the order their foreign keys need (copyPlan): the
// two schemas list the same tables, column for column, so each column's values are carried as one of four
// kinds (an integer, a real, text, bytes) whichever engine stores them: SQLite's 0/1 flags are PostgreSQL's
// integer flags, its integers PostgreSQL's int8 or int4, a BLOB or bytes kept in a text column (the packed
// items of a batch) PostgreSQL's bytea. Sealed values are text like any other: the copy never opens them.
//
// Resuming: the target keeps a table of its own, db_copy_progress, while the copy runs: for each table the key
// of the last row copied and whether the table is done, written in the transaction of each batch, so what it
// says is exactly what the target holds. A copy cut short (killed, a lost connection) is run again with the
// same command: it skips the tables done, goes on after the last committed key in the table it was in, and
// drops the progress table once every table is verified. Rows are read from the source in key order (keyset
// pages, never a whole table), so a batch is the next rows after that key on either engine.
//
// Verifying: for every table, the row count and a checksum are computed the same way on both sides, reading
// the rows back from the target: each row's values in a canonical text (an integer in decimal, bytes in hex,
// text as it is), hashed (SHA-256), the hashes added up modulo 2^128. A sum does not depend on the order of
// the rows, so the text columns PostgreSQL sorts by its collation and SQLite byte by byte compare alike.
import { Database } from 'bun:sqlite';
import { SQL } from 'bun';
import { createHash } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { is } from 'drizzle-orm';
import { getTableConfig as sqliteTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core';
import { getTableConfig as pgTableConfig, PgTable } from 'drizzle-orm/pg-core';
import * as sqliteSchema from '../db/schema';
import * as pgSchema from '../db/schema-pg';
import { DatabaseInUseError, knownMigrations, lockDatabase, openDatabase, SchemaTooNewError } from '../src/platform/db';
import { applyPgMigrations, holdMigrationLock, knownPgMigrations, pgCode, redactedMessage, redactedUrl } from '../src/platform/pg';
import type { SealedColumn } from '../src/platform/vault';

/** Rows written in one transaction of the target by default. */
export const DEFAULT_BATCH_ROWS = 2000;
/** The most a batch may hold: PostgreSQL takes at most 65,535 parameters in one statement. */
export const MAX_BATCH_ROWS = 5000;
const PG_MAX_PARAMETERS = 65_535;

/** The target's record of a copy under way; never left behind by a copy that finished. */
export const PROGRESS_TABLE = 'db_copy_progress';

/**
 * Tables written by triggers of the migrations, with the tables whose rows set them off: each is copied after
 * those (their rows make the triggers write it), and what the triggers wrote is replaced by the source's rows.
 */
export const FILLED_BY_TRIGGERS: Readonly<Record<string, readonly string[]>> = { balance_backlog: ['batches'] };

/**
 * How long a PostgreSQL source is watched for a running replica: each records a run of its quarter-second jobs
 * (dispatch, balance processing, webhook delivery) in job_state several times a second.
 */
export const LIVE_REPLICA_WINDOW_MS = 2_000;

export class CopyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CopyError';
  }
}

export type ColumnKind = 'int' | 'real' | 'text' | 'bytes';

export interface CopyColumn {
  name: string;
  kind: ColumnKind;
}

export interface CopyTable {
  name: string;
  columns: CopyColumn[];
  /** Positions in `columns` of the key the rows are read in order of: the primary key, else a unique one. */
  key: number[];
  /** The column whose values the engine hands out (AUTOINCREMENT, an identity): its counter follows the copy. */
  identity: string | null;
}

/** How each pair of column types (SQLite's, PostgreSQL's) is carried. */
const KINDS: Record<string, ColumnKind> = {
  'integer/integer': 'int',
  'integer/bigint': 'int',
  'real/double precision': 'real',
  'text/text': 'text',
  'blob/bytea': 'bytes',
  // batch_payloads.items: compressed bytes in SQLite's text column (or the JSON text of an older payload).
  'text/bytea': 'bytes',
};

type AnyConfig = {
  name: string;
  columns: { name: string; primary: boolean; notNull: boolean; getSQLType(): string }[];
  primaryKeys: { columns: { name: string }[] }[];
  indexes: { config: { unique: boolean; columns: unknown[] } }[];
  foreignKeys: { reference(): { foreignTable: unknown } }[];
};

const sqliteTables = (): AnyConfig[] => Object.values(sqliteSchema).filter((t) => is(t, SQLiteTable)).map((t) => sqliteTableConfig(t as SQLiteTable) as unknown as AnyConfig);
const pgTables = (): AnyConfig[] => Object.values(pgSchema).filter((t) => is(t, PgTable)).map((t) => pgTableConfig(t as PgTable) as unknown as AnyConfig);

/** The names of the tables each schema declares, sorted. */
export function schemaTables(): { sqlite: string[]; postgres: string[] } {
  return { sqlite: sqliteTables().map((t) => t.name).sort(), postgres: pgTables().map((t) => t.name).sort() };
}

function keyOf(config: AnyConfig): string[] {
  if (config.primaryKeys.length > 0) return config.primaryKeys[0]!.columns.map((c) => c.name);
  const primary = config.columns.filter((c) => c.primary).map((c) => c.name);
  if (primary.length > 0) return primary;
  // No primary key (ingested_payments): a unique index over columns that are never null serves as one.
  for (const index of config.indexes) {
    if (!index.config.unique) continue;
    const names = index.config.columns.map((c) => (c as { name?: string }).name);
    if (names.every((n) => n !== undefined && config.columns.find((c) => c.name === n)?.notNull)) return names as string[];
  }
  throw new CopyError(`The table ${config.name} has no primary key nor unique key over columns that are never null: it cannot be copied in key order`);
}

/**
 * Every table of the schemas with how each column is carried, in an order that satisfies the foreign keys
 * (and puts a table the triggers write after the tables that set them off), by name otherwise.
 * Fails, naming the difference, when the two schemas do not declare the same tables and columns.
 */
export function copyPlan(): CopyTable[] {
  const sqlite = sqliteTables();
  const pg = new Map(pgTables().map((t) => [t.name, t]));
  const names = schemaTables();
  if (names.sqlite.join() !== names.postgres.join()) {
    const only = (a: string[], b: string[]) => a.filter((n) => !b.includes(n));
    throw new CopyError(`The schemas differ: only in db/schema: ${only(names.sqlite, names.postgres).join(', ') || '-'}; only in db/schema-pg: ${only(names.postgres, names.sqlite).join(', ') || '-'}`);
  }
  const tables = new Map<string, CopyTable>();
  const after = new Map<string, Set<string>>();
  const nameOf = (table: unknown) => (is(table, SQLiteTable) ? sqliteTableConfig(table).name : pgTableConfig(table as PgTable).name);
  for (const s of sqlite) {
    const p = pg.get(s.name)!;
    const sNames = s.columns.map((c) => c.name).sort().join();
    const pNames = p.columns.map((c) => c.name).sort().join();
    if (sNames !== pNames) throw new CopyError(`The schemas differ in the columns of ${s.name}: ${sNames} / ${pNames}`);
    const columns = s.columns.map((c): CopyColumn => {
      const pc = p.columns.find((x) => x.name === c.name)!;
      const pair = `${c.getSQLType()}/${pc.getSQLType().replace(/\s+COLLATE\s+.*$/i, '')}`;
      const kind = KINDS[pair];
      if (!kind) throw new CopyError(`${s.name}.${c.name}: no way to carry a ${pair.replace('/', ' column into a ')} column`);
      return { name: c.name, kind };
    });
    const keyNames = keyOf(s);
    if (keyNames.join() !== keyOf(p).join()) throw new CopyError(`The schemas differ in the key of ${s.name}`);
    const autoIncrement = s.columns.find((c) => (c as { autoIncrement?: boolean }).autoIncrement)?.name ?? null;
    const identity = p.columns.find((c) => (c as { generatedIdentity?: unknown }).generatedIdentity)?.name ?? null;
    if (autoIncrement !== identity) throw new CopyError(`The schemas differ in the generated ids of ${s.name}`);
    tables.set(s.name, { name: s.name, columns, key: keyNames.map((n) => columns.findIndex((c) => c.name === n)), identity });
    const deps = new Set<string>();
    for (const fk of [...s.foreignKeys, ...p.foreignKeys]) deps.add(nameOf(fk.reference().foreignTable));
    for (const source of FILLED_BY_TRIGGERS[s.name] ?? []) deps.add(source);
    deps.delete(s.name);
    after.set(s.name, deps);
  }
  // By name, each table moved after what it needs (each pass places at least one table).
  const ordered: CopyTable[] = [];
  const placed = new Set<string>();
  const byName = [...tables.keys()].sort();
  while (ordered.length < tables.size) {
    const next = byName.find((n) => !placed.has(n) && [...after.get(n)!].every((d) => placed.has(d)));
    if (!next) throw new CopyError(`The foreign keys of ${byName.filter((n) => !placed.has(n)).join(', ')} form a cycle`);
    placed.add(next);
    ordered.push(tables.get(next)!);
  }
  return ordered;
}

// ---- values --------------------------------------------------------------------------------------------

/** A value as the copy carries it, whichever engine it came from. */
type Value = bigint | number | Uint8Array | string | null;

/** A stored value as the kind of its column: an integer as bigint, a real as number, bytes, text. */
function carried(t: CopyTable, c: CopyColumn, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (c.kind) {
    case 'int':
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
      // PostgreSQL's int8, as Bun's client reads it.
      if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
      break;
    case 'real':
      if (typeof v === 'number') return v;
      if (typeof v === 'bigint') return Number(v);
      break;
    case 'bytes':
      if (v instanceof Uint8Array) return v;
      // Text kept where bytes are expected (a payload's items from before they were compressed): its bytes.
      if (typeof v === 'string') return Buffer.from(v, 'utf8');
      break;
    case 'text':
      if (typeof v === 'string') return v;
      break;
  }
  // The value itself stays out of the message: it may be personal data.
  throw new CopyError(`${t.name}.${c.name} holds a value of type ${v instanceof Uint8Array ? 'bytes' : typeof v} where the schema has ${c.kind}: nothing more was copied`);
}

/** The canonical text of a carried value: the same on both engines for the same value. */
function canonical(v: Value): string | null {
  if (v === null) return null;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
}

/** A key as the progress table keeps it: each column's canonical text. */
type KeyText = (string | null)[];

const keyText = (t: CopyTable, row: unknown[]): KeyText => t.key.map((i) => canonical(carried(t, t.columns[i]!, row[i])));

/** A key kept as text, as a carried value again. */
function keyValue(t: CopyTable, key: KeyText): Value[] {
  return t.key.map((i, n) => {
    const text = key[n] ?? null;
    if (text === null) return null;
    const kind = t.columns[i]!.kind;
    if (kind === 'int') return BigInt(text);
    if (kind === 'real') return Number(text);
    if (kind === 'bytes') return Buffer.from(text, 'hex');
    return text;
  });
}

const MOD_128 = (1n << 128n) - 1n;

/** One row's share of its table's checksum: the first 128 bits of the SHA-256 of its canonical text. */
function rowHash(t: CopyTable, row: unknown[]): bigint {
  const text = JSON.stringify(row.map((v, i) => canonical(carried(t, t.columns[i]!, v))));
  const digest = createHash('sha256').update(text).digest();
  return (digest.readBigUInt64BE(0) << 64n) | digest.readBigUInt64BE(8);
}

// ---- the two engines -----------------------------------------------------------------------------------

const q = (name: string) => `"${name}"`;
const columnList = (t: CopyTable) => t.columns.map((c) => q(c.name)).join(', ');
const keyList = (t: CopyTable) => t.key.map((i) => q(t.columns[i]!.name)).join(', ');

/** A database as the copy reads it: a table's rows after a key, in key order. */
interface Side {
  readonly engine: 'sqlite' | 'postgres';
  /** Where it is, safe to print (a PostgreSQL URL with its password hidden). */
  readonly where: string;
  /** At most `limit` rows after `after` (from the start when null), in key order, as the engine stores them. */
  rows(t: CopyTable, after: KeyText | null, limit: number): Promise<unknown[][]>;
  count(t: CopyTable): Promise<number>;
  close(): Promise<void>;
}

interface Source extends Side {
  /** Whether the migrations applied are those this version knows, and how many each has. */
  migrations(): Promise<{ applied: number; known: number }>;
  /** The highest id the engine has handed out in the table's generated column (deleted rows included). */
  lastIssuedId(t: CopyTable): Promise<bigint | null>;
  /** The vault key ids the sealed values of a column are under. */
  sealedKeyIds(c: SealedColumn): Promise<string[]>;
}

interface Target extends Side {
  /** The progress of a copy under way, or null when none is (no progress table). */
  progress(): Promise<Map<string, string> | null>;
  /** Tables of the plan that hold rows (tables not created yet count as empty). */
  filled(plan: CopyTable[]): Promise<string[]>;
  migrate(): Promise<void>;
  /** Creates the progress table with the source's name in it. */
  begin(source: string): Promise<void>;
  /**
   * One transaction: what the target's triggers wrote in the table first when `clear`, the rows, and the
   * table's progress.
   */
  write(t: CopyTable, rows: Value[][], clear: boolean, progress: string): Promise<void>;
  /** The table's id counter past `floor` and past every id it holds. */
  advanceIds(t: CopyTable, floor: bigint | null): Promise<void>;
  finish(): Promise<void>;
}

const progressKey = (t: CopyTable) => `table:${t.name}`;

function sqliteRowsQuery(t: CopyTable, after: boolean): string {
  const where = after ? ` WHERE (${keyList(t)}) > (${t.key.map(() => '?').join(', ')})` : '';
  return `SELECT ${columnList(t)} FROM ${q(t.name)}${where} ORDER BY ${keyList(t)} LIMIT ?`;
}

function pgRowsQuery(t: CopyTable, after: boolean): string {
  const where = after ? ` WHERE (${keyList(t)}) > (${t.key.map((_, i) => `$${i + 1}`).join(', ')})` : '';
  return `SELECT ${columnList(t)} FROM ${q(t.name)}${where} ORDER BY ${keyList(t)} LIMIT $${after ? t.key.length + 1 : 1}`;
}

/** A carried value as a parameter of Bun's PostgreSQL client (an int8 as its decimal text). */
const pgParam = (v: Value) => (typeof v === 'bigint' ? v.toString() : v);

function sqliteReads(db: Database) {
  return {
    async rows(t: CopyTable, after: KeyText | null, limit: number): Promise<unknown[][]> {
      const stmt = db.query(sqliteRowsQuery(t, after !== null)).safeIntegers(true);
      return stmt.values(...([...(after ? keyValue(t, after) : []), limit] as never[])) as unknown[][];
    },
    async count(t: CopyTable): Promise<number> {
      return (db.query(`SELECT COUNT(*) AS n FROM ${q(t.name)}`).get() as { n: number }).n;
    },
  };
}

function pgReads(sql: SQL) {
  return {
    async rows(t: CopyTable, after: KeyText | null, limit: number): Promise<unknown[][]> {
      const params = [...(after ? keyValue(t, after).map(pgParam) : []), limit];
      return (await sql.unsafe(pgRowsQuery(t, after !== null), params).values()) as unknown[][];
    },
    async count(t: CopyTable): Promise<number> {
      const [row] = (await sql.unsafe(`SELECT count(*)::text AS n FROM ${q(t.name)}`)) as { n: string }[];
      return Number(row!.n);
    },
  };
}

/** The key id of a sealed value (`v1.<key id>.<iv>.<body>`), in SQL of each engine. */
const SQLITE_KEY_ID = (c: string) => `substr(${c}, 4, instr(substr(${c}, 4), '.') - 1)`;

/** A stopped service's SQLite file, read only; the file lock is held so that no service starts on it meanwhile. */
function sqliteSource(path: string): Source {
  if (!existsSync(path)) throw new CopyError(`There is no database at ${path} (DATABASE_PATH): nothing to copy`);
  const lock = lockOrRefuse(path, 'source');
  const db = new Database(path, { readonly: true, strict: true });
  db.exec('PRAGMA busy_timeout = 5000');
  return {
    engine: 'sqlite',
    where: path,
    ...sqliteReads(db),
    async migrations() {
      const known = knownMigrations().length;
      if (!db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get()) return { applied: 0, known };
      return { applied: (db.query('SELECT COUNT(*) AS n FROM __drizzle_migrations').get() as { n: number }).n, known };
    },
    async lastIssuedId(t) {
      const row = db.query('SELECT seq FROM sqlite_sequence WHERE name = ?').safeIntegers(true).get(t.name) as { seq: bigint } | null;
      return row?.seq ?? null;
    },
    async sealedKeyIds({ table, column }) {
      const rows = db.query(`SELECT DISTINCT ${SQLITE_KEY_ID(column)} AS kid FROM ${table} WHERE ${column} LIKE 'v1.%'`).all() as { kid: string }[];
      return rows.map((r) => r.kid);
    },
    async close() {
      db.close();
      lock.release();
    },
  };
}

/** A new or empty SQLite file, migrated as a start migrates it; the file lock is held for the copy. */
function sqliteTarget(path: string): Target {
  const lock = lockOrRefuse(path, 'target');
  let handle: ReturnType<typeof openDatabase> | null = null;
  const db = () => {
    if (!handle) throw new Error('the target is not migrated yet');
    return handle.sqlite;
  };
  const existing = (name: string, of: Database) => !!of.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name);
  /** The file as it is before anything is written to it (a read-only look; nothing when it does not exist). */
  const peek = <T>(fn: (of: Database) => T, otherwise: T): T => {
    if (handle) return fn(handle.sqlite);
    if (!existsSync(path)) return otherwise;
    const of = new Database(path, { readonly: true });
    try {
      return fn(of);
    } finally {
      of.close();
    }
  };
  return {
    engine: 'sqlite',
    where: path,
    rows: (t, after, limit) => sqliteReads(db()).rows(t, after, limit),
    count: (t) => sqliteReads(db()).count(t),
    async progress() {
      return peek((of) => {
        if (!existing(PROGRESS_TABLE, of)) return null;
        const rows = of.query(`SELECT name, state FROM ${PROGRESS_TABLE}`).all() as { name: string; state: string }[];
        return new Map(rows.map((r) => [r.name, r.state]));
      }, null);
    },
    async filled(plan) {
      return peek((of) => plan.filter((t) => existing(t.name, of) && of.query(`SELECT 1 FROM ${q(t.name)} LIMIT 1`).get()).map((t) => t.name), []);
    },
    async migrate() {
      handle = openDatabase(path);
    },
    async begin(source) {
      const d = db();
      d.transaction(() => {
        d.exec(`CREATE TABLE IF NOT EXISTS ${PROGRESS_TABLE} (name TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL)`);
        d.query(`INSERT INTO ${PROGRESS_TABLE} (name, state) VALUES ('source', ?)`).run(source);
      }).immediate();
    },
    async write(t, rows, clear, progress) {
      const d = db();
      // Prepared once per table (bun:sqlite keeps a statement per text), run once per row.
      const insert = d.query(`INSERT INTO ${q(t.name)} (${columnList(t)}) VALUES (${t.columns.map(() => '?').join(', ')})`);
      const record = d.query(`INSERT INTO ${PROGRESS_TABLE} (name, state) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET state = excluded.state`);
      d.transaction(() => {
        if (clear) d.exec(`DELETE FROM ${q(t.name)}`);
        for (const row of rows) insert.run(...(row as never[]));
        record.run(progressKey(t), progress);
      }).immediate();
    },
    async advanceIds(t, floor) {
      if (!t.identity) return;
      const d = db();
      const held = (d.query(`SELECT MAX(${q(t.identity)}) AS m FROM ${q(t.name)}`).safeIntegers(true).get() as { m: bigint | null }).m;
      const next = highest(floor, held);
      if (next === null) return;
      // sqlite_sequence: the AUTOINCREMENT counters, one row per table that has handed out an id.
      d.transaction(() => {
        const changed = d.query('UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?').run(next, t.name).changes;
        if (changed === 0) d.query('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)').run(t.name, next);
      }).immediate();
    },
    async finish() {
      db().exec(`DROP TABLE IF EXISTS ${PROGRESS_TABLE}`);
    },
    async close() {
      handle?.close();
      lock.release();
    },
  };
}

/** The higher of two ids, null when neither is an id (SQLite keeps a counter of 0 for a table that never had one). */
const highest = (a: bigint | null, b: bigint | null): bigint | null => {
  const top = a === null ? b : b === null || a > b ? a : b;
  return top !== null && top > 0n ? top : null;
};

function lockOrRefuse(path: string, role: 'source' | 'target'): { release(): void } {
  try {
    return lockDatabase(path);
  } catch (e) {
    if (!(e instanceof DatabaseInUseError)) throw e;
    const running = e.message.match(/\(PID \d+\)/)?.[0] ?? '';
    throw new CopyError(
      role === 'source'
        ? `The service is running on ${path}${running ? ` ${running}` : ''}: stop it first. The copy reads a stopped service's database, so that nothing changes while it is copied.`
        : `A service is running on ${path}${running ? ` ${running}` : ''}: the copy writes only into a database no service uses.`,
    );
  }
}

/** The database server's time in milliseconds, in SQL (as the leases are written). */
const PG_NOW = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/** A stopped service's PostgreSQL database: refused while a replica runs on it; no replica starts meanwhile. */
async function pgSource(url: string, liveWindowMs: number): Promise<Source> {
  const sql = new SQL(url, { max: 2, idleTimeout: 30, connectionTimeout: 10 });
  const where = redactedUrl(url);
  let release: (() => Promise<void>) | null = null;
  try {
    // A start applies the migrations under this lock: held, a replica starting now waits for the copy to end.
    release = await holdMigrationLock(sql);
    if (!release) throw new CopyError(`A replica is starting on ${where} (it holds the migrations' lock): stop every replica first.`);
    await refuseLiveReplicas(sql, where, liveWindowMs);
  } catch (e) {
    await release?.();
    await sql.close();
    throw e;
  }
  return {
    engine: 'postgres',
    where,
    ...pgReads(sql),
    async migrations() {
      const known = knownPgMigrations().length;
      const [{ exists }] = (await sql`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS exists`) as { exists: boolean }[];
      if (!exists) return { applied: 0, known };
      const [row] = (await sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`) as { n: number }[];
      return { applied: row!.n, known };
    },
    async lastIssuedId(t) {
      if (!t.identity) return null;
      const [row] = (await sql.unsafe(`SELECT pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass)::text AS v`, [t.name, t.identity])) as { v: string | null }[];
      return row?.v == null ? null : BigInt(row.v);
    },
    async sealedKeyIds({ table, column }) {
      const rows = (await sql.unsafe(`SELECT DISTINCT split_part(${column}, '.', 2) AS kid FROM ${table} WHERE ${column} LIKE 'v1.%'`)) as { kid: string }[];
      return rows.map((r) => r.kid);
    },
    async close() {
      await release?.();
      await sql.close();
    },
  };
}

/**
 * Refuses a source a replica runs on: a lease not yet run out (a replica doing one-at-a-time work, or one
 * stopped without letting go, whose leases hold until their time), or job runs recorded while it watches.
 */
async function refuseLiveReplicas(sql: SQL, where: string, windowMs: number): Promise<void> {
  const leases = (await sql.unsafe(`SELECT name, owner, (until - ${PG_NOW})::text AS left FROM leases WHERE until > ${PG_NOW} ORDER BY until DESC LIMIT 3`)) as {
    name: string;
    owner: string;
    left: string;
  }[];
  if (leases.length > 0) {
    const l = leases[0]!;
    const seconds = Math.ceil(Number(l.left) / 1000);
    throw new CopyError(
      `A replica holds work on ${where}: replica ${l.owner} holds the lease ${l.name} for another ${seconds} s. Stop every replica first; ` +
        `a replica stopped without letting go (killed) holds its leases until they run out: run the copy again after that.`,
    );
  }
  const runs = async () => {
    const rows = (await sql`SELECT name, (runs + failures)::text AS n FROM job_state ORDER BY name`) as { name: string; n: string }[];
    return new Map(rows.map((r) => [r.name, r.n]));
  };
  const before = await runs();
  await Bun.sleep(windowMs);
  const now = await runs();
  const moved = [...now].find(([name, n]) => before.get(name) !== n);
  if (moved) {
    throw new CopyError(`A replica is running on ${where}: it recorded a run of the job ${moved[0]} just now. Stop every replica first.`);
  }
}

/** An empty PostgreSQL database, migrated as a start migrates it; no service starts on it during the copy. */
function pgTarget(url: string): Target {
  const sql = new SQL(url, { max: 2, idleTimeout: 30, connectionTimeout: 10 });
  let release: (() => Promise<void>) | null = null;
  const where = redactedUrl(url);
  const reads = pgReads(sql);
  const exists = async (name: string) => ((await sql.unsafe(`SELECT to_regclass($1) IS NOT NULL AS e`, [`public.${name}`])) as { e: boolean }[])[0]!.e;
  return {
    engine: 'postgres',
    where,
    ...reads,
    async progress() {
      if (!(await exists(PROGRESS_TABLE))) return null;
      const rows = (await sql.unsafe(`SELECT name, state FROM ${PROGRESS_TABLE}`)) as { name: string; state: string }[];
      return new Map(rows.map((r) => [r.name, r.state]));
    },
    async filled(plan) {
      const out: string[] = [];
      for (const t of plan) {
        if (!(await exists(t.name))) continue;
        if (((await sql.unsafe(`SELECT 1 FROM ${q(t.name)} LIMIT 1`)) as unknown[]).length > 0) out.push(t.name);
      }
      return out;
    },
    async migrate() {
      await applyPgMigrations(url);
      release = await holdMigrationLock(sql);
      if (!release) throw new CopyError(`A service is starting on ${where} (it holds the migrations' lock): the copy writes only into a database no service uses.`);
    },
    async begin(source) {
      await sql.begin(async (tx) => {
        await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${PROGRESS_TABLE} (name text PRIMARY KEY, state text NOT NULL)`);
        await tx.unsafe(`INSERT INTO ${PROGRESS_TABLE} (name, state) VALUES ('source', $1)`, [source]);
      });
    },
    async write(t, rows, clear, progress) {
      const width = t.columns.length;
      // One statement for the whole batch (its text the same for every full batch, so prepared once).
      const values = rows.map((_, r) => `(${t.columns.map((__, c) => `$${r * width + c + 1}`).join(', ')})`).join(', ');
      await sql.begin(async (tx) => {
        if (clear) await tx.unsafe(`DELETE FROM ${q(t.name)}`);
        if (rows.length > 0) await tx.unsafe(`INSERT INTO ${q(t.name)} (${columnList(t)}) VALUES ${values}`, rows.flat().map(pgParam));
        await tx.unsafe(`INSERT INTO ${PROGRESS_TABLE} (name, state) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET state = excluded.state`, [progressKey(t), progress]);
      });
    },
    async advanceIds(t, floor) {
      if (!t.identity) return;
      const [row] = (await sql.unsafe(`SELECT MAX(${q(t.identity)})::text AS m FROM ${q(t.name)}`)) as { m: string | null }[];
      const held = row?.m == null ? null : BigInt(row.m);
      const next = highest(floor, held);
      if (next === null) return;
      await sql.unsafe(`SELECT setval(pg_get_serial_sequence($1, $2), GREATEST($3::bigint, COALESCE(pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass), 0)))`, [
        t.name,
        t.identity,
        next.toString(),
      ]);
    },
    async finish() {
      await sql.unsafe(`DROP TABLE IF EXISTS ${PROGRESS_TABLE}`);
      // The planner's statistics of tables filled at once, before the first query of the service needs them
      // (autovacuum would gather them only later).
      await sql.unsafe('ANALYZE');
    },
    async close() {
      await release?.();
      await sql.close();
    },
  };
}

// ---- the copy ------------------------------------------------------------------------------------------

export type Endpoint = { engine: 'sqlite'; path: string } | { engine: 'postgres'; url: string };

/** `--to`'s value: `postgres://…` (or `postgresql://…`), or `sqlite:PATH`. */
export function parseTarget(text: string | undefined): Endpoint {
  if (text && /^postgres(ql)?:\/\/[^/]/i.test(text)) return { engine: 'postgres', url: text };
  if (text?.startsWith('sqlite:') && text.length > 'sqlite:'.length) return { engine: 'sqlite', path: text.slice('sqlite:'.length) };
  throw new CopyError('Name the target with --to postgres://user:password@host:5432/database or --to sqlite:PATH');
}

export interface CopyOptions {
  source: Endpoint;
  target: Endpoint;
  /** The columns holding sealed values, and the vault key ids the service will open them with. */
  sealed: { columns: SealedColumn[]; holdsKey(id: string): boolean };
  batchRows?: number;
  /** Where progress lines go (the CLI: standard error). */
  progress?: (line: string) => void;
  /** How long a PostgreSQL source is watched for a running replica. */
  liveWindowMs?: number;
}

export interface TableReport {
  table: string;
  rows: number;
  checksum: string;
}

export interface CopyReport {
  tables: TableReport[];
  rows: number;
  resumed: boolean;
}

interface TableProgress {
  /** The key of the last row copied, or null before the first. */
  after: KeyText | null;
  rows: number;
  done: boolean;
}

/** The name a source is known by in the target's progress: a copy is resumed only from the same source. */
function sourceName(source: Endpoint): string {
  if (source.engine === 'postgres') return redactedUrl(source.url);
  return `sqlite:${realpathSync(source.path)}`;
}

const percent = (done: number, total: number) => (total === 0 ? 100 : Math.min(100, Math.floor((done * 100) / total)));

/** A database's error, with no value of a row in it (PostgreSQL quotes a refused value in a data exception's message). */
function safeMessage(e: unknown, urls: string[]): string {
  if (e instanceof CopyError) return e.message;
  const code = pgCode(e);
  if (code?.startsWith('22')) return `a value was refused (SQLSTATE ${code})`;
  let message = (e as Error)?.message ?? String(e);
  for (const url of urls) message = redactedMessage(message, url);
  return code ? `${message} (SQLSTATE ${code})` : message;
}

/**
 * Copies every table of the source into the target, verifies each, and advances the id counters. Refuses
 * (CopyError, nothing written) a running source, a target that holds data of its own, sealed values under a
 * key the service will not have; runs again after an interruption from where it was.
 */
export async function copyDatabase(opts: CopyOptions): Promise<CopyReport> {
  const plan = copyPlan();
  const limit = Math.max(1, Math.min(opts.batchRows ?? DEFAULT_BATCH_ROWS, MAX_BATCH_ROWS));
  const say = opts.progress ?? (() => {});
  if (opts.source.engine === opts.target.engine) {
    throw new CopyError(`The source and the target are both ${opts.source.engine}: the copy moves a deployment to the other engine (a copy on the same engine is a backup: docs/operations.md "Backup and restore")`);
  }
  const urls = [opts.source, opts.target].flatMap((e) => (e.engine === 'postgres' ? [e.url] : []));
  let source: Source | null = null;
  let target: Target | null = null;
  /** What the copy was doing, for the message should it stop. */
  let step = 'opening the databases';
  try {
    source = opts.source.engine === 'sqlite' ? sqliteSource(opts.source.path) : await pgSource(opts.source.url, opts.liveWindowMs ?? LIVE_REPLICA_WINDOW_MS);
    const m = await source.migrations();
    if (m.applied !== m.known) {
      throw new CopyError(
        m.applied > m.known
          ? `The source was written by a newer version of this service (${m.applied} migrations, this version knows ${m.known}): copy it with that version.`
          : `The source's schema is older than this version's (${m.applied} of ${m.known} migrations): start this version's service on it once (it applies them), stop it, then copy.`,
      );
    }
    await refuseForeignKeys(source, opts.sealed);
    target = opts.target.engine === 'sqlite' ? sqliteTarget(opts.target.path) : pgTarget(opts.target.url);
    const name = sourceName(opts.source);
    const existing = await target.progress();
    if (existing) {
      if (existing.get('source') !== name) {
        throw new CopyError(`${target.where} holds an unfinished copy of another database (${existing.get('source')}): run the copy from that one, or give an empty target.`);
      }
    } else {
      const filled = await target.filled(plan);
      if (filled.length > 0) {
        throw new CopyError(`${target.where} is not empty (rows in ${filled.slice(0, 5).join(', ')}${filled.length > 5 ? ', …' : ''}): the copy writes only into an empty database.`);
      }
    }
    await target.migrate();
    if (!existing) await target.begin(name);
    const progress = existing ?? new Map<string, string>();
    say(`${existing ? 'Resuming the copy' : 'Copying'} ${source.where} → ${target.where} (${plan.length} tables, batches of ${limit} rows)`);

    for (const t of plan) {
      step = `copying ${t.name}`;
      const kept = progress.get(progressKey(t));
      const state: TableProgress = kept ? (JSON.parse(kept) as TableProgress) : { after: null, rows: 0, done: false };
      if (state.done) {
        say(`  ${t.name}: already copied (${state.rows} rows)`);
        continue;
      }
      const total = await source.count(t);
      // PostgreSQL takes at most 65,535 parameters in one statement: a wide table's batch is shorter.
      const rowsPerBatch = Math.max(1, Math.min(limit, Math.floor(PG_MAX_PARAMETERS / t.columns.length)));
      let shown = 0;
      for (;;) {
        const raw = await source.rows(t, state.after, rowsPerBatch);
        const rows = raw.map((r) => r.map((v, i) => carried(t, t.columns[i]!, v)));
        const clear = state.after === null && state.rows === 0;
        const next: TableProgress = {
          after: raw.length > 0 ? keyText(t, raw[raw.length - 1]!) : state.after,
          rows: state.rows + raw.length,
          done: raw.length < rowsPerBatch,
        };
        await target.write(t, rows, clear, JSON.stringify(next));
        Object.assign(state, next);
        if (state.done || performance.now() - shown >= 1_000) {
          shown = performance.now();
          say(`  ${t.name}: ${state.rows} / ${Math.max(total, state.rows)} rows (${percent(state.rows, total)}%)`);
        }
        if (state.done) break;
      }
    }

    for (const t of plan) {
      step = `advancing the ids of ${t.name}`;
      await target.advanceIds(t, await source.lastIssuedId(t));
    }

    say('Verifying: row counts and checksums of every table, the target read back');
    const tables: TableReport[] = [];
    const differ: string[] = [];
    for (const t of plan) {
      step = `verifying ${t.name}`;
      const [a, b] = [await tableSum(source, t, limit), await tableSum(target, t, limit)];
      const checksum = b.sum.toString(16).padStart(32, '0');
      if (a.rows !== b.rows || a.sum !== b.sum) {
        differ.push(a.rows !== b.rows ? `${t.name} (${a.rows} rows in the source, ${b.rows} in the target)` : `${t.name} (checksums differ)`);
        say(`  ${t.name}: DIFFERS`);
      } else say(`  ${t.name}: ${b.rows} rows, checksum ${checksum.slice(0, 12)} ok`);
      tables.push({ table: t.name, rows: b.rows, checksum });
    }
    if (differ.length > 0) {
      throw new CopyError(
        `The copy does not match the source in ${differ.join(', ')}. The source is unchanged; drop the target (or remove its file) and run the copy again into an empty one.`,
      );
    }
    await target.finish();
    return { tables, rows: tables.reduce((n, t) => n + t.rows, 0), resumed: existing !== null };
  } catch (e) {
    if (e instanceof CopyError) throw e;
    if (e instanceof SchemaTooNewError) throw new CopyError(`${opts.target.engine === 'sqlite' ? opts.target.path : redactedUrl(opts.target.url)}: ${e.message}`);
    throw new CopyError(`The copy stopped while ${step}: ${safeMessage(e, urls)}. What was committed stays in the target: run the same command again to go on.`);
  } finally {
    await target?.close().catch(() => undefined);
    await source?.close().catch(() => undefined);
  }
}

/** The rows of a table and the sum of their hashes, read in key order a batch at a time. */
async function tableSum(side: Side, t: CopyTable, limit: number): Promise<{ rows: number; sum: bigint }> {
  let after: KeyText | null = null;
  let rows = 0;
  let sum = 0n;
  for (;;) {
    const batch = await side.rows(t, after, limit);
    for (const row of batch) sum = (sum + rowHash(t, row)) & MOD_128;
    rows += batch.length;
    if (batch.length < limit) return { rows, sum };
    after = keyText(t, batch[batch.length - 1]!);
  }
}

/**
 * Refuses, before anything is written, a source whose sealed values are under a vault key the service on the
 * target will not hold (VAULT_KEY and VAULT_OLD_KEYS): the copy would be complete and nothing sealed would open.
 */
async function refuseForeignKeys(source: Source, sealed: CopyOptions['sealed']): Promise<void> {
  const missing = new Set<string>();
  for (const c of sealed.columns) for (const kid of await source.sealedKeyIds(c)) if (!sealed.holdsKey(kid)) missing.add(kid);
  if (missing.size > 0) {
    throw new CopyError(
      `Values in the source are sealed under vault key id ${[...missing].join(', ')}, which VAULT_KEY (and VAULT_OLD_KEYS) do not hold: ` +
        'run the copy with the vault key the service uses (on SQLite, the content of its vault.key file), the same key the service on the target will have.',
    );
  }
}

/** Where the source is, from the service's own settings (DATABASE_URL, else DATABASE_PATH). */
export function sourceOf(config: { databaseUrl: string | null; databasePath: string }): Endpoint {
  return config.databaseUrl ? { engine: 'postgres', url: config.databaseUrl } : { engine: 'sqlite', path: resolve(config.databasePath) };
}
