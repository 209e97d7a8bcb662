import type { Orm } from './db';

declare const inTransaction: unique symbol;

/**
 * The handle of an open write transaction: the same query builder as `Db` (and its SQLite connection as
 * `$client`, for the raw prepared statements of a module's queries.ts), branded so that a plain `Db` is not
 * assignable to it. A function that writes takes a `Tx`, so it can only be called inside `withTransaction`.
 */
export type Tx = Orm & { readonly [inTransaction]: true };
