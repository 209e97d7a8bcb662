// The money invariants of collection, each as a direct test with a fake clock:
// 1. never two payments in flight for a borrower; never more than 3 per enrollment; no reinitiation after a
//    code other than R01/R09;
// 2. no payment above the collectable_amount current when it was initiated;
// 3. no request reaches the processor after removal returned, or once the borrower is stopped, collected,
//    lapsed or held;
// 5. event ids unique and stable; the same processor event read twice records nothing.
// (4, crash and restart, is tests/e2e/collection-crash.test.ts; all of them together under random sequences
// is collection-model.test.ts.)
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower, SANDBOX_UNSUPPORTED_BANK } from '../../helpers/fixtures';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { DAY_MS } from '../../../src/platform/clock';

const SETTLE = 60_000;
const READ = 3_600_000;
const KEY = 'sbx_invariant_00000000001';
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

async function setup() {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) });
  contexts.push(c);
  await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } });
  return c;
}
const enroll = (c: TestContext, ...borrowers: unknown[]) => c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
const rows = <T>(c: TestContext, sql: string, ...args: string[]) => c.sql.query(sql).all(...args) as T[];
/** Payments the sandbox processor has received (its own table: what "reached the processor"). */
const atProcessor = (c: TestContext) => (c.sql.query('SELECT COUNT(*) AS n FROM sandbox_payments').get() as { n: number }).n;

describe('invariant 1: in flight, count, no reinitiation after other codes', () => {
  test('the database refuses a second payment in flight for one borrower', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('one', { collectable_amount: 4297 }));
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    const [p] = rows<{ id: string; enrollment_id: string; connection_id: string }>(c, 'SELECT id, enrollment_id, connection_id FROM payments');
    expect(() =>
      c.sql
        .query(
          `INSERT INTO payments (id, lender_id, enrollment_id, authorizer_unique_id, connection_id, rail, amount_cents, reference, status, created_at, updated_at)
           VALUES ('second', ?, ?, 'one', ?, 'ach', 1, 'DRS-one-second', 'processing', 0, 0)`,
        )
        .run(c.lender.id, p!.enrollment_id, p!.connection_id),
    ).toThrow(/UNIQUE|duplicate key/);
  });

  test('reads while a payment is in flight initiate nothing more (97 never resolves)', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('stuck', { collectable_amount: 4297 }));
    for (let i = 0; i < 5; i++) {
      await queueDueReads(c.rt);
      await processBalances(c.rt);
      await dispatchPayments(c.rt);
      await pollProcessors(c.rt);
      c.clock.advance(READ);
    }
    expect(rows(c, 'SELECT id FROM payments')).toHaveLength(1);
    expect(atProcessor(c)).toBe(1);
  });

  for (const [code, cents] of [['R02', 93], ['R10', 94], ['invalid', 96]] as const) {
    test(`after ${code}: stopped, and no reinitiation however long it is read`, async () => {
      const c = await setup();
      await enroll(c, enrollBorrower('halt', { collectable_amount: 4200 + cents }));
      for (let i = 0; i < 6; i++) {
        await queueDueReads(c.rt);
        await processBalances(c.rt);
        await dispatchPayments(c.rt);
        c.clock.advance(SETTLE);
        await pollProcessors(c.rt);
        c.clock.advance(READ);
      }
      expect(rows(c, 'SELECT id FROM payments')).toHaveLength(1);
      expect((await c.json('GET', '/v1/payment_enrollments/halt')).body.state).toBe('stopped');
    });
  }
});

describe('invariant 2: never above the amount current at initiation', () => {
  test('each payment carries the amount of the moment it was initiated, never more; a payment at the bank keeps its amount', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('amt', { collectable_amount: 5091 }));
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    // Lowered while the first payment is being sent: that payment keeps 50.91, the next takes 30.91.
    await enroll(c, enrollBorrower('amt', { collectable_amount: 3091 }));
    await dispatchPayments(c.rt);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    c.clock.advance(READ);
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await dispatchPayments(c.rt);
    const ps = rows<{ amount_cents: number }>(c, 'SELECT amount_cents FROM payments ORDER BY created_at');
    expect(ps.map((p) => p.amount_cents)).toEqual([5091, 3091]);
    const sandbox = rows<{ amount_cents: number }>(c, 'SELECT amount_cents FROM sandbox_payments ORDER BY created_at');
    expect(sandbox.map((p) => p.amount_cents)).toEqual([5091, 3091]);
  });
});

describe('invariant 3: nothing reaches the processor once monitoring has stopped', () => {
  const cases: [string, (c: TestContext) => Promise<void> | void][] = [
    ['removed', async (c) => void (await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['x'] } }))],
    ['erased', async (c) => void (await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['x'] } }))],
    ['stopped', (c) => void c.sql.query("UPDATE enrollments SET state = 'stopped'").run()],
    ['collected', (c) => void c.sql.query("UPDATE enrollments SET state = 'collected'").run()],
    ['lapsed', (c) => {
      c.clock.advance(30 * DAY_MS);
      return void c.sql.query("UPDATE enrollments SET state = 'lapsed'").run();
    }],
    ['held (re-sent with an unreadable bank)', async (c) => void (await enroll(c, enrollBorrower('x', { routing_number: SANDBOX_UNSUPPORTED_BANK })))],
  ];
  for (const [name, stop] of cases) {
    test(`${name} between the decision and the dispatch: not sent`, async () => {
      const c = await setup();
      await enroll(c, enrollBorrower('x'));
      await queueDueReads(c.rt);
      await processBalances(c.rt);
      expect(rows(c, "SELECT id FROM payments WHERE status = 'initiating'")).toHaveLength(1);
      await stop(c);
      await dispatchPayments(c.rt);
      expect(atProcessor(c)).toBe(0);
      expect(rows(c, "SELECT id FROM payments WHERE status = 'not_attempted'")).toHaveLength(1);
    });
  }

  test('a removal that returns while the dispatch is running: every request either went out before it or not at all', async () => {
    const c = await setup();
    const borrowers = Array.from({ length: 40 }, (_, i) => enrollBorrower(`race-${i}`));
    await enroll(c, ...borrowers);
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    const dispatch = dispatchPayments(c.rt, { concurrency: 2 });
    const removal = await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: borrowers.map((b) => b.authorizer_unique_id) } });
    const removedAt = atProcessor(c);
    await dispatch;
    // Whatever had gone out when the removal answered is all that ever reaches the processor.
    expect(atProcessor(c)).toBe(removedAt);
    expect(removal.body.removed).toBe(40);
  });
});

describe('invariant 5: events unique and stable', () => {
  test('unique event ids; the same processor event read twice records nothing', async () => {
    const c = await setup();
    await enroll(c, ...Array.from({ length: 10 }, (_, i) => enrollBorrower(`ev-${i}`, { collectable_amount: 4290 + i })));
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await dispatchPayments(c.rt);
    for (let i = 0; i < 3; i++) {
      c.clock.advance(SETTLE);
      await pollProcessors(c.rt);
    }
    const before = rows<{ id: string }>(c, 'SELECT id, reference, status FROM payment_events ORDER BY id');
    c.sql.query('UPDATE payment_connections SET poll_cursor = NULL').run();
    await pollProcessors(c.rt);
    await pollProcessors(c.rt);
    expect(rows(c, 'SELECT id, reference, status FROM payment_events ORDER BY id')).toEqual(before);
    expect(new Set(before.map((e) => e.id)).size).toBe(before.length);
    expect(rows(c, 'SELECT reference, status, COUNT(*) AS n FROM payment_events GROUP BY reference, status HAVING COUNT(*) > 1')).toEqual([]);
  });
});
