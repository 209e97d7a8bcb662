// engine: sqlite
// Statements prepared once per connection: the same text reuses its statement, the number kept is bounded,
// and a statement let go still answers for whoever holds it.
import { Database } from 'bun:sqlite';
import { afterAll, expect, test } from 'bun:test';
import { preparedOnce } from '../../src/platform/db';
import { createTestContext } from '../helpers/context';

test('the same text is prepared once; another text gets its own statement', () => {
  const raw = new Database(':memory:');
  const db = preparedOnce(raw);
  const a = db.prepare('SELECT 1 AS x');
  expect(db.prepare('SELECT 1 AS x')).toBe(a);
  expect(db.prepare('SELECT 2 AS x')).not.toBe(a);
  expect(a.get()).toEqual({ x: 1 });
  raw.close();
});

test('past the bound the oldest text is let go, and the statement still works for whoever holds it', () => {
  const raw = new Database(':memory:');
  const db = preparedOnce(raw, 3);
  const first = db.prepare('SELECT 1 AS x');
  for (const n of [2, 3, 4]) db.prepare(`SELECT ${n} AS x`);
  // Let go: asking again prepares anew.
  expect(db.prepare('SELECT 1 AS x')).not.toBe(first);
  expect(first.get()).toEqual({ x: 1 });
  raw.close();
});

test('everything but prepare is the connection itself', () => {
  const raw = new Database(':memory:');
  const db = preparedOnce(raw);
  db.exec('CREATE TABLE t (x INTEGER)');
  db.query('INSERT INTO t VALUES (?)').run(7);
  expect(raw.query('SELECT x FROM t').all()).toEqual([{ x: 7 }]);
  expect(db instanceof Database).toBe(true);
  raw.close();
});

const c = createTestContext();
afterAll(() => c.close());

test("the service's query builder reuses its statements, and its $client is the connection itself", () => {
  expect(c.rt.db.$client).toBe(c.sql);
  const session = (c.rt.db as unknown as { session: { client: Database } }).session;
  expect(session.client.prepare('SELECT 1')).toBe(session.client.prepare('SELECT 1'));
});
