// What every module's store builds on. A module's SQL lives in its store: `store.ts` declares the interface, a
// set of asynchronous functions named for what they do (`claimDuePayments`, `recordObservation`), and
// `store.sqlite.ts` implements it on SQLite; services, jobs and routes call the interface only. A store function
// takes the caller's context first: inside a transaction (`ctx.tx` set, or called from inside one the caller
// opened) it reads and writes on the transaction's connection; outside one it reads on the read-only
// connection, which sees every committed write and none of an open transaction's. A function that writes
// takes a `TxCtx`, so a write outside a transaction does not type-check.
import type { PlatformDeps, Tx } from './context';
import type { Db, Orm } from './db';
import { insideTransactionOn } from './tx-lock';

/**
 * The stores of the engine the service runs on, chosen once by the composition root: what it holds is declared
 * where the features are known (src/deps.ts, `stores`).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface StoresSlot {}

/** What a store function receives: a service's or a job's context, or anything with its deps and its tx. */
export interface StoreCtx {
  deps: Pick<PlatformDeps, 'db' | 'reader' | 'pg'> & StoresSlot;
  tx?: Tx;
}

/** A context inside an open transaction: what a store function that writes requires. */
export type TxCtx = StoreCtx & { tx: Tx };

/**
 * The handle a store reads with: the open transaction's (its own writes visible), else the read-only
 * connection. A caller inside its own transaction that did not pass its ctx still reads on the writer.
 */
export function readerOf(c: StoreCtx): Db {
  if (c.tx) return c.tx;
  if (insideTransactionOn(c.deps.db.$client)) return c.deps.db;
  return c.deps.reader;
}

/** The handle a store writes with: the open transaction's. */
export const writerOf = (c: TxCtx): Orm => c.tx;
