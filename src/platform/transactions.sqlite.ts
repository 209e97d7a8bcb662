import type { Db, Orm } from './db';
import type { Transactions } from './engine';
import type { Tx } from './tx';
import { txLockOf } from './tx-lock';
import { gateOf } from './write-gate';

// Transactions on SQLite: one connection, one writer at a time (platform/tx-lock.ts), BEGIN IMMEDIATE. The
// runtime builds them once for its database (src/engine-services.ts); platform/context.ts runs every
// transaction, savepoint and read snapshot of the service through them.

export function sqliteTransactions(db: Db): Transactions {
  return {
    run: (ctx, fn) => sqliteTransaction(db, ctx, fn),
    savepoint: sqliteSavepoint,
    snapshot: (ctx, fn) => sqliteSnapshot(db, ctx, fn),
    gate: gateOf(db.$client),
  };
}

/**
 * Runs fn in one `BEGIN IMMEDIATE` transaction on `db`, or inside the caller's when `ctx.tx` is already set, so
 * enrollment, payment, event and ledger writes compose into a single commit. The write lock is taken up
 * front: a read-then-write on money or monitoring state cannot interleave with another writer.
 *
 * fn may await: the transaction stays open until its promise settles, commits then, and rolls back when it
 * rejects. While it is open, no other caller writes on the connection: each waits for its turn, first come
 * first served (platform/tx-lock.ts), and nothing inside it may call the network (a processor, a provider, a
 * webhook receiver): such a call is refused. Keep the work inside short, and do the network before or after.
 */
export async function sqliteTransaction<C extends { tx?: Tx }, T>(db: Db, ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  if (ctx.tx) return fn(ctx as C & { tx: Tx });
  const client = db.$client;
  const lock = txLockOf(client);
  // Called from inside a transaction of its own caller (one that did not pass its ctx): it joins that one,
  // at once, as a nested synchronous transaction would. Another caller's open transaction is waited for.
  if (client.inTransaction && !lock.heldByAnother()) return fn({ ...ctx, tx: db as Orm as Tx });
  const release = await lock.acquire();
  try {
    client.query('BEGIN IMMEDIATE').run();
    lock.setOpen(true);
    let result: T;
    try {
      const r = lock.runMarked(() => fn({ ...ctx, tx: db as Orm as Tx }));
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
 * Runs fn in a savepoint of the open transaction: when fn throws, its writes alone are undone (the rest of the
 * transaction stands) and the error is rethrown. fn may await (store calls): while it runs, no other caller
 * writes on the connection (the transaction is open and one at a time), so the savepoint holds only fn's
 * writes. Cached statements, not a nested bun:sqlite transaction: this runs once per slice of a feed's page
 * or of an upload, and once per change of the slice when one of them faults.
 */
async function sqliteSavepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
  const c = tx.$client;
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

/**
 * Runs fn on one read snapshot (BEGIN DEFERRED, never the write lock) and rolls it back whatever fn does. fn
 * gets a Tx so that code written for a transaction can run on it, writing nothing (a dry run). fn may await
 * (store calls): the snapshot is opened in its turn, as a transaction is, so that no other caller's write
 * lands inside it while it waits, and the network is refused inside it. Inside an open transaction it is a
 * savepoint of it, rolled back all the same.
 */
async function sqliteSnapshot<C extends { tx?: Tx }, T>(db: Db, ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  const client = db.$client;
  const lock = txLockOf(client);
  if (ctx.tx || (client.inTransaction && !lock.heldByAnother())) {
    client.query('SAVEPOINT read_snapshot').run();
    try {
      return await fn({ ...ctx, tx: ctx.tx ?? (db as Orm as Tx) });
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
      return await lock.runMarked(() => fn({ ...ctx, tx: db as Orm as Tx }));
    } finally {
      if (client.inTransaction) client.query('ROLLBACK').run();
    }
  } finally {
    lock.setOpen(false);
    release();
  }
}
