import { sql } from 'drizzle-orm';
import type { Transactions } from './engine';
import type { PgHandle } from './pg-types';
import type { Tx } from './tx';
import { beginScope, rollBackScopeTo, endScope, scopeMark } from './tx-scope';
import { handleOf, txOf } from './sql/pg';
import { openTransactionOn, runInside } from './tx-lock';
import { gateOf } from './write-gate';

// Transactions on PostgreSQL: each on a connection of the pool reserved for it, READ COMMITTED. The runtime
// builds them once for its pool (src/engine-services.ts); platform/context.ts runs every transaction,
// savepoint and read snapshot of the service through them.

export function pgTransactions(pg: PgHandle): Transactions {
  return {
    run: (ctx, fn) => pgTransaction(pg, ctx, fn),
    savepoint: pgSavepoint,
    snapshot: (ctx, fn) => pgReadSnapshot(pg, ctx, fn),
    gate: gateOf(pg),
  };
}

/** A savepoint of the open transaction (see platform/context.ts `savepoint`). */
async function pgSavepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
  const handle = handleOf(tx);
  await handle.execute(sql`SAVEPOINT one_of_many`);
  const mark = scopeMark(tx);
  try {
    const result = await fn();
    await handle.execute(sql`RELEASE SAVEPOINT one_of_many`);
    return result;
  } catch (e) {
    rollBackScopeTo(tx, mark);
    await handle.execute(sql`ROLLBACK TO SAVEPOINT one_of_many`);
    await handle.execute(sql`RELEASE SAVEPOINT one_of_many`);
    throw e;
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
  if (ctx.tx) return fn(ctx as C & { tx: Tx });
  const open = openTransactionOn<Tx>(pg);
  if (open) return fn({ ...ctx, tx: open });
  let begun: Tx | null = null;
  let committed = false;
  try {
    const result = await pg.db.transaction((tx) => {
      begun = txOf(tx);
      beginScope(begun);
      return runInside(pg, tx, async () => fn({ ...ctx, tx: begun! }));
    });
    committed = true;
    return result;
  } finally {
    if (begun) endScope(begun, committed);
  }
}

/** Thrown to roll a read snapshot back, carrying what fn returned. */
class SnapshotDone<T> {
  constructor(readonly value: T) {}
}

/** `readSnapshot` on PostgreSQL: one REPEATABLE READ transaction, always rolled back. */
async function pgReadSnapshot<C extends { tx?: Tx }, T>(pg: PgHandle, ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T> {
  const outer = ctx.tx ?? openTransactionOn<Tx>(pg);
  if (outer) {
    const tx = handleOf(outer);
    await tx.execute(sql`SAVEPOINT read_snapshot`);
    const mark = scopeMark(outer);
    try {
      return await fn({ ...ctx, tx: outer });
    } finally {
      rollBackScopeTo(outer, mark);
      await tx.execute(sql`ROLLBACK TO SAVEPOINT read_snapshot`);
      await tx.execute(sql`RELEASE SAVEPOINT read_snapshot`);
    }
  }
  try {
    await pg.db.transaction(
      (tx) =>
        runInside(pg, tx, async () => {
          // Nothing of a snapshot commits: what it would count after a commit is dropped with it.
          beginScope(txOf(tx));
          try {
            throw new SnapshotDone(await fn({ ...ctx, tx: txOf(tx) }));
          } finally {
            endScope(txOf(tx), false);
          }
        }),
      { isolationLevel: 'repeatable read' },
    );
  } catch (e) {
    if (e instanceof SnapshotDone) return e.value as T;
    throw e;
  }
  throw new Error('readSnapshot: the snapshot was not rolled back');
}
