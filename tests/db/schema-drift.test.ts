// engine: once
// The PostgreSQL schema (db/schema-pg, its table files generated from db/schema) and the SQLite one cannot
// drift apart: the kits' types, the hand-written triggers and the migrations are what generation does not
// cover. Both schemas are read with
// drizzle's getTableConfig into one engine-neutral shape per table (columns with their kind, nullability,
// default, enum values and identity; the primary key; unique constraints; indexes with their columns,
// uniqueness and predicate; checks; foreign keys) and the shapes must be equal. Every SQLite trigger the
// migrations leave in place must have a PostgreSQL trigger of the same name, table, event and condition, and
// the pg migrations must hold everything db/schema-pg declares.
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Column, getTableName, is, SQL, StringChunk, Table } from 'drizzle-orm';
import { getTableConfig as pgTableConfig, PgTable, pgTable, text } from 'drizzle-orm/pg-core';
import { getTableConfig as sqliteTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core';
import { generateDrizzleJson, generateMigration } from 'drizzle-kit/api';
import * as sqliteSchema from '../../db/schema';
import * as pgSchema from '../../db/schema-pg';
import { flag, ident, ms } from '../../db/schema-pg/columns';

const ROOT = join(import.meta.dir, '../..');

// ---- one shape for a table of either engine -------------------------------------------------------------

interface ColumnShape {
  kind: 'integer' | 'flag' | 'text' | 'real' | 'bytes' | string;
  notNull: boolean;
  default: string | null;
  enum: readonly string[] | null;
  /** SQLite AUTOINCREMENT; an identity column in PostgreSQL. */
  generated: boolean;
}

interface TableShape {
  columns: Record<string, ColumnShape>;
  primaryKey: string[];
  unique: Record<string, string[]>;
  indexes: Record<string, { columns: string[]; unique: boolean; where: string | null }>;
  checks: Record<string, string>;
  foreignKeys: Record<string, { columns: string[]; table: string; references: string[]; onDelete: string; onUpdate: string }>;
}

/** SQL as engine-neutral text: columns by their name, whitespace collapsed. */
function render(value: SQL): string {
  const out: string[] = [];
  for (const chunk of value.queryChunks) {
    if (is(chunk, StringChunk)) out.push(chunk.value.join(''));
    else if (is(chunk, Column)) out.push(chunk.name);
    else if (is(chunk, SQL)) out.push(render(chunk));
    else out.push(String(chunk));
  }
  return out.join('').replace(/\s+/g, ' ').trim();
}

function renderDefault(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (is(value, SQL)) return render(value);
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (typeof value === 'string') return `'${value}'`;
  return String(value);
}

const SQLITE_KINDS: Record<string, ColumnShape['kind']> = { integer: 'integer', text: 'text', real: 'real', blob: 'bytes' };
const PG_KINDS: Record<string, ColumnShape['kind']> = {
  bigint: 'integer',
  integer: 'integer',
  text: 'text',
  'text COLLATE "C"': 'text',
  'double precision': 'real',
  bytea: 'bytes',
};

type AnyConfig = ReturnType<typeof sqliteTableConfig> | ReturnType<typeof pgTableConfig>;

function shapeOf(config: AnyConfig, columnShape: (c: Column) => ColumnShape): TableShape {
  const columns: Record<string, ColumnShape> = {};
  const unique: TableShape['unique'] = {};
  let primaryKey: string[] = [];
  for (const c of config.columns as Column[]) {
    columns[c.name] = columnShape(c);
    if (c.primary) primaryKey = [c.name];
    if (c.isUnique) unique[c.uniqueName ?? `${config.name}_${c.name}_unique`] = [c.name];
  }
  for (const pk of config.primaryKeys) primaryKey = pk.columns.map((c) => c.name);
  for (const u of config.uniqueConstraints) unique[u.getName()!] = u.columns.map((c) => c.name);
  const indexes: TableShape['indexes'] = {};
  for (const i of config.indexes) {
    indexes[i.config.name!] = {
      columns: (i.config.columns as unknown[]).map((c) => (is(c, SQL) ? render(c) : (c as { name: string }).name)),
      unique: !!i.config.unique,
      where: i.config.where ? render(i.config.where) : null,
    };
  }
  const checks: TableShape['checks'] = {};
  for (const c of config.checks) checks[c.name] = render(c.value);
  const foreignKeys: TableShape['foreignKeys'] = {};
  for (const fk of config.foreignKeys) {
    const ref = fk.reference();
    foreignKeys[fk.getName()] = {
      columns: ref.columns.map((c) => c.name),
      table: getTableName(ref.foreignTable as Table),
      references: ref.foreignColumns.map((c) => c.name),
      onDelete: fk.onDelete ?? 'no action',
      onUpdate: fk.onUpdate ?? 'no action',
    };
  }
  return { columns, primaryKey, unique, indexes, checks, foreignKeys };
}

function sqliteShape(table: SQLiteTable): TableShape {
  return shapeOf(sqliteTableConfig(table), (c) => ({
    kind: c.dataType === 'boolean' ? 'flag' : (SQLITE_KINDS[c.getSQLType()] ?? c.getSQLType()),
    notNull: c.notNull,
    default: renderDefault(c.default),
    enum: c.enumValues ?? null,
    generated: !!(c as { autoIncrement?: boolean }).autoIncrement,
  }));
}

// Where the engines store a column differently on purpose: batch_payloads.items holds the compressed items, a
// BLOB that SQLite keeps in a column declared text, and bytea in PostgreSQL.
const STORED_AS_BYTES_IN_SQLITE = new Set(['batch_payloads.items']);

function pgShape(table: PgTable): TableShape {
  const name = getTableName(table);
  return shapeOf(pgTableConfig(table), (c) => {
    const sqlType = c.getSQLType();
    const isFlag = c.columnType === 'PgCustomColumn' && sqlType === 'integer';
    const kind = isFlag ? 'flag' : (PG_KINDS[sqlType] ?? sqlType);
    return {
      kind: kind === 'bytes' && STORED_AS_BYTES_IN_SQLITE.has(`${name}.${c.name}`) ? 'text' : kind,
      notNull: c.notNull,
      default: renderDefault(c.default),
      enum: c.enumValues ?? null,
      generated: !!(c as { generatedIdentity?: unknown }).generatedIdentity,
    };
  });
}

function tablesOf<T extends Table>(schema: Record<string, unknown>, isTable: (value: unknown) => value is T): Map<string, T> {
  return new Map(Object.values(schema).filter(isTable).map((t) => [getTableName(t), t]));
}

/** What differs between two shapes of a table, one line each ("table.column: notNull true / false"). */
function differences(table: string, sqlite: TableShape, pg: TableShape): string[] {
  const out: string[] = [];
  const compare = (what: string, a: Record<string, unknown>, b: Record<string, unknown>) => {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (!(key in b)) out.push(`${table}: ${what} ${key} only in SQLite`);
      else if (!(key in a)) out.push(`${table}: ${what} ${key} only in PostgreSQL`);
      else if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) {
        out.push(`${table}: ${what} ${key} is ${JSON.stringify(a[key])} in SQLite, ${JSON.stringify(b[key])} in PostgreSQL`);
      }
    }
  };
  compare('column', sqlite.columns, pg.columns);
  compare('primary key', { columns: sqlite.primaryKey }, { columns: pg.primaryKey });
  compare('unique constraint', sqlite.unique, pg.unique);
  compare('index', sqlite.indexes, pg.indexes);
  compare('check', sqlite.checks, pg.checks);
  compare('foreign key', sqlite.foreignKeys, pg.foreignKeys);
  return out;
}

const sqliteTables = tablesOf(sqliteSchema, (v): v is SQLiteTable => is(v, SQLiteTable));
const pgTables = tablesOf(pgSchema, (v): v is PgTable => is(v, PgTable));

// ---- triggers, read from the migrations -----------------------------------------------------------------

interface TriggerShape {
  table: string;
  timing: string;
  event: string;
  when: string | null;
}

/** Identifiers unquoted, whitespace collapsed, one pair of outer parentheses dropped. */
function normalizeCondition(condition: string | undefined): string | null {
  if (!condition) return null;
  let c = condition.replace(/[`"]/g, '').replace(/\s+/g, ' ').trim();
  if (c.startsWith('(') && c.endsWith(')')) c = c.slice(1, -1).trim();
  return c;
}

/** The triggers a folder of migrations leaves in place: every CREATE TRIGGER, less those a later one drops. */
function triggersOf(folder: string, create: RegExp): Map<string, TriggerShape> {
  const triggers = new Map<string, TriggerShape>();
  const files = readdirSync(folder)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  for (const file of files) {
    const text = readFileSync(join(folder, file), 'utf8');
    for (const statement of text.split('--> statement-breakpoint')) {
      const drop = /DROP\s+TRIGGER\s+(?:IF\s+EXISTS\s+)?[`"]?(\w+)[`"]?/i.exec(statement);
      if (drop) triggers.delete(drop[1]!);
      const m = create.exec(statement);
      if (m?.groups) {
        const g = m.groups;
        const event = g.event!.toUpperCase() + (g.of ? ` OF ${g.of.replace(/[`"\s]/g, '')}` : '');
        triggers.set(g.name!, { table: g.table!, timing: g.timing!.toUpperCase(), event, when: normalizeCondition(g.when) });
      }
    }
  }
  return triggers;
}

const SQLITE_TRIGGER =
  /CREATE\s+TRIGGER\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(?<name>\w+)`?\s+(?<timing>BEFORE|AFTER|INSTEAD\s+OF)\s+(?<event>INSERT|UPDATE|DELETE)(?:\s+OF\s+(?<of>[^]*?))?\s+ON\s+`?(?<table>\w+)`?(?:\s+FOR\s+EACH\s+ROW)?(?:\s+WHEN\s+(?<when>[^]*?))?\s+BEGIN\b/i;
const PG_TRIGGER =
  /CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+"?(?<name>\w+)"?\s+(?<timing>BEFORE|AFTER|INSTEAD\s+OF)\s+(?<event>INSERT|UPDATE|DELETE)(?:\s+OF\s+(?<of>[^]*?))?\s+ON\s+"?(?<table>\w+)"?\s+FOR\s+EACH\s+ROW(?:\s+WHEN\s+(?<when>[^]*?))?\s+EXECUTE\s+(?:FUNCTION|PROCEDURE)\b/i;

const sqliteTriggers = () => triggersOf(join(ROOT, 'db/migrations'), SQLITE_TRIGGER);
const pgTriggers = () => triggersOf(join(ROOT, 'db/migrations-pg'), PG_TRIGGER);

// ---- the tests ------------------------------------------------------------------------------------------

describe('the PostgreSQL schema mirrors the SQLite one', () => {
  test('the same tables', () => {
    expect(sqliteTables.size).toBeGreaterThan(30);
    expect([...pgTables.keys()].sort()).toEqual([...sqliteTables.keys()].sort());
  });

  test('each table: the same columns (kind, nullability, default, enum, identity), keys, unique constraints, indexes, checks and foreign keys', () => {
    const drift = [...sqliteTables].flatMap(([name, table]) => {
      const pg = pgTables.get(name);
      return pg ? differences(name, sqliteShape(table), pgShape(pg)) : [`${name}: no PostgreSQL table`];
    });
    expect(drift).toEqual([]);
  });

  test('the comparison sees what it compares: partial indexes, checks, composite keys and foreign keys are read', () => {
    const connections = pgShape(pgSchema.paymentConnections);
    expect(connections.indexes.payment_connections_default_uq).toEqual({
      columns: ['lender_id', 'rail_scope'],
      unique: true,
      where: 'is_default = 1 AND deleted_at IS NULL',
    });
    expect(connections.checks.payment_connections_default_or_tag).toBe('NOT (is_default = 1 AND merchant_ref IS NOT NULL)');
    expect(sqliteShape(sqliteSchema.searchableBorrowers).primaryKey).toEqual(['lender_id', 'authorizer_unique_id']);
    expect(Object.values(pgShape(pgSchema.payments).foreignKeys).map((f) => f.table).sort()).toEqual(['enrollments', 'lenders', 'payment_connections']);
    expect(sqliteShape(sqliteSchema.collectionPolicies).columns.cfpb_covered).toEqual({ kind: 'flag', notNull: true, default: '0', enum: null, generated: false });
  });

  // A column added to one schema only is a column in one shape only; so is a change of nullability, and an
  // index predicate that differs is a different `where`. Shown on real tables: a copy of pg `lenders` equal to
  // the SQLite one, then the same copy with one change each.
  test('a column in one schema only, a changed nullability or a changed index predicate is reported', () => {
    const lendersLike = (opts: { extra?: boolean; nullableName?: boolean }): PgTable => {
      const columns = {
        id: ident('id').primaryKey(),
        name: opts.nullableName ? text('name').unique() : text('name').notNull().unique(),
        debitCardApproved: flag('debit_card_approved')
          .notNull()
          .default(pgSchema.lenders.debitCardApproved.default as SQL),
        createdAt: ms('created_at').notNull(),
      };
      return opts.extra ? pgTable('lenders', { ...columns, nickname: text('nickname') }) : pgTable('lenders', columns);
    };
    const sqlite = sqliteShape(sqliteSchema.lenders);
    expect(differences('lenders', sqlite, pgShape(lendersLike({})))).toEqual([]);
    expect(differences('lenders', sqlite, pgShape(lendersLike({ extra: true })))).toEqual(['lenders: column nickname only in PostgreSQL']);
    expect(differences('lenders', sqlite, pgShape(lendersLike({ nullableName: true })))).toEqual([
      'lenders: column name is {"kind":"text","notNull":true,"default":null,"enum":null,"generated":false} in SQLite, ' +
        '{"kind":"text","notNull":false,"default":null,"enum":null,"generated":false} in PostgreSQL',
    ]);

    const enrollments = pgShape(pgSchema.enrollments);
    const widened = structuredClone(enrollments);
    widened.indexes.enrollments_held_idx!.where = "state = 'monitored'";
    expect(differences('enrollments', sqliteShape(sqliteSchema.enrollments), enrollments)).toEqual([]);
    expect(differences('enrollments', sqliteShape(sqliteSchema.enrollments), widened)).toHaveLength(1);
  });

  test('every time and amount is bigint, every identifier collated "C", and a foreign key has its target\'s type', () => {
    const wrong: string[] = [];
    for (const [name, table] of pgTables) {
      const config = pgTableConfig(table);
      for (const c of config.columns) {
        const type = c.getSQLType();
        // A time or an amount: an integer in SQLite named as one (schedules.starts_at is a date, text in both).
        const sqliteType = sqliteTableConfig(sqliteTables.get(name)!).columns.find((s) => s.name === c.name)?.getSQLType();
        const timeOrAmount = sqliteType === 'integer' && /(_at|_until|_since|_ms|_on|_payday|_cents)$/.test(c.name);
        if (timeOrAmount && type !== 'bigint') wrong.push(`${name}.${c.name} is ${type}, not bigint`);
        const isText = type.startsWith('text');
        const identifier = c.primary || /^(id|.+_id|authorizer_unique_id|reference|merchant_ref)$/.test(c.name);
        if (isText && identifier && type !== 'text COLLATE "C"') wrong.push(`${name}.${c.name} is ${type}, not collated "C"`);
      }
      // A composite key's columns are read from the table: the ones the key holds are index-building copies,
      // whose getSQLType() does not return.
      const byName = new Map(config.columns.map((c) => [c.name, c]));
      for (const pk of config.primaryKeys) {
        for (const { name: column } of pk.columns) {
          const c = byName.get(column)!;
          if (c.getSQLType() === 'text' && !c.enumValues) wrong.push(`${name}.${c.name} (primary key) is not collated "C"`);
        }
      }
      for (const fk of config.foreignKeys) {
        const ref = fk.reference();
        ref.columns.forEach((c, i) => {
          const target = ref.foreignColumns[i]!;
          if (c.getSQLType() !== target.getSQLType()) wrong.push(`${name}.${c.name} is ${c.getSQLType()}, its target ${target.getSQLType()}`);
        });
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('triggers', () => {
  test('every SQLite trigger has a PostgreSQL one of the same name, table, event and condition', () => {
    const sqlite = sqliteTriggers();
    expect([...sqlite.keys()].sort()).toEqual(['balance_backlog_batch_delete', 'balance_backlog_batch_insert', 'balance_backlog_batch_update']);
    expect(sqlite.get('balance_backlog_batch_update')).toEqual({
      table: 'batches',
      timing: 'AFTER',
      event: 'UPDATE OF lender_id,status,total_authorizers,total_processed',
      when: null,
    });
    expect(sqlite.get('balance_backlog_batch_insert')!.when).toBe("NEW.status IN ('pending', 'processing')");
    expect(Object.fromEntries(pgTriggers())).toEqual(Object.fromEntries(sqlite));
  });

  test('the trigger reader follows drops and sees a trigger missing on one side', () => {
    const sqlite = sqliteTriggers();
    const pg = pgTriggers();
    pg.delete('balance_backlog_batch_delete');
    expect(Object.fromEntries(pg)).not.toEqual(Object.fromEntries(sqlite));
    const dropped = 'DROP TRIGGER IF EXISTS "balance_backlog_batch_delete";';
    expect(/DROP\s+TRIGGER\s+(?:IF\s+EXISTS\s+)?[`"]?(\w+)[`"]?/i.exec(dropped)?.[1]).toBe('balance_backlog_batch_delete');
  });
});

describe('the pg migrations', () => {
  const folder = join(ROOT, 'db/migrations-pg');
  const journal = JSON.parse(readFileSync(join(folder, 'meta/_journal.json'), 'utf8')) as { entries: { idx: number; tag: string }[] };
  const latest = () => {
    const last = journal.entries.at(-1)!;
    return JSON.parse(readFileSync(join(folder, `meta/${String(last.idx).padStart(4, '0')}_snapshot.json`), 'utf8'));
  };

  test('every migration in the journal has its SQL file, and nothing else is there', () => {
    const files = readdirSync(folder).filter((f) => f.endsWith('.sql'));
    expect(files.sort()).toEqual(journal.entries.map((e) => `${e.tag}.sql`).sort());
  });

  test('hold everything db/schema-pg declares (run `bun run db:generate:pg` after changing it)', async () => {
    const pending = await generateMigration(latest(), generateDrizzleJson(pgSchema));
    expect(pending).toEqual([]);
  });

  test('a schema change the migrations do not hold is seen', async () => {
    const changed = { ...pgSchema, lenderNotes: pgTable('lender_notes', { id: ident('id').primaryKey(), note: text('note') }) };
    const pending = await generateMigration(latest(), generateDrizzleJson(changed));
    expect(pending.join('\n')).toContain('CREATE TABLE "lender_notes"');
  });
});
