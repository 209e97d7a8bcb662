// engine: sqlite
// The read snapshot a dry run decides on: open across awaits, rolled back whatever its callback does, taken in
// its turn so that no other caller's write lands inside it, and a savepoint when opened inside a transaction.
import { afterAll, beforeEach, expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { readSnapshot, transaction } from '../../src/platform/context';
import { assertOutsideTransaction, NetworkInTransactionError } from '../../src/platform/tx-lock';

const c = createTestContext();
afterAll(() => c.close());

const ins = (x: number) => c.sql.query('INSERT INTO snapshot_probe VALUES (?)').run(x);
const rows = () => (c.sql.query('SELECT x FROM snapshot_probe ORDER BY rowid').all() as { x: number }[]).map((r) => r.x);
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

c.sql.run('CREATE TABLE snapshot_probe (x INTEGER)');
beforeEach(() => c.sql.run('DELETE FROM snapshot_probe'));

test('what the callback writes is seen inside the snapshot, across awaits, and undone after it', async () => {
  const seen = await readSnapshot({ deps: c.rt }, async () => {
    ins(1);
    await turns();
    ins(2);
    return rows();
  });
  expect(seen).toEqual([1, 2]);
  expect(rows()).toEqual([]);
  expect(c.sql.inTransaction).toBe(false);
});

test('a callback that rejects is rolled back too, and its error reaches the caller', async () => {
  await expect(
    readSnapshot({ deps: c.rt }, async () => {
      ins(1);
      await turns();
      throw new Error('refused');
    }),
  ).rejects.toThrow('refused');
  expect(rows()).toEqual([]);
  expect(c.sql.inTransaction).toBe(false);
});

test('a transaction asked for while the snapshot is open waits for it: its write is not in the snapshot, and stands', async () => {
  const order: string[] = [];
  let opened!: () => void;
  const isOpen = new Promise<void>((r) => (opened = r));
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const snapshot = readSnapshot({ deps: c.rt }, async () => {
    opened();
    await finished;
    order.push('snapshot read');
    return rows();
  });
  await isOpen;
  // Another caller, outside the snapshot: its transaction is asked for while the snapshot waits.
  const write = transaction({ deps: c.rt }, () => {
    order.push('write');
    ins(7);
  });
  await turns(5);
  finish();
  expect(await snapshot).toEqual([]);
  await write;
  expect(order).toEqual(['snapshot read', 'write']);
  expect(rows()).toEqual([7]);
});

test('the network is refused inside the snapshot, as inside a transaction', async () => {
  let refused: unknown = null;
  await readSnapshot({ deps: c.rt }, async () => {
    await turns(1);
    try {
      assertOutsideTransaction('a processor call');
    } catch (e) {
      refused = e;
    }
  });
  expect(refused).toBeInstanceOf(NetworkInTransactionError);
  expect(() => assertOutsideTransaction('a processor call')).not.toThrow();
});

test('opened inside a transaction it is a savepoint: its writes are undone, the transaction’s stand', async () => {
  let seen: number[] = [];
  await transaction({ deps: c.rt }, async (tx) => {
    ins(1);
    seen = await readSnapshot(tx, async () => {
      ins(2);
      await turns();
      return rows();
    });
    ins(3);
  });
  expect(seen).toEqual([1, 2]);
  expect(rows()).toEqual([1, 3]);
});
