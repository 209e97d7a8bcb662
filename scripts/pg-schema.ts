// The PostgreSQL schema's table files, generated from the SQLite ones: the tables are declared once, in
// db/schema/, with the column kit of db/schema/columns.ts; db/schema-pg/columns.ts gives the same names
// PostgreSQL's types. What is written by hand on the PostgreSQL side is its column kit and its index.ts.
//
//   bun run scripts/pg-schema.ts           writes db/schema-pg/<file>.ts for every table file of db/schema
//   bun run scripts/pg-schema.ts --check   writes nothing; exits 1 and names the files that are not current
//
// `bun run db:generate:pg` runs it before drizzle-kit. tests/db/pg-schema-generated.test.ts fails when a
// generated file is not current, and tests/db/schema-drift.test.ts compares the two migrated databases.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..');
const FROM = join(ROOT, 'db/schema');
const TO = join(ROOT, 'db/schema-pg');
/** Written by hand on each side: the column kits, the lists of values, the indexes of the two schemas. */
const NOT_TABLES = new Set(['columns.ts', 'enums.ts', 'index.ts']);

/**
 * What a table file may take from drizzle-orm/sqlite-core: the table, its keys, indexes and checks, and `text`
 * (free text and enumerated values, the same on both engines). Every other column is a kind of the kit.
 */
const SAME_ON_BOTH = new Set(['sqliteTable', 'index', 'uniqueIndex', 'primaryKey', 'check', 'foreignKey', 'text']);

/** One SQLite table file as its PostgreSQL twin. */
export function pgTableFile(name: string, source: string): string {
  let out = source
    .replace(/import \{([^}]*)\} from 'drizzle-orm\/sqlite-core';/, (_m, names: string) => {
      const list = names
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean);
      const other = list.filter((n) => !SAME_ON_BOTH.has(n));
      if (other.length > 0) {
        throw new Error(`db/schema/${name} declares columns with ${other.join(', ')} of SQLite: use a kind of the column kit (db/schema/columns.ts)`);
      }
      list.splice(list.indexOf('sqliteTable'), 1, 'pgTable');
      list.sort();
      return `import { ${list.join(', ')} } from 'drizzle-orm/pg-core';`;
    })
    .replace(/from '\.\/enums';/g, "from '../schema/enums';")
    .replace(/\bsqliteTable\(/g, 'pgTable(');
  if (/sqlite/i.test(out.replace(/^\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, ''))) {
    throw new Error(`db/schema/${name} names SQLite outside a comment: a table file is declared with the column kit only`);
  }
  out = `// Generated from db/schema/${name} by scripts/pg-schema.ts: change that file and run \`bun run db:generate:pg\`.\n${out}`;
  return out;
}

/** Every generated file: its path under db/schema-pg and its text. */
export function generatedPgSchema(): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of readdirSync(FROM).sort()) {
    if (!name.endsWith('.ts') || NOT_TABLES.has(name)) continue;
    files.set(name, pgTableFile(name, readFileSync(join(FROM, name), 'utf8')));
  }
  return files;
}

/** The generated files that differ from what db/schema-pg holds, and the table files there with no source. */
export function stalePgSchema(): string[] {
  const files = generatedPgSchema();
  const stale = [...files].filter(([name, text]) => !existsSync(join(TO, name)) || readFileSync(join(TO, name), 'utf8') !== text).map(([name]) => name);
  const orphans = readdirSync(TO).filter((n) => n.endsWith('.ts') && !NOT_TABLES.has(n) && !files.has(n));
  return [...stale, ...orphans.map((n) => `${n} (no db/schema/${n})`)];
}

if (import.meta.main) {
  if (process.argv.includes('--check')) {
    const stale = stalePgSchema();
    if (stale.length > 0) {
      console.error(`db/schema-pg is not generated from db/schema: ${stale.join(', ')}. Run \`bun run scripts/pg-schema.ts\`.`);
      process.exit(1);
    }
  } else {
    for (const [name, text] of generatedPgSchema()) writeFileSync(join(TO, name), text);
  }
}
