// The shape of the code, checked: lower layers never reach up into features, and routes never touch the
// database. A new import that breaks a rule fails here, naming the file and the import.
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = join(import.meta.dir, '../..');
const SRC = join(ROOT, 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') || p.endsWith('.tsx') ? [p] : [];
  });
}

/** Every relative import of a file, resolved to a path under the project. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
    out.push(relative(ROOT, resolve(dirname(file), m[1]!)));
  }
  return out;
}

function violations(scope: string, forbidden: (target: string) => boolean): string[] {
  return files(join(SRC, scope)).flatMap((f) =>
    imports(f)
      .filter(forbidden)
      .map((t) => `${relative(ROOT, f)} imports ${t}`),
  );
}

describe('layering', () => {
  test('platform/ imports no feature, adapter or HTTP code', () => {
    expect(violations('platform', (t) => /^src\/(modules|adapters|http)\b/.test(t) || t === 'src/deps' || t === 'src/runtime')).toEqual([]);
  });

  test('adapters/ import no feature and no HTTP code', () => {
    expect(violations('adapters', (t) => /^src\/(modules|http)\b/.test(t) || t === 'src/deps' || t === 'src/runtime')).toEqual([]);
  });

  test('http/ imports no feature', () => {
    expect(violations('http', (t) => /^src\/modules\b/.test(t))).toEqual([]);
  });

  test('routes import neither the database nor its schema', () => {
    // A portal page is a route too: it calls services, never the database.
    const routes = files(join(SRC, 'modules')).filter((f) => f.endsWith('/routes.ts') || f.includes('/portal/pages/'));
    expect(routes.length).toBeGreaterThan(2);
    const bad = routes.flatMap((f) =>
      imports(f)
        // The enums are vocabularies (states, statuses, event types), not tables: a form may list them.
        .filter((t) => (/^db\/schema\b/.test(t) && t !== 'db/schema/enums') || t === 'src/platform/db' || /queries$/.test(t))
        .map((t) => `${relative(ROOT, f)} imports ${t}`),
    );
    const text = routes.map((f) => readFileSync(f, 'utf8')).join('\n');
    expect(bad).toEqual([]);
    expect(text).not.toMatch(/drizzle-orm|bun:sqlite|\.sqlite\b|\.query\(/);
  });

  test('services throw domain errors, never HTTP ones', () => {
    const bad = files(join(SRC, 'modules'))
      .filter((f) => !f.endsWith('/routes.ts'))
      .filter((f) => /from ['"][./]+http\/errors['"]/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(ROOT, f));
    expect(bad).toEqual([]);
  });

  test('nothing outside platform/ and the statements files touches the SQLite handle or opens a transaction itself', () => {
    expect(handleUsers()).toEqual([]);
  });

  test('only the monitor store writes a monitor\'s state, reason or blocked reason', () => {
    expect(monitorWriters([join(ROOT, 'src'), join(ROOT, 'scripts')])).toEqual([]);
  });

  test('the monitor-write check finds each way of writing one', () => {
    const samples = {
      drizzle: "tx.update(enrollments).set({ paymentsUsed: 1, blockedReason: 'x' }).where(eq(enrollments.id, id)).run();",
      drizzleInsert: 'tx.insert(enrollments).values(row).run();',
      rawUpdate: "sqlite.query('UPDATE enrollments SET next_read_at = ?, state = ? WHERE id = ?').run(1, 'stopped', id);",
      rawInsert: 'sqlite.query(`INSERT INTO enrollments (id, state) VALUES (?, ?)`).run(id, s);',
    };
    for (const [name, text] of Object.entries(samples)) expect([name, writesMonitor(text)]).toEqual([name, true]);
    expect(writesMonitor("tx.update(enrollments).set({ bankName: 'x' }).where(eq(enrollments.id, id)).run();")).toBe(false);
    expect(writesMonitor("sqlite.query('UPDATE enrollments SET last_read_cents = ? WHERE id = ?')")).toBe(false);
  });
});

/** Whether source text writes enrollments.state, reason or blocked_reason, or inserts an enrollment. */
function writesMonitor(text: string): boolean {
  for (const m of text.matchAll(/\.update\(\s*enrollments\s*\)\s*\.set\(\s*\{([^}]*)\}/g)) if (/\b(state|reason|blockedReason)\s*:/.test(m[1]!)) return true;
  if (/\.insert\(\s*enrollments\s*\)/.test(text)) return true;
  for (const m of text.matchAll(/UPDATE\s+enrollments\s+SET([\s\S]*?)(?:\bWHERE\b|[`'"])/gi)) if (/\b(state|reason|blocked_reason)\s*=/i.test(m[1]!)) return true;
  return /INSERT\s+(?:OR\s+\w+\s+)?INTO\s+enrollments\b/i.test(text);
}

function monitorWriters(dirs: string[]): string[] {
  const allowed = new Set(['src/modules/enrollments/monitor-store.ts', 'scripts/bench/bench-enrollment.ts']);
  return dirs
    .flatMap(files)
    .map((f) => relative(ROOT, f))
    .filter((f) => !allowed.has(f) && writesMonitor(readFileSync(join(ROOT, f), 'utf8')));
}


/**
 * Files that reach the SQLite connection (`sqlite`, `$client`, bun:sqlite) or open a transaction other than
 * through withTransaction. Allowed: platform/, each module's queries.ts and the monitor store (its statements),
 * the composition root that opens the database, and the sandbox processor, which stands for another
 * system's own database.
 */
function handleUsers(): string[] {
  const allowed = (f: string) =>
    f.startsWith('src/platform/') ||
    /^src\/modules\/[^/]+\/queries\.ts$/.test(f) ||
    f === 'src/modules/enrollments/monitor-store.ts' ||
    f === 'src/runtime.ts' ||
    f === 'src/index.ts' ||
    f === 'src/adapters/processors/sandbox.ts' ||
    f === 'src/adapters/processors/index.ts';
  return files(SRC)
    .map((f) => relative(ROOT, f))
    .filter((f) => !allowed(f))
    .filter((f) => {
      const code = readFileSync(join(ROOT, f), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      return /\.sqlite\b(?!['"`])|\bsqlite\.\w+\(|\$client|from ['"]bun:sqlite['"]|\bimmediate\(|\.transaction\(/.test(code);
    });
}
