// engine: both
// Every number a bank-data source answers is checked at the edge: a balance that is not whole cents a number
// holds exactly, or past a billion dollars either way, and a time for it that is no time (year 275760, 1e300
// seconds, an hour ahead) is a failed read with its reason named, never a success. Once, `available: 1e300` was
// shown as SUCCESS and a $425 debit made on an Infinity balance, and an as_of of 1e300 made every list showing
// it answer 500. Plaid, Stripe Financial Connections and the HTTP bridge, on both engines.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { signedIn } from '../../helpers/portal';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';
import { ITEM_LEASE_MS, processBalances } from '../../../src/modules/balance-requests/processing';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { readCsv } from '../../../src/platform/csv';
import { implausible, PLAUSIBLE_BALANCE_CENTS } from '../../../src/adapters/bank-data/plausible';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
const STRIPE_KEY = 'rk_test_plausible000000000000042';
let bridgeAnswer: unknown = { balance_status_code: 0, balance: 1 };
const bridge = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Response.json(bridgeAnswer) });
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
  bridge.stop(true);
});

async function setup(env: Record<string, string> = {}) {
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, ...env }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const clientId = `client_plausible_${contexts.length}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'sandbox' } })).status).toBe(201);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: STRIPE_KEY } })).status).toBe(201);
  return c;
}

async function readAll(c: TestContext, authorizers: unknown[]) {
  const r = await c.json('POST', '/v1/balance_requests', { body: { authorizers } });
  expect(r.status).toBe(201);
  for (let i = 0; i < 50; i++) {
    await processBalances(c.rt);
    if ((await c.json('GET', `/v1/balance_requests/${r.body.batch_id}`)).body.status === 'completed') break;
    c.clock.advance(1_000);
  }
  const list = await c.json('GET', `/v1/balances?batchId=${r.body.batch_id}`);
  expect(list.status).toBe(200);
  return Object.fromEntries((list.body.balances as { authorizer_unique_id: string }[]).map((b) => [b.authorizer_unique_id, b])) as Record<string, Record<string, unknown>>;
}

describe('the rule', () => {
  test('whole cents within a billion dollars either way; a time that is a time, not ahead of the clock by more than a minute', () => {
    const now = Date.UTC(2026, 10, 21);
    expect(implausible(PLAUSIBLE_BALANCE_CENTS, now, now)).toBeNull();
    expect(implausible(-PLAUSIBLE_BALANCE_CENTS, null, now)).toBeNull();
    for (const cents of [PLAUSIBLE_BALANCE_CENTS + 1, -9e18, 1e300, Infinity, -Infinity, NaN, 12.5]) expect(implausible(cents, now, now)).toBe('implausible_balance');
    for (const asOf of [now + 61_000, 1e300 * 1000, -1, NaN, 8.64e15]) expect(implausible(100, asOf, now)).toBe('implausible_as_of');
    expect(implausible(100, now + 59_000, now)).toBeNull();
  });
});

describe('at the edge of every source', () => {
  test('Plaid: 1e300, −9×10^16 dollars, a date in year 275760 or an hour ahead: failed reads naming why; a sane one beside them reads', async () => {
    const c = await setup();
    const ahead = new Date(c.clock.now() + 3_600_000).toISOString();
    plaid.addItem('access-sandbox-huge', [{ account_id: 'acc_checking_0001', available: 1e300, current: 1e300 }]);
    plaid.addItem('access-sandbox-neg', [{ account_id: 'acc_checking_0001', available: -9e16, current: -9e16 }]);
    plaid.addItem('access-sandbox-far', [{ account_id: 'acc_checking_0001', available: 100, current: 100, last_updated_datetime: '+275760-09-13T00:00:00.000Z' }]);
    plaid.addItem('access-sandbox-ahead', [{ account_id: 'acc_checking_0001', available: 100, current: 100, last_updated_datetime: ahead }]);
    plaid.addItem('access-sandbox-fine', [{ account_id: 'acc_checking_0001', available: 100, current: 100 }]);
    const link = (token: string) => ({ provider: 'plaid', access_token: token, account_id: 'acc_checking_0001' });
    const got = await readAll(c, ['huge', 'neg', 'far', 'ahead', 'fine'].map((t) => bankAuthorizer(`p-${t}`, { bank_link: link(`access-sandbox-${t}`) })));
    for (const [id, why] of [['p-huge', 'implausible_balance'], ['p-neg', 'implausible_balance'], ['p-far', 'implausible_as_of'], ['p-ahead', 'implausible_as_of']] as const) {
      expect(got[id]).toMatchObject({ balance_status_code: 9000 });
      expect(got[id]!.balance ?? null).toBeNull();
      expect(JSON.stringify((await c.json('GET', `/v1/monitoring/authorizers/${id}/history`)).body.history[0])).toContain(why);
    }
    expect(got['p-fine']).toMatchObject({ balance_status_code: 0, balance: 100 });
  });

  test('Plaid: an institution with no balance newer than a day (LAST_UPDATED_DATETIME_OUT_OF_RANGE) is a stale read, decided on by nothing', async () => {
    const c = await setup();
    plaid.addItem('access-sandbox-stale', [{ account_id: 'acc_checking_0001', available: 100, current: 100 }]);
    plaid.setItemError('access-sandbox-stale', 'LAST_UPDATED_DATETIME_OUT_OF_RANGE', 'INVALID_REQUEST' as never);
    const got = await readAll(c, [bankAuthorizer('p-stale', { bank_link: { provider: 'plaid', access_token: 'access-sandbox-stale', account_id: 'acc_checking_0001' } })]);
    expect(got['p-stale']).toMatchObject({ balance_status_code: 9000 });
    expect(JSON.stringify((await c.json('GET', '/v1/monitoring/authorizers/p-stale/history')).body.history[0])).toContain('stale_balance');
  });

  test('Stripe Financial Connections: 1e300 cents and an as_of of 1e300 seconds are failed reads; the lists still answer', async () => {
    const c = await setup();
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_1Huge0000000001', available: 100_00, current: 100_00 });
    stripe.control.addFcAccount(STRIPE_KEY, { id: 'fca_1Future00000001', available: 100_00, current: 100_00 });
    const nowSeconds = Math.floor(Date.now() / 1000);
    stripe.control.setFcRawBalance('fca_1Huge0000000001', { as_of: nowSeconds, type: 'cash', cash: { available: { usd: 1e300 } }, current: { usd: 1e300 } });
    stripe.control.setFcRawBalance('fca_1Future00000001', { as_of: 1e300, type: 'cash', cash: { available: { usd: 100_00 } }, current: { usd: 100_00 } });
    const got = await readAll(c, [
      bankAuthorizer('s-huge', { bank_link: { provider: 'stripe', account: 'fca_1Huge0000000001' } }),
      bankAuthorizer('s-future', { bank_link: { provider: 'stripe', account: 'fca_1Future00000001' } }),
    ]);
    expect(got['s-huge']).toMatchObject({ balance_status_code: 9000 });
    expect(got['s-future']).toMatchObject({ balance_status_code: 9000 });
    expect((await c.json('GET', '/v1/monitoring/authorizers/s-future/history')).status).toBe(200);
  });

  test('the HTTP bridge: a balance past a billion dollars is a failed read naming why (one that is not a number at all breaks its contract, as before)', async () => {
    const c = await setup({ BANK_DATA_PROVIDER: 'http', BANK_DATA_URL: `http://127.0.0.1:${bridge.port}/balance` });
    // Five billion dollars: whole cents a number holds, but no borrower's account.
    bridgeAnswer = { balance_status_code: 0, balance: 5e9 };
    const got = await readAll(c, [bankAuthorizer('h-huge')]);
    expect(got['h-huge']).toMatchObject({ balance_status_code: 9000 });
    expect(JSON.stringify((await c.json('GET', '/v1/monitoring/authorizers/h-huge/history')).body.history[0])).toContain('implausible_balance');
  });
});

/** A batch's results as every surface shows them: the list, the history's message, the export's balance and Status. */
async function surfaces(c: TestContext, batchId: string) {
  const list = await c.json('GET', `/v1/balances?batchId=${batchId}`);
  expect(list.status).toBe(200);
  const csv = await c.request('GET', `/v1/balances/csv?batch_ids=${batchId}`);
  expect(csv.status).toBe(200);
  const exported = new Map(readCsv(await csv.text()).rows.map((r) => [r.cells[0]!, { balance: r.cells[5], status: r.cells[6] }]));
  const out: Record<string, { balance: unknown; code: unknown; as_of: unknown; error: unknown; exported: unknown }> = {};
  for (const b of list.body.balances as Record<string, unknown>[]) {
    const aid = b.authorizer_unique_id as string;
    const history = await c.json('GET', `/v1/monitoring/authorizers/${aid}/history`);
    expect(history.status).toBe(200);
    out[aid] = { balance: b.balance, code: b.balance_status_code, as_of: b.as_of, error: history.body.history[0].error_message, exported: exported.get(aid) };
  }
  return out;
}

describe('a stored reading no source may give (written before the sources were checked)', () => {
  test('is shown as failed by /v1/balances, the history, the enrollments (one and all), the export and the portal’s borrowers list and CSV', async () => {
    const c = createTestContext({ MONITOR_READ_INTERVAL_MS: '3600000' });
    contexts.push(c);
    // Enrolled for more than the sandbox balance holds: read, not debited.
    const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: ['bad-cents', 'bad-as-of', 'good'].map((aid) => enrollBorrower(aid, { collectable_amount: 9_000_000 })) } });
    expect(r.status).toBe(207);
    expect((await queueDueReads(c.rt)).queued).toBe(3);
    await processBalances(c.rt);
    const [{ batchId }] = await c.rows<{ batchId: string }>(`SELECT batch_id AS "batchId" FROM balance_results WHERE authorizer_unique_id = 'good'`);
    // As an earlier release could store them: a balance of 9×10^18 cents, a time of 9×10^18 ms (past what a date can write).
    const HUGE = '9000000000000000000';
    c.sql.run(`UPDATE balance_results SET balance_cents = ${HUGE} WHERE authorizer_unique_id = 'bad-cents'`);
    c.sql.run(`UPDATE enrollments SET last_read_cents = ${HUGE} WHERE authorizer_unique_id = 'bad-cents'`);
    c.sql.run(`UPDATE balance_results SET balance_kind = 'available', balance_as_of = ${HUGE} WHERE authorizer_unique_id = 'bad-as-of'`);

    const failed = (reason: string) => ({ balance: null, code: 9000, as_of: undefined, error: expect.stringContaining(reason), exported: { balance: '', status: 'RETRIEVAL_FAILED' } });
    const got = await surfaces(c, batchId!);
    expect(got['bad-cents']).toEqual(failed('implausible_balance'));
    expect(got['bad-as-of']).toEqual(failed('implausible_as_of'));
    expect(got.good).toMatchObject({ code: 0, exported: { status: 'SUCCESS' } });

    const all = await c.json('GET', '/v1/payment_enrollments');
    expect(all.status).toBe(200);
    const lastRead = Object.fromEntries((all.body.enrollments as { authorizer_unique_id: string; last_read: unknown }[]).map((e) => [e.authorizer_unique_id, e.last_read]));
    expect(lastRead['bad-cents']).toEqual({ balance_cents: null, at: expect.any(String) });
    expect(lastRead['bad-as-of']).toEqual({ balance_cents: null, at: expect.any(String) });
    expect(lastRead.good).toMatchObject({ balance_cents: expect.any(Number) });
    for (const aid of ['bad-cents', 'bad-as-of']) expect((await c.json('GET', `/v1/payment_enrollments/${aid}`)).body.last_read).toEqual(lastRead[aid]);

    const portal = await signedIn(c);
    const page = await portal.get('/portal/payments/borrowers');
    expect(page.status).toBe(200);
    expect(page.text).toContain('bad-cents');
    const csv = await portal.get('/portal/payments/borrowers.csv');
    expect(csv.status).toBe(200);
    const rows = new Map(readCsv(csv.text).rows.map((row) => [row.cells[0]!, row.cells[5]]));
    expect([rows.get('bad-cents'), rows.get('bad-as-of')]).toEqual(['', '']);
  });
});

describe('a result the database refuses', () => {
  test('fails its item alone as 9000 result_not_storable; the batch completes and nothing is read again', async () => {
    const c = createTestContext();
    contexts.push(c);
    // A refusal of the database's own, for one value: a constraint on PostgreSQL, a trigger on SQLite.
    if (c.rt.pg) c.sql.exec('ALTER TABLE balance_results ADD CONSTRAINT refused_in_test CHECK (balance_cents IS DISTINCT FROM 4242)');
    else c.sql.run(`CREATE TEMP TRIGGER refused_in_test BEFORE INSERT ON balance_results WHEN NEW.balance_cents = 4242 BEGIN SELECT RAISE(ABORT, 'refused in test'); END`);
    const r = await c.json('POST', '/v1/balance_requests', {
      body: { authorizers: [bankAuthorizer('ok-1', { account_number: '0000001000' }), bankAuthorizer('refused', { account_number: '0000004242' }), bankAuthorizer('ok-2', { account_number: '0000002000' })] },
    });
    expect(r.status).toBe(201);
    for (let i = 0; i < 20 && (await c.json('GET', `/v1/balance_requests/${r.body.batch_id}`)).body.status !== 'completed'; i++) await processBalances(c.rt);
    expect((await c.json('GET', `/v1/balance_requests/${r.body.batch_id}`)).body.status).toBe('completed');
    const got = await surfaces(c, r.body.batch_id);
    expect(got.refused).toEqual({ balance: null, code: 9000, as_of: undefined, error: expect.stringContaining('result_not_storable'), exported: { balance: '', status: 'PROCESSING_ERROR' } });
    expect([got['ok-1']!.balance, got['ok-2']!.balance]).toEqual([10, 20]);
    // Every read is done: past any lease, nothing is claimed again.
    c.clock.advance(ITEM_LEASE_MS + 1_000);
    expect((await processBalances(c.rt)).recorded).toBe(0);
    // The kind of refusal is logged, never the database's message (which may quote the value).
    const logged = c.logs.find((l) => l.includes('a balance result could not be stored'));
    expect(JSON.parse(logged!).refusal).toBe(c.rt.pg ? 'constraint_violation' : 'SQLITE_CONSTRAINT_TRIGGER');
    expect(logged).not.toContain('4242');
    if (c.rt.pg) c.sql.exec('ALTER TABLE balance_results DROP CONSTRAINT refused_in_test');
  });
});
