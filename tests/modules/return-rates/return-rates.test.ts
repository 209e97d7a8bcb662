// GET /v1/return_rates against a hand calculation: uploaded rows inside and outside the window, a late
// return, a return without a code (Stripe), a card return that is not counted (sandbox); the status
// boundaries at exactly 80% and 100%; the window's validation; tenancy.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { startFakeStripe } from '../../fakes/stripe-server';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { statusOf } from '../../../src/modules/return-rates/service';

const fake = startFakeStripe();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  fake.stop();
});

const HEADER = 'reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
async function upload(c: TestContext, rows: string[], key = c.lender.key) {
  const form = new FormData();
  form.append('file', new File([[HEADER, ...rows].join('\n') + '\n'], 'results.csv', { type: 'text/csv' }));
  const res = await c.app.handle(new Request('http://localhost/v1/payment_results/uploads', { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form }));
  const body = (await res.json()) as { problems: { severity: string }[] };
  expect(body.problems.filter((p) => p.severity === 'error')).toEqual([]);
}

describe('the statuses of a class', () => {
  test('ok below 80% of the threshold, warning from exactly 80%, exceeded from exactly 100%', () => {
    // Unauthorized, 0.5%: of 1,000 debits, 4 returns are 80% of it and 5 are 100%.
    expect(statusOf(3, 1000, 50)).toBe('ok');
    expect(statusOf(4, 1000, 50)).toBe('warning');
    expect(statusOf(5, 1000, 50)).toBe('exceeded');
    // Overall, 15%: 12 of 100 is 80%, 15 of 100 is 100%.
    expect(statusOf(11, 100, 1500)).toBe('ok');
    expect(statusOf(12, 100, 1500)).toBe('warning');
    expect(statusOf(15, 100, 1500)).toBe('exceeded');
    expect(statusOf(0, 0, 1500)).toBe('ok');
    expect(statusOf(3, 0, 1500)).toBe('exceeded');
  });
});

describe('GET /v1/return_rates', () => {
  test('a hand calculation over uploads, the service’s own ACH payment and a card payment', async () => {
    // The fake Stripe dates its events by the wall clock: the service's clock runs a day ahead of it, and the
    // rows are dated back from there, so the calculation holds whatever the day the test runs.
    const now = Date.now() + 86_400_000;
    const day = (ago: number) => new Date(now - ago * 86_400_000).toISOString().slice(0, 10);
    const c = createTestContext({ STRIPE_API_URL: fake.url, MONITOR_READ_INTERVAL_MS: '86400000' }, { clockAt: new Date(now).toISOString() });
    contexts.push(c);
    await upload(c, [
      ...Array.from({ length: 10 }, (_, i) => `S-${i},10.00,settled,${day(20)},${day(18)},,`),
      `U-1,10.00,returned,${day(19)},,${day(16)},R10`,
      `A-1,10.00,returned,${day(19)},,${day(17)},R02`,
      // Submitted in the window, returned late, inside it: a debit and an overall return (R01).
      `L-1,10.00,late_return,${day(50)},${day(48)},${day(11)},R01`,
      // Outside the window: neither a debit nor a return.
      `O-1,10.00,settled,${day(80)},${day(78)},,`,
      `O-2,10.00,returned,${day(80)},,${day(76)},R03`,
      // Not a debit that went to the bank.
      `P-1,10.00,pending,${day(11)},,,`,
    ]);
    // The service's own ACH payment through Stripe, failed with a code Stripe has no R-code for: a return
    // without a code. And a card payment through the sandbox, declined for funds: a card return, not counted.
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sk_test_rates_account_0001', rail_scope: 'ach', is_default: true } })).status).toBe(201);
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_rates_card_000000001', rail_scope: 'card', is_default: true } })).status).toBe(201);
    await c.json('POST', '/v1/payment_enrollments', {
      body: {
        borrowers: [
          enrollBorrower('ach-1', { collectable_amount: 4200 }),
          enrollBorrower('card-1', { collectable_amount: 5091, charge_instrument: { processor_token: 'sbxpm_rates', card_last4: '4242' } }),
        ],
      },
    });
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await dispatchPayments(c.rt);
    const pi = (c.sql.query("SELECT processor_payment_id AS pi FROM payments WHERE authorizer_unique_id = 'ach-1'").get() as { pi: string }).pi;
    fake.control.fail(pi, 'brand_new_code');
    await pollProcessors(c.rt);
    expect((await c.json('GET', '/v1/payment_events?authorizer_unique_id=card-1')).body.events[0]).toMatchObject({ status: 'returned', return_code: 'R01' });

    const r = await c.json("GET", "/v1/return_rates");
    expect(r.status).toBe(200);
    // Debits: 10 settled + 3 returned uploads in the window + the Stripe ACH payment = 14.
    // Returns: R10, R02, the late R01, and the code-less one = 4.
    expect(r.body).toEqual({
      window: { from: new Date(now - 60 * 86_400_000).toISOString(), to: new Date(now).toISOString(), days: 60 },
      debits: 14,
      rates: {
        unauthorized: { returns: 1, rate: 1 / 14, threshold: 0.005, status: 'exceeded' },
        administrative: { returns: 1, rate: 1 / 14, threshold: 0.03, status: 'exceeded' },
        overall: { returns: 4, rate: 4 / 14, threshold: 0.15, status: 'exceeded' },
      },
      by_code: { R10: 1, R02: 1, R01: 1 },
      paused: false,
    });
    // A shorter window leaves the early-November rows out.
    const week = (await c.json('GET', '/v1/return_rates?window_days=7')).body;
    expect(week).toMatchObject({ debits: 1, window: { days: 7 } });
    expect(week.rates.overall.returns).toBe(1);

    // Another lender sees only its own: nothing.
    const other = c.newLender();
    expect((await c.json('GET', '/v1/return_rates', { key: other.key })).body).toMatchObject({ debits: 0, by_code: {}, rates: { overall: { returns: 0, rate: 0, status: 'ok' } } });
  });

  test('window_days outside 1–120 is a 400 naming it; no key is 401', async () => {
    const c = createTestContext();
    contexts.push(c);
    for (const bad of ['0', '121', '1.5', 'x']) {
      const r = await c.json('GET', `/v1/return_rates?window_days=${bad}`);
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toContain('window_days');
    }
    expect((await c.json('GET', '/v1/return_rates', { key: null })).status).toBe(401);
  });
});
