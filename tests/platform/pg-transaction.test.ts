// engine: postgres
// The transaction runner on PostgreSQL: a connection of the pool reserved from BEGIN to the end, committed
// when the callback settles and rolled back when it rejects, several side by side, a call that did not pass
// its ctx joining the open one, the network refused inside, and the savepoint and read snapshot built on it.
import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { onPostgres, freshPgDatabase } from '../helpers/pg';
import { openPg, type PgHandle } from '../../src/platform/pg';
import { readSnapshot, savepoint, transaction, type Tx } from '../../src/platform/context';
import { assertOutsideTransaction, NetworkInTransactionError } from '../../src/platform/tx-lock';
import { handleOf, lockFor, readerOf } from '../../src/platform/sql/pg';
import type { StoreCtx, TxCtx } from '../../src/platform/store';
import { pgStoreDeps } from '../helpers/pg-store-deps';

if (!onPostgres) {
  test('PostgreSQL transactions: not applicable without DATABASE_URL=postgres://…', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const database = freshPgDatabase();
  const pg: PgHandle = openPg(database.url, { max: 6 });
  const ctx = { deps: pgStoreDeps(pg) };
  afterAll(async () => {
    await pg.close();
    database.drop();
  });

  const txOf = (c: { tx: Tx }) => handleOf(c.tx);
  const ins = (c: { tx: Tx }, x: number) => txOf(c).execute(sql`INSERT INTO tx_probe VALUES (${x})`);
  const rows = async () => ((await pg.sql`SELECT x FROM tx_probe ORDER BY x`) as { x: number }[]).map((r) => r.x);

  await pg.sql`CREATE TABLE tx_probe (x integer)`;
  beforeEach(async () => {
    await pg.sql`DELETE FROM tx_probe`;
  });

  describe('on PostgreSQL', () => {
    test('open across awaits, committed when the callback has finished: outside it, nothing shows before', async () => {
      let seenOutside: number[] = [];
      await transaction(ctx, async (c) => {
        await ins(c, 1);
        await Bun.sleep(5);
        await ins(c, 2);
        seenOutside = await rows();
      });
      expect(seenOutside).toEqual([]);
      expect(await rows()).toEqual([1, 2]);
    });

    test('an error after an await rolls back what was written before it', async () => {
      await expect(
        transaction(ctx, async (c) => {
          await ins(c, 1);
          await Bun.sleep(1);
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect(await rows()).toEqual([]);
    });

    test('a call that did not pass its ctx joins the open transaction (and rolls back with it)', async () => {
      await expect(
        transaction(ctx, async (c) => {
          await ins(c, 1);
          // Inside the callback, a service that opens "its own" transaction from the bare deps joins this one.
          await transaction({ deps: ctx.deps }, async (inner) => {
            expect(inner.tx).toBe(c.tx);
            await ins(inner, 2);
          });
          // A store read without the tx reads on the transaction's connection: its own writes are visible.
          const seen = (await readerOf({ deps: ctx.deps } as StoreCtx).execute(sql`SELECT count(*)::int AS n FROM tx_probe`)) as unknown as { n: number }[];
          expect(seen[0]!.n).toBe(2);
          throw new Error('undo both');
        }),
      ).rejects.toThrow('undo both');
      expect(await rows()).toEqual([]);
    });

    test('transactions run side by side on connections of their own', async () => {
      let inside = 0;
      let most = 0;
      await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          transaction(ctx, async (c) => {
            inside++;
            most = Math.max(most, inside);
            await ins(c, i);
            // Each waits until all four are open at once: with one connection between them this would never end.
            await pg.sql`SELECT pg_sleep(0)`;
            while (inside < 4 && most < 4) await Bun.sleep(2);
            inside--;
          }),
        ),
      );
      expect(most).toBe(4);
      expect(await rows()).toEqual([0, 1, 2, 3]);
    });

    test('lockFor serializes the transactions naming one key: 20 "add if fewer than 10" callers add 10', async () => {
      const addIfFewer = (c: TxCtx) =>
        lockFor(c, 'probe', 'k').then(async () => {
          const [{ n }] = (await txOf(c).execute(sql`SELECT count(*)::int AS n FROM tx_probe`)) as unknown as { n: number }[];
          if (n < 10) await ins(c, n);
        });
      await Promise.all(Array.from({ length: 20 }, () => transaction(ctx, (c) => addIfFewer(c))));
      expect(await rows()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    test('the network is refused inside a transaction, allowed outside', async () => {
      await expect(transaction(ctx, async () => assertOutsideTransaction('a processor call'))).rejects.toBeInstanceOf(NetworkInTransactionError);
      expect(() => assertOutsideTransaction('a processor call')).not.toThrow();
    });

    test('a savepoint undoes its own writes alone; the transaction goes on', async () => {
      await transaction(ctx, async (c) => {
        await ins(c, 1);
        await expect(
          savepoint(c, async () => {
            await ins(c, 2);
            throw new Error('this one only');
          }),
        ).rejects.toThrow('this one only');
        await savepoint(c, () => ins(c, 3));
      });
      expect(await rows()).toEqual([1, 3]);
    });

    test('a read snapshot writes nothing, whatever its callback does, and returns its value', async () => {
      const value = await readSnapshot(ctx, async (c) => {
        await ins(c, 7);
        const seen = (await txOf(c).execute(sql`SELECT count(*)::int AS n FROM tx_probe`)) as unknown as { n: number }[];
        return seen[0]!.n;
      });
      expect(value).toBe(1);
      expect(await rows()).toEqual([]);
      // Inside a transaction it is a savepoint of it, rolled back alone.
      await transaction(ctx, async (c) => {
        await ins(c, 1);
        await readSnapshot(c, (s) => ins(s, 2));
      });
      expect(await rows()).toEqual([1]);
    });
  });
}
