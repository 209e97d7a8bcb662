// engine: both
// The PostgreSQL migrations (db/migrations-pg) applied to a real server with drizzle's bun-sql migrator, under
// a session advisory lock as a start does it, into a database of their own that is dropped afterwards. Runs
// when DATABASE_URL is a postgres:// URL whose user may create databases; otherwise one test says so and
// checks what can be checked without a server: every migration file splits into well-formed statements.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SQL } from 'bun';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eq, getTableName, is } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/bun-sql';
import { migrate } from 'drizzle-orm/bun-sql/migrator';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import * as pg from '../../db/schema-pg';
import { openDatabase, type DbHandle } from '../../src/platform/db';

const FOLDER = join(import.meta.dir, '../../db/migrations-pg');
const URL_ = process.env.DATABASE_URL ?? '';
const onPostgres = /^postgres(ql)?:\/\//.test(URL_);

/** The statements of each migration file, as the migrator splits them. */
function migrationStatements(): { file: string; statements: string[] }[] {
  return readdirSync(FOLDER)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((file) => ({
      file,
      statements: readFileSync(join(FOLDER, file), 'utf8')
        .split('--> statement-breakpoint')
        .map((s) => s.trim()),
    }));
}

/**
 * What is wrong with one statement, or null: empty, not a statement the migrations make, or with an unclosed
 * quote, dollar-quoted body or parenthesis. One pass over the text.
 */
function malformed(statement: string): string | null {
  const code = statement.replace(/^(\s*--[^\n]*\n)*/, '').trim();
  if (!code) return 'empty';
  if (!/^(CREATE|ALTER|DROP|INSERT|UPDATE|DELETE|COMMENT)\b/i.test(code)) return `starts with ${code.slice(0, 20)}`;
  let depth = 0;
  for (let i = 0; i < code.length; i++) {
    const ch = code[i];
    if (ch === '-' && code[i + 1] === '-') i = code.indexOf('\n', i) === -1 ? code.length : code.indexOf('\n', i);
    else if (ch === "'" || ch === '"') {
      const end = code.indexOf(ch, i + 1);
      if (end === -1) return `unclosed ${ch}`;
      i = end;
    } else if (ch === '$' && code[i + 1] === '$') {
      const end = code.indexOf('$$', i + 2);
      if (end === -1) return 'unclosed $$ body';
      i = end + 1;
    } else if (ch === '(') depth++;
    else if (ch === ')' && --depth < 0) return 'unbalanced )';
  }
  return depth === 0 ? null : 'unclosed (';
}

function checkFilesParse() {
  const files = migrationStatements();
  const journal = JSON.parse(readFileSync(join(FOLDER, 'meta/_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  expect(files.map((f) => f.file)).toEqual(journal.entries.map((e) => `${e.tag}.sql`));
  const problems = files.flatMap(({ file, statements }) => statements.flatMap((s, i) => (malformed(s) ? [`${file} #${i + 1}: ${malformed(s)}`] : [])));
  expect(problems).toEqual([]);
  expect(malformed('CREATE FUNCTION f() RETURNS trigger AS $$ BEGIN')).toBe('unclosed $$ body');
  expect(malformed('CREATE TABLE "t" ("a" text')).toBe('unclosed (');
}

if (!onPostgres) {
  test('PostgreSQL: not applicable without DATABASE_URL=postgres://… (checked instead: every pg migration file splits into well-formed statements)', () => {
    checkFilesParse();
  });
} else {
  test('every pg migration file splits into well-formed statements', () => {
    checkFilesParse();
  });

  // The migrations of one database run one start at a time: a session advisory lock on one connection.
  const migrateUnderLock = async (url: string) => {
    const client = new SQL(url, { max: 1 });
    try {
      await client`SELECT pg_advisory_lock(hashtext('debit-recovery-service migrations'))`;
      await migrate(drizzle({ client }), { migrationsFolder: FOLDER });
      await client`SELECT pg_advisory_unlock(hashtext('debit-recovery-service migrations'))`;
    } finally {
      await client.close();
    }
  };

  describe('the pg migrations on PostgreSQL', () => {
    const name = `drs_migrations_${process.pid}_${Date.now()}`;
    const target = new URL(URL_);
    target.pathname = `/${name}`;
    let admin: SQL;
    let client: SQL;
    let sqlite: DbHandle;
    const tables = Object.values(pg as Record<string, unknown>).filter((v): v is PgTable => is(v, PgTable));

    beforeAll(async () => {
      admin = new SQL(URL_, { max: 1 });
      await admin.unsafe(`CREATE DATABASE "${name}"`);
      client = new SQL(target.toString(), { max: 2 });
      sqlite = openDatabase(':memory:');
    });

    afterAll(async () => {
      sqlite?.close();
      await client?.close();
      await admin?.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin?.close();
    });

    test('two starts at once: both wait their turn, every migration is applied once', async () => {
      await Promise.all([migrateUnderLock(target.toString()), migrateUnderLock(target.toString())]);
      const journal = JSON.parse(readFileSync(join(FOLDER, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
      const [{ n }] = await client`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
      expect(n).toBe(journal.entries.length);
      await migrateUnderLock(target.toString()); // a restart applies nothing
      const [{ again }] = await client`SELECT count(*)::int AS again FROM drizzle.__drizzle_migrations`;
      expect(again).toBe(journal.entries.length);
    });

    test('the database has the schema: tables, columns with type, nullability and collation, indexes, checks, triggers', async () => {
      const have = await client`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`;
      expect(have.map((r: { table_name: string }) => r.table_name).sort()).toEqual(tables.map((t) => getTableName(t)).sort());

      const columns = await client`
        SELECT table_name, column_name, is_nullable, data_type, collation_name FROM information_schema.columns WHERE table_schema = 'public'`;
      const byKey = new Map(columns.map((c: Record<string, string>) => [`${c.table_name}.${c.column_name}`, c]));
      const wrong: string[] = [];
      const indexNames: string[] = [];
      const partial: string[] = [];
      const checks: string[] = [];
      for (const t of tables) {
        const config = getTableConfig(t);
        for (const c of config.columns) {
          const row = byKey.get(`${config.name}.${c.name}`) as Record<string, string> | undefined;
          if (!row) {
            wrong.push(`${config.name}.${c.name} missing`);
            continue;
          }
          const type = c.getSQLType().replace(' COLLATE "C"', '');
          if (row.data_type !== type) wrong.push(`${config.name}.${c.name} is ${row.data_type}, declared ${type}`);
          if ((row.is_nullable === 'NO') !== c.notNull) wrong.push(`${config.name}.${c.name} nullability`);
          if ((row.collation_name === 'C') !== c.getSQLType().endsWith('COLLATE "C"')) wrong.push(`${config.name}.${c.name} collation ${row.collation_name}`);
        }
        for (const i of config.indexes) {
          indexNames.push(i.config.name!);
          if (i.config.where) partial.push(i.config.name!);
        }
        for (const c of config.checks) checks.push(c.name);
      }
      expect(wrong).toEqual([]);

      const indexes = await client`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'`;
      const defs = new Map<string, string>(indexes.map((r: { indexname: string; indexdef: string }) => [r.indexname, r.indexdef]));
      expect(indexNames.filter((n) => !defs.has(n))).toEqual([]);
      expect(indexNames.filter((n) => / WHERE /.test(defs.get(n)!)).sort()).toEqual(partial.sort());

      const constraints = await client`SELECT conname FROM pg_constraint WHERE contype = 'c' AND connamespace = 'public'::regnamespace`;
      expect(constraints.map((r: { conname: string }) => r.conname).sort()).toEqual(checks.sort());

      const triggers = await client`SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY tgname`;
      expect(triggers.map((r: { tgname: string }) => r.tgname)).toEqual(['balance_backlog_batch_delete', 'balance_backlog_batch_insert', 'balance_backlog_batch_update']);
    });

    // The same statements on both engines (double-quoted identifiers and literals read the same in both), the
    // backlog compared after each one.
    test('the balance_backlog triggers keep the same sums as the SQLite ones', async () => {
      const steps = [
        `INSERT INTO "lenders" ("id", "name", "created_at") VALUES ('lender-a', 'A', 1), ('lender-b', 'B', 1)`,
        `INSERT INTO "batches" ("id", "lender_id", "source", "status", "submitted_at", "total_authorizers") VALUES ('b1', 'lender-a', 'api', 'pending', 1, 10)`,
        `INSERT INTO "batches" ("id", "lender_id", "source", "status", "submitted_at", "total_authorizers") VALUES ('b2', 'lender-a', 'csv', 'pending', 2, 7)`,
        `INSERT INTO "batches" ("id", "lender_id", "source", "status", "submitted_at", "total_authorizers", "total_processed") VALUES ('b3', 'lender-b', 'api', 'completed', 3, 4, 4)`,
        `UPDATE "batches" SET "status" = 'processing' WHERE "id" = 'b1'`,
        `UPDATE "batches" SET "total_processed" = 6 WHERE "id" = 'b1'`,
        `UPDATE "batches" SET "lender_id" = 'lender-b' WHERE "id" = 'b2'`,
        `UPDATE "batches" SET "status" = 'pending' WHERE "id" = 'b3'`,
        `UPDATE "batches" SET "webhook_url" = 'https://example.test/hook' WHERE "id" = 'b2'`,
        `UPDATE "batches" SET "status" = 'completed', "total_processed" = 10 WHERE "id" = 'b1'`,
        `DELETE FROM "batches" WHERE "id" = 'b1'`,
        `DELETE FROM "batches" WHERE "id" = 'b2'`,
      ];
      const backlog = `SELECT "lender_id", "pending" FROM "balance_backlog" ORDER BY "lender_id"`;
      const seen: unknown[] = [];
      for (const step of steps) {
        sqlite.sqlite.exec(step);
        await client.unsafe(step);
        const expected = sqlite.sqlite.query(backlog).all();
        expect(await client.unsafe(backlog).then((rows: unknown[]) => [...rows])).toEqual(expected);
        seen.push(expected);
      }
      expect(seen.at(-1)).toEqual([
        { lender_id: 'lender-a', pending: 0 },
        { lender_id: 'lender-b', pending: 0 },
      ]);
      expect(seen[4]).toEqual([
        { lender_id: 'lender-a', pending: 17 },
      ]);
    });

    test('identifiers order and prefix-match byte by byte, as in SQLite', async () => {
      const ids = ['a-1', 'B-2', '_c', 'a_2', 'A-1', 'ä-3', 'a-10', 'Z', 'a'];
      const insert = `INSERT INTO "lenders" ("id", "name", "created_at") VALUES ${ids.map((id, i) => `('${id}', 'order ${i}', 1)`).join(', ')}`;
      sqlite.sqlite.exec(insert);
      await client.unsafe(insert);
      const inOrder = `SELECT "id" FROM "lenders" WHERE "name" LIKE 'order %' ORDER BY "id"`;
      const expected = sqlite.sqlite.query<{ id: string }, []>(inOrder).all().map((r) => r.id);
      expect(expected).toEqual([...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
      expect((await client.unsafe(inOrder)).map((r: { id: string }) => r.id)).toEqual(expected);

      // The prefix search the borrower search runs: >= q AND < q || U+10FFFF.
      const prefix = `SELECT "id" FROM "lenders" WHERE "id" >= 'a' AND "id" < 'a\u{10FFFF}' ORDER BY "id"`;
      const matched = sqlite.sqlite.query<{ id: string }, []>(prefix).all().map((r) => r.id);
      expect(matched).toEqual(['a', 'a-1', 'a-10', 'a_2']);
      expect((await client.unsafe(prefix)).map((r: { id: string }) => r.id)).toEqual(matched);
    });

    test('through the query builder: bigint ms and cents read back as numbers, bytes as bytes, flags as booleans', async () => {
      const db = drizzle({ client, schema: pg });
      const at = Date.UTC(2030, 0, 1); // past int4, as every time in ms is
      await db.insert(pg.lenders).values({ id: 'types', name: 'Types', createdAt: at, debitCardApproved: true });
      const bytes = Bun.zstdCompressSync(Buffer.from('[["id-1",0]]'));
      await db.insert(pg.batches).values({ id: 'types-batch', lenderId: 'types', source: 'api', status: 'completed', submittedAt: at, totalAuthorizers: 1 });
      await db.insert(pg.batchPayloads).values({ batchId: 'types-batch', sealed: 'v1.sealed', items: bytes });
      await db.insert(pg.enrollments).values({
        id: 'types-enrollment', lenderId: 'types', authorizerUniqueId: 'borrower-1', state: 'monitored', rail: 'ach',
        collectableAmountCents: 3_000_000_000_00, daysPastDue: 30, enrolledAt: at, updatedAt: at, payCycleConfidence: 0.75,
      });

      const [lender] = await db.select().from(pg.lenders).where(eq(pg.lenders.id, 'types'));
      expect(lender).toEqual({ id: 'types', name: 'Types', createdAt: at, debitCardApproved: true });
      const [raw] = await client`SELECT debit_card_approved FROM lenders WHERE id = 'types'`;
      expect(raw.debit_card_approved).toBe(1);

      const [payload] = await db.select().from(pg.batchPayloads).where(eq(pg.batchPayloads.batchId, 'types-batch'));
      expect(new Uint8Array(payload!.items)).toEqual(new Uint8Array(bytes));

      const [enrollment] = await db.select().from(pg.enrollments).where(eq(pg.enrollments.id, 'types-enrollment'));
      expect(enrollment!.collectableAmountCents).toBe(3_000_000_000_00);
      expect(enrollment!.payCycleConfidence).toBe(0.75);
      expect(enrollment!.cfpbCovered).toBeNull();
      expect(enrollment!.paymentsUsed).toBe(0);
    });

    test('a partial unique index and the check refuse what they refuse in SQLite', async () => {
      const base = `INSERT INTO "payment_connections" ("id", "lender_id", "processor", "label", "rail_scope", "is_default", "merchant_ref", "created_at", "updated_at") VALUES`;
      await client.unsafe(`${base} ('k1', 'types', 'sandbox', 'one', 'ach', 1, NULL, 1, 1)`);
      await expect(client.unsafe(`${base} ('k2', 'types', 'sandbox', 'two', 'ach', 1, NULL, 1, 1)`)).rejects.toThrow(/payment_connections_default_uq/);
      await expect(client.unsafe(`${base} ('k3', 'types', 'sandbox', 'three', 'card', 1, 'tag', 1, 1)`)).rejects.toThrow(/payment_connections_default_or_tag/);
      await client.unsafe(`UPDATE "payment_connections" SET "deleted_at" = 2 WHERE "id" = 'k1'`);
      await client.unsafe(`${base} ('k2', 'types', 'sandbox', 'two', 'ach', 1, NULL, 1, 1)`);
    });
  });
}
