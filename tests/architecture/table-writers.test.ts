// engine: once
// One writer per table: every statement that inserts, updates or deletes a table's rows is in one feature's
// stores (its SQLite and PostgreSQL implementation count as one), or in one adapter's or platform file. A
// second writer of a table fails here, naming both: what another feature keeps on a table (the read cadence's
// next read on an enrollment, a key's feed cursor) is written through the owner's store.
import { expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dir, '../..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

/** Who a file writes as: its feature (src/modules/<feature>), its adapter folder, or the file itself. */
function writerOf(file: string): string {
  const rel = relative(ROOT, file);
  const parts = rel.split('/');
  if (parts[1] === 'modules' || parts[1] === 'adapters') return parts.slice(0, 3).join('/');
  return rel;
}

function tableWriters(): Map<string, Set<string>> {
  const tables = new Set<string>();
  for (const f of files(join(ROOT, 'db/schema'))) for (const m of readFileSync(f, 'utf8').matchAll(/sqliteTable\(\s*'(\w+)'/g)) tables.add(m[1]!);
  const writers = new Map<string, Set<string>>();
  const note = (table: string, file: string) => {
    if (!tables.has(table)) return;
    const set = writers.get(table) ?? new Set<string>();
    set.add(writerOf(file));
    writers.set(table, set);
  };
  for (const f of files(join(ROOT, 'src'))) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?/g)) note(m[1]!, f);
    // Drizzle's builders name the table's schema object: paymentConnections is payment_connections.
    for (const m of text.matchAll(/\.(?:insert|update|delete)\((\w+)\)/g)) note(m[1]!.replace(/([A-Z])/g, '_$1').toLowerCase(), f);
  }
  return writers;
}

test('every table has one writer', () => {
  const writers = tableWriters();
  expect(writers.size).toBeGreaterThan(40);
  const many = Object.fromEntries([...writers].filter(([, w]) => w.size > 1).map(([t, w]) => [t, [...w].sort()]));
  expect(many).toEqual({});
});
