import type { Database } from 'bun:sqlite';
import type { Config } from '../config';
import type { Clock } from './clock';
import type { Db, Orm } from './db';
import { immediate } from './db';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { PageTokens } from './pagination';
import type { Vault } from './vault';
import type { PgDb, PgHandle } from './pg';
import type { EngineServices } from './engine';
import { openTransactionOn, runInside } from './tx-lock';
import { sql } from 'drizzle-orm';
import { gateOf, type WriteGate } from './write-gate';
import { txLockOf } from './tx-lock';

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
}

/** The authenticated caller: a lender owns everything it creates. */
export interface Lender {
  id: string;
  name: string;
  debitCardApproved: boolean;
}

declare const inTransaction: unique symbol;

/**
 * The handle of an open write transaction: the same query builder as `Db` (and its SQLite connection as
 * `$client`, for the raw prepared statements of a module's queries.ts), branded so that a plain `Db` is not
 * assignable to it. A function that writes takes a `Tx`, so it can only be called inside `withTransaction`.
 */
export type Tx = Orm & { readonly [inTransaction]: true };

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
export async function transaction<C extends { deps: Pick<PlatformDeps, 'db' | 'pg'>; tx?: Tx }, T>(
  ctx: C,
  fn: (ctx: C & { tx: Tx }) => T | Promise<T>,
): Promise<T> {
  if (ctx.tx) return fn(ctx as C & { tx: Tx });
  if (ctx.deps.pg) return pgTransaction(ctx.deps.pg, ctx, fn);
  const client = ctx.deps.db.$client;
  const lock = txLockOf(client);
  // Called from inside a transaction of its own caller (one that did not pass its ctx): it joins that one,
  // at once, as a nested synchronous transaction would. Another caller's open transaction is waited for.
  if (client.inTransaction && !lock.heldByAnother()) return fn({ ...ctx, tx: ctx.deps.db as Orm as Tx });
  const release = await lock.acquire();
  try {
    client.query('BEGIN IMMEDIATE').run();
    lock.setOpen(true);
    let result: T;
    try {
      const r = lock.runMarked(() => fn({ ...ctx, tx: ctx.deps.db as Orm as Tx }));
      // A synchronous callback commits in the same step: no turn of the event loop while it is open.
      result = r instanceof Promise ? await r : r;
    } catch (e) {
      client.query('ROLLBACK').run();
      throw e;
    }
    try {
      client.query('COMMIT').run();
    } catch (e) {
      if (client.inTransaction) client.query('ROLLBACK').run();
      throw e;
    }
    return result;
  } finally {
    lock.setOpen(false);
    release();
  }
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
    const result = fn({ ...ctx, tx: ctx.deps.db as Orm as Tx });
    if (result instanceof Promise) throw new Error('withTransaction: the callback must be synchronous');
    return result;
  });
}

/**
 * Runs fn in a savepoint of the open transaction: when fn throws, its writes alone are undone (the rest of the
 * transaction stands) and the error is rethrown. fn may await (store calls): while it runs, no other caller
 * writes on the connection (the transaction is open and one at a time), so the savepoint holds only fn's
 * writes. Cached statements, not a nested bun:sqlite transaction: this runs once per slice of a feed's page
 * or of an upload, and once per change of the slice when one of them faults.
 */
export async function savepoint<T>(ctx: { deps: Pick<PlatformDeps, 'pg'>; tx: Tx }, fn: () => Promise<T>): Promise<T> {
  if (ctx.deps.pg) {
    const tx = ctx.tx as unknown as PgDb;
    await tx.execute(sql`SAVEPOINT one_of_many`);
    try {
      const result = await fn();
      await tx.execute(sql`RELEASE SAVEPOINT one_of_many`);
      return result;
    } catch (e) {
      await tx.execute(sql`ROLLBACK TO SAVEPOINT one_of_many`);
      await tx.execute(sql`RELEASE SAVEPOINT one_of_many`);
      throw e;
    }
  }
  const c = ctx.tx.$client;
  c.query('SAVEPOINT one_of_many').run();
  try {
    const result = await fn();
    c.query('RELEASE one_of_many').run();
    return result;
  } catch (e) {
    c.query('ROLLBACK TO one_of_many').run();
    c.query('RELEASE one_of_many').run();
    throw e;
  }
}

/** The query handle of a context: the open transaction's, else the database's. */
export const dbOf = (ctx: { deps: Pick<PlatformDeps, 'db'>; tx?: Tx }): Db => ctx.tx ?? ctx.deps.db;

/** The write gate of the service's database (platform/write-gate.ts): awaited before a write after an await. */
export const writeGate = (deps: Pick<PlatformDeps, 'db' | 'pg'>): WriteGate => gateOf(deps.pg ?? deps.db.$client);

/**
 * Runs fn on one read snapshot (BEGIN DEFERRED, never the write lock) and rolls it back whatever fn does. fn
 * gets a Tx so that code written for a transaction can run on it, writing nothing (a dry run). fn may await
 * (store calls): the snapshot is opened in its turn, as a transaction is, so that no other caller's write
 * lands inside it while it waits, and the network is refused inside it. Inside an open transaction it is a
 * savepoint of it, rolled back all the same.
 */
export async function readSnapshot<C extends { deps: Pick<PlatformDeps, 'db' | 'pg'>; tx?: Tx }, T>(ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  if (ctx.deps.pg) return pgReadSnapshot(ctx.deps.pg, ctx, fn);
  const client = ctx.deps.db.$client;
  const lock = txLockOf(client);
  if (ctx.tx || (client.inTransaction && !lock.heldByAnother())) {
    client.query('SAVEPOINT read_snapshot').run();
    try {
      return await fn({ ...ctx, tx: ctx.tx ?? (ctx.deps.db as Orm as Tx) });
    } finally {
      client.query('ROLLBACK TO read_snapshot').run();
      client.query('RELEASE read_snapshot').run();
    }
  }
  const release = await lock.acquire();
  try {
    client.query('BEGIN DEFERRED').run();
    lock.setOpen(true);
    try {
      return await lock.runMarked(() => fn({ ...ctx, tx: ctx.deps.db as Orm as Tx }));
    } finally {
      if (client.inTransaction) client.query('ROLLBACK').run();
    }
  } finally {
    lock.setOpen(false);
    release();
  }
}

/**
 * A transaction on PostgreSQL: BEGIN on a connection of the pool reserved for it, COMMIT when fn's promise
 * settles, ROLLBACK when it rejects. Others run side by side on their own connections (READ COMMITTED): what
 * SQLite's single writer gave for free, a check-then-write gets from a row lock, an advisory lock or a
 * conditional statement in its store. Inside, as on SQLite, the network is refused, and a call that did not
 * pass its ctx joins the open transaction instead of opening one on another connection.
 */
async function pgTransaction<C extends { tx?: Tx }, T>(pg: PgHandle, ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  const open = openTransactionOn<Tx>(pg);
  if (open) return fn({ ...ctx, tx: open });
  return pg.db.transaction((tx) => runInside(pg, tx, async () => fn({ ...ctx, tx: tx as unknown as Tx })));
}

/** Thrown to roll a read snapshot back, carrying what fn returned. */
class SnapshotDone<T> {
  constructor(readonly value: T) {}
}

/** `readSnapshot` on PostgreSQL: one REPEATABLE READ transaction, always rolled back. */
async function pgReadSnapshot<C extends { tx?: Tx }, T>(pg: PgHandle, ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  const outer = ctx.tx ?? openTransactionOn<Tx>(pg);
  if (outer) {
    const tx = outer as unknown as PgDb;
    await tx.execute(sql`SAVEPOINT read_snapshot`);
    try {
      return await fn({ ...ctx, tx: outer });
    } finally {
      await tx.execute(sql`ROLLBACK TO SAVEPOINT read_snapshot`);
      await tx.execute(sql`RELEASE SAVEPOINT read_snapshot`);
    }
  }
  try {
    await pg.db.transaction(
      (tx) =>
        runInside(pg, tx, async () => {
          throw new SnapshotDone(await fn({ ...ctx, tx: tx as unknown as Tx }));
        }),
      { isolationLevel: 'repeatable read' },
    );
  } catch (e) {
    if (e instanceof SnapshotDone) return e.value as T;
    throw e;
  }
  throw new Error('readSnapshot: the snapshot was not rolled back');
}
