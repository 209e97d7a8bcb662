// PostgreSQL for tests: with DATABASE_URL=postgres://… (a user that may create databases), each test context
// gets a database of its own, cloned from a template the real pg migrations were applied to (made once per
// set of migrations, reused by later runs), and dropped when the context closes. Cloning is synchronous
// (psql), so a context is made as on SQLite, at a file's top level.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isPostgresUrl, PG_MIGRATIONS_DIR } from '../../src/platform/pg';

/** The server the suite runs on, when it runs on PostgreSQL. */
export const PG_URL = process.env.DATABASE_URL;
export const onPostgres = isPostgresUrl(PG_URL);

let template: string | null = null;
let made = 0;

/** The URL of database `name` on the suite's server. */
export function pgUrlOf(name: string): string {
  const u = new URL(PG_URL!);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs one SQL command on the suite's server (its maintenance database), synchronously. */
export function psql(command: string, url = PG_URL!): string {
  const r = Bun.spawnSync(['psql', url, '-v', 'ON_ERROR_STOP=1', '-qAtc', command], { stderr: 'pipe', stdout: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`psql ${command.slice(0, 60)}: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}

/** The migrated template's name: one per set of migrations, so a changed migration gets a new one. */
function templateName(): string {
  const journal = readFileSync(join(PG_MIGRATIONS_DIR, 'meta/_journal.json'));
  const h = createHash('sha256').update(journal);
  for (const e of (JSON.parse(journal.toString()) as { entries: { tag: string }[] }).entries) {
    h.update(readFileSync(join(PG_MIGRATIONS_DIR, `${e.tag}.sql`)));
  }
  return `drs_template_${h.digest('hex').slice(0, 12)}`;
}

function ensureTemplate(): string {
  if (template) return template;
  const name = templateName();
  const exists = psql(`SELECT 1 FROM pg_database WHERE datname = '${name}'`) === '1';
  if (!exists) {
    // Built under another name and renamed, so a run cut short never leaves a half-migrated template behind.
    const building = `${name}_${process.pid}`;
    psql(`CREATE DATABASE "${building}"`);
    const r = Bun.spawnSync(['bun', join(import.meta.dir, 'pg-migrate.ts'), pgUrlOf(building)], { stderr: 'pipe', stdout: 'pipe' });
    if (r.exitCode !== 0) throw new Error(`migrating the pg template: ${r.stderr.toString()}`);
    try {
      psql(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
    } catch (e) {
      // Another test process made it first.
      psql(`DROP DATABASE IF EXISTS "${building}"`);
      if (!/already exists/.test((e as Error).message)) throw e;
    }
  }
  template = name;
  return name;
}

/** A new database cloned from the migrated template; `drop()` removes it. */
export function freshPgDatabase(): { url: string; name: string; drop(): void } {
  const tpl = ensureTemplate();
  const name = `drs_t_${process.pid}_${++made}_${Date.now().toString(36)}`;
  psql(`CREATE DATABASE "${name}" TEMPLATE "${tpl}"`);
  return {
    url: pgUrlOf(name),
    name,
    drop: () => {
      try {
        psql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } catch {
        /* the server is gone: nothing to drop */
      }
    },
  };
}
