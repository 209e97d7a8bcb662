// Pay cycles learned by the service from a borrower's own balance reads, and reads timed around its paydays:
// a sandbox borrower paid biweekly on Fridays (account 9997 2 01500: $1,500 every other Friday) checked by the
// lender for six weeks, then enrolled.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { signedIn } from '../../helpers/portal';

const D = 86_400_000;
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

function setup(env: Record<string, string> = {}) {
  // Friday 2 October 2026, 09:00 UTC.
  const c = createTestContext({ MONITOR_READ_INTERVAL_MS: String(4 * 3_600_000), ...env }, { clockAt: '2026-10-02T09:00:00.000Z' });
  contexts.push(c);
  return c;
}

/** The lender's own balance checks of the borrower, once a day for `days` days. */
async function checkDaily(c: TestContext, aid: string, account: string, days: number) {
  for (let i = 0; i < days; i++) {
    expect((await c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer(aid, { account_number: account })] } })).status).toBe(201);
    await processBalances(c.rt);
    c.clock.advance(D);
  }
}

describe('reads around paydays', () => {
  test('a borrower paid every other Friday: biweekly, the right next payday, the next read the morning before it', async () => {
    const c = setup();
    await checkDaily(c, 'friday', '9997201500', 45);
    // Now Monday 16 November 2026; paid Fridays 6 and 20 November.
    expect(new Date(c.clock.now()).toISOString().slice(0, 10)).toBe('2026-11-16');
    // Owed more than the balance ever holds: it stays monitored.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('friday', { account_number: '9997201500', collectable_amount: 9_000_000 })] } });
    await cycle(c);
    const v = (await c.json('GET', '/v1/payment_enrollments/friday')).body;
    expect(v.pay_cycle).toMatchObject({ frequency: 'biweekly', next_payday: '2026-11-20', source: 'balances' });
    expect(v.pay_cycle.confidence).toBeGreaterThanOrEqual(0.5);
    // The morning before the payday (a day before it, within a day).
    expect(v.next_read_at).toBe('2026-11-19T08:00:00.000Z');
    expect(Math.abs(Date.parse(v.next_read_at) - Date.parse('2026-11-20T00:00:00Z'))).toBeLessThanOrEqual(D);
    // The portal's borrower page shows it.
    const page = await (await signedIn(c)).get('/portal/payments/borrowers/friday');
    expect(page.text).toContain('biweekly, next payday 2026-11-20');

    // Followed over four weeks: reads only around paydays and every few days between, never closer than the
    // fixed interval, and far fewer than the fixed interval's 168.
    const reads: string[] = [];
    for (let i = 0; i < 60 && c.clock.now() < Date.parse('2026-12-14T00:00:00Z'); i++) {
      const next = Date.parse((await c.json('GET', '/v1/payment_enrollments/friday')).body.next_read_at);
      c.clock.set(Math.max(next, c.clock.now()));
      reads.push(new Date(c.clock.now()).toISOString());
      await cycle(c);
    }
    expect(reads).toContain('2026-11-20T08:00:00.000Z');
    expect(reads).toContain('2026-11-21T08:00:00.000Z');
    expect(reads).toContain('2026-12-03T08:00:00.000Z');
    expect(reads).toContain('2026-12-04T08:00:00.000Z');
    expect(reads.length).toBeLessThanOrEqual(12);
  });

  test('read_cadence interval: the fixed interval, whatever the cycle; a constant balance is no cycle at all', async () => {
    const c = setup();
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { read_cadence: 'interval', debit_buffer_cents: 2500 } })).body).toMatchObject({ read_cadence: 'interval', debit_buffer_cents: 2500 });
    await checkDaily(c, 'fixed', '9997201500', 45);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('fixed', { account_number: '9997201500', collectable_amount: 9_000_000 }), enrollBorrower('flat', { collectable_amount: 9_000_000 })] } });
    await cycle(c);
    const fixed = (await c.json('GET', '/v1/payment_enrollments/fixed')).body;
    expect(fixed.pay_cycle.frequency).toBe('biweekly');
    expect(Date.parse(fixed.next_read_at) - c.clock.now()).toBe(4 * 3_600_000);
    const flat = (await c.json('GET', '/v1/payment_enrollments/flat')).body;
    expect(flat.pay_cycle).toMatchObject({ frequency: 'unknown', next_payday: null });
  });

  test('the debit buffer: a balance covering the amount but not the buffer is not debited', async () => {
    const c = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_debit_buffer_000001', rail_scope: 'both', is_default: true } });
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { debit_buffer_cents: 2500 } })).status).toBe(200);
    // Balance 100.00; owed 90.00: covered, but not with 25.00 to spare.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('tight', { account_number: '0000010000', collectable_amount: 9_000 }), enrollBorrower('roomy', { account_number: '0000010000', collectable_amount: 7_500 })] } });
    await cycle(c);
    expect((await c.json('GET', '/v1/payment_enrollments/tight')).body.payments).toEqual([]);
    expect((await c.json('GET', '/v1/payment_enrollments/roomy')).body.payments).toHaveLength(1);
  });
});
