import type { PgHandle } from '../../src/platform/pg';
import { pgTransactions } from '../../src/platform/transactions.pg';
import { pgStores } from '../../src/stores';

/**
 * What a store call and a transaction need on PostgreSQL, for a test that talks to the stores directly: the
 * pool, the stores and the transactions of the engine (no SQLite connection behind it).
 */
export const pgStoreDeps = (pg: PgHandle) => ({
  pg,
  db: undefined as never,
  reader: undefined as never,
  stores: pgStores,
  engine: { transactions: pgTransactions(pg) },
});
