import type { SQL } from 'bun';
import type { BunSQLDatabase } from 'drizzle-orm/bun-sql';
import type * as schema from '../../db/schema-pg';

// The types of the PostgreSQL handle (platform/pg.ts opens it), apart so that the SQLite handle can name them.

/** Drizzle on Bun.SQL with the pg schema, its client as `$client`. */
export type PgOrm = BunSQLDatabase<typeof schema> & { $client: SQL };

/** The handle a pg store reads and writes with: the pool's, or an open transaction's (the same query builder). */
export type PgDb = Omit<PgOrm, '$client' | 'transaction'>;

export interface PgHandle {
  /** The connection pool. */
  sql: SQL;
  db: PgOrm;
  /** The server's address without its password, for logs and /readyz. */
  where: string;
  close(): Promise<void>;
}
