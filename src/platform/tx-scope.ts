import type { Tx } from './tx';

// What lives as long as one open transaction, kept by platform/transactions.sqlite.ts and transactions.pg.ts:
//  - what it does once it has committed (counting what it recorded in the metrics): run after COMMIT, dropped
//    on ROLLBACK, and those of a savepoint rolled back dropped with it. A transaction PostgreSQL undoes in a
//    deadlock and runs again (againOnConflict) thus counts what it recorded once, for the attempt that stood;
//  - what it has read that every step of it reads alike (a lender's collection policy, read for each borrower
//    of a flush): read once, forgotten when the transaction ends, when a savepoint of it is rolled back, and
//    by the step that writes it.

interface Scope {
  hooks: (() => void)[];
  remembered: Map<string, Promise<unknown>>;
}

const open = new WeakMap<Tx, Scope>();

/** `fn` once the transaction of `ctx` commits; at once outside a transaction. `fn` must not throw. */
export function afterCommit(ctx: { tx?: Tx }, fn: () => void): void {
  const scope = ctx.tx ? open.get(ctx.tx) : undefined;
  if (scope) scope.hooks.push(fn);
  else fn();
}

/**
 * What `read` answers, read once in the transaction of `ctx` under `key` (its steps side by side share the one
 * read); read each time outside a transaction. A read that fails is not kept.
 */
export function remembered<T>(ctx: { tx?: Tx }, key: string, read: () => Promise<T>): Promise<T> {
  const scope = ctx.tx ? open.get(ctx.tx) : undefined;
  if (!scope) return read();
  const kept = scope.remembered.get(key) as Promise<T> | undefined;
  if (kept) return kept;
  const reading = read();
  scope.remembered.set(key, reading);
  reading.catch(() => {
    if (scope.remembered.get(key) === reading) scope.remembered.delete(key);
  });
  return reading;
}

/** Forgets what the transaction of `ctx` remembered under `key`: the step that writes it calls this. */
export function forget(ctx: { tx?: Tx }, key: string): void {
  if (ctx.tx) open.get(ctx.tx)?.remembered.delete(key);
}

/** A transaction begins on `tx`: its scope is kept from now on. */
export function beginScope(tx: Tx): void {
  open.set(tx, { hooks: [], remembered: new Map() });
}

/** The transaction on `tx` ended: its hooks run when it committed, else are dropped; what it remembered goes. */
export function endScope(tx: Tx, committed: boolean): void {
  const scope = open.get(tx);
  open.delete(tx);
  if (committed && scope) for (const fn of scope.hooks) fn();
}

/** Where a savepoint of the transaction on `tx` begins, to drop the hooks added after it when it is rolled back. */
export function scopeMark(tx: Tx): number {
  return open.get(tx)?.hooks.length ?? 0;
}

/** A savepoint or a read snapshot rolled back: the hooks added since `mark` dropped, and what was remembered. */
export function rollBackScopeTo(tx: Tx, mark: number): void {
  const scope = open.get(tx);
  if (!scope) return;
  if (scope.hooks.length > mark) scope.hooks.length = mark;
  scope.remembered.clear();
}
