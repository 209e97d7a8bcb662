// engine: sqlite (how SQLite plans the search statements of the SQLite store, and the replay of SQLite migration 0025 on a database of the earlier shape)
// Finding a borrower, on SQLite itself: a search seeks the hash first, and migration 0025 replaces entries of
// the earlier shape.
import { afterAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { signedIn } from '../../helpers/portal';
import { MIGRATIONS_DIR } from '../../../src/platform/db';
import { SEARCH_SQL } from '../../../src/modules/enrollments/store.sqlite';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
const fresh = (env: Record<string, string> = {}) => {
  const c = createTestContext({ MONITOR_READ_INTERVAL_MS: '3600000', ...env }, { clockAt: '2026-11-21T12:00:00.000Z' });
  contexts.push(c);
  return c;
};

describe('finding a borrower on SQLite', () => {
  test('a search seeks the hash first, then checks each borrower found is the lender’s, with the planner’s statistics or without', async () => {
    const c = fresh();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('hash-1', { first_name: 'Quintessa', last_name: 'Marlowe', phone_number: '2025550123' })] } });
    // Never the lender's every borrower walked.
    for (const analyzed of [false, true]) {
      if (analyzed) c.sql.exec('ANALYZE');
      for (const sql of Object.values(SEARCH_SQL)) {
        const plan = c.sql.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => r.detail);
        expect(plan[0]).toMatch(/^SEARCH \w+ USING PRIMARY KEY \(hash=\?\)$/);
        expect(plan.slice(1).every((d) => /^SEARCH \w+ USING PRIMARY KEY \(\w+=\? AND authorizer_unique_id=\?\)$/.test(d))).toBe(true);
      }
    }
  });

  test('migration 0025: entries of the earlier shape are replaced, and the start-up job hashes every stored borrower again', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('old-1', { first_name: 'Tobias', last_name: 'Ferreira' })] } });
    // What the earlier release left: its table of text hashes with the lender and the kind, and no borrower rows.
    c.sql.exec('DROP TABLE borrower_search');
    c.sql.exec('DROP TABLE searchable_borrowers');
    const before = readFileSync(join(MIGRATIONS_DIR, '0022_borrower_search_and_payment_listing.sql'), 'utf8').split('--> statement-breakpoint');
    for (const stmt of before) if (/borrower_search/.test(stmt)) c.sql.run(stmt);
    c.sql.query("INSERT INTO borrower_search (lender_id, authorizer_unique_id, kind, hash, key_id) VALUES (?, 'old-1', 'name', 'b2xkLXNoYXBlLWhhc2gtb2YtdG9iaWFz', ?)").run(c.lender.id, c.rt.vault.currentKeyId);
    for (const stmt of readFileSync(join(MIGRATIONS_DIR, '0025_borrower_search_shape.sql'), 'utf8').split('--> statement-breakpoint')) c.sql.run(stmt);
    expect(c.sql.query('SELECT COUNT(*) AS n FROM borrower_search').get()).toEqual({ n: 0 });
    expect((await p.get('/portal/payments/borrowers?find=tobias')).text).toContain('No borrower found');
    const { indexUnsearchedBorrowers } = await import('../../../src/modules/enrollments/search');
    expect(await indexUnsearchedBorrowers(c.rt)).toEqual({ indexed: 1 });
    expect((await p.get('/portal/payments/borrowers?find=tobias%20ferreira')).text).toContain('/portal/payments/borrowers/old-1');
  });
});
