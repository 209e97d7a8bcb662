import type { Tx } from './tx';

// What a transaction does once it has committed (counting what it recorded in the metrics), kept per open
// transaction by platform/transactions.sqlite.ts and transactions.pg.ts: run after COMMIT, dropped on
// ROLLBACK, and those of a savepoint rolled back dropped with it. A transaction PostgreSQL undoes in a
// deadlock and runs again (againOnConflict) thus counts what it recorded once, for the attempt that stood.

const open = new WeakMap<Tx, (() => void)[]>();

/** `fn` once the transaction of `ctx` commits; at once outside a transaction. */
export function afterCommit(ctx: { tx?: Tx }, fn: () => void): void {
  const hooks = ctx.tx ? open.get(ctx.tx) : undefined;
  if (hooks) hooks.push(fn);
  else fn();
}

/** A transaction begins on `tx`: its hooks are kept from now on. */
export function beginHooks(tx: Tx): void {
  open.set(tx, []);
}

/** The transaction on `tx` ended: its hooks run when it committed, else are dropped. */
export function endHooks(tx: Tx, committed: boolean): void {
  const hooks = open.get(tx);
  open.delete(tx);
  if (committed && hooks) for (const fn of hooks) fn();
}

/** Where a savepoint of the transaction on `tx` begins, to drop the hooks added after it when it is rolled back. */
export function hooksMark(tx: Tx): number {
  return open.get(tx)?.length ?? 0;
}

/** Drops the hooks added since `mark` (a savepoint or a read snapshot rolled back). */
export function dropHooksSince(tx: Tx, mark: number): void {
  const hooks = open.get(tx);
  if (hooks && hooks.length > mark) hooks.length = mark;
}
