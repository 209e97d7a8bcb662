// A linked account's health as episodes, against the fake Plaid and Stripe servers: a link that needs the
// borrower is told once, probed (free calls) rather than read, and when the provider says the same link is
// well again the episode closes by itself, the borrower is read at once and collected; a revoked, closed or
// non-transactable account takes no payment, the enrollment saying which; a consent about to end is a warning.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { AccountType } from 'plaid';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { startReceiver } from '../webhooks/support';
import { signedIn } from '../../helpers/portal';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { MAX_PROBE_INTERVAL_MS, probeLinks } from '../../../src/modules/balance-requests/link-health';

const READ = 3_600_000;
const PROBE = 60_000;
const plaid = startFakePlaid();
const stripe = startFakeStripe();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
  receiver.server.stop(true);
});

let n = 0;
/** A lender with Plaid and Stripe bank-data connections and a sandbox processor key; balances up to a day old decide. */
async function setup() {
  const c = createTestContext(
    { PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, MONITOR_READ_INTERVAL_MS: String(READ), BANK_LINK_PROBE_INTERVAL_MS: String(PROBE) },
    { clockAt: new Date().toISOString() },
  );
  contexts.push(c);
  const k = ++n;
  const clientId = `client_health_${k}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  const stripeKey = `rk_test_linkhealth${String(k).padStart(14, '0')}`;
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'production' } })).status).toBe(201);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: stripeKey } })).status).toBe(201);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: `sbx_health_key_${String(k).padStart(10, '0')}`, rail_scope: 'both', is_default: true } })).status).toBe(201);
  // Stripe's fake gives balances at its own (real) time; the test clock moves by hours.
  expect((await c.json('PATCH', '/v1/collection_policy', { body: { max_balance_age_minutes: 1440 } })).status).toBe(200);
  return { c, stripeKey };
}

const paymentsOf = async (c: TestContext, aid: string) => (await c.rows<{ id: string }>('SELECT id FROM payments WHERE authorizer_unique_id = ?', aid)).length;
const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;
const eventsOf = async (c: TestContext) =>
  (await c.rows<{ type: string; payload: string }>('SELECT type, payload FROM webhook_deliveries ORDER BY created_at, id')).filter((e) => e.type.startsWith('BANK_LINK_'));
const balanceCalls = (token: string) => plaid.requests.filter((q) => q.path === '/accounts/balance/get' && q.body.access_token === token).length;
const probeCalls = (token: string) => plaid.requests.filter((q) => q.path === '/item/get' && q.body.access_token === token).length;

async function read(c: TestContext, advance = READ) {
  c.clock.advance(advance);
  await queueDueReads(c.rt);
  await processBalances(c.rt);
}

async function enroll(c: TestContext, aid: string, bankLink: Record<string, string>, amount = 40_000) {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { bank_link: bankLink, collectable_amount: amount })] } });
  expect(r.status).toBe(207);
  expect(r.body.results[0].error ?? null).toBeNull();
}

const receiver = startReceiver();
async function endpoint(c: TestContext) {
  const r = await c.json('POST', '/v1/webhook_endpoints', {
    body: { url: receiver.url(), event_types: ['BANK_LINK_RELINK_REQUIRED', 'BANK_LINK_REPAIRED', 'BANK_LINK_EXPIRING', 'ENROLLMENT_BLOCKED'] },
  });
  expect(r.status).toBe(201);
}

describe('a link that needs the borrower, repaired in place', () => {
  test('Plaid ITEM_LOGIN_REQUIRED: told once, probed not read, and once the same token heals it is read and collected with no action from the lender', async () => {
    const { c } = await setup();
    await endpoint(c);
    const token = 'access-production-heal1';
    plaid.addItem(token, [{ account_id: 'acc_heal_0001', available: 900, current: 900 }]);
    plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
    await enroll(c, 'heal', { provider: 'plaid', access_token: token, account_id: 'acc_heal_0001' });
    await read(c);
    expect(await paymentsOf(c, 'heal')).toBe(0);
    const broken = await view(c, 'heal');
    expect(broken.bank_link.health).toMatchObject({ status: 'relink_required', since: expect.any(String), expires_at: null });
    expect(balanceCalls(token)).toBe(1);
    // The portal's borrower page says it too, never the token.
    const page = await (await signedIn(c)).get('/portal/payments/borrowers/heal');
    expect(page.status).toBe(200);
    expect(page.text).toContain('the borrower must link it again');
    expect(page.text).not.toContain(token);

    // While the episode is open the account is not read, however often its reads come due; it is probed, the
    // interval doubling while the provider says the same.
    await read(c);
    await read(c);
    expect(balanceCalls(token)).toBe(1);
    const intervals: number[] = [];
    for (let i = 0; i < 3; i++) {
      c.clock.advance(MAX_PROBE_INTERVAL_MS);
      expect((await probeLinks(c.rt)).probed).toBe(1);
      const [row] = await c.rows<{ interval: number }>('SELECT probe_interval_ms AS interval FROM bank_link_relinks');
      intervals.push(Number(row!.interval));
    }
    expect(intervals).toEqual([2 * PROBE, 4 * PROBE, 8 * PROBE]);
    expect(probeCalls(token)).toBe(3);
    expect(balanceCalls(token)).toBe(1);

    // Repaired in Link's update mode: the same access token. The next probe closes the episode.
    plaid.setItemError(token, null);
    c.clock.advance(MAX_PROBE_INTERVAL_MS);
    expect((await probeLinks(c.rt)).probed).toBe(1);
    const healed = await view(c, 'heal');
    expect(healed.bank_link.health).toMatchObject({ status: 'ok', since: expect.any(String) });
    // Read at once, and collected.
    await read(c, 0);
    expect(balanceCalls(token)).toBe(2);
    expect(await paymentsOf(c, 'heal')).toBe(1);
    expect((await probeLinks(c.rt)).probed).toBe(0);

    const events = await eventsOf(c);
    expect(events.map((e) => e.type)).toEqual(['BANK_LINK_RELINK_REQUIRED', 'BANK_LINK_REPAIRED']);
    expect(JSON.parse(events[0]!.payload)).toMatchObject({ authorizer_unique_id: 'heal', health: 'relink_required', bank_link: { provider: 'plaid', account_last4: '0001' } });
    expect(JSON.parse(events[1]!.payload)).toMatchObject({ authorizer_unique_id: 'heal', was: 'relink_required' });
    expect(events.map((e) => e.payload).join('')).not.toContain(token);

    // Broken again: a new episode, told again.
    plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
    await read(c);
    expect((await eventsOf(c)).map((e) => e.type)).toEqual(['BANK_LINK_RELINK_REQUIRED', 'BANK_LINK_REPAIRED', 'BANK_LINK_RELINK_REQUIRED']);
  });

  test('the lender re-sending the same link probes it at once; a check answers the health now', async () => {
    const { c } = await setup();
    const token = 'access-production-resend1';
    const link = { provider: 'plaid', access_token: token, account_id: 'acc_resend_0001' };
    plaid.addItem(token, [{ account_id: 'acc_resend_0001', available: 900, current: 900 }]);
    plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
    await enroll(c, 'resend', link);
    await read(c);
    expect((await view(c, 'resend')).bank_link.health.status).toBe('relink_required');
    // Not due for an hour of probing; a re-send of the repaired link makes it due now.
    expect((await probeLinks(c.rt)).probed).toBe(0);
    plaid.setItemError(token, null);
    await enroll(c, 'resend', link);
    expect((await probeLinks(c.rt)).probed).toBe(1);
    expect((await view(c, 'resend')).bank_link.health.status).toBe('ok');

    // The check route: the provider asked now, its answer recorded and given.
    plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
    const check = await c.json('POST', '/v1/payment_enrollments/resend/bank_link/check');
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({ authorizer_unique_id: 'resend', bank_link: { provider: 'plaid', account_last4: '0001', health: { status: 'relink_required' } } });
    expect(JSON.stringify(check.body)).not.toContain(token);
    plaid.setItemError(token, null);
    expect((await c.json('POST', '/v1/payment_enrollments/resend/bank_link/check')).body.bank_link.health.status).toBe('ok');
  });

  test('the check route: 404 for another lender’s borrower or none, 409 without a bank_link', async () => {
    const { c } = await setup();
    expect((await c.json('POST', '/v1/payment_enrollments/nobody/bank_link/check')).status).toBe(404);
    // Another lender's borrower with a link: 404, and its provider is not asked.
    const token = 'access-production-tenancy1';
    plaid.addItem(token, [{ account_id: 'acc_ten_0001', available: 900, current: 900 }]);
    await enroll(c, 'theirs', { provider: 'plaid', access_token: token, account_id: 'acc_ten_0001' });
    const stranger = c.newLender('stranger-health');
    const asked = plaid.requests.length;
    const theirs = await c.json('POST', '/v1/payment_enrollments/theirs/bank_link/check', { key: stranger.key });
    expect(theirs.status).toBe(404);
    expect(plaid.requests.length).toBe(asked);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('unlinked')] } })).status).toBe(207);
    const r = await c.json('POST', '/v1/payment_enrollments/unlinked/bank_link/check');
    expect(r.status).toBe(409);
    expect(r.body.error.message).toContain('no bank_link');
  });
});

describe('no debit from an account that cannot take one', () => {
  test('Plaid USER_ACCOUNT_REVOKED: no payment, blocked_reason account_revoked; healed, the block lifts and the borrower is collected', async () => {
    const { c } = await setup();
    const token = 'access-production-revoked1';
    plaid.addItem(token, [{ account_id: 'acc_rev_0001', available: 900, current: 900 }]);
    plaid.setItemError(token, 'USER_ACCOUNT_REVOKED');
    await enroll(c, 'rev', { provider: 'plaid', access_token: token, account_id: 'acc_rev_0001' });
    await read(c);
    expect(await paymentsOf(c, 'rev')).toBe(0);
    expect(await view(c, 'rev')).toMatchObject({ state: 'monitored', blocked_reason: 'account_revoked', bank_link: { health: { status: 'revoked' } } });
    plaid.setItemError(token, null);
    expect((await c.json('POST', '/v1/payment_enrollments/rev/bank_link/check')).status).toBe(200);
    expect((await view(c, 'rev')).blocked_reason).toBeNull();
    await read(c, 0);
    expect(await paymentsOf(c, 'rev')).toBe(1);
  });

  test('Stripe: an account closed at the bank reads 3200 and blocks (account_closed); one whose account numbers are not transactable reads its balance but takes no debit (account_not_transactable)', async () => {
    const { c, stripeKey } = await setup();
    stripe.control.addFcAccount(stripeKey, { id: 'fca_1HealthClosed01', available: 9_000_00 });
    stripe.control.setFcStatus('fca_1HealthClosed01', 'inactive');
    stripe.control.setFcStatusDetails('fca_1HealthClosed01', { inactiveCause: 'account_closed' });
    stripe.control.addFcAccount(stripeKey, { id: 'fca_1HealthTokens01', available: 9_000_00 });
    stripe.control.setFcAccountNumbers('fca_1HealthTokens01', ['expired', 'deactivated']);
    await enroll(c, 'closed', { provider: 'stripe', account: 'fca_1HealthClosed01' });
    await enroll(c, 'tokens', { provider: 'stripe', account: 'fca_1HealthTokens01' });
    await read(c);
    expect(await paymentsOf(c, 'closed')).toBe(0);
    expect(await paymentsOf(c, 'tokens')).toBe(0);
    expect(await view(c, 'closed')).toMatchObject({ blocked_reason: 'account_closed', bank_link: { health: { status: 'closed' } } });
    const [closedRead] = (await c.json('GET', '/v1/monitoring/authorizers/closed/history')).body.history;
    expect(closedRead).toMatchObject({ status: 'failed' });
    const tokens = await view(c, 'tokens');
    expect(tokens).toMatchObject({ blocked_reason: 'account_not_transactable', bank_link: { health: { status: 'not_transactable' } }, last_read: { balance_cents: 9_000_00 } });

    // The account number usable again: the check closes the episode, the block lifts, and it is collected.
    stripe.control.setFcAccountNumbers('fca_1HealthTokens01', ['transactable']);
    expect((await c.json('POST', '/v1/payment_enrollments/tokens/bank_link/check')).body.bank_link.health.status).toBe('ok');
    await read(c, 0);
    expect(await paymentsOf(c, 'tokens')).toBe(1);
    expect(await paymentsOf(c, 'closed')).toBe(0);
  });

  test('Stripe consent about to end: one BANK_LINK_EXPIRING with the provider’s date; still read and collected', async () => {
    const { c, stripeKey } = await setup();
    await endpoint(c);
    const ends = Math.floor(c.clock.now() / 1000) + 5 * 86_400;
    stripe.control.addFcAccount(stripeKey, { id: 'fca_1HealthExpire01', available: 9_000_00 });
    stripe.control.setFcStatusDetails('fca_1HealthExpire01', { expectedDeactivation: ends });
    await enroll(c, 'expiring', { provider: 'stripe', account: 'fca_1HealthExpire01' });
    await read(c);
    expect(await paymentsOf(c, 'expiring')).toBe(1);
    expect((await view(c, 'expiring')).bank_link.health).toEqual({ status: 'expiring', since: expect.any(String), expires_at: new Date(ends * 1000).toISOString() });
    const events = await eventsOf(c);
    expect(events.map((e) => e.type)).toEqual(['BANK_LINK_EXPIRING']);
    expect(JSON.parse(events[0]!.payload)).toMatchObject({ authorizer_unique_id: 'expiring', expires_at: new Date(ends * 1000).toISOString() });
  });
});

describe('a credit account', () => {
  test('Plaid credit and Stripe credit-category accounts are no cash: the read fails naming not_a_cash_account, and no debit follows', async () => {
    const { c, stripeKey } = await setup();
    const token = 'access-production-credit1';
    plaid.addItem(token, [{ account_id: 'acc_credit_0001', available: 5_000, current: 5_000, type: AccountType.Credit }]);
    stripe.control.addFcAccount(stripeKey, { id: 'fca_1HealthCredit01', available: 9_000_00, category: 'credit' });
    await enroll(c, 'card-plaid', { provider: 'plaid', access_token: token, account_id: 'acc_credit_0001' });
    await enroll(c, 'card-stripe', { provider: 'stripe', account: 'fca_1HealthCredit01' });
    await read(c);
    for (const aid of ['card-plaid', 'card-stripe']) {
      expect(await paymentsOf(c, aid)).toBe(0);
      const [last] = (await c.json('GET', `/v1/monitoring/authorizers/${aid}/history`)).body.history;
      expect(last).toMatchObject({ status: 'failed', balance_amount: null });
      expect(last.error_message).toContain('not_a_cash_account');
    }
  });
});

describe('erasure', () => {
  test('an erased borrower’s link health (the link kept for probing) goes with it', async () => {
    const { c } = await setup();
    const token = 'access-production-erase1';
    plaid.addItem(token, [{ account_id: 'acc_erase_0001', available: 900, current: 900 }]);
    plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
    await enroll(c, 'erase-me', { provider: 'plaid', access_token: token, account_id: 'acc_erase_0001' });
    await read(c);
    expect(await c.rows('SELECT link_digest FROM bank_link_relinks')).toHaveLength(1);
    expect((await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['erase-me'] } })).status).toBe(200);
    expect(await c.rows('SELECT link_digest FROM bank_link_relinks')).toHaveLength(0);
  });
});
