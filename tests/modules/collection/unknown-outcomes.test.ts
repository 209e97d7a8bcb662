// Ask the processor, never guess: a payment whose answer was not seen stays initiating until the processor
// says what became of it. Sent again with the same key while the key is young and the borrower monitored;
// looked up otherwise; never sent with a key older than PROCESSOR_IDEMPOTENCY_HORIZON_MS; recorded
// not_attempted only when the processor was never asked, or a look-up past the horizon finds nothing.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { startFakeStripe } from '../../fakes/stripe-server';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { listBindings, releaseAccount } from '../../../src/modules/payment-connections/accounts';
import { transaction } from '../../../src/platform/context';

const SETTLE = 600_000;
const OUTAGE = 60_000;
const HORIZON = 3_600_000;
const KEY = 'sbx_unknown_outcomes_00001';
const contexts: TestContext[] = [];
const fake = startFakeStripe();
afterAll(() => {
  contexts.forEach((c) => c.close());
  fake.stop();
});

async function setup(env: Record<string, string> = {}) {
  const c = createTestContext({
    SANDBOX_SETTLEMENT_MS: String(SETTLE),
    SANDBOX_OUTAGE_MS: String(OUTAGE),
    PROCESSOR_IDEMPOTENCY_HORIZON_MS: String(HORIZON),
    MONITOR_READ_INTERVAL_MS: '86400000',
    STRIPE_API_URL: fake.url,
    ...env,
  });
  contexts.push(c);
  return c;
}

async function enrollAndDispatch(c: TestContext, aid: string, amount: number) {
  expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: amount })] } })).status).toBe(207);
  await queueDueReads(c.rt);
  await processBalances(c.rt);
  await dispatchPayments(c.rt);
}

const paymentOf = (c: TestContext, aid: string) =>
  c.sql
    .query('SELECT id, status, first_attempt_at AS firstAttemptAt, processor_payment_id AS pid, message FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at')
    .all(aid) as { id: string; status: string; firstAttemptAt: number | null; pid: string | null; message: string | null }[];
const atSandbox = (c: TestContext, paymentId: string) =>
  (c.sql.query('SELECT COUNT(*) AS n FROM sandbox_payments WHERE idempotency_key = ?').get(paymentId) as { n: number }).n;
const used = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body.payments_used as number;
const removeBorrower = async (c: TestContext, aid: string) =>
  expect((await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: [aid] } })).body.removed).toBe(1);

describe('an answer lost in an outage (sandbox cents 88)', () => {
  test('stays initiating while the processor answers 503, then is sent again with the same key and recorded with the processor’s status', async () => {
    const c = await setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(201);
    await enrollAndDispatch(c, 'outage', 1088);
    const [p] = paymentOf(c, 'outage');
    expect(p).toMatchObject({ status: 'initiating', pid: null });
    expect(p!.firstAttemptAt).not.toBeNull();
    expect(atSandbox(c, p!.id)).toBe(1);
    // Polling fails too during the outage; nothing is guessed.
    await pollProcessors(c.rt);
    c.clock.advance(10_000);
    await dispatchPayments(c.rt);
    expect(paymentOf(c, 'outage')[0]!.status).toBe('initiating');
    c.clock.advance(OUTAGE);
    await dispatchPayments(c.rt);
    expect(paymentOf(c, 'outage')[0]).toMatchObject({ status: 'processing', pid: expect.stringMatching(/^sbxpay_/) });
    expect(atSandbox(c, p!.id)).toBe(1);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect((await c.json('GET', '/v1/payment_enrollments/outage')).body).toMatchObject({ state: 'collected', payments_used: 1, ledger: { net: 1088 } });
  });

  test('removed while the answer is unknown: looked up, never sent again, and recorded as the processor has it', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } });
    await enrollAndDispatch(c, 'gone', 1088);
    const [p] = paymentOf(c, 'gone');
    await removeBorrower(c, 'gone');
    c.clock.advance(OUTAGE + 1);
    await dispatchPayments(c.rt);
    // Not not_attempted: the processor has it.
    expect(paymentOf(c, 'gone')[0]).toMatchObject({ status: 'processing', pid: expect.stringMatching(/^sbxpay_/) });
    const creates = c.sql.query("SELECT COUNT(*) AS n FROM sandbox_payments WHERE idempotency_key = ?").get(p!.id) as { n: number };
    expect(creates.n).toBe(1);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    const v = (await c.json('GET', '/v1/payment_enrollments/gone')).body;
    // The money moved: the ledger says so; the borrower stays removed.
    expect(v).toMatchObject({ state: 'removed', payments_used: 1, ledger: { collected: 1088, net: 1088 } });
  });
});

describe('a request that never reached the processor (sandbox cents 98 fails its first attempt before creating anything)', () => {
  test('removed: looked up until the horizon, then not_attempted and its slot given back; never sent again', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } });
    await enrollAndDispatch(c, 'never', 1098);
    const [p] = paymentOf(c, 'never');
    expect(p).toMatchObject({ status: 'initiating' });
    await removeBorrower(c, 'never');
    for (let t = 0; t < 10; t++) {
      c.clock.advance(HORIZON / 10 - 1);
      await dispatchPayments(c.rt);
      expect(paymentOf(c, 'never')[0]!.status).toBe('initiating');
    }
    expect(atSandbox(c, p!.id)).toBe(0);
    c.clock.advance(16 * 60_000);
    await dispatchPayments(c.rt);
    expect(paymentOf(c, 'never')[0]).toMatchObject({ status: 'not_attempted', message: expect.stringContaining('never reached') });
    expect(atSandbox(c, p!.id)).toBe(0);
    expect(await used(c, 'never')).toBe(0);
  });

  test('monitored and young: sent again with the same key, which creates it once', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } });
    await enrollAndDispatch(c, 'again', 1098);
    const [p] = paymentOf(c, 'again');
    c.clock.advance(6_000);
    await dispatchPayments(c.rt);
    expect(paymentOf(c, 'again')[0]).toMatchObject({ status: 'processing' });
    expect(atSandbox(c, p!.id)).toBe(1);
  });

  test('monitored but past the horizon: looked up, not sent; absent, so not_attempted, and the next read may collect anew', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } });
    await enrollAndDispatch(c, 'old', 1098);
    const [p] = paymentOf(c, 'old');
    c.clock.advance(HORIZON);
    await dispatchPayments(c.rt);
    expect(paymentOf(c, 'old')[0]).toMatchObject({ status: 'not_attempted' });
    expect(atSandbox(c, p!.id)).toBe(0);
    expect(await used(c, 'old')).toBe(0);
  });
});

describe('the idempotency horizon at a real processor API (fake Stripe)', () => {
  test('no create with a key older than the horizon: an unknown outcome past it is only looked up', async () => {
    const c = await setup();
    const key = 'sk_test_horizon_account_01';
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'ach', is_default: true } })).status).toBe(201);
    // The create fails with a 500 (sent once: the SDK does not retry on its own): the outcome is unknown.
    fake.control.failNext(1, 500);
    await enrollAndDispatch(c, 'horizon', 4200);
    const [p] = paymentOf(c, 'horizon');
    expect(p!.status).toBe('initiating');
    const creates = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents' && r.idempotencyKey === p!.id).length;
    const before = creates();
    expect(before).toBe(1);
    c.clock.advance(HORIZON);
    const lists = fake.requests.filter((r) => r.method === 'GET' && r.path === '/v1/payment_intents').length;
    await dispatchPayments(c.rt);
    expect(creates()).toBe(before);
    expect(fake.requests.filter((r) => r.method === 'GET' && r.path === '/v1/payment_intents').length).toBeGreaterThan(lists);
    expect(paymentOf(c, 'horizon')[0]).toMatchObject({ status: 'not_attempted' });
  });

  test('a PaymentIntent left requires_action is cancelled before the payment is recorded not_attempted', async () => {
    const c = await setup();
    const key = 'sk_test_requires_action_01';
    await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'ach', is_default: true } });
    fake.control.requireAction();
    await enrollAndDispatch(c, 'verify', 4200);
    const [p] = paymentOf(c, 'verify');
    const pid = p!.pid!;
    expect(pid).toMatch(/^pi_/);
    expect(p!.status).toBe('not_attempted');
    expect(fake.control.intents(key).find((pi) => pi.id === pid)?.status).toBe('canceled');
    expect(fake.requests.some((r) => r.method === 'POST' && r.path === `/v1/payment_intents/${pid}/cancel`)).toBe(true);
    expect((await c.json('GET', '/v1/payment_enrollments/verify')).body).toMatchObject({ blocked_reason: 'verification_required' });
    // The feed then says the PaymentIntent was canceled (the service's own cancel, dated before it recorded
    // not_attempted): a final status stays, and the payment's events keep the order of its statuses.
    await pollProcessors(c.rt);
    expect(paymentOf(c, 'verify')[0]!.status).toBe('not_attempted');
    const events = c.sql.query('SELECT status, occurred_at AS at FROM payment_events WHERE payment_id = ? ORDER BY recorded_at, id').all(p!.id) as { status: string; at: number }[];
    expect(events.map((e) => e.status)).toEqual(['not_attempted']);
  });
});

describe('one processor account serves one lender', () => {
  test('a key of an account another lender holds is refused with 409; the same lender may hold two keys of one account', async () => {
    const c = await setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'ach', is_default: true } })).status).toBe(201);
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'card', is_default: true } })).status).toBe(201);
    const b = { ...c.newLender('lender-b-of-account'), name: 'lender-b-of-account' };
    const r = await c.json('POST', '/v1/payment_connections', { key: b.key, body: { api_key: KEY, rail_scope: 'both', is_default: true } });
    expect(r.status).toBe(409);
    expect(r.body.error.message).toContain('another lender');
    // Replacing a key of B's with A's account is refused the same way, and B's key stays.
    const own = await c.json('POST', '/v1/payment_connections', { key: b.key, body: { api_key: 'sbx_lender_b_own_0000001', rail_scope: 'both', is_default: true } });
    expect(own.status).toBe(201);
    const patch = await c.json('PATCH', `/v1/payment_connections/${own.body.id}`, { key: b.key, body: { api_key: KEY } });
    expect(patch.status).toBe(409);
    expect((await c.json('GET', '/v1/payment_connections', { key: b.key })).body.connections[0].key_last4).toBe('0001');
    // Deleted by A, the account stays A's: B would otherwise be credited with A's earlier payments.
    for (const k of (await c.json('GET', '/v1/payment_connections')).body.connections) await c.json('DELETE', `/v1/payment_connections/${k.id}`);
    const still = await c.json('PATCH', `/v1/payment_connections/${own.body.id}`, { key: b.key, body: { api_key: KEY } });
    expect(still.status).toBe(409);
    expect(still.body.error.message).toContain('cli account release');
    // Released by the operator (a real handover), it is B's from then on.
    const [bound] = (await listBindings({ deps: c.rt })).filter((x) => x.lender !== b.name && x.processor === 'sandbox');
    expect(await transaction({ deps: c.rt }, (tx) => releaseAccount(tx, 'sandbox', bound!.accountId))).toBe('released');
    expect((await c.json('PATCH', `/v1/payment_connections/${own.body.id}`, { key: b.key, body: { api_key: KEY } })).status).toBe(200);
    expect((await listBindings({ deps: c.rt })).find((x) => x.accountId === bound!.accountId)?.lender).toBe(b.name);
  });
});
