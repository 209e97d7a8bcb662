// engine: both
// A run whose results cannot be written (the database refuses every result for a while) ends with that error
// and gives back the reads it claimed: they are due again at once, for the next run, rather than parked under
// a lease that only runs out minutes later. Nothing is lost and nothing is recorded twice.
import { afterAll, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { processBalances } from '../../../src/modules/balance-requests/processing';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

test('a failed write gives back its reads, and the next run records each of them once', async () => {
  const c = createTestContext();
  contexts.push(c);
  // Every result refused while this holds: a constraint on PostgreSQL, a trigger on SQLite.
  if (c.rt.pg) c.sql.exec('ALTER TABLE balance_results ADD CONSTRAINT down_in_test CHECK (false) NOT VALID');
  else c.sql.run(`CREATE TEMP TRIGGER down_in_test BEFORE INSERT ON balance_results BEGIN SELECT RAISE(ABORT, 'down in test'); END`);

  const authorizers = Array.from({ length: 12 }, (_, i) => bankAuthorizer(`fw-${i}`, { account_number: `00000${String(1000 + i)}0` }));
  const r = await c.json('POST', '/v1/balance_requests', { body: { authorizers } });
  expect(r.status).toBe(201);
  const batchId = r.body.batch_id as string;

  await expect(processBalances(c.rt)).rejects.toThrow();
  const count = (where: string) => Number(c.sql.query<{ n: number }, [string]>(`SELECT COUNT(*) AS n FROM ${where}`).get(batchId)!.n);
  // Nothing of the batch is left leased, and nothing was recorded.
  expect(count('batch_items WHERE batch_id = ? AND lease_until > 0')).toBe(0);
  expect(count('batch_items WHERE batch_id = ?')).toBe(authorizers.length);
  expect(count('balance_results WHERE batch_id = ?')).toBe(0);

  if (c.rt.pg) c.sql.exec('ALTER TABLE balance_results DROP CONSTRAINT down_in_test');
  else c.sql.run('DROP TRIGGER down_in_test');
  // The clock has not moved: the reads are due at once, not when their leases would have run out.
  expect((await processBalances(c.rt)).recorded).toBe(authorizers.length);
  const done = await c.json('GET', `/v1/balance_requests/${batchId}`);
  expect(done.body.status).toBe('completed');
  expect(count('balance_results WHERE batch_id = ?')).toBe(authorizers.length);
  expect((await processBalances(c.rt)).recorded).toBe(0);
});
