// engine: once
// Connection-wide settings belong to the platform: no feature toggles a PRAGMA for everyone on the connection.
import { afterAll, expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createTestContext } from '../helpers/context';

const ROOT = join(import.meta.dir, '../..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

test('no feature, adapter or route sets a PRAGMA', () => {
  const offenders = ['modules', 'adapters', 'http']
    .flatMap((d) => files(join(ROOT, 'src', d)))
    .filter((f) => /PRAGMA\s+\w+\s*=/i.test(readFileSync(f, 'utf8')))
    .map((f) => relative(ROOT, f));
  expect(offenders).toEqual([]);
});

const c = createTestContext();
afterAll(() => c.close());

test('the service’s connection zeroes deleted content, for every writer (erasure is real)', () => {
  expect((c.sql.query('PRAGMA secure_delete').get() as { secure_delete: number }).secure_delete).toBe(1);
});
