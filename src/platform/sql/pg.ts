// What every PostgreSQL store (`store.pg.ts`) writes its statements with: the same names as sql/sqlite.ts,
// answered as PostgreSQL needs. Inside a transaction (the ctx's, or one the caller opened without passing its
// ctx) a store reads and writes on the transaction's connection; outside one, on the pool. PostgreSQL has no
// single writer: transactions run side by side under READ COMMITTED, so a store function that checks and then
// writes holds a row lock (`FOR UPDATE`), an advisory lock (`lockFor`) or makes the check part of the statement
// (`INSERT … WHERE (SELECT count(*) …) < n`).
import { sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import { arrayTypeOf, type PgDb, type PgHandle } from '../pg';
import type { StoreCtx, TxCtx } from '../store';
import type { Tx } from '../tx';
import { openTransactionOn } from '../tx-lock';
import { oncePerHandle } from './built-once';

export { num, numOrNull } from './numbers';

function poolOf(c: StoreCtx): PgHandle {
  const pg = c.deps.pg;
  if (!pg) throw new Error('a PostgreSQL store was called on a service that runs on SQLite');
  return pg;
}

/** The handle a store reads with: the open transaction's (its own writes visible), else the pool. */
export function readerOf(c: StoreCtx): PgDb {
  if (c.tx) return handleOf(c.tx);
  const pg = poolOf(c);
  return openTransactionOn<PgDb>(pg) ?? pg.db;
}

/** The handle a store writes with: the open transaction's. */
export const writerOf = (c: TxCtx): PgDb => handleOf(c.tx);

/** The connection under a transaction opened on PostgreSQL (platform/transactions.pg.ts). */
export const handleOf = (tx: Tx): PgDb => tx as unknown as PgDb;

/** A transaction's connection as its Tx: for what opens one (transactions.pg.ts). */
export const txOf = (db: PgDb): Tx => db as unknown as Tx;

/** Whether the call runs inside a transaction: its reads are then made to be written upon (locked). */
export const inTransaction = (c: StoreCtx): boolean => readerOf(c) !== c.deps.pg!.db;

/**
 * Serializes the transactions that name the same key until they end (a transaction-scoped advisory lock): for a
 * check-then-write that no row lock covers (a count before an insert, a row created on first use). Keys are
 * namespaced by their first part: `lockFor(c, 'webhook-endpoints', lenderId)`.
 */
export async function lockFor(c: TxCtx, ...key: string[]): Promise<void> {
  await writerOf(c).execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${key.join('\u001f')}, 0))`);
}

/**
 * For the rest of a transaction that probes tables it is itself filling (an upload's slices, a feed's page):
 * a sequential scan only where nothing else can answer. A table analyzed while empty (an upload rolled back,
 * then vacuumed) is taken for one of a few rows, and a probe of it planned as a scan; the transaction's own
 * inserts then make every such probe read all of them (quadratic: a 20,000-row file took 18 s instead of 5).
 * With it, a probe is an index probe whatever the statistics say. (Planning every statement afresh as well,
 * plan_cache_mode, was measured: 40% slower, and not needed, as these statements run in such transactions.)
 */
export async function probeByIndex(c: TxCtx): Promise<void> {
  await writerOf(c).execute(sql`SELECT set_config('enable_seqscan', 'off', true)`);
}

/** Rows of a raw query (`db.execute`), as Bun.SQL returns them (int8 as text: read them with num). */
export async function rows<T>(db: PgDb, query: SQL): Promise<T[]> {
  return (await db.execute(query)) as unknown as T[];
}

/**
 * A list bound as one parameter, a PostgreSQL array (Drizzle's sql template would spread it into a list of
 * parameters): one statement, and one prepared plan, whatever the list's length. Cast it where it is used
 * (`${listOf(ids)}::text[]`), or let inList do it.
 */
export const listOf = (values: readonly unknown[]) => sql.param(values);

/** `column = ANY(the list)`, the list bound as one parameter of the column's array type. */
export const inList = (column: PgColumn, values: readonly unknown[]): SQL => sql`${column} = ANY(${listOf(values)}::${sql.raw(arrayTypeOf(column))})`;

/**
 * The select-list term of an exact SUM of an integer column, named `name` (read it with `sumOf`): PostgreSQL
 * sums int8 into numeric, exact at any size, read as text. `when` limits the rows summed.
 */
export const exactSum = (amount: string, name: string, when?: string): SQL =>
  sql.raw(`COALESCE(SUM(${amount})${when ? ` FILTER (WHERE ${when})` : ''}, 0)::text AS ${name}`);

/** What a row holds of the exact sums named N. */
export type Summed<N extends string> = Record<N, string>;

/** The exact sum `name` of a row. */
export const sumOf = <N extends string>(row: Summed<N>, name: N): bigint => BigInt(row[name]);

/**
 * A query built once per handle and run with placeholders (`sql.placeholder('id')`, values at each run): for
 * hot paths, where building a Drizzle query costs more than sending it. A transaction's handle is its own, so
 * a query is built once per transaction there (a flush of results asks it for each of its borrowers).
 */
export const builtOnce: <Q>(build: (db: PgDb) => Q) => (db: PgDb) => Q = oncePerHandle;
