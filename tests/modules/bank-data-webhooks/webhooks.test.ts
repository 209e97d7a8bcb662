// The providers' webhooks against the fakes: Plaid's Plaid-Verification JWT (a real ES256 key, fetched by kid)
// and Stripe's Stripe-Signature (the official SDK's test header) drive the same link-health episodes as the
// probes; a forged, expired, stale or replayed call is refused and changes nothing.
import { afterAll, describe, expect, test } from 'bun:test';
import Stripe from 'stripe';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { plaidKeyId, verifyPlaid } from '../../../src/modules/bank-data-webhooks/verify';

const READ = 3_600_000;
const plaid = startFakePlaid();
const stripe = startFakeStripe();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});

const WHSEC = 'whsec_linkhealthtestsecret0000000001';
let n = 0;
async function setup() {
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, MONITOR_READ_INTERVAL_MS: String(READ) }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const k = ++n;
  const clientId = `client_hooks_${k}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  const stripeKey = `rk_test_webhooks${String(k).padStart(16, '0')}`;
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'production' } })).status).toBe(201);
  const s = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: stripeKey, webhook_secret: WHSEC } });
  expect(s.status).toBe(201);
  expect(JSON.stringify(s.body)).not.toContain(WHSEC);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: `sbx_hooks_key_${String(k).padStart(11, '0')}`, rail_scope: 'both', is_default: true } })).status).toBe(201);
  expect((await c.json('PATCH', '/v1/collection_policy', { body: { max_balance_age_minutes: 1440 } })).status).toBe(200);
  return { c, stripeKey, stripeConnection: s.body.id as string };
}

const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;
const paymentsOf = async (c: TestContext, aid: string) => (await c.rows<{ id: string }>('SELECT id FROM payments WHERE authorizer_unique_id = ?', aid)).length;
async function read(c: TestContext, advance = READ) {
  c.clock.advance(advance);
  await queueDueReads(c.rt);
  await processBalances(c.rt);
}
async function enroll(c: TestContext, aid: string, bankLink: Record<string, string>) {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { bank_link: bankLink, collectable_amount: 40_000 })] } });
  expect(r.status).toBe(207);
}
/** A Plaid webhook as Plaid would send it now (by the service's clock), or as told. */
async function plaidHook(c: TestContext, body: Record<string, unknown>, opts: Parameters<typeof plaid.signWebhook>[1] = {}) {
  const signed = await plaid.signWebhook(body, { iat: Math.floor(c.clock.now() / 1000), ...opts });
  return c.request('POST', '/v1/bank_data_webhooks/plaid', { key: null, raw: signed.raw, headers: { 'content-type': 'application/json', 'plaid-verification': signed.token } });
}
async function stripeHook(c: TestContext, connection: string, event: Record<string, unknown>, opts: { secret?: string; at?: number } = {}) {
  const payload = JSON.stringify(event);
  const header = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: opts.secret ?? WHSEC, timestamp: Math.floor((opts.at ?? c.clock.now()) / 1000) });
  return c.request('POST', `/v1/bank_data_webhooks/stripe/${connection}`, { key: null, raw: payload, headers: { 'content-type': 'application/json', 'stripe-signature': header } });
}

describe('Plaid webhooks', () => {
  test('ITEM ERROR opens the episode and LOGIN_REPAIRED closes it, as probes would; the borrower is then read and collected', async () => {
    const { c } = await setup();
    const token = 'access-production-hook1';
    plaid.addItem(token, [{ account_id: 'acc_hook_0001', available: 900, current: 900 }]);
    await enroll(c, 'hooked', { provider: 'plaid', access_token: token, account_id: 'acc_hook_0001' });
    // A read names the Item (item_… of the token): collected once, then the Item breaks.
    await read(c);
    expect(await paymentsOf(c, 'hooked')).toBe(1);
    const itemId = `item_${token.slice(-8)}`;

    const broke = await plaidHook(c, { webhook_type: 'ITEM', webhook_code: 'ERROR', item_id: itemId, error: { error_code: 'ITEM_LOGIN_REQUIRED' }, environment: 'production' });
    expect(broke.status).toBe(200);
    expect(await broke.json()).toEqual({ received: true, acted: 1 });
    expect((await view(c, 'hooked')).bank_link.health.status).toBe('relink_required');

    const healed = await plaidHook(c, { webhook_type: 'ITEM', webhook_code: 'LOGIN_REPAIRED', item_id: itemId, environment: 'production' });
    expect(healed.status).toBe(200);
    expect((await view(c, 'hooked')).bank_link.health.status).toBe('ok');
    const events = (await c.rows<{ type: string }>('SELECT type FROM webhook_deliveries ORDER BY created_at, id')).map((e) => e.type).filter((t) => t.startsWith('BANK_LINK_'));
    // No endpoint subscribed: nothing queued; the episodes themselves are what the test reads.
    expect(events).toEqual([]);
  });

  test('USER_ACCOUNT_REVOKED blocks the borrower holding that account (no debit); SYNC_UPDATES_AVAILABLE asks for its history', async () => {
    const { c } = await setup();
    const token = 'access-production-hook2';
    plaid.addItem(token, [{ account_id: 'acc_hook_0002', available: 100, current: 100 }]);
    await enroll(c, 'revoked-by-hook', { provider: 'plaid', access_token: token, account_id: 'acc_hook_0002' });
    await read(c);
    const itemId = `item_${token.slice(-8)}`;
    const other = await plaidHook(c, { webhook_type: 'ITEM', webhook_code: 'USER_ACCOUNT_REVOKED', item_id: itemId, account_id: 'acc_some_other' });
    expect(await other.json()).toEqual({ received: true, acted: 0 });
    const r = await plaidHook(c, { webhook_type: 'ITEM', webhook_code: 'USER_ACCOUNT_REVOKED', item_id: itemId, account_id: 'acc_hook_0002' });
    expect(await r.json()).toEqual({ received: true, acted: 1 });
    expect((await view(c, 'revoked-by-hook')).bank_link.health.status).toBe('revoked');
    plaid.addItem(token, [{ account_id: 'acc_hook_0002', available: 900, current: 900 }]);
    await read(c);
    expect(await paymentsOf(c, 'revoked-by-hook')).toBe(0);

    const before = (await c.rows<{ due: number | null }>(`SELECT h.due_at AS due FROM pay_history h JOIN enrollments e ON e.id = h.enrollment_id WHERE e.authorizer_unique_id = 'revoked-by-hook'`))[0];
    const sync = await plaidHook(c, { webhook_type: 'TRANSACTIONS', webhook_code: 'SYNC_UPDATES_AVAILABLE', item_id: itemId, initial_update_complete: true, historical_update_complete: true });
    expect(await sync.json()).toEqual({ received: true, acted: 1 });
    const after = (await c.rows<{ due: number | null }>(`SELECT h.due_at AS due FROM pay_history h JOIN enrollments e ON e.id = h.enrollment_id WHERE e.authorizer_unique_id = 'revoked-by-hook'`))[0];
    expect(after!.due).not.toBeNull();
    expect(before).toBeDefined();
  });

  test('forged, wrongly signed, stale and replayed calls are refused and change nothing', async () => {
    const { c } = await setup();
    const token = 'access-production-hook3';
    plaid.addItem(token, [{ account_id: 'acc_hook_0003', available: 100, current: 100 }]);
    await enroll(c, 'guarded', { provider: 'plaid', access_token: token, account_id: 'acc_hook_0003' });
    await read(c);
    const body = { webhook_type: 'ITEM', webhook_code: 'ERROR', item_id: `item_${token.slice(-8)}`, error: { error_code: 'ITEM_LOGIN_REQUIRED' } };
    const status = async () => (await view(c, 'guarded')).bank_link.health.status;

    // No token, a token for another body, HS256, issued 6 minutes ago.
    expect((await c.request('POST', '/v1/bank_data_webhooks/plaid', { key: null, raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } })).status).toBe(401);
    expect((await plaidHook(c, body, { signedBody: JSON.stringify({ ...body, webhook_code: 'LOGIN_REPAIRED' }) })).status).toBe(401);
    expect((await plaidHook(c, body, { alg: 'HS256' })).status).toBe(401);
    expect((await plaidHook(c, body, { iat: Math.floor(c.clock.now() / 1000) - 360 })).status).toBe(401);
    expect(await status()).toBe('ok');

    // Good once; the same call again is a replay.
    const signed = await plaid.signWebhook(body, { iat: Math.floor(c.clock.now() / 1000) });
    const send = () => c.request('POST', '/v1/bank_data_webhooks/plaid', { key: null, raw: signed.raw, headers: { 'content-type': 'application/json', 'plaid-verification': signed.token } });
    expect((await send()).status).toBe(200);
    expect(await status()).toBe('relink_required');
    const replay = await send();
    expect(replay.status).toBe(409);

    // An Item nobody holds: answered alike, nothing done, no key fetched for it.
    const unknown = await plaidHook(c, { ...body, item_id: 'item_nobody' });
    expect(await unknown.json()).toEqual({ received: true, acted: 0 });
  });
});

describe('the Plaid key', () => {
  test('a key Plaid retired verifies nothing, even a token it signed', async () => {
    const signed = await plaid.signWebhook({ webhook_type: 'ITEM' });
    const kid = plaidKeyId(signed.token)!;
    expect(kid).toBe('fake-webhook-key-1');
    const c = createTestContext({ PLAID_API_URL: plaid.url });
    contexts.push(c);
    plaid.addClient('client_keys', 'secret-client_keys');
    const creds = { provider: 'plaid' as const, clientId: 'client_keys', secret: 'secret-client_keys', environment: 'production' as const };
    const key = (await c.rt.linked.plaid.webhookKey(creds, kid))!;
    expect(await verifyPlaid(signed.token, new TextEncoder().encode(signed.raw), key, Date.now())).toBe(true);
    expect(await verifyPlaid(signed.token, new TextEncoder().encode(signed.raw), { ...key, expiredAt: Date.now() }, Date.now())).toBe(false);
    expect(await c.rt.linked.plaid.webhookKey(creds, 'no-such-key')).toBeNull();
    plaid.expireWebhookKey();
    expect((await c.rt.linked.plaid.webhookKey(creds, kid))!.expiredAt).not.toBeNull();
  });
});

describe('Stripe webhooks', () => {
  test('deactivated (closed at the bank) blocks; reactivated closes the episode; a bad signature, a stale one, a replay and an unknown connection are refused', async () => {
    const { c, stripeKey, stripeConnection } = await setup();
    stripe.control.addFcAccount(stripeKey, { id: 'fca_1HookAccount01', available: 9_000_00 });
    await enroll(c, 'stripe-hooked', { provider: 'stripe', account: 'fca_1HookAccount01' });
    const account = (status: string, details: Record<string, unknown> = {}) => ({ id: 'fca_1HookAccount01', object: 'financial_connections.account', status, ...details });
    const event = (id: string, type: string, object: Record<string, unknown>) => ({ id, object: 'event', type, data: { object }, created: Math.floor(c.clock.now() / 1000) });

    const closed = event('evt_1Hook0001', 'financial_connections.account.deactivated', account('inactive', { status_details: { inactive: { cause: 'account_closed' } } }));
    expect((await stripeHook(c, stripeConnection, closed, { secret: 'whsec_notthesecret00000000000000000' })).status).toBe(401);
    expect((await stripeHook(c, stripeConnection, closed, { at: c.clock.now() - 10 * 60_000 })).status).toBe(401);
    expect((await view(c, 'stripe-hooked')).bank_link.health.status).toBe('ok');
    const r = await stripeHook(c, stripeConnection, closed);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ received: true, acted: 1 });
    expect((await view(c, 'stripe-hooked')).bank_link.health.status).toBe('closed');
    expect((await stripeHook(c, stripeConnection, closed)).status).toBe(409);
    await read(c);
    expect(await paymentsOf(c, 'stripe-hooked')).toBe(0);
    expect((await view(c, 'stripe-hooked')).blocked_reason).toBe('account_closed');

    const back = await stripeHook(c, stripeConnection, event('evt_1Hook0002', 'financial_connections.account.reactivated', account('active')));
    expect(await back.json()).toEqual({ received: true, acted: 1 });
    expect((await view(c, 'stripe-hooked')).bank_link.health.status).toBe('ok');
    expect((await view(c, 'stripe-hooked')).blocked_reason).toBeNull();
    await read(c, 0);
    expect(await paymentsOf(c, 'stripe-hooked')).toBe(1);

    expect((await stripeHook(c, '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b', event('evt_1Hook0003', 'financial_connections.account.reactivated', account('active')))).status).toBe(404);
  });
});
