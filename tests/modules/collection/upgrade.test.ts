// A database from an earlier release: keys stored before their processor account was recorded, and payments
// an older status was written back onto. After the upgrade, an account is its first lender's for good, no
// payment made elsewhere is credited to two lenders, and the regressed payments are repaired by migration 0019.
import { afterAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { SandboxProcessor, createSandboxCharge } from '../../../src/adapters/processors/sandbox';
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

/** What an earlier release stored: keys without their account, and no account bound to anyone. */
function forgetAccounts(c: TestContext) {
  c.sql.run('UPDATE payment_connections SET account_id = NULL');
  c.sql.run('DELETE FROM processor_accounts');
}

const KEY = 'sbx_account_before_upgrade1';

describe('keys stored before accounts were recorded', () => {
  test('a second lender registering the first lender’s key is refused (409): the stored key is asked first', async () => {
    const c = setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(201);
    forgetAccounts(c);
    const b = c.newLender('second-lender');
    const r = await c.json('POST', '/v1/payment_connections', { key: b.key, body: { api_key: KEY, rail_scope: 'both', is_default: true } });
    expect(r.status).toBe(409);
    expect(c.sql.query('SELECT lender_id AS l FROM processor_accounts').all()).toEqual([{ l: c.lender.id }]);
    expect(c.sql.query('SELECT account_id AS a FROM payment_connections WHERE account_id IS NULL').all()).toEqual([]);
  });

  test('two lenders holding keys of one account: the first registered keeps it; a payment made elsewhere is credited to it alone', async () => {
    const c = setup();
    const b = c.newLender('also-holds-it');
    // Both lenders have a borrower with the same identifier.
    for (const key of [c.lender.key, b.key]) {
      expect((await c.json('POST', '/v1/payment_enrollments', { key, body: { borrowers: [enrollBorrower('shared', { account_number: '0000000001' })] } })).status).toBe(207);
    }
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(201);
    // In an earlier release the second registration went through: both rows exist, neither with its account.
    forgetAccounts(c);
    c.clock.advance(1000);
    const now = c.clock.now();
    c.sql
      .query(
        `INSERT INTO payment_connections (id, lender_id, processor, label, rail_scope, is_default, key_sealed, key_last4, ingested, matched, created_at, updated_at, reconcile_due)
         VALUES ('conn-of-b', ?, 'sandbox', 'old key', 'both', 1, ?, ?, 0, 0, ?, ?, 0)`,
      )
      .run(b.id, c.rt.vault.seal(KEY), KEY.slice(-4), now, now);
    await cycle(c); // balances of 0.01: nothing initiated by the service
    const sandbox = new SandboxProcessor({ ...(c.rt.pg ? { pg: c.rt.pg } : { sqlite: c.rt.sqlite }), clock: c.clock, settlementMs: SETTLE });
    await createSandboxCharge(sandbox, KEY, { amountCents: 7000, reference: 'DRS-shared-INV-1', rail: 'ach' });
    await pollProcessors(c.rt);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    const credited = c.sql
      .query("SELECT lender_id AS l, SUM(amount_cents) AS cents FROM ledger_entries WHERE kind = 'credit' GROUP BY lender_id")
      .all() as { l: string; cents: number }[];
    expect(credited).toEqual([{ l: c.lender.id, cents: 7000 }]);
    const conns = c.sql.query('SELECT lender_id AS l, account_id AS a, last_poll_error AS e FROM payment_connections ORDER BY created_at').all() as { l: string; a: string | null; e: string | null }[];
    expect(conns.every((x) => x.a !== null)).toBe(true);
    expect(conns.find((x) => x.l === b.id)!.e).toContain('another lender');
    expect(conns.find((x) => x.l === c.lender.id)!.e).toBeNull();
  });
});

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
    // Freed: sent again, the borrower of the repaired payment is debited for its new debt.
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('went-back', { collectable_amount: 2000 })] } })).body.results[0].outcome).toBe('enrolled');
    await cycle(c);
    expect((c.sql.query("SELECT COUNT(*) AS n FROM payments WHERE authorizer_unique_id = 'went-back'").get() as { n: number }).n).toBe(2);
  });
});
