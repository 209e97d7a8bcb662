// A debit follows only a balance that is spendable and current: a linked account's available balance (its
// current one only where the policy allows, with its own buffer), no older by the provider's own time than
// the policy's max_balance_age_minutes. A read that fails either rule is recorded but decides nothing, and the
// enrollment says why until a read that passes.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { balanceTruth } from '../../../src/modules/collection/decision';
import { DEFAULT_POLICY } from '../../../src/modules/collection-policy/policy';

const READ = 3_600_000;
const plaid = startFakePlaid();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
});

async function setup() {
  const c = createTestContext({ PLAID_API_URL: plaid.url, MONITOR_READ_INTERVAL_MS: String(READ) });
  contexts.push(c);
  const clientId = `client_truth_${contexts.length}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'production' } })).status).toBe(201);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: `sbx_truth_key_${String(contexts.length).padStart(10, '0')}`, rail_scope: 'both', is_default: true } })).status).toBe(201);
  return c;
}

const paymentsOf = async (c: TestContext, aid: string) => (await c.rows<{ id: string }>('SELECT id FROM payments WHERE authorizer_unique_id = ?', aid)).length;
const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;
async function read(c: TestContext) {
  c.clock.advance(READ);
  await queueDueReads(c.rt);
  await processBalances(c.rt);
}
async function enrollLinked(c: TestContext, aid: string, token: string, amount: number) {
  const link = { provider: 'plaid', access_token: token, account_id: `acc_${aid}_0001` };
  expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { bank_link: link, collectable_amount: amount })] } })).status).toBe(207);
  return link;
}

describe('the rule', () => {
  const now = Date.UTC(2026, 10, 21, 12);
  test('sandbox reads are the balance now; a linked read must be available (or current where allowed) and fresh', () => {
    expect(balanceTruth({ balanceKind: null, asOf: null, at: now - 10 * READ }, DEFAULT_POLICY, now)).toEqual({ ok: true, bufferCents: 0 });
    expect(balanceTruth({ balanceKind: 'available', asOf: now - 59 * 60_000, at: now }, DEFAULT_POLICY, now)).toEqual({ ok: true, bufferCents: 0 });
    expect(balanceTruth({ balanceKind: 'available', asOf: now - 61 * 60_000, at: now }, DEFAULT_POLICY, now)).toEqual({ ok: false, reason: 'stale_balance' });
    // No provider time: the read's own.
    expect(balanceTruth({ balanceKind: 'available', asOf: null, at: now - 61 * 60_000 }, DEFAULT_POLICY, now)).toEqual({ ok: false, reason: 'stale_balance' });
    expect(balanceTruth({ balanceKind: 'current', asOf: now, at: now }, DEFAULT_POLICY, now)).toEqual({ ok: false, reason: 'current_only' });
    const allow = { ...DEFAULT_POLICY, allowCurrentBalance: true, currentBalanceBufferCents: 2500, maxBalanceAgeMinutes: 240 };
    expect(balanceTruth({ balanceKind: 'current', asOf: now - 3 * READ, at: now }, allow, now)).toEqual({ ok: true, bufferCents: 2500 });
    expect(balanceTruth({ balanceKind: 'available', asOf: now - 3 * READ, at: now }, allow, now)).toEqual({ ok: true, bufferCents: 0 });
  });
});

describe('collection on a linked account', () => {
  test('a current-only balance decides no debit (current_only) until the policy allows it, with its own buffer', async () => {
    const c = await setup();
    plaid.addItem('access-production-current1', [{ account_id: 'acc_cur_0001', available: null, current: 500 }]);
    await enrollLinked(c, 'cur', 'access-production-current1', 40_000);
    await read(c);
    expect(await paymentsOf(c, 'cur')).toBe(0);
    const v = await view(c, 'cur');
    expect(v).toMatchObject({ state: 'monitored', blocked_reason: 'current_only', last_read: { balance_cents: 50_000, balance_kind: 'current' } });
    expect(v.next_read_at).not.toBeNull();
    // Allowed, with a buffer the balance does not cover: the read passes the rule (the reason goes), no debit.
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { allow_current_balance: true, current_balance_buffer_cents: 20_000 } })).status).toBe(200);
    await read(c);
    expect(await paymentsOf(c, 'cur')).toBe(0);
    expect((await view(c, 'cur')).blocked_reason).toBeNull();
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { current_balance_buffer_cents: 5_000 } })).status).toBe(200);
    await read(c);
    expect(await paymentsOf(c, 'cur')).toBe(1);
  });

  test('a balance older than max_balance_age_minutes by the provider’s time decides no debit (stale_balance); a fresh one does', async () => {
    const c = await setup();
    const token = 'access-production-stale1';
    plaid.addItem(token, [{ account_id: 'acc_old_0001', available: 900, current: 900, last_updated_datetime: new Date(c.clock.now() - 5 * READ).toISOString() }]);
    await enrollLinked(c, 'old', token, 40_000);
    // The provider's time for it is hours before the read (and stays so as the clock moves).
    await read(c);
    expect(await paymentsOf(c, 'old')).toBe(0);
    expect(await view(c, 'old')).toMatchObject({ blocked_reason: 'stale_balance', last_read: { balance_kind: 'available' } });
    expect((await view(c, 'old')).next_read_at).not.toBeNull();
    // Fresh: no provider time given, so the read's own.
    plaid.addItem(token, [{ account_id: 'acc_old_0001', available: 900, current: 900, last_updated_datetime: null }]);
    await read(c);
    expect(await paymentsOf(c, 'old')).toBe(1);
    expect((await view(c, 'old')).blocked_reason).toBeNull();
  });

  test('the policy fields: defaults, a change, and refusals naming the field', async () => {
    const c = await setup();
    expect((await c.json('GET', '/v1/collection_policy')).body).toMatchObject({ allow_current_balance: false, current_balance_buffer_cents: 0, max_balance_age_minutes: 60 });
    for (const [body, field] of [
      [{ allow_current_balance: 'yes' }, 'allow_current_balance'],
      [{ current_balance_buffer_cents: -1 }, 'current_balance_buffer_cents'],
      [{ max_balance_age_minutes: 0 }, 'max_balance_age_minutes'],
      [{ max_balance_age_minutes: 1441 }, 'max_balance_age_minutes'],
    ] as const) {
      const bad = await c.json('PATCH', '/v1/collection_policy', { body });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain(field);
    }
    const r = await c.json('PATCH', '/v1/collection_policy', { body: { max_balance_age_minutes: 240 } });
    expect(r.body).toMatchObject({ max_balance_age_minutes: 240, allow_current_balance: false });
  });
});
