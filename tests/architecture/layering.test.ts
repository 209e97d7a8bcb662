// engine: once
// The shape of the code, checked: lower layers never reach up into features, a feature never reaches up into
// a higher one, and routes never touch the database. A new import that breaks a rule fails here, naming the
// file and the import. (Circles of imports are import-cycles.test.ts's.)
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { importGraph, importsOf, type ImportEdge } from '../helpers/imports';

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

  test('the configuration depends on no platform service: what config.ts imports imports nothing of the project', () => {
    // It is read first, by the CLI too: the database, the logger or the vault must not load behind it.
    const graph = srcGraph();
    const reached = graph.get('src/config.ts')!.map((e) => e.to);
    expect(reached.filter((f) => graph.get(f)!.length > 0).map((f) => `src/config.ts imports ${f}, which imports ${graph.get(f)!.map((e) => e.to).join(', ')}`)).toEqual([]);
    // The check looks at something: the key format a bootstrap key is checked against.
    expect(reached).toContain('src/platform/api-key-format.ts');
  });

  test('deps.ts only names types: nothing loads through it', () => {
    expect(importsOf('src/deps.ts').filter((e) => !e.typeOnly).map((e) => `src/deps.ts imports ${e.to} for a value`)).toEqual([]);
  });

  test('no feature imports the files at the root of modules/ (the features\' index, the balance-result chain, the webhook payloads)', () => {
    // They sit above every feature: the composition root (app, runtime) reads them, a feature never does.
    expect(upwardImports(srcGraph(), (from, to) => isFeatureFile(from) && /^src\/modules\/[^/]+\.tsx?$/.test(to))).toEqual([]);
  });

  test('every feature is placed in the order of features', () => {
    const features = readdirSync(join(SRC, 'modules')).filter((d) => statSync(join(SRC, 'modules', d)).isDirectory());
    expect(features.filter((f) => !FEATURE_ORDER.includes(f))).toEqual([]);
    expect(FEATURE_ORDER.filter((f) => !features.includes(f))).toEqual([]);
  });

  test('a feature imports only features below it in the order', () => {
    const rank = (file: string) => FEATURE_ORDER.indexOf(file.split('/')[2]!);
    const upward = upwardImports(srcGraph(), (from, to) => isFeatureFile(from) && isFeatureFile(to) && rank(to) > rank(from));
    // None at all: what an enrollment change sets off above it is handed to it (modules/enrollment-changes.ts).
    expect(upward).toEqual([]);
  });

  test('the upward-import check finds an import of a higher feature, of the features\' index, and of a type', () => {
    const graph = new Map<string, ImportEdge[]>([
      ['src/modules/collection-policy/service.ts', [{ to: 'src/modules/collection/rules.ts', typeOnly: true, spec: '../collection/rules' }]],
      ['src/modules/payment-results-upload/upload-worker.ts', [{ to: 'src/modules/index.ts', typeOnly: false, spec: '..' }]],
      ['src/modules/collection/rules.ts', [{ to: 'src/modules/collection-policy/policy.ts', typeOnly: true, spec: '../collection-policy/policy' }]],
    ]);
    const rank = (file: string) => FEATURE_ORDER.indexOf(file.split('/')[2]!);
    expect(upwardImports(graph, (from, to) => isFeatureFile(from) && isFeatureFile(to) && rank(to) > rank(from))).toEqual([
      'src/modules/collection-policy/service.ts → src/modules/collection/rules.ts',
    ]);
    expect(upwardImports(graph, (from, to) => isFeatureFile(from) && /^src\/modules\/[^/]+\.tsx?$/.test(to))).toEqual([
      'src/modules/payment-results-upload/upload-worker.ts → src/modules/index.ts',
    ]);
  });

  test('routes import neither the database nor its schema', () => {
    // A portal page is a route too: it calls services, never the database.
    const routes = files(join(SRC, 'modules')).filter((f) => f.endsWith('/routes.ts') || f.includes('/portal/pages/'));
    expect(routes.length).toBeGreaterThan(2);
    const bad = routes.flatMap((f) =>
      imports(f)
        // The enums are vocabularies (states, statuses, event types), not tables: a form may list them.
        .filter((t) => (/^db\/schema\b/.test(t) && t !== 'db/schema/enums') || t === 'src/platform/db' || /\.sqlite$/.test(t))
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

  test('only the stores and platform/ use Drizzle or the tables: everything else calls a store', () => {
    // A value import of Drizzle or of a table (db/schema) is a query being built; a type-only import (a row's
    // type, an enum's vocabulary) is not. The composition root and platform/ open and run the connection.
    const bad = files(SRC)
      .map((f) => relative(ROOT, f))
      // A store's statements both engines run as they are (store-shared.ts) are the store's too.
      .filter((f) => !f.startsWith('src/platform/') && !/(^|\/|-)store(\.(sqlite|pg)|-shared)\.ts$/.test(f))
      .flatMap((f) => {
        const code = readFileSync(join(ROOT, f), 'utf8');
        const found: string[] = [];
        for (const m of code.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)'/gm)) {
          if (m[1]) continue;
          const spec = m[2]!;
          if (/^drizzle-orm(\/|$)/.test(spec) || /(^|\/)db\/schema(\/index)?$/.test(spec)) found.push(`${f} imports ${spec}`);
        }
        return found;
      });
    expect(bad).toEqual([]);
  });

  test('nothing outside platform/ and the statements files touches the SQLite handle or opens a transaction itself', () => {
    expect(handleUsers()).toEqual([]);
  });

  test('only the monitor store writes a monitor\'s state, reason or blocked reason', () => {
    expect(monitorWriters([join(ROOT, 'src'), join(ROOT, 'scripts')])).toEqual([]);
  });

  test('only the recorder moves a payment\'s status: the status-moving statements live in the collection store, and only record.ts calls them', () => {
    expect(paymentStatusWriters([join(ROOT, 'src'), join(ROOT, 'scripts')])).toEqual([]);
    // The check sees the statements it allows.
    for (const f of PAYMENT_STATUS_STORES) expect([f, writesPaymentStatus(readFileSync(join(ROOT, f), 'utf8'))]).toEqual([f, true]);
    expect(statusMoveCallers()).toEqual(['src/modules/collection/record.ts']);
  });

  test('the payment-status check finds each way of writing one, and passes over the columns beside it', () => {
    const samples = {
      drizzle: "await tx.update(payments).set({ status: 'initiating', state: 'pending' }).where(eq(payments.id, id));",
      rawUpdate: "tx.$client.query(\"UPDATE payments SET state = 'done', status = 'not_attempted' WHERE id = ?\").run(id);",
      rawUpdateTemplate: 'sql`UPDATE payments SET status = ${s}, updated_at = ${now} WHERE id = ${id}`',
    };
    for (const [name, text] of Object.entries(samples)) expect([name, writesPaymentStatus(text)]).toEqual([name, true]);
    expect(writesPaymentStatus("tx.update(payments).set({ reportedStatus: 'settled', state: 'pending' }).where(eq(payments.id, id));")).toBe(false);
    expect(writesPaymentStatus("tx.$client.query('UPDATE payments SET reported_status = ?2, report_hold = ?5 WHERE id = ?1')")).toBe(false);
    expect(writesPaymentStatus("tx.$client.query('UPDATE sandbox_payments SET status = ? WHERE id = ?')")).toBe(false);
  });

  test('the monitor-write check finds each way of writing one', () => {
    const samples = {
      drizzle: "tx.update(enrollments).set({ paymentsUsed: 1, blockedReason: 'x' }).where(eq(enrollments.id, id)).run();",
      drizzleInsert: 'tx.insert(enrollments).values(row).run();',
      rawUpdate: "sqlite.query('UPDATE enrollments SET next_read_at = ?, state = ? WHERE id = ?').run(1, 'stopped', id);",
      rawInsert: 'sqlite.query(`INSERT INTO enrollments (id, state) VALUES (?, ?)`).run(id, s);',
      aliased: 'sql`UPDATE enrollments AS e SET blocked_reason = v.reason FROM unnest(${ids}::text[]) AS v(id) WHERE e.id = v.id`',
    };
    for (const [name, text] of Object.entries(samples)) expect([name, writesMonitor(text)]).toEqual([name, true]);
    expect(writesMonitor("tx.update(enrollments).set({ bankName: 'x' }).where(eq(enrollments.id, id)).run();")).toBe(false);
    expect(writesMonitor("sqlite.query('UPDATE enrollments SET last_read_cents = ? WHERE id = ?')")).toBe(false);
    // The state read to decide a value is no write of it.
    expect(writesMonitor("sqlite.query(\"UPDATE enrollments SET next_read_at = CASE WHEN enrollments.state = 'monitored' THEN ? ELSE next_read_at END WHERE id = ?\")")).toBe(false);
  });
});

/**
 * The features from the bottom up: each may import the ones before it and never one after it. A feature that
 * must set off work in a higher one is handed it instead: the balance pipeline reaches enrollments,
 * collection, pay cycles and schedules through deps.balanceResults (modules/balance-results.ts), and
 * enrollments reach collection and pay cycles through deps.enrollmentChanges (modules/enrollment-changes.ts). The webhooks
 * feature is the outbox every other feature writes to, so it knows none of them; the collection policy is read
 * by collection, return rates and the cadence, so it is below them; the consumer-rights notices are made due by
 * collection's chain and shown in the enrollment view, so they are below both; fraud monitoring's rules are asked by
 * enrollments and collection where their facts are recorded, so it is below both.
 */
const FEATURE_ORDER = [
  'authorizers',
  'lenders',
  'webhooks',
  'bank-data-connections',
  'payment-connections',
  'collection-policy',
  'balance-requests',
  'return-rates',
  'schedules',
  'bank-accounts',
  'rights-notices',
  'fraud-monitoring',
  'enrollments',
  'collection',
  'pay-cycles',
  'bank-data-webhooks',
  'payment-results-upload',
  'ach-report',
  'portal',
];

let graphOfSrc: Map<string, ImportEdge[]> | null = null;
/** The import graph of src/, read once for the tests that need it. */
const srcGraph = () => (graphOfSrc ??= importGraph('src'));

const isFeatureFile = (file: string) => /^src\/modules\/[^/]+\//.test(file);

/** The imports of a graph that a rule forbids, as `from → to` (type-only ones too: they point the same way). */
function upwardImports(graph: Map<string, ImportEdge[]>, forbidden: (from: string, to: string) => boolean): string[] {
  return [...graph].flatMap(([from, edges]) => edges.filter((e) => forbidden(from, e.to)).map((e) => `${from} → ${e.to}`));
}

/** Whether source text writes enrollments.state, reason or blocked_reason, or inserts an enrollment. */
function writesMonitor(text: string): boolean {
  for (const m of text.matchAll(/\.update\(\s*enrollments\s*\)\s*\.set\(\s*\{([^}]*)\}/g)) if (/\b(state|reason|blockedReason)\s*:/.test(m[1]!)) return true;
  if (/\.insert\(\s*enrollments\s*\)/.test(text)) return true;
  // An assignment of the SET list (the column read in an expression writes nothing), the table aliased or not.
  for (const m of text.matchAll(/UPDATE\s+enrollments(?:\s+(?:AS\s+)?\w+)?\s+SET([\s\S]*?)(?:\bWHERE\b|\bFROM\b|[`'"])/gi)) {
    if (/(?:^|,)\s*(?:\w+\.)?(state|reason|blocked_reason)\s*=/i.test(m[1]!)) return true;
  }
  return /INSERT\s+(?:OR\s+\w+\s+)?INTO\s+enrollments\b/i.test(text);
}

function monitorWriters(dirs: string[]): string[] {
  const allowed = new Set(['src/modules/enrollments/monitor-store.sqlite.ts', 'src/modules/enrollments/monitor-store.pg.ts', 'scripts/bench/bench-enrollment.ts']);
  return dirs
    .flatMap(files)
    .map((f) => relative(ROOT, f))
    .filter((f) => !allowed.has(f) && writesMonitor(readFileSync(join(ROOT, f), 'utf8')));
}

/** Whether source text writes payments.status (an UPDATE of it; a payment's first status is its INSERT). */
function writesPaymentStatus(text: string): boolean {
  for (const m of text.matchAll(/\.update\(\s*payments\s*\)\s*\.set\(\s*\{([^}]*)\}/g)) if (/(^|[\s,{])status\s*:/.test(m[1]!)) return true;
  for (const m of text.matchAll(/UPDATE\s+payments\s+SET([\s\S]*?)(?:\bWHERE\b|$)/gi)) if (/(^|[\s,])status\s*=/i.test(m[1]!)) return true;
  return false;
}

/** The statements that move a payment's status: the recorder's own store (collection/store.{sqlite,pg}.ts). */
const PAYMENT_STATUS_STORES = new Set(['src/modules/collection/store.sqlite.ts', 'src/modules/collection/store.pg.ts']);

function paymentStatusWriters(dirs: string[]): string[] {
  return dirs
    .flatMap(files)
    .map((f) => relative(ROOT, f))
    .filter((f) => !PAYMENT_STATUS_STORES.has(f) && writesPaymentStatus(readFileSync(join(ROOT, f), 'utf8')));
}

/** The files that call the store's status moves (movePaymentStatus, releasePayment), tests and stores aside. */
function statusMoveCallers(): string[] {
  return files(SRC)
    .map((f) => relative(ROOT, f))
    .filter((f) => !PAYMENT_STATUS_STORES.has(f) && f !== 'src/modules/collection/store.ts')
    .filter((f) => /\.(movePaymentStatus|releasePayment)\(/.test(readFileSync(join(ROOT, f), 'utf8')))
    .sort();
}

/**
 * Files that reach the SQLite connection (`sqlite`, `$client`, bun:sqlite) or open a transaction other than
 * through withTransaction. Allowed: platform/, each module's store.sqlite.ts and store.pg.ts (its statements),
 * the composition root that opens the database, and the sandbox processor and its store, which stand for
 * another system's own database.
 */
function handleUsers(): string[] {
  const allowed = (f: string) =>
    f.startsWith('src/platform/') ||
    /^src\/modules\/.+(\/|-)store\.(sqlite|pg)\.ts$/.test(f) ||
    f === 'src/runtime.ts' ||
    f === 'src/index.ts' ||
    f === 'src/adapters/processors/sandbox.ts' ||
    f === 'src/adapters/processors/sandbox-store.sqlite.ts' ||
    f === 'src/adapters/processors/sandbox-store.pg.ts' ||
    f === 'src/adapters/processors/index.ts';
  return files(SRC)
    .map((f) => relative(ROOT, f))
    .filter((f) => !allowed(f))
    .filter((f) => {
      const code = readFileSync(join(ROOT, f), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      return /\.sqlite\b(?!['"`])|\bsqlite\.\w+\(|\$client|from ['"]bun:sqlite['"]|\bimmediate\(|\.transaction\(/.test(code);
    });
}
