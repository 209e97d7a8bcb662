// engine: once
// Every write a service or job makes while the service serves goes through the transaction runner
// (`await transaction(…)`), which gives it its turn after any transaction open on the connection. The
// synchronous form opens a transaction only where nothing else can be running: at start-up, before anything is
// served, and in the operator CLI's own process. A new synchronous opening fails here, naming its place.
import { expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dir, '../..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

/** Where a synchronous transaction may still open, and why. */
const SYNCHRONOUS_ALLOWED: Record<string, number> = {
  // createLenderNow, setDebitCardApprovalNow: the tests' and benchmarks' synchronous set-up, before anything is served.
  'src/modules/lenders/service.ts': 2,
};

test('no feature opens a synchronous transaction outside start-up and the operator’s paths', () => {
  const found: Record<string, number> = {};
  for (const f of [...files(join(ROOT, 'src', 'modules')), ...files(join(ROOT, 'src', 'http'))]) {
    const n = (readFileSync(f, 'utf8').match(/\bwithTransaction\(/g) ?? []).length;
    if (n > 0) found[relative(ROOT, f)] = n;
  }
  expect(found).toEqual(SYNCHRONOUS_ALLOWED);
});
