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

/** Each read of a monitored borrower, following its next_read_at, until a time. */
async function follow(c: TestContext, aid: string, until: string): Promise<string[]> {
  const reads: string[] = [];
  for (let i = 0; i < 60; i++) {
    const next = Date.parse((await c.json('GET', `/v1/payment_enrollments/${aid}`)).body.next_read_at);
    if (next > Date.parse(until)) break;
    c.clock.set(Math.max(next, c.clock.now()));
    reads.push(new Date(c.clock.now()).toISOString());
    await cycle(c);
  }
  return reads;
}

describe('reads around paydays', () => {
  test('a borrower paid every other Friday: biweekly, the right next payday, read the morning of each payday', async () => {
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
    // A quiet read three days on (its pay has never come early, so the morning before the payday is not read).
    expect(v.next_read_at).toBe('2026-11-19T09:00:00.000Z');
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
    expect(reads).toContain('2026-12-04T08:00:00.000Z');
    // Each deposit was seen on its payday: the morning after is not read.
    expect(reads).not.toContain('2026-11-21T08:00:00.000Z');
    expect(reads).not.toContain('2026-12-05T08:00:00.000Z');
    expect(reads.length).toBeLessThanOrEqual(12);
  });

  test("the lender's time zone: the payday read at 08:00 there (14:00 UTC in Chicago in November)", async () => {
    const c = setup();
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { time_zone: 'America/Chicago' } })).body.time_zone).toBe('America/Chicago');
    await checkDaily(c, 'chicago', '9997201500', 45);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('chicago', { account_number: '9997201500', collectable_amount: 9_000_000 })] } });
    await cycle(c);
    const reads = await follow(c, 'chicago', '2026-12-06T00:00:00Z');
    expect(reads).toContain('2026-11-20T14:00:00.000Z');
    expect(reads).toContain('2026-12-04T14:00:00.000Z');
    expect(reads).not.toContain('2026-11-20T08:00:00.000Z');
  });

  test('two predicted paydays without a deposit: irregular on the morning after the second, and the fixed interval at once', async () => {
    const c = setup();
    // Six weeks of a biweekly pay in the lender's checks, then enrolled with an account whose balance never rises.
    await checkDaily(c, 'stopped', '9997201500', 45);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('stopped', { account_number: '0000010000', collectable_amount: 9_000_000 })] } });
    await cycle(c);
    expect((await c.json('GET', '/v1/payment_enrollments/stopped')).body.pay_cycle).toMatchObject({ frequency: 'biweekly', next_payday: '2026-11-20' });
    const reads = await follow(c, 'stopped', '2026-12-05T09:00:00Z');
    // 20 November missed (seen the morning after); still biweekly, read around 4 December.
    expect(reads).toContain('2026-11-21T08:00:00.000Z');
    expect(reads).toContain('2026-12-04T08:00:00.000Z');
    // The morning after 4 December, the second missed: irregular, read again one fixed interval (4 h) on.
    expect(reads.at(-1)).toBe('2026-12-05T08:00:00.000Z');
    const v = (await c.json('GET', '/v1/payment_enrollments/stopped')).body;
    expect(v.pay_cycle).toMatchObject({ frequency: 'irregular', next_payday: null });
    expect(v.next_read_at).toBe('2026-12-05T12:00:00.000Z');
  });

  test('biweekly paydays that land on semimonthly dates: both kept with the cycle', async () => {
    // Friday 1, 15 and 29 May 2026: every other Friday, and the 1st and the 15th and the last day (31 May a Sunday).
    const c = createTestContext({ MONITOR_READ_INTERVAL_MS: String(4 * 3_600_000) }, { clockAt: '2026-04-28T09:00:00.000Z' });
    contexts.push(c);
    const paydays = new Set(['2026-05-01', '2026-05-15', '2026-05-29']);
    while (c.clock.now() < Date.parse('2026-06-02T00:00:00Z')) {
      const account = paydays.has(new Date(c.clock.now()).toISOString().slice(0, 10)) ? '0000160000' : '0000010000';
      await c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('both', { account_number: account })] } });
      await processBalances(c.rt);
      c.clock.advance(D);
    }
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('both', { account_number: '0000010000', collectable_amount: 9_000_000 })] } });
    await cycle(c);
    expect((await c.json('GET', '/v1/payment_enrollments/both')).body.pay_cycle).toMatchObject({ frequency: 'biweekly', next_payday: '2026-06-12' });
    const stored = c.sql
      .query<{ f: string; p: number }, []>("SELECT pay_cycle_alternative_frequency AS f, pay_cycle_alternative_next_payday AS p FROM enrollments WHERE authorizer_unique_id = 'both'")
      .get()!;
    expect({ f: stored.f, p: new Date(stored.p).toISOString().slice(0, 10) }).toEqual({ f: 'semimonthly', p: '2026-06-15' });
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
