// What every SQLite store (`store.sqlite.ts`) writes its statements with. sql/pg.ts exports the same names for
// the PostgreSQL stores, so a question both engines ask (which handle to read with, is this call inside a
// transaction, a list bound as one parameter, a lock around a check-then-write) is one call on both, each
// answered as its engine needs.
//
// SQLite has one writer at a time: a transaction that writes holds the connection's write lock from its
// BEGIN IMMEDIATE to its end (platform/tx-lock.ts), so nothing it reads changes under it and the locks
// PostgreSQL needs are no-ops here. Outside a transaction a store reads on the read-only second connection,
// which sees every committed write and none of an open transaction's.
import { sql, type SQL } from 'drizzle-orm';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { Db, Orm } from '../db';
import type { StoreCtx, TxCtx } from '../store';
import { handleOf } from './sqlite-handle';
import { insideTransactionOn } from '../tx-lock';
import { oncePerHandle } from './built-once';

export { num, numOrNull } from './numbers';

/**
 * The handle a store reads with: the open transaction's (its own writes visible), else the read-only
 * connection. A caller inside its own transaction that did not pass its ctx still reads on the writer.
 */
export function readerOf(c: StoreCtx): Db {
  if (c.tx) return handleOf(c.tx);
  if (insideTransactionOn(c.deps.db.$client)) return c.deps.db;
  return c.deps.reader;
}

/** The handle a store writes with: the open transaction's. */
export const writerOf = (c: TxCtx): Orm => handleOf(c.tx);

export { handleOf, txOf } from './sqlite-handle';

/** Whether the call runs inside a transaction (its ctx's, or one its caller opened without passing it). */
export const inTransaction = (c: StoreCtx): boolean => readerOf(c) !== c.deps.reader;

/**
 * Serializes the transactions that name the same key (PostgreSQL's advisory lock): here a no-op, as a
 * transaction that writes is already alone until it ends. A store calls it as its pg twin does, key and all.
 */
export async function lockFor(_c: TxCtx, ..._key: string[]): Promise<void> {}

/**
 * Probes stay index probes for the rest of the transaction (on PostgreSQL, whose planner can take a table the
 * transaction is filling for an empty one): a no-op here, where a statement that must probe an index names it
 * (INDEXED BY), whatever the statistics say.
 */
export async function probeByIndex(_c: TxCtx): Promise<void> {}

/** Rows of a raw query built with Drizzle's sql template. */
export const rows = <T>(db: Db, query: SQL): T[] => db.all<T>(query);

/**
 * A list bound as one parameter: JSON text, read back as rows by `json_each(?)`. One statement (and one cached
 * prepared statement) whatever the list's length, where `IN (?, ?, …)` would be one per length.
 */
export const listOf = (values: readonly unknown[]): string => JSON.stringify(values);

/** `column IN (the list)`, the list bound as one parameter. */
export const inList = (column: SQLiteColumn | SQL, values: readonly unknown[]): SQL =>
  sql`${column} IN (SELECT value FROM json_each(${listOf(values)}))`;

/**
 * The select-list terms of an exact SUM of an integer column, named `name0`, `name1`, `name2` (read them with
 * `sumOf`, the statement run with safeIntegers). SQLite sums integers in 64 bits and fails on overflow: each
 * amount (under 2^54 cents: a borrower's ledger stays under 2^53) is summed as three 18-bit parts, each part's
 * sum staying under 2^63 for up to 2^45 rows, more than a SQLite file can hold. `when` limits the rows summed.
 */
export function exactSum(amount: string, name: string, when = '1'): string {
  return [0, 1, 2]
    .map((i) => `COALESCE(SUM(CASE WHEN ${when} THEN (${amount} >> ${i * PART_BITS})${i < 2 ? ` & ${PART_MASK}` : ''} END), 0) AS ${name}${i}`)
    .join(', ');
}
const PART_BITS = 18;
const PART_MASK = (1 << PART_BITS) - 1;

/** What a row holds of the exact sums named N (exactSum's three parts each). */
export type Summed<N extends string> = Record<`${N}${0 | 1 | 2}`, bigint>;

/** The exact sum `name` of a row, its parts put together. */
export const sumOf = <N extends string>(row: Summed<N>, name: N): bigint =>
  row[`${name}0`] + (row[`${name}1`] << BigInt(PART_BITS)) + (row[`${name}2`] << BigInt(2 * PART_BITS));

/**
 * A query built once per connection and run with placeholders (`sql.placeholder('id')`, values at each run):
 * for hot paths, where building a Drizzle query costs far more than running it (a whole enrollment row: about
 * 100 µs built against 3 µs run). The statement under it is prepared once per connection (platform/db.ts).
 */
export const builtOnce: <Q>(build: (db: Db) => Q) => (db: Db) => Q = oncePerHandle;
