import type { Database } from 'bun:sqlite';
import type { Config } from '../config';
import type { Clock } from './clock';
import type { Db } from './db';
import { immediate } from './db';
import { handleOf, txOf } from './sql/sqlite-handle';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { PageTokens } from './pagination';
import type { Vault } from './vault';
import type { PgHandle } from './pg';
import type { EngineServices } from './engine';
import type { Tx } from './tx';
import type { WriteGate } from './write-gate';
import type { Wakeups } from './wakeups';

/** What the platform provides to every service and job; the composition root adds the adapters. */
export interface PlatformDeps {
  config: Config;
  sqlite: Database;
  db: Db;
  /** The read-only connection: what a store reads with outside a transaction (platform/store.ts). */
  reader: Db;
  /**
   * Set when the service runs on PostgreSQL (DATABASE_URL): the pool the pg stores use. `sqlite`, `db` and
   * `reader` then throw when touched (nothing outside the SQLite stores and platform/ may).
   */
  pg?: PgHandle;
  /** What the platform does per engine beyond the stores (leases, rate buckets, key lookup), chosen once. */
  engine: EngineServices;
  clock: Clock;
  vault: Vault;
  logger: Logger;
  metrics: Metrics;
  pageTokens: PageTokens;
  /**
   * Jobs told of work as it is queued (platform/wakeups.ts): the running service's. Absent in a worker thread,
   * where the job's next tick finds the work.
   */
  wakeups?: Wakeups;
}

/** What a context needs to open a transaction: its engine's transactions (the runtime's, the CLI's). */
export type TransactionsSlot = { engine: Pick<EngineServices, 'transactions'> };

/** The authenticated caller: a lender owns everything it creates. */
export interface Lender {
  id: string;
  name: string;
  debitCardApproved: boolean;
}

export type { Tx };

/**
 * What every service function receives beside its input: `{ ctx, input }`. `tx` is set inside a
 * transaction, so a service called from another service's transaction joins it instead of opening its own.
 */
export interface ServiceCtx<D extends PlatformDeps = PlatformDeps> {
  lender: Lender;
  deps: D;
  tx?: Tx;
}

/** A job's context: no lender (jobs work across lenders), the same transaction rule. */
export interface JobCtx<D extends PlatformDeps = PlatformDeps> {
  deps: D;
  tx?: Tx;
}

/**
 * Runs fn in one `BEGIN IMMEDIATE` transaction, or inside the caller's when `ctx.tx` is already set, so
 * enrollment, payment, event and ledger writes compose into a single commit. The write lock is taken up
 * front: a read-then-write on money or monitoring state cannot interleave with another writer.
 *
 * fn may await: the transaction stays open until its promise settles, commits then, and rolls back when it
 * rejects. While it is open, no other caller writes on the connection: each waits for its turn, first come
 * first served (platform/tx-lock.ts), and nothing inside it may call the network (a processor, a provider, a
 * webhook receiver): such a call is refused. Keep the work inside short, and do the network before or after.
 */
export async function transaction<C extends { deps: TransactionsSlot; tx?: Tx }, T>(
  ctx: C,
  fn: (ctx: C & { tx: Tx }) => T | Promise<T>,
): Promise<T> {
  if (ctx.tx) return fn(ctx as C & { tx: Tx });
  return ctx.deps.engine.transactions.run(ctx, fn);
}

/**
 * The synchronous form of `transaction`, for a step that never awaits: fn runs and commits before the event
 * loop turns. Refused while another caller's asynchronous transaction is open on the connection (its writes
 * would land inside that one); a caller that may meet one awaits `transaction` instead.
 */
export function withTransaction<C extends { deps: Pick<PlatformDeps, 'db'>; tx?: Tx }, T>(ctx: C, fn: (ctx: C & { tx: Tx }) => T): T {
  if (ctx.tx) return fn(ctx as C & { tx: Tx });
  // Called from inside an open asynchronous transaction without its ctx, it joins that one (a savepoint).
  return immediate(ctx.deps.db.$client, () => {
    const result = fn({ ...ctx, tx: txOf(ctx.deps.db) });
    if (result instanceof Promise) throw new Error('withTransaction: the callback must be synchronous');
    return result;
  });
}

/**
 * What a transaction does once it commits (counting what it recorded), and what it reads once for all its
 * steps (platform/tx-scope.ts).
 */
export { afterCommit, forget, remembered } from './tx-scope';

/** Work whose commits nobody outside the process learns of directly: committed without a sync of their own (platform/wal-sync.ts). */
export { commitsSyncedLater } from './wal-sync';

/**
 * Runs fn in a savepoint of the open transaction: when fn throws, its writes alone are undone (the rest of the
 * transaction stands) and the error is rethrown. fn may await (store calls): while it runs, no other caller
 * writes on the connection (the transaction is open and one at a time), so the savepoint holds only fn's
 * writes. Cached statements, not a nested bun:sqlite transaction: this runs once per slice of a feed's page
 * or of an upload, and once per change of the slice when one of them faults.
 */
export function savepoint<T>(ctx: { deps: TransactionsSlot; tx: Tx }, fn: () => Promise<T>): Promise<T> {
  return ctx.deps.engine.transactions.savepoint(ctx.tx, fn);
}

/** The query handle of a context: the open transaction's, else the database's. */
export const dbOf = (ctx: { deps: Pick<PlatformDeps, 'db'>; tx?: Tx }): Db => (ctx.tx ? handleOf(ctx.tx) : ctx.deps.db);

/** The write gate of the service's database (platform/write-gate.ts): awaited before a write after an await. */
export const writeGate = (deps: TransactionsSlot): WriteGate => deps.engine.transactions.gate;

/**
 * Runs fn on one read snapshot (BEGIN DEFERRED, never the write lock) and rolls it back whatever fn does. fn
 * gets a Tx so that code written for a transaction can run on it, writing nothing (a dry run). fn may await
 * (store calls): the snapshot is opened in its turn, as a transaction is, so that no other caller's write
 * lands inside it while it waits, and the network is refused inside it. Inside an open transaction it is a
 * savepoint of it, rolled back all the same.
 */
export function readSnapshot<C extends { deps: TransactionsSlot; tx?: Tx }, T>(ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  return ctx.deps.engine.transactions.snapshot(ctx, fn);
}

