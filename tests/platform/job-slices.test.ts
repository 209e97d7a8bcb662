// engine: sqlite (it reads what a tick committed at the event loop's first turn: slicing is for SQLite, whose synchronous transactions hold the loop; on PostgreSQL every statement awaits the network, and the loop turns inside a slice)
// Jobs work in slices and give the event loop a turn between them: no tick holds it for its whole run. Each
// test registers a callback for the loop's next turn before the tick starts, and reads how far the tick had
// got when it ran: one slice, not all of them. The tick still finishes everything, each row once.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../helpers/context';
import { bankAuthorizer, enrollBorrower, SANDBOX_UNSUPPORTED_BANK } from '../helpers/fixtures';
import {
  lapseAllDueMonitors,
  MONITORS_PER_SLICE,
  queueAllDueReads,
  READS_PER_SLICE,
  recheckAllHeld,
  recheckHeld,
} from '../../src/modules/enrollments/monitoring';
import { dropExpiredIdempotency, processBalances } from '../../src/modules/balance-requests/processing';
import { startAllDueRuns } from '../../src/modules/schedules/runs';

const DAY_MS = 86_400_000;
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
function fresh(env: Record<string, string> = {}) {
  const c = createTestContext(env);
  contexts.push(c);
  return c;
}

const count = (c: TestContext, sql: string) => (c.sql.query(sql).get() as { n: number }).n;

async function enrollMany(c: TestContext, n: number, over: Record<string, unknown> = {}) {
  for (let i = 0; i < n; i += 1000) {
    const borrowers = Array.from({ length: Math.min(1000, n - i) }, (_, j) => enrollBorrower(`slice-${i + j}`, over));
    const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
    expect(r.status).toBe(207);
  }
}

/** Runs `tick` and returns `probe()` as it was at the event loop's first turn after the tick started. */
async function atFirstTurn<T>(tick: () => Promise<unknown>, probe: () => T): Promise<T> {
  let seen: T | undefined;
  let ran = false;
  setImmediate(() => {
    seen = probe();
    ran = true;
  });
  await tick();
  // A tick that never yields lets the callback run only after it ends.
  while (!ran) await new Promise((resolve) => setImmediate(resolve));
  return seen as T;
}

describe('monitoring jobs', () => {
  test('due reads: a slice of READS_PER_SLICE per transaction, the loop served between slices; every read queued once', async () => {
    const c = fresh();
    const n = 2 * READS_PER_SLICE + 17;
    await enrollMany(c, n);
    const queuedItems = () => count(c, "SELECT COUNT(*) AS n FROM batches WHERE source = 'monitoring'");
    const atTurn = await atFirstTurn(() => queueAllDueReads(c.rt), () => count(c, "SELECT COALESCE(SUM(total_authorizers), 0) AS n FROM batches WHERE source = 'monitoring'"));
    expect(atTurn).toBe(READS_PER_SLICE);
    expect(count(c, "SELECT COALESCE(SUM(total_authorizers), 0) AS n FROM batches WHERE source = 'monitoring'")).toBe(n);
    expect(queuedItems()).toBe(3);
    expect(count(c, "SELECT MAX(total_authorizers) AS n FROM batches WHERE source = 'monitoring'")).toBe(READS_PER_SLICE);
    // Each read claimed in the slice that queued it: nothing is due any more, and a second tick queues nothing.
    expect((await queueAllDueReads(c.rt)).queued).toBe(0);
  }, 60_000);

  test('lapses: a slice per transaction, the loop served between slices; every due monitor lapses', async () => {
    const c = fresh();
    const n = MONITORS_PER_SLICE + 50;
    await enrollMany(c, n);
    c.clock.advance(30 * DAY_MS);
    const lapsed = () => count(c, "SELECT COUNT(*) AS n FROM enrollments WHERE state = 'lapsed'");
    expect(await atFirstTurn(() => lapseAllDueMonitors(c.rt), lapsed)).toBe(MONITORS_PER_SLICE);
    expect(lapsed()).toBe(n);
  }, 60_000);

  test('held re-check: slices in the order of ids, each starting after the last one; every held borrower checked once', async () => {
    const c = fresh();
    const n = MONITORS_PER_SLICE + 30;
    await enrollMany(c, n, { routing_number: SANDBOX_UNSUPPORTED_BANK });
    const first = await recheckHeld(c.rt);
    expect(first.checked).toBe(MONITORS_PER_SLICE);
    const second = await recheckHeld(c.rt, { after: first.last! });
    expect(second.checked).toBe(30);
    expect(second.last! > first.last!).toBe(true);
    expect((await recheckHeld(c.rt, { after: second.last! })).checked).toBe(0);
    expect((await recheckAllHeld(c.rt)).started).toBe(0);
    expect(count(c, "SELECT COUNT(*) AS n FROM enrollments WHERE state = 'held'")).toBe(n);
  }, 60_000);
});

describe('other jobs', () => {
  test('schedule runs: one run per transaction, the loop served between runs', async () => {
    const c = fresh();
    for (let i = 0; i < 3; i++) {
      const r = await c.json('POST', '/v1/monitoring/scheduled_balance_request', {
        body: { name: `slice-${i}`, interval_days: 7, time_of_day: '13:00', authorizers: [bankAuthorizer(`s${i}-a`), bankAuthorizer(`s${i}-b`)] },
      });
      expect(r.status).toBe(201);
    }
    c.clock.advance(2 * 3_600_000);
    const runs = () => count(c, "SELECT COUNT(*) AS n FROM batches WHERE source = 'schedule'");
    expect(await atFirstTurn(() => startAllDueRuns(c.rt), runs)).toBe(1);
    expect(runs()).toBe(3);
  }, 60_000);

  test('balance reads answered at once (the in-process sandbox): the loop is served between claims, and every read is recorded', async () => {
    const c = fresh();
    const r = await c.json('POST', '/v1/balance_requests', { body: { authorizers: Array.from({ length: 300 }, (_, i) => bankAuthorizer(`read-${i}`)) } });
    expect(r.status).toBe(201);
    const recorded = () => count(c, 'SELECT COUNT(*) AS n FROM balance_results');
    expect(await atFirstTurn(() => processBalances(c.rt), recorded)).toBeLessThan(300);
    expect(recorded()).toBe(300);
  }, 60_000);

  test('expired idempotency entries: dropped a slice at a time off their index, the loop served between slices; fresh ones kept', async () => {
    const c = fresh();
    const old = c.clock.now() - 2 * DAY_MS;
    const insert = c.sql.query('INSERT INTO idempotency_keys (lender_id, body_hash, status_code, response_body, created_at) VALUES (?, ?, 201, ?, ?)');
    c.sql.transaction(() => {
      for (let i = 0; i < 1_200; i++) insert.run(c.lender.id, `old-${i}`, '{}', old);
      insert.run(c.lender.id, 'fresh', '{}', c.clock.now());
    })();
    const left = () => count(c, 'SELECT COUNT(*) AS n FROM idempotency_keys');
    expect(await atFirstTurn(() => dropExpiredIdempotency(c.rt), left)).toBe(1_201 - 500);
    expect(left()).toBe(1);
    expect(count(c, "SELECT COUNT(*) AS n FROM idempotency_keys WHERE body_hash = 'fresh'")).toBe(1);
  }, 60_000);
});
