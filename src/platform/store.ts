// What every module's store builds on. A module's SQL lives in its store: `store.ts` declares the interface, a
// set of asynchronous functions named for what they do (`claimDuePayments`, `recordObservation`), and
// `store.sqlite.ts` and `store.pg.ts` implement it, one per engine, each with its engine's kit (platform/sql/);
// services, jobs and routes call the interface only. A store function takes the caller's context first: inside
// a transaction (`ctx.tx` set, or called from inside one the caller opened) it reads and writes on the
// transaction's connection; outside one it reads on the read-only connection (SQLite) or the pool
// (PostgreSQL), which sees every committed write and none of an open transaction's. A function that writes
// takes a `TxCtx`, so a write outside a transaction does not type-check.
import type { PlatformDeps, TransactionsSlot, Tx } from './context';

/**
 * The stores of the engine the service runs on, chosen once by the composition root: what it holds is declared
 * where the features are known (src/deps.ts, `stores`).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface StoresSlot {}

/** What a store function receives: a service's or a job's context, or anything with its deps and its tx. */
export interface StoreCtx {
  deps: Pick<PlatformDeps, 'db' | 'reader' | 'pg'> & StoresSlot & TransactionsSlot;
  tx?: Tx;
}

/** A context inside an open transaction: what a store function that writes requires. */
export type TxCtx = StoreCtx & { tx: Tx };
