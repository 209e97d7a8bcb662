import type { Db, Orm } from '../db';
import type { Tx } from '../tx';

// What a transaction's opaque Tx is on SQLite: the connection it is open on.

/** The connection under a transaction opened on SQLite (platform/transactions.sqlite.ts). */
export const handleOf = (tx: Tx): Orm => tx as unknown as Orm;

/** The connection as the Tx of the transaction open on it: for what opens one. */
export const txOf = (db: Orm | Db): Tx => db as unknown as Tx;
