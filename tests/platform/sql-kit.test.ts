// engine: both
// The dialect kits every store writes its statements with (src/platform/sql/): one module per engine, the
// same names in both, each checked here on the engine the run uses. Raw integers read back as numbers (int8
// is text on PostgreSQL), whether a call runs inside a transaction (its ctx's, or one its caller opened), a
// list bound as one parameter, exact sums, and lockFor: an advisory lock on PostgreSQL, a no-op on SQLite,
// where a transaction that writes is alone anyway; on both, two transactions naming one key run one after
// the other.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { lenders } from '../../db/schema';
import { lenders as pgLenders } from '../../db/schema-pg';
import { createTestContext } from '../helpers/context';
import { transaction } from '../../src/platform/context';
import type { StoreCtx, TxCtx } from '../../src/platform/store';
import * as pgKit from '../../src/platform/sql/pg';
import * as sqliteKit from '../../src/platform/sql/sqlite';

const c = createTestContext();
afterAll(() => c.close());

const onPg = c.rt.pg !== undefined;
const outside: StoreCtx = { deps: c.rt };

/** A raw query's rows through the kit of the engine the run uses. */
async function query<T>(pg: ReturnType<typeof sql>, sqlite: ReturnType<typeof sql>, ctx: StoreCtx = outside): Promise<T[]> {
  return onPg ? pgKit.rows<T>(pgKit.readerOf(ctx), pg) : sqliteKit.rows<T>(sqliteKit.readerOf(ctx), sqlite);
}
const kit = { inTransaction: onPg ? pgKit.inTransaction : sqliteKit.inTransaction, lockFor: onPg ? pgKit.lockFor : sqliteKit.lockFor };

test('both kits export the same names: a store on either engine asks its questions in the same words', () => {
  expect(Object.keys(pgKit).sort()).toEqual(Object.keys(sqliteKit).sort());
  for (const name of ['readerOf', 'writerOf', 'inTransaction', 'num', 'numOrNull', 'lockFor', 'listOf', 'inList', 'exactSum', 'sumOf', 'rows']) {
    expect([name, typeof (pgKit as Record<string, unknown>)[name]]).toEqual([name, 'function']);
  }
});

describe(`on ${onPg ? 'PostgreSQL' : 'SQLite'}`, () => {
  test('num and numOrNull read integers back as numbers, up to 2^53 - 1, and null as null', async () => {
    const [r] = await query<{ big: unknown; none: unknown; small: unknown }>(
      sql`SELECT 9007199254740991::bigint AS big, NULL::bigint AS none, 42::int AS small`,
      sql`SELECT 9007199254740991 AS big, NULL AS none, 42 AS small`,
    );
    expect(pgKit.num).toBe(sqliteKit.num);
    expect(pgKit.numOrNull).toBe(sqliteKit.numOrNull);
    expect(sqliteKit.num(r!.big)).toBe(Number.MAX_SAFE_INTEGER);
    expect(sqliteKit.num(r!.small)).toBe(42);
    expect(sqliteKit.numOrNull(r!.big)).toBe(Number.MAX_SAFE_INTEGER);
    expect(sqliteKit.numOrNull(r!.none)).toBeNull();
    expect(sqliteKit.numOrNull(undefined)).toBeNull();
    expect(sqliteKit.num(9_007_199_254_740_991n)).toBe(Number.MAX_SAFE_INTEGER);
  });

  test('inTransaction: false outside, true in the transaction and in a call from inside it that did not pass its ctx', async () => {
    expect(kit.inTransaction(outside)).toBe(false);
    const seen = await transaction(outside, async (tx) => [kit.inTransaction(tx), kit.inTransaction(outside)]);
    expect(seen).toEqual([true, true]);
    expect(kit.inTransaction(outside)).toBe(false);
  });

  test('a list bound as one parameter, and a column tested against it', async () => {
    const listed = await query<{ v: unknown }>(
      sql`SELECT v FROM unnest(${pgKit.listOf([3, 1, 2])}::int[]) WITH ORDINALITY AS u(v, o) ORDER BY o`,
      sql`SELECT value AS v FROM json_each(${sqliteKit.listOf([3, 1, 2])}) ORDER BY key`,
    );
    expect(listed.map((r) => Number(r.v))).toEqual([3, 1, 2]);
    const lender = c.lender.id;
    const among = (ids: string[]) =>
      query<{ id: string }>(
        sql`SELECT id FROM lenders WHERE ${pgKit.inList(pgLenders.id, ids)}`,
        sql`SELECT id FROM lenders WHERE ${sqliteKit.inList(lenders.id, ids)}`,
      );
    expect((await among([lender, 'no-such-lender'])).map((r) => r.id)).toEqual([lender]);
    expect(await among([])).toEqual([]);
  });

  test('an exact sum past 2^53: every cent kept, where a float would lose some', async () => {
    // Three amounts just under 2^53 (the most a borrower's ledger holds) and 1 cent: their sum is past 2^54.
    const amounts = [2 ** 53 - 1, 2 ** 53 - 2, 2 ** 53 - 4, 1];
    const exact = amounts.reduce((s, a) => s + BigInt(a), 0n);
    let total: bigint;
    let credited: bigint;
    if (onPg) {
      const [r] = await pgKit.rows<pgKit.Summed<'t' | 'k'>>(
        pgKit.readerOf(outside),
        sql`SELECT ${pgKit.exactSum('a', 't')}, ${pgKit.exactSum('a', 'k', 'a > 1')} FROM unnest(${pgKit.listOf(amounts)}::bigint[]) AS u(a)`,
      );
      total = pgKit.sumOf(r!, 't');
      credited = pgKit.sumOf(r!, 'k');
    } else {
      const r = sqliteKit
        .readerOf(outside)
        .$client.query<sqliteKit.Summed<'t' | 'k'>, [string]>(
          `SELECT ${sqliteKit.exactSum('a', 't')}, ${sqliteKit.exactSum('a', 'k', 'a > 1')} FROM (SELECT value AS a FROM json_each(?))`,
        )
        .safeIntegers(true)
        .get(sqliteKit.listOf(amounts))!;
      total = sqliteKit.sumOf(r, 't');
      credited = sqliteKit.sumOf(r, 'k');
    }
    expect(total).toBe(exact);
    expect(credited).toBe(exact - 1n);
    expect(BigInt(amounts.reduce((s, a) => s + a, 0))).not.toBe(exact);
  });

  test('lockFor: two transactions naming one key run one after the other; another key does not wait', async () => {
    const events: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const firstLocked = new Promise<void>((r) => (locked = r));
    const first = transaction(outside, async (tx: TxCtx) => {
      await kit.lockFor(tx, 'sql-kit-test', 'one');
      events.push('first locked');
      locked();
      await held;
      events.push('first done');
    });
    await firstLocked;
    const second = transaction(outside, async (tx: TxCtx) => {
      await kit.lockFor(tx, 'sql-kit-test', 'one');
      events.push('second locked');
    });
    await Bun.sleep(50);
    expect(events).toEqual(['first locked']);
    release();
    await Promise.all([first, second]);
    expect(events).toEqual(['first locked', 'first done', 'second locked']);
    if (onPg) {
      // PostgreSQL's transactions run side by side: a lock on another key is not waited for.
      let releaseA!: () => void;
      const heldA = new Promise<void>((r) => (releaseA = r));
      let lockedA!: () => void;
      const aLocked = new Promise<void>((r) => (lockedA = r));
      const a = transaction(outside, async (tx: TxCtx) => {
        await kit.lockFor(tx, 'sql-kit-test', 'a');
        lockedA();
        await heldA;
      });
      await aLocked;
      await transaction(outside, (tx: TxCtx) => kit.lockFor(tx, 'sql-kit-test', 'b'));
      releaseA();
      await a;
    } else {
      // SQLite's lock is no lock at all: the transaction is alone already.
      expect(await transaction(outside, (tx: TxCtx) => sqliteKit.lockFor(tx, 'sql-kit-test', 'one'))).toBeUndefined();
    }
  });
});
