// engine: sqlite (how SQLite plans the statements that write enrolled borrowers, foreign-key checks included)
// An enrollment writes each borrower without looking at what the service holds of others: SQLite checks an
// upsert into a parent table that sets a foreign-key column in every table that refers to it, and two of those
// (payment_events, uploaded_results) would be scanned whole, so that each borrower enrolled cost a pass over
// every payment event. The insert looks at no other table; the refresh finds its row by its key.
import { afterAll, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { ENROLLMENT_WRITES } from '../../../src/modules/enrollments/monitor-store.sqlite';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

test('the insert and the refresh of an enrolled borrower scan nothing and check no child table', () => {
  const c = createTestContext();
  contexts.push(c);
  const plan = (sql: string) => c.sql.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => r.detail);
  // Foreign keys are enforced on the service's connection: this is the plan the service runs.
  expect(c.sql.query<{ foreign_keys: number }, []>('PRAGMA foreign_keys').get()!.foreign_keys).toBe(1);
  expect(plan(ENROLLMENT_WRITES.insert)).toEqual([]);
  expect(plan(ENROLLMENT_WRITES.refresh)).toEqual(['SEARCH enrollments USING INDEX enrollments_lender_borrower_uq (lender_id=? AND authorizer_unique_id=?)']);
  // What the upsert they replace (it set the borrower's bank account, a foreign key) was planned as: were SQLite
  // to stop checking such an upsert so, this says the split is no longer needed.
  const upsert = ENROLLMENT_WRITES.insert.replace(/DO NOTHING$/, 'DO UPDATE SET bank_account_id = excluded.bank_account_id');
  expect(plan(upsert)).toContain('SCAN payment_events');
});
