// What every pg store builds on (`store.pg.ts` beside each `store.sqlite.ts`): the handle to read and write
// with. Inside a transaction (the ctx's, or one the caller opened without passing its ctx) the transaction's
// connection; outside one, the pool. PostgreSQL has no single writer: transactions run side by side under READ
// COMMITTED, so a store function that checks and then writes holds a row lock (`FOR UPDATE`), an advisory lock
// (`lockFor`) or makes the check part of the statement (`INSERT … WHERE (SELECT count(*) …) < n`).
import { sql } from 'drizzle-orm';
import type { PgDb, PgHandle } from './pg';
import type { StoreCtx, TxCtx } from './store';
import { openTransactionOn } from './tx-lock';

function poolOf(c: StoreCtx): PgHandle {
  const pg = c.deps.pg;
  if (!pg) throw new Error('a PostgreSQL store was called on a service that runs on SQLite');
  return pg;
}

/** The handle a pg store reads with: the open transaction's (its own writes visible), else the pool. */
export function pgReaderOf(c: StoreCtx): PgDb {
  if (c.tx) return c.tx as unknown as PgDb;
  const pg = poolOf(c);
  return openTransactionOn<PgDb>(pg) ?? pg.db;
}

/** The handle a pg store writes with: the open transaction's. */
export const pgWriterOf = (c: TxCtx): PgDb => c.tx as unknown as PgDb;

/**
 * Serializes the transactions that name the same key until they end (a transaction-scoped advisory lock): for a
 * check-then-write that no row lock covers (a count before an insert, a row created on first use). Keys are
 * namespaced by their first part: `lockFor(c, 'webhook-endpoints', lenderId)`.
 */
export async function lockFor(c: TxCtx, ...key: string[]): Promise<void> {
  await pgWriterOf(c).execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${key.join('\u001f')}, 0))`);
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
  await pgWriterOf(c).execute(sql`SELECT set_config('enable_seqscan', 'off', true)`);
}

/** Rows of a raw query (`db.execute`), as Bun.SQL returns them. */
export async function rows<T>(db: PgDb, query: ReturnType<typeof sql>): Promise<T[]> {
  return (await db.execute(query)) as unknown as T[];
}

/** A JavaScript array bound as one PostgreSQL array parameter (Drizzle's sql template would spread it into a list). */
export const pgArray = (values: readonly unknown[]) => sql.param(values);
