import type { Db } from './db';
import type { Transactions } from './engine';
import type { Tx } from './tx';
import { beginScope, rollBackScopeTo, endScope, scopeMark } from './tx-scope';
import { handleOf, txOf } from './sql/sqlite-handle';
import { txLockOf } from './tx-lock';
import { gateOf } from './write-gate';
import { syncSoon, unsyncedCommit } from './wal-sync';

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
 * `transaction` (platform/context.ts) on SQLite, on `db`: one `BEGIN IMMEDIATE` transaction in its turn, or the
 * caller's when `ctx.tx` is set or it is called from inside its own caller's open one.
 */
export async function sqliteTransaction<C extends { tx?: Tx }, T>(db: Db, ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  if (ctx.tx) return fn(ctx as C & { tx: Tx });
  const client = db.$client;
  const lock = txLockOf(client);
  // Called from inside a transaction of its own caller (one that did not pass its ctx): it joins that one,
  // at once, as a nested synchronous transaction would. Another caller's open transaction is waited for.
  if (client.inTransaction && !lock.heldByAnother()) return fn({ ...ctx, tx: txOf(db) });
  const release = await lock.acquire();
  const tx = txOf(db);
  let committed = false;
  // Work whose commits nobody outside learns of directly: committed without a sync of its own (platform/wal-sync.ts).
  let restoreSync: (() => void) | null = null;
  try {
    restoreSync = unsyncedCommit(client);
    client.query('BEGIN IMMEDIATE').run();
    beginScope(tx);
    lock.setOpen(true);
    let result: T;
    try {
      const r = lock.runMarked(() => fn({ ...ctx, tx }));
      // A synchronous callback commits in the same step: no turn of the event loop while it is open.
      result = r instanceof Promise ? await r : r;
    } catch (e) {
      client.query('ROLLBACK').run();
      throw e;
    }
    try {
      client.query('COMMIT').run();
      committed = true;
    } catch (e) {
      if (client.inTransaction) client.query('ROLLBACK').run();
      throw e;
    }
    return result;
  } finally {
    restoreSync?.();
    endScope(tx, committed);
    lock.setOpen(false);
    release();
    if (committed && restoreSync) syncSoon(client);
  }
}

/** `savepoint` (platform/context.ts) on SQLite: cached statements, not a nested bun:sqlite transaction. */
async function sqliteSavepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
  const c = handleOf(tx).$client;
  c.query('SAVEPOINT one_of_many').run();
  const mark = scopeMark(tx);
  try {
    const result = await fn();
    c.query('RELEASE one_of_many').run();
    return result;
  } catch (e) {
    rollBackScopeTo(tx, mark);
    c.query('ROLLBACK TO one_of_many').run();
    c.query('RELEASE one_of_many').run();
    throw e;
  }
}

/** `readSnapshot` (platform/context.ts) on SQLite: BEGIN DEFERRED in its turn, or a savepoint of the open transaction. */
async function sqliteSnapshot<C extends { tx?: Tx }, T>(db: Db, ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  const client = db.$client;
  const lock = txLockOf(client);
  if (ctx.tx || (client.inTransaction && !lock.heldByAnother())) {
    const tx = ctx.tx ?? txOf(db);
    client.query('SAVEPOINT read_snapshot').run();
    const mark = scopeMark(tx);
    try {
      return await fn({ ...ctx, tx });
    } finally {
      rollBackScopeTo(tx, mark);
      client.query('ROLLBACK TO read_snapshot').run();
      client.query('RELEASE read_snapshot').run();
    }
  }
  const release = await lock.acquire();
  try {
    client.query('BEGIN DEFERRED').run();
    const tx = txOf(db);
    beginScope(tx);
    lock.setOpen(true);
    try {
      return await lock.runMarked(() => fn({ ...ctx, tx }));
    } finally {
      endScope(tx, false);
      if (client.inTransaction) client.query('ROLLBACK').run();
    }
  } finally {
    lock.setOpen(false);
    release();
  }
}
