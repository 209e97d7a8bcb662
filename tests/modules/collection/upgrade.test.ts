// A database from an earlier release: keys stored before their processor account was recorded. After the
// upgrade, an account is its first lender's for good, and no payment made elsewhere is credited to two
// lenders. (The repair of payments an older status was written back onto, SQLite migration 0019, is in
// upgrade-0019.test.ts.)
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { SandboxProcessor, createSandboxCharge } from '../../../src/adapters/processors/sandbox';
import { pollProcessors } from '../../../src/modules/collection/poll';

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
