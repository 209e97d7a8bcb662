// A bank_link flows beyond balance requests: a schedule's runs and an enrolled borrower's monitoring reads
// go through the lender's connection at the fake Plaid and fake Stripe servers; the enrollment read shows
// which account is linked, never the token; a re-send with a new link resumes reads after a relink.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { startAllDueRuns } from '../../../src/modules/schedules/runs';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
const STRIPE_KEY = 'rk_test_linkedsources000000000007';
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});

async function setup(env: Record<string, string> = {}, opts: { clockAt?: string } = {}) {
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, ...env }, opts);
  contexts.push(c);
  const clientId = `client_src_${contexts.length}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'production' } })).status).toBe(201);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: STRIPE_KEY } })).status).toBe(201);
  return c;
}

describe('schedules', () => {
  test('a scheduled run reads the linked account; the link is not in the schedule’s answers', async () => {
    const c = await setup();
    plaid.addItem('access-production-sched1', [{ account_id: 'acc_sched_0001', available: 250.5, current: 260 }]);
    const created = await c.json('POST', '/v1/monitoring/scheduled_balance_request', {
      body: {
        name: 'linked',
        interval_days: 1,
        time_of_day: '13:00',
        starts_at: '2026-11-21',
        authorizers: [bankAuthorizer('sched-1', { bank_link: { provider: 'plaid', access_token: 'access-production-sched1', account_id: 'acc_sched_0001' } })],
      },
    });
    expect(created.status).toBe(201);
    expect(JSON.stringify(created.body)).not.toContain('access-production-sched1');
    const got = await c.json('GET', `/v1/monitoring/schedules/${created.body.schedule_id}`);
    expect(JSON.stringify(got.body)).not.toContain('access-production-sched1');
    for (let i = 0; i < 4; i++) {
      c.clock.advance(3_600_000);
      await startAllDueRuns(c.rt);
      await processBalances(c.rt);
    }
    const hist = await c.json('GET', '/v1/monitoring/authorizers/sched-1/history');
    expect(hist.body.history[0]).toMatchObject({ status: 'success', balance_amount: 250.5, balance_kind: 'available' });
  });
});

describe('enrollments', () => {
  test('monitoring reads go through the link; the read shows the provider and account, never the token; a new link resumes reads after a relink', async () => {
    const c = await setup({ MONITOR_READ_INTERVAL_MS: '3600000' });
    plaid.addItem('access-production-enr1', [{ account_id: 'acc_enrolled_7788', available: 321, current: 400 }]);
    const link = { provider: 'plaid', access_token: 'access-production-enr1', account_id: 'acc_enrolled_7788' };
    const res = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('enr-1', { bank_link: link })] } });
    expect(res.status).toBe(207);
    expect(JSON.stringify(res.body)).not.toContain('access-production-enr1');
    expect((await queueDueReads(c.rt)).queued).toBe(1);
    await processBalances(c.rt);
    const view = (await c.json('GET', '/v1/payment_enrollments/enr-1')).body;
    expect(view.bank_link).toEqual({ provider: 'plaid', account_last4: '7788', health: { status: 'ok', since: null, expires_at: null } });
    expect(view.last_read).toMatchObject({ balance_cents: 32100, balance_kind: 'available', as_of: expect.any(String) });
    expect(JSON.stringify(view)).not.toContain('access-production-enr1');

    // The Item needs the borrower to sign in again: relink_required, not read again with this link.
    plaid.setItemError('access-production-enr1', 'ITEM_LOGIN_REQUIRED');
    c.clock.advance(3_600_000);
    expect((await queueDueReads(c.rt)).queued).toBe(1);
    await processBalances(c.rt);
    const hist = await c.json('GET', '/v1/monitoring/authorizers/enr-1/history');
    expect(hist.body.history[0].error_message).toContain('relink_required');
    const asked = () => plaid.requests.filter((q) => q.body.access_token === 'access-production-enr1').length;
    const before = asked();
    c.clock.advance(3_600_000);
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    expect(asked()).toBe(before);

    // Re-sent with a new link: read again.
    plaid.addItem('access-production-enr2', [{ account_id: 'acc_enrolled_7788', available: 99, current: 99 }]);
    const again = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('enr-1', { bank_link: { ...link, access_token: 'access-production-enr2' } })] } });
    expect(again.status).toBe(207);
    c.clock.advance(3_600_000);
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    expect((await c.json('GET', '/v1/payment_enrollments/enr-1')).body.last_read).toMatchObject({ balance_cents: 9900, balance_kind: 'available' });
  });

  test('charged through a pm_ token verified with Financial Connections and sent without a bank_link: read through that account', async () => {
    // The fake Stripe server dates a balance by the real clock, and a time ahead of the service's is refused: the service's clock starts there too.
    const c = await setup({ MONITOR_READ_INTERVAL_MS: '3600000' }, { clockAt: new Date().toISOString() });
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_1FromPm0001', available: 612_34, current: 700_00 });
    stripe.control.addFcPaymentMethod(STRIPE_KEY, { id: 'pm_1VerifiedFc0001', account: 'fca_1FromPm0001' });
    stripe.control.addFcPaymentMethod(STRIPE_KEY, { id: 'pm_1MicroDeposit01', account: null });
    const res = await c.json('POST', '/v1/payment_enrollments', {
      body: {
        borrowers: [
          enrollBorrower('pm-fc', { charge_instrument: { processor_token: 'pm_1VerifiedFc0001', card_last4: '6789' } }),
          enrollBorrower('pm-micro', { charge_instrument: { processor_token: 'pm_1MicroDeposit01', card_last4: '6789' }, account_number: '0000004321' }),
        ],
      },
    });
    expect(res.status).toBe(207);
    expect((await c.json('GET', '/v1/payment_enrollments/pm-fc')).body.bank_link).toEqual({ provider: 'stripe', account: 'fca_1FromPm0001', health: { status: 'ok', since: null, expires_at: null } });
    expect((await c.json('GET', '/v1/payment_enrollments/pm-micro')).body.bank_link).toBeNull();
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    expect((await c.json('GET', '/v1/payment_enrollments/pm-fc')).body.last_read).toMatchObject({ balance_cents: 61234, balance_kind: 'available' });
    // Verified by micro-deposits: no Financial Connections account, read from the default source as before.
    const micro = (await c.json('GET', '/v1/payment_enrollments/pm-micro')).body.last_read;
    expect(micro.balance_cents).toBe(4321);
    expect(micro.balance_kind).toBeUndefined();
  });

  test('a Stripe-linked borrower without a connection for it fails alone with the reason', async () => {
    const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url });
    contexts.push(c);
    const res = await c.json('POST', '/v1/payment_enrollments', {
      body: { borrowers: [enrollBorrower('enr-nolink', { bank_link: { provider: 'stripe', account: 'fca_1NoConn' } }), enrollBorrower('enr-plain')] },
    });
    expect(res.status).toBe(207);
    expect(JSON.stringify(res.body)).toContain('no Stripe bank-data connection');
    expect((await c.json('GET', '/v1/payment_enrollments/enr-plain')).status).toBe(200);
    expect((await c.json('GET', '/v1/payment_enrollments/enr-plain')).body.bank_link).toBeNull();
  });
});
