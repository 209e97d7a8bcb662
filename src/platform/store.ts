// What every module's store builds on. A module's SQL lives in its store: `store.ts` declares the interface, a
// set of asynchronous functions named for what they do (`claimDuePayments`, `recordObservation`), and
// `store.sqlite.ts` and `store.pg.ts` implement it, one per engine, each with its engine's kit (platform/sql/);
// services, jobs and routes call the interface only. A store function takes the caller's context first: inside
// a transaction (`ctx.tx` set, or called from inside one the caller opened) it reads and writes on the
// transaction's connection; outside one it reads on the read-only connection (SQLite) or the pool
// (PostgreSQL), which sees every committed write and none of an open transaction's. A function that writes
// takes a `TxCtx`, so a write outside a transaction does not type-check.
import type { PlatformDeps, Tx } from './context';

/** What a store function receives: a service's or a job's context, or anything with its deps and its tx. */
export interface StoreCtx {
  deps: Pick<PlatformDeps, 'db' | 'reader' | 'pg'>;
  tx?: Tx;
}

/** A context inside an open transaction: what a store function that writes requires. */
export type TxCtx = StoreCtx & { tx: Tx };

/**
 * A module's store on the engine its caller's service runs on: every method of `sqlite` or of `pg`, chosen by
 * the context each call takes first (`deps.pg` is set when the service runs on PostgreSQL). One object per
 * module, made at load; the choice costs one property read per call.
 */
export function byEngine<S extends object>(sqlite: S, pg: S): S {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(sqlite) as (keyof S & string)[]) {
    const onSqlite = sqlite[name] as (c: StoreCtx, ...rest: unknown[]) => unknown;
    const onPg = pg[name] as (c: StoreCtx, ...rest: unknown[]) => unknown;
    if (typeof onSqlite !== 'function') {
      out[name] = onSqlite;
      continue;
    }
    if (typeof onPg !== 'function') throw new Error(`the PostgreSQL store has no ${name}`);
    out[name] = (c: StoreCtx, ...rest: unknown[]) => (c.deps.pg ? onPg(c, ...rest) : onSqlite(c, ...rest));
  }
  return out as S;
}
