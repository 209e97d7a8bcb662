// engine: sqlite (it replays SQLite migration 0019, which repairs rows of SQLite databases of an earlier release: PostgreSQL databases began after it)
// A database from an earlier release with payments an older status was written back onto: migration 0019
// repairs them.
import { afterAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { MIGRATIONS_DIR } from '../../../src/platform/db';

const SETTLE = 60_000;
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

function setup() {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: '3600000' });
  contexts.push(c);
  return c;
}

describe('migration 0019: payments an older status was written back onto', () => {
  test('each takes the furthest status its events show, freeing its borrower, and every key is reconciled once', async () => {
    const c = setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_regressed_payments_01', rail_scope: 'both', is_default: true } })).status).toBe(201);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('went-back', { collectable_amount: 1000 }), enrollBorrower('in-flight', { collectable_amount: 1097 })] } })).status).toBe(207);
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    const settled = c.sql.query("SELECT id FROM payments WHERE authorizer_unique_id = 'went-back'").get() as { id: string };
    expect((c.sql.query('SELECT status FROM payments WHERE id = ?').get(settled.id) as { status: string }).status).toBe('settled');
    // What an earlier release did: the feed's older processing written back onto the settled payment. The
    // other borrower's payment really is in flight (cents 97: processing, never resolved).
    c.sql.query("UPDATE payments SET status = 'processing' WHERE id = ?").run(settled.id);
    c.sql.run('UPDATE payment_connections SET reconcile_due = 0');

    // The migration's own statements, as an upgrade runs them.
    const sql = readFileSync(join(MIGRATIONS_DIR, '0019_forward_only_records.sql'), 'utf8');
    for (const stmt of sql.split('--> statement-breakpoint')) if (/^\s*(--.*\n\s*)*(UPDATE|INSERT)/.test(stmt)) c.sql.run(stmt);

    const status = (aid: string) => (c.sql.query('SELECT status FROM payments WHERE authorizer_unique_id = ?').get(aid) as { status: string }).status;
    expect(status('went-back')).toBe('settled');
    expect(status('in-flight')).toBe('processing');
    expect(c.sql.query('SELECT reconcile_due AS d FROM payment_connections').all()).toEqual([{ d: 1 }]);
    // Freed: sent again, the borrower of the repaired payment is debited for its new debt once the settled
    // payment's late-return window has passed.
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('went-back', { collectable_amount: 2000 })] } })).body.results[0].outcome).toBe('enrolled');
    c.clock.advance(14 * 24 * 3_600_000);
    await cycle(c);
    expect((c.sql.query("SELECT COUNT(*) AS n FROM payments WHERE authorizer_unique_id = 'went-back'").get() as { n: number }).n).toBe(2);
  });
});
