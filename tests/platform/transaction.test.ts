// engine: sqlite
// The asynchronous transaction runner: open across awaits, committed only when the callback settles, rolled
// back when it rejects, one at a time on the connection, and never holding the write lock across the network.
import { afterAll, beforeEach, expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { transaction, withTransaction } from '../../src/platform/context';
import { assertOutsideTransaction, NetworkInTransactionError, OverlappingWriteError, txLockOf } from '../../src/platform/tx-lock';
import { gateOf } from '../../src/platform/write-gate';

const c = createTestContext();
afterAll(() => c.close());

const ins = (x: number) => c.sql.query('INSERT INTO tx_probe VALUES (?)').run(x);
const rows = () => (c.sql.query('SELECT x FROM tx_probe ORDER BY rowid').all() as { x: number }[]).map((r) => r.x);
/** A few turns of the event loop: another caller gets to run in between. */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

c.sql.run('CREATE TABLE tx_probe (x INTEGER)');
beforeEach(() => c.sql.run('DELETE FROM tx_probe'));

test('the transaction stays open across awaits and commits only when the callback has finished', async () => {
  let seenInside = -1;
  await transaction({ deps: c.rt }, async () => {
    ins(1);
    await turns();
    ins(2);
    seenInside = c.sql.inTransaction ? 1 : 0;
  });
  expect(seenInside).toBe(1);
  expect(rows()).toEqual([1, 2]);
  expect(c.sql.inTransaction).toBe(false);
});

test('an error thrown after an await rolls back what was written before it', async () => {
  // Drizzle's own transaction(async …) commits before the awaited work has finished: this one does not.
  await expect(
    transaction({ deps: c.rt }, async () => {
      ins(1);
      await turns();
      ins(2);
      throw new Error('refused');
    }),
  ).rejects.toThrow('refused');
  expect(rows()).toEqual([]);
  expect(c.sql.inTransaction).toBe(false);
});

test('a caller that already holds a transaction joins it: one commit, or one rollback for all', async () => {
  await expect(
    transaction({ deps: c.rt }, async (outer) => {
      ins(1);
      await transaction(outer, async () => {
        await turns(1);
        ins(2);
      });
      throw new Error('outer refused');
    }),
  ).rejects.toThrow('outer refused');
  expect(rows()).toEqual([]);
});

test('two callers interleaved at their awaits run one after the other, first come first served', async () => {
  const order: string[] = [];
  const run = (name: string, x: number) =>
    transaction({ deps: c.rt }, async () => {
      order.push(`${name}:begin`);
      const before = rows().length;
      await turns();
      // Read-then-write: nobody else wrote between the read and the write.
      ins(x + before);
      order.push(`${name}:end`);
    });
  const waitedBefore = txLockOf(c.sql).waited;
  await Promise.all([run('a', 10), run('b', 20), run('c', 30)]);
  expect(order).toEqual(['a:begin', 'a:end', 'b:begin', 'b:end', 'c:begin', 'c:end']);
  expect(rows()).toEqual([10, 21, 32]);
  expect(txLockOf(c.sql).waited - waitedBefore).toBe(2);
});

test('one that fails does not take the next one down with it', async () => {
  const a = transaction({ deps: c.rt }, async () => {
    ins(1);
    await turns();
    throw new Error('a failed');
  });
  const b = transaction({ deps: c.rt }, async () => {
    ins(2);
  });
  await expect(a).rejects.toThrow('a failed');
  await b;
  expect(rows()).toEqual([2]);
});

test('a synchronous write from outside while one is open is refused, not folded into it', async () => {
  let refused: unknown = null;
  let opened!: () => void;
  const open = new Promise<void>((r) => (opened = r));
  // Another request's synchronous write, started outside the transaction, running between two of its awaits.
  const other = (async () => {
    await open;
    try {
      withTransaction({ deps: c.rt }, () => ins(99));
    } catch (e) {
      refused = e;
    }
  })();
  await transaction({ deps: c.rt }, async () => {
    ins(1);
    opened();
    await turns();
  });
  await other;
  expect(refused).toBeInstanceOf(OverlappingWriteError);
  expect(rows()).toEqual([1]);
  // Inside the transaction, the synchronous form joins it.
  await transaction({ deps: c.rt }, async () => {
    await turns(1);
    withTransaction({ deps: c.rt }, () => ins(3));
  });
  expect(rows()).toEqual([1, 3]);
});

test('the network is refused inside a transaction, and allowed again once it has ended', async () => {
  let refused: unknown = null;
  let laterAllowed = false;
  let later: Promise<void> | null = null;
  await transaction({ deps: c.rt }, async () => {
    await turns(1);
    try {
      assertOutsideTransaction('a processor call');
    } catch (e) {
      refused = e;
    }
    // A continuation created inside that runs after the commit is outside it.
    later = (async () => {
      await turns(5);
      assertOutsideTransaction('a webhook delivery');
      laterAllowed = true;
    })();
  });
  await later;
  expect(refused).toBeInstanceOf(NetworkInTransactionError);
  expect(laterAllowed).toBe(true);
  expect(() => assertOutsideTransaction('a provider read')).not.toThrow();
});

test('a worker holding the write gate is waited for, asynchronously, and waits for an open transaction in turn', async () => {
  const gate = gateOf(c.sql);
  const order: string[] = [];
  let releaseWorker!: () => void;
  const worker = gate.exclusive(async () => {
    order.push('worker:start');
    await new Promise<void>((r) => (releaseWorker = r));
    order.push('worker:end');
  });
  await turns();
  const t = transaction({ deps: c.rt }, async () => {
    order.push('tx');
    ins(1);
  });
  await turns();
  expect(order).toEqual(['worker:start']);
  releaseWorker();
  await Promise.all([worker, t]);
  expect(order).toEqual(['worker:start', 'worker:end', 'tx']);

  const order2: string[] = [];
  let w2: Promise<void> | null = null;
  await transaction({ deps: c.rt }, async () => {
    w2 = gate.exclusive(async () => {
      order2.push('worker');
    });
    await turns();
    order2.push('tx');
  });
  await w2;
  expect(order2).toEqual(['tx', 'worker']);
});

test('a synchronous callback commits in the step that ran it: nothing else runs while it is open', async () => {
  let sawOpen = false;
  const probe = setInterval(() => {
    if (c.sql.inTransaction) sawOpen = true;
  }, 0);
  let opened!: () => void;
  const start = new Promise<void>((r) => (opened = r));
  // Another caller's continuation queued to run right after the callback, were there a gap.
  const other = start.then(() => c.sql.inTransaction);
  const seen = await transaction({ deps: c.rt }, () => {
    ins(7);
    opened();
    return c.sql.inTransaction;
  });
  clearInterval(probe);
  expect(seen).toBe(true);
  expect(await other).toBe(false);
  expect(sawOpen).toBe(false);
  expect(rows()).toEqual([7]);
});

test('called from inside its caller’s transaction without its ctx, it joins that one, and is undone with it', async () => {
  let inner: Promise<void> | null = null;
  expect(() =>
    withTransaction({ deps: c.rt }, () => {
      ins(1);
      inner = transaction({ deps: c.rt }, () => {
        ins(2);
      });
      throw new Error('outer refused');
    }),
  ).toThrow('outer refused');
  await inner;
  expect(rows()).toEqual([]);
  await transaction({ deps: c.rt }, async () => {
    ins(3);
    await turns(1);
    await transaction({ deps: c.rt }, () => ins(4));
  });
  expect(rows()).toEqual([3, 4]);
});

test('the processors, the bank-data provider and the linked sources refuse a call made inside a transaction', async () => {
  const calls: [string, () => unknown][] = [
    ['processor', () => c.rt.processors.byName('sandbox').verifyKey('sbx_inside_a_transaction_01')],
    ['bank-data provider', () => c.rt.bank.read({ authorizerUniqueId: 'a', paymentType: 'ACCOUNT_NUMBER', routingNumber: '110000000', accountNumber: '0001234567', debitCardNumber: null })],
    ['Plaid', () => c.rt.linked.plaid.verify({ provider: 'plaid', environment: 'sandbox', clientId: 'x', secret: 'y' } as never)],
  ];
  for (const [name, call] of calls) {
    let refused: unknown = null;
    await transaction({ deps: c.rt }, async () => {
      try {
        await call();
      } catch (e) {
        refused = e;
      }
    });
    expect([name, refused]).toEqual([name, expect.any(NetworkInTransactionError)]);
  }
  // Outside a transaction the same processor answers.
  await expect(Promise.resolve(c.rt.processors.byName('sandbox').verifyKey('sbx_inside_a_transaction_01'))).resolves.toBeDefined();
});
