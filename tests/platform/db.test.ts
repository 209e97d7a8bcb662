// engine: sqlite
import { handleOf } from '../../src/platform/sql/sqlite';
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { drizzle } from 'drizzle-orm/bun-sqlite';
import { migrate } from 'drizzle-orm/bun-sqlite/migrator';
import {
  MIGRATIONS_DIR,
  SchemaTooNewError,
  immediate,
  knownMigrations,
  migrationStatus,
  openDatabase,
  type Db,
} from '../../src/platform/db';
import { withTransaction, type Tx } from '../../src/platform/context';

const dir = mkdtempSync(join(tmpdir(), 'drs-db-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const freshPath = () => join(dir, `db-${++n}`, 'service.sqlite');

/** Every table the migration files leave behind: created or renamed into place, and not dropped or renamed away. */
function migrationTables(): string[] {
  const out = new Set<string>();
  const statement = /CREATE TABLE [`"]?(\w+)[`"]?|DROP TABLE [`"]?(\w+)[`"]?|ALTER TABLE [`"]?(\w+)[`"]? RENAME TO [`"]?(\w+)[`"]?/g;
  for (const f of readdirSync(MIGRATIONS_DIR).filter((x) => x.endsWith('.sql')).sort()) {
    for (const m of readFileSync(join(MIGRATIONS_DIR, f), 'utf8').matchAll(statement)) {
      if (m[1]) out.add(m[1]);
      else if (m[2]) out.delete(m[2]);
      else {
        out.delete(m[3]!);
        out.add(m[4]!);
      }
    }
  }
  return [...out];
}

const tables = (sqlite: Database) =>
  (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name);

describe('openDatabase', () => {
  test('on a path whose folder does not exist yet creates it and applies every migration', () => {
    const path = freshPath();
    expect(existsSync(path)).toBe(false);
    const h = openDatabase(path);
    try {
      expect(existsSync(path)).toBe(true);
      const have = tables(h.sqlite);
      const expected = migrationTables();
      expect(expected.length).toBeGreaterThan(5);
      for (const t of [...expected, '__drizzle_migrations']) expect(have).toContain(t);
      for (const t of ['lenders', 'api_keys', 'batches', 'batch_payloads', 'webhook_secrets', 'webhook_deliveries', 'schedules', 'job_state']) {
        expect(have).toContain(t);
      }
      const status = migrationStatus(h.sqlite);
      expect(status).toEqual({ applied: knownMigrations().length, known: knownMigrations().length, upToDate: true });
    } finally {
      h.close();
    }
  });

  test('sets the pragmas: WAL, foreign keys, synchronous FULL, busy timeout 5 s', () => {
    const h = openDatabase(freshPath());
    try {
      const p = (name: string) => Object.values(h.sqlite.query(`PRAGMA ${name}`).get() as Record<string, unknown>)[0];
      expect(p('journal_mode')).toBe('wal');
      expect(p('foreign_keys')).toBe(1);
      expect(p('synchronous')).toBe(2);
      expect(p('busy_timeout')).toBe(5000);
    } finally {
      h.close();
    }
  });

  test('foreign keys are enforced', () => {
    const h = openDatabase(freshPath());
    try {
      expect(() =>
        h.sqlite
          .query('INSERT INTO api_keys (id, lender_id, prefix, key_hash, created_at) VALUES (?, ?, ?, ?, ?)')
          .run('k1', 'no-such-lender', 'drs_live_abcdefgh', 'hash', 1),
      ).toThrow(/FOREIGN KEY/);
    } finally {
      h.close();
    }
  });

  test('opening again is a no-op: same migrations, data kept', () => {
    const path = freshPath();
    const a = openDatabase(path);
    a.sqlite.query('INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES (?, ?, 0, ?)').run('l1', 'kept', 1);
    const before = a.sqlite.query('SELECT id, hash, created_at FROM __drizzle_migrations ORDER BY id').all();
    a.close();

    const b = openDatabase(path);
    try {
      expect(b.sqlite.query('SELECT id, hash, created_at FROM __drizzle_migrations ORDER BY id').all()).toEqual(before);
      expect(migrationStatus(b.sqlite).applied).toBe(knownMigrations().length);
      expect(b.sqlite.query('SELECT name FROM lenders').all()).toEqual([{ name: 'kept' }]);
    } finally {
      b.close();
    }
    // A third open while another handle is open (the CLI beside the service) works too.
    const c = openDatabase(path);
    const d = openDatabase(path);
    expect(migrationStatus(d.sqlite).upToDate).toBe(true);
    d.close();
    c.close();
  });

  test('close() checkpoints the WAL away', () => {
    const path = freshPath();
    const h = openDatabase(path);
    h.sqlite.query('INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES (?, ?, 0, ?)').run('l1', 'x', 1);
    h.close();
    const wal = `${path}-wal`;
    expect(!existsSync(wal) || readFileSync(wal).length === 0).toBe(true);
  });

  test('a file with a migration this version does not know → SchemaTooNewError, and nothing is changed', () => {
    const path = freshPath();
    openDatabase(path).close();
    const raw = new Database(path);
    const latest = Math.max(...knownMigrations().map((e) => e.when));
    raw.query('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)').run('from-the-future', latest + 1000);
    raw.close();

    let err: unknown;
    try {
      openDatabase(path);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SchemaTooNewError);
    expect((err as Error).message).toContain(`${knownMigrations().length + 1} migrations`);

    const check = new Database(path, { readonly: true });
    try {
      expect(migrationStatus(check)).toEqual({
        applied: knownMigrations().length + 1,
        known: knownMigrations().length,
        upToDate: false,
      });
    } finally {
      check.close();
    }
  });

  test('a newer migration timestamp alone (same count) is refused too', () => {
    const path = freshPath();
    openDatabase(path).close();
    const raw = new Database(path);
    raw.query('UPDATE __drizzle_migrations SET created_at = created_at + 1000').run();
    raw.close();
    expect(() => openDatabase(path)).toThrow(SchemaTooNewError);
  });

  test('migrate: false leaves an empty file unmigrated; migrationStatus reports it once the table exists', () => {
    const path = freshPath();
    const h = openDatabase(path, { migrate: false });
    try {
      expect(tables(h.sqlite)).not.toContain('lenders');
      h.sqlite.exec('CREATE TABLE __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)');
      expect(migrationStatus(h.sqlite)).toEqual({ applied: 0, known: knownMigrations().length, upToDate: false });
    } finally {
      h.close();
    }
    // Opened normally afterwards, it is brought up to date.
    const m = openDatabase(path);
    expect(migrationStatus(m.sqlite).upToDate).toBe(true);
    m.close();
  });
});

describe('immediate', () => {
  test('commits on return and rolls back on throw', () => {
    const h = openDatabase(freshPath());
    try {
      immediate(h.sqlite, () => {
        h.sqlite.query('INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES (?, ?, 0, ?)').run('l1', 'a', 1);
      });
      expect(() =>
        immediate(h.sqlite, () => {
          h.sqlite.query('INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES (?, ?, 0, ?)').run('l2', 'b', 1);
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(h.sqlite.query('SELECT id FROM lenders ORDER BY id').all()).toEqual([{ id: 'l1' }]);
    } finally {
      h.close();
    }
  });
});

describe('upgrading a database written by an earlier version', () => {
  test('webhook_deliveries.lease_until becomes NOT NULL: a delivery stored without it is claimable, its attempts kept', () => {
    // The database as the first two migrations left it, with a delivery that has no lease value.
    const path = freshPath();
    const earlier = join(dir, `earlier-${n}`);
    mkdirSync(join(earlier, 'meta'), { recursive: true });
    const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8'));
    const first = journal.entries.filter((e: { tag: string }) => e.tag < '0002');
    for (const e of first) cpSync(join(MIGRATIONS_DIR, `${e.tag}.sql`), join(earlier, `${e.tag}.sql`));
    writeFileSync(join(earlier, 'meta/_journal.json'), JSON.stringify({ ...journal, entries: first }));
    mkdirSync(dirname(path), { recursive: true });
    const old = new Database(path);
    old.exec('PRAGMA foreign_keys = ON');
    migrate(drizzle(old), { migrationsFolder: earlier });
    old.exec("INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES ('l1', 'old', 0, 0)");
    old.exec(
      `INSERT INTO webhook_deliveries (id, lender_id, type, target_url, payload, state, attempts, created_at, next_attempt_at, lease_until)
       VALUES ('d1', 'l1', 'BALANCE_BATCH_COMPLETED', 'http://127.0.0.1:9/', '{}', 'pending', 1, 0, 0, NULL)`,
    );
    old.exec("INSERT INTO webhook_attempts (delivery_id, attempted_at, duration_ms) VALUES ('d1', 0, 5)");
    old.close();

    const h = openDatabase(path);
    try {
      expect(h.sqlite.query('SELECT lease_until AS l FROM webhook_deliveries').get()).toEqual({ l: 0 });
      expect(h.sqlite.query('SELECT COUNT(*) AS n FROM webhook_attempts').get()).toEqual({ n: 1 });
      expect(h.sqlite.query('PRAGMA foreign_key_check').all()).toEqual([]);
      const notnull = (h.sqlite.query('PRAGMA table_info(webhook_deliveries)').all() as { name: string; notnull: number }[]).find(
        (c) => c.name === 'lease_until',
      );
      expect(notnull?.notnull).toBe(1);
      // No scaffolding table of the rebuild is left behind.
      expect(tables(h.sqlite).filter((t) => t.startsWith('__'))).toEqual(['__drizzle_migrations']);
    } finally {
      h.close();
    }
  });
});

describe('file permissions', () => {
  test('a new database folder is 0700 and its files 0600 (personal data is the service user’s alone)', () => {
    const path = freshPath();
    const h = openDatabase(path);
    try {
      h.sqlite.exec("INSERT INTO job_state (name) VALUES ('permissions-check')");
      expect(statSync(dirname(path)).mode & 0o777).toBe(0o700);
      for (const f of [path, `${path}-wal`, `${path}-shm`]) {
        if (existsSync(f)) expect(`${f.split('/').pop()}: ${(statSync(f).mode & 0o777).toString(8)}`).toBe(`${f.split('/').pop()}: 600`);
      }
      expect(existsSync(`${path}-wal`)).toBe(true);
    } finally {
      h.close();
    }
  });
});

describe('the transaction handle', () => {
  test('a plain Db cannot write and is not a Tx; withTransaction hands out the Tx (the type-checker holds the first two)', () => {
    // @ts-expect-error a Db has no insert: writes go through the Tx of an open transaction
    const insertOf = (db: Db) => db.insert;
    // @ts-expect-error a Db is not assignable to a Tx
    const asTx = (db: Db): Tx => db;
    expect([typeof insertOf, typeof asTx]).toEqual(['function', 'function']);
    const h = openDatabase(':memory:');
    try {
      const inside = withTransaction({ deps: { db: h.db } }, ({ tx }) => handleOf(tx).$client.query('SELECT 1 AS one').get());
      expect(inside).toEqual({ one: 1 });
      expect(() => withTransaction({ deps: { db: h.db } }, () => Promise.resolve(1))).toThrow(/synchronous/);
    } finally {
      h.close();
    }
  });
});
