import { sql } from 'drizzle-orm';
import { bigint, customType, doublePrecision, integer } from 'drizzle-orm/pg-core';

// The column kit of the PostgreSQL schema: the names of db/schema/columns.ts, with the types PostgreSQL needs
// where a plain pg-core type would not behave as the SQLite one does. Why each is what it is: index.ts.

/**
 * An identifier: text compared byte by byte (`COLLATE "C"`), as SQLite compares every text value. Keyset pages
 * (`id > ?`), prefix searches (`>= q AND < q || U+10FFFF`) and ORDER BY on it then give the same rows and the same
 * order on both engines, whatever the database's default collation, and a B-tree index on it serves them.
 */
export const ident = customType<{ data: string; driverData: string }>({
  dataType: () => 'text COLLATE "C"',
});

/**
 * A flag stored as integer 0/1, read and written as a boolean through the query builder (SQLite's
 * `integer(..., { mode: 'boolean' })`). Hand-written SQL compares it with 0 and 1 on both engines.
 */
export const flag = customType<{ data: boolean; driverData: number | string }>({
  dataType: () => 'integer',
  toDriver: (value) => (value ? 1 : 0),
  fromDriver: (value) => Number(value) === 1,
});

/**
 * A flag's defaults, written as the SQL 0 and 1: drizzle-kit would write a boolean literal for `false`, which
 * PostgreSQL refuses for an integer column.
 */
export const off = sql`0`;
export const on = sql`1`;

/** Bytes (a BLOB in SQLite). */
export const bytes = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (value) => value,
});

/** Bytes in a column SQLite declares text (batch_payloads.items): bytea here. */
export const textBytes = bytes;

/** Milliseconds since the epoch (or a duration in ms): int8, read as a JavaScript number (exact below 2^53). */
export const ms = (name: string) => bigint(name, { mode: 'number' });

/** Money in integer cents: int8, so no sum or amount overflows int4's 21 million dollars. */
export const cents = (name: string) => bigint(name, { mode: 'number' });

/** A row id SQLite hands out (INTEGER PRIMARY KEY AUTOINCREMENT): an int8 identity, never reused. */
export const rowId = (name: string) => bigint(name, { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity();

/** A reference to a rowId. */
export const rowRef = (name: string) => bigint(name, { mode: 'number' });

/** A small count or number (attempts, positions, days, status codes): int4, as numbers come back from raw SQL. */
export const count = (name: string) => integer(name);

/** A count that can grow past 2^31: int8, read as a JavaScript number. */
export const tally = (name: string) => bigint(name, { mode: 'number' });

/** A fraction or a rate (SQLite REAL, 8 bytes): double precision. */
export const fraction = (name: string) => doublePrecision(name);
