import { blob, integer, real, text } from 'drizzle-orm/sqlite-core';

// The column kit the schema is declared with: one name per kind of value, so that the same declaration is the
// schema on both engines. db/schema-pg/columns.ts has the same names with PostgreSQL's types; the PostgreSQL
// table files are generated from these ones (scripts/pg-schema.ts). SQLite's types are dynamic, so here most
// kinds are plain integer or text columns: the kind says what PostgreSQL needs to know.

/** An identifier (ids, references, hashes looked up by equality): text compared byte by byte. */
export const ident = (name: string) => text(name);

/** A flag stored as integer 0/1, read and written as a boolean. Its defaults are `off` and `on`. */
export const flag = (name: string) => integer(name, { mode: 'boolean' });
export const off = false;
export const on = true;

/** Bytes in a BLOB column. */
export const bytes = (name: string) => blob(name, { mode: 'buffer' });

/** Bytes kept in a column declared text (batch_payloads.items, declared before the BLOB columns were). */
export const textBytes = (name: string) => text(name);

/** Milliseconds since the epoch, or a duration in milliseconds. */
export const ms = (name: string) => integer(name);

/** Money in integer cents. */
export const cents = (name: string) => integer(name);

/** A row id handed out once and never reused (INTEGER PRIMARY KEY AUTOINCREMENT). */
export const rowId = (name: string) => integer(name).primaryKey({ autoIncrement: true });

/** A reference to a rowId. */
export const rowRef = (name: string) => integer(name);

/** A small count or number (attempts, positions, days, status codes, versions). */
export const count = (name: string) => integer(name);

/** A count that can grow past 2^31 (calls made through a connection over its life). */
export const tally = (name: string) => integer(name);

/** A fraction or a rate (a confidence, a bucket's tokens). */
export const fraction = (name: string) => real(name);
