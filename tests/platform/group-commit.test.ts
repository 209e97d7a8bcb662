// engine: sqlite
// Group commit: transactions queued in one turn of the event loop run in one BEGIN IMMEDIATE, each in its own
// savepoint; one that throws is undone alone; every caller is answered after the COMMIT, never before.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/platform/db';
import { groupCommit } from '../../src/platform/group-commit';

const dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
const handle = openDatabase(join(dir, 'db.sqlite'), { migrate: false });
handle.sqlite.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
// Another connection to the same file: it sees only what is committed.
const other = new Database(join(dir, 'db.sqlite'), { readonly: true });
afterAll(() => {
  other.close();
  handle.close();
  rmSync(dir, { recursive: true, force: true });
});

const deps = { db: handle.db };
const rows = (db: Database) => db.query<{ v: string }, []>('SELECT v FROM t ORDER BY id').all().map((r) => r.v);
const insert = (v: string) => handle.sqlite.query('INSERT INTO t (v) VALUES (?)').run(v);

describe('groupCommit', () => {
  test('queued together: one transaction, the failing one undone alone, each caller answered after the commit', async () => {
    const seen: string[][] = [];
    const a = groupCommit({ deps }, () => {
      insert('a');
      return 'A';
    });
    const b = groupCommit({ deps }, () => {
      insert('b');
      throw new Error('b refused');
    });
    const c = groupCommit({ deps }, () => {
      // In the same open transaction as a's write, which no other connection sees yet.
      expect(handle.sqlite.inTransaction).toBe(true);
      seen.push(rows(handle.sqlite), rows(other));
      insert('c');
      return 'C';
    });
    const [ra, rb, rc] = await Promise.allSettled([a, b, c]);
    expect(ra).toEqual({ status: 'fulfilled', value: 'A' });
    expect(rb.status).toBe('rejected');
    expect((rb as PromiseRejectedResult).reason.message).toBe('b refused');
    expect(rc).toEqual({ status: 'fulfilled', value: 'C' });
    expect(seen).toEqual([['a'], []]);
    // Answered only once committed: the other connection sees a and c, never b.
    expect(rows(other)).toEqual(['a', 'c']);
    expect(handle.sqlite.inTransaction).toBe(false);
  });

  test('inside a caller’s transaction it joins that one', async () => {
    const tx = handle.db as never;
    const r = await groupCommit({ deps, tx }, () => handle.sqlite.inTransaction);
    expect(r).toBe(false); // no transaction of its own was opened
  });

  test('a callback that returns a promise is refused and writes nothing', async () => {
    const before = rows(other).length;
    const r = groupCommit({ deps }, async () => {
      insert('async');
    });
    await expect(r).rejects.toThrow('must be synchronous');
    expect(rows(other)).toHaveLength(before);
  });

  test('when the commit itself fails, every caller of the group gets the error', async () => {
    // A reader holding a snapshot does not stop a WAL commit; a full disk or a lost file would. Simulated by
    // a deferred foreign key violation, which SQLite reports at COMMIT.
    handle.sqlite.exec('PRAGMA foreign_keys = ON');
    handle.sqlite.exec('CREATE TABLE IF NOT EXISTS parent (id INTEGER PRIMARY KEY)');
    handle.sqlite.exec('CREATE TABLE IF NOT EXISTS child (id INTEGER PRIMARY KEY, p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)');
    const before = rows(other).length;
    const ok = groupCommit({ deps }, () => insert('kept?'));
    const bad = groupCommit({ deps }, () => handle.sqlite.query('INSERT INTO child (p) VALUES (42)').run());
    const results = await Promise.allSettled([ok, bad]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(rows(other)).toHaveLength(before);
    expect(handle.sqlite.inTransaction).toBe(false);
  });
});
