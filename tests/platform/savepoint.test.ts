// engine: sqlite
// One of many writes in a transaction undone alone: the savepoint a polled page records each change in.
import { afterAll, expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { savepoint, transaction } from '../../src/platform/context';

const c = createTestContext();
afterAll(() => c.close());

/** A turn of the event loop: the savepoint stays open across it. */
const turn = () => new Promise((r) => setImmediate(r));

test('a savepoint that throws undoes its own writes only; the others, nested ones included, commit', async () => {
  c.sql.run('CREATE TABLE sp_probe (x INTEGER)');
  const ins = (x: number) => c.sql.query('INSERT INTO sp_probe VALUES (?)').run(x);
  const failed: number[] = [];
  await transaction({ deps: c.rt }, async (tx) => {
    for (const x of [1, 2, 3, 4]) {
      try {
        await savepoint(tx, async () => {
          ins(x);
          await turn();
          await savepoint(tx, async () => ins(x * 10));
          if (x % 2 === 0) throw new Error(`refused ${x}`);
        });
      } catch {
        failed.push(x);
      }
    }
    // An inner failure caught inside an outer savepoint leaves the outer one's writes.
    await savepoint(tx, async () => {
      ins(5);
      try {
        await savepoint(tx, async () => {
          ins(50);
          await turn();
          throw new Error('inner');
        });
      } catch {
        /* kept going */
      }
    });
  });
  expect(failed).toEqual([2, 4]);
  expect((c.sql.query('SELECT x FROM sp_probe ORDER BY x').all() as { x: number }[]).map((r) => r.x)).toEqual([1, 3, 5, 10, 30]);
  expect(c.sql.inTransaction).toBe(false);
});
