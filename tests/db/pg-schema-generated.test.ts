// engine: once
// The tables are declared once (db/schema, with the column kit): db/schema-pg's table files are what
// scripts/pg-schema.ts generates from them, and a change made on one side only is caught here.
import { describe, expect, test } from 'bun:test';
import { pgTableFile, stalePgSchema } from '../../scripts/pg-schema';

describe('the PostgreSQL schema generated from the SQLite one', () => {
  test('every table file of db/schema-pg is current: run `bun run db:generate:pg` after changing db/schema', () => {
    expect(stalePgSchema()).toEqual([]);
  });

  test('a table file becomes its PostgreSQL twin: the table function, the core module and the enums path', () => {
    const source = [
      "import { sql } from 'drizzle-orm';",
      "import { sqliteTable, index, text } from 'drizzle-orm/sqlite-core';",
      "import { flag, ident, ms, off } from './columns';",
      "import { RAILS } from './enums';",
      '',
      '// A table.',
      "export const things = sqliteTable('things', { id: ident('id').primaryKey(), on: flag('on').default(off), at: ms('at'), rail: text('rail', { enum: RAILS }) }, (t) => [index('things_at_idx').on(t.at).where(sql`${t.at} IS NOT NULL`)]);",
    ].join('\n');
    const out = pgTableFile('things.ts', source);
    expect(out.split('\n')[0]).toBe('// Generated from db/schema/things.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.');
    expect(out).toContain("import { index, pgTable, text } from 'drizzle-orm/pg-core';");
    expect(out).toContain("import { RAILS } from '../schema/enums';");
    expect(out).toContain("export const things = pgTable('things', {");
    expect(out).not.toMatch(/sqlite/i);
  });

  test('a column declared with a SQLite type instead of a kind of the kit is refused, not carried over', () => {
    const source = "import { integer, sqliteTable } from 'drizzle-orm/sqlite-core';\nexport const t = sqliteTable('t', { n: integer('n') });";
    expect(() => pgTableFile('t.ts', source)).toThrow(/declares columns with integer of SQLite/);
  });

  test('anything else of SQLite in a table file is refused', () => {
    const source = "import { sqliteTable, text } from 'drizzle-orm/sqlite-core';\nexport const t = sqliteTable('t', { n: text('n') });\ntype C = import('drizzle-orm/sqlite-core').SQLiteColumn;";
    expect(() => pgTableFile('t.ts', source)).toThrow(/names SQLite outside a comment/);
  });
});
