// engine: once
// Every store has a contract (tests/contracts/): a file that runs against both engines and fails unless each of
// the store's methods was called on each. It is what lets CI run the other test files on SQLite alone.
import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteStores, pgStores } from '../../src/stores';

const DIR = join(import.meta.dir, '../contracts');

test('every store key has a contract file naming it, and the two engines offer the same methods', () => {
  const declared = new Set<string>();
  for (const f of readdirSync(DIR).filter((n) => n.endsWith('.contract.test.ts'))) {
    for (const m of readFileSync(join(DIR, f), 'utf8').matchAll(/^contract\(\s*'(\w+)'/gm)) declared.add(m[1]!);
  }
  const missing = Object.keys(sqliteStores).filter((k) => !declared.has(k));
  expect(missing).toEqual([]);
  for (const [key, store] of Object.entries(sqliteStores)) {
    expect({ key, methods: Object.keys(pgStores[key as keyof typeof pgStores]).sort() }).toEqual({ key, methods: Object.keys(store).sort() });
  }
});
