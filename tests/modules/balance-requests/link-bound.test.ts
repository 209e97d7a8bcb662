// One linked account is asked at its provider at most once per BANK_LINK_MIN_READ_INTERVAL_MS, whatever
// carries it: balance requests of many authorizers sharing one bank_link, a schedule's runs now, monitoring
// reads of enrolled borrowers. Every item gets the answer, each but the one that asked marked reused_from it;
// past the window the account is asked again. Two lenders never share an answer. A failure is reused as the
// failure it was, never as a balance; an outage is not remembered. Against the fake Plaid and Stripe servers,
// through the real pipeline, with the service's fake clock.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { PlaidErrorType } from 'plaid';
import { startFakeStripe } from '../../fakes/stripe-server';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { LinkReads } from '../../../src/modules/balance-requests/link-reads';
import { queueDepth } from '../../../src/modules/balance-requests/service';
import { queueAllDueReads } from '../../../src/modules/enrollments/monitoring';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
const STRIPE_KEY = 'rk_test_linkbound0000000000000042';
const WINDOW_MS = 60_000;
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});

let n = 0;
/** A context whose lender has a Plaid connection of its own client (and a Stripe one). */
async function setup(env: Record<string, string> = {}) {
  // The fake Stripe server dates a balance by the real clock, and a time ahead of the service's is refused: the service's clock starts there too.
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url, ...env }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const clientId = await connectPlaid(c);
  expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: STRIPE_KEY } })).status).toBe(201);
  return { c, clientId };
}

async function connectPlaid(c: TestContext, key?: string, clientId = `client_bound_${++n}`) {
  plaid.addClient(clientId, `secret-${clientId}`);
  const r = await c.json('POST', '/v1/bank_data_connections', { key, body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'sandbox' } });
  expect(r.status).toBe(201);
  return clientId;
}

const plaidLink = (token: string, account = 'acc_checking_0001') => ({ provider: 'plaid', access_token: token, account_id: account });
/** Balance reads the fake Plaid server answered or refused for this access token. */
const plaidReads = (token: string) => plaid.requests.filter((r) => r.path === '/accounts/balance/get' && r.body.access_token === token).length;

async function submit(c: TestContext, authorizers: unknown[], key?: string) {
  const r = await c.json('POST', '/v1/balance_requests', { key, body: { authorizers } });
  expect(r.status).toBe(201);
  expect(r.body.failed_authorizers).toEqual([]);
  return r.body.batch_id as string;
}

/** Runs the pipeline, the clock standing still, until every batch named is completed. */
async function complete(c: TestContext, batchIds: string[], key?: string) {
  for (;;) {
    await processBalances(c.rt);
    const states = await Promise.all(batchIds.map(async (id) => (await c.json('GET', `/v1/balance_requests/${id}`, { key })).body.status));
    if (states.every((s) => s === 'completed')) return;
  }
}

interface Entry {
  authorizer_unique_id: string;
  balance: number | null;
  timestamp: string;
  balance_status_code: number;
  balance_kind?: string;
  as_of?: string | null;
  reused_from?: { batch_id: string; authorizer_unique_id: string; timestamp: string };
}

/** Every result of a completed batch, page by page. */
async function results(c: TestContext, batchId: string, key?: string): Promise<Entry[]> {
  const all: Entry[] = [];
  let token: string | null = null;
  do {
    const r: { body: { balances: Entry[]; next_page_token: string | null; has_more: boolean } } = await c.json('GET', `/v1/balances?batchId=${batchId}&limit=100${token ? `&next_page_token=${token}` : ''}`, { key });
    all.push(...r.body.balances);
    token = r.body.has_more ? r.body.next_page_token : null;
  } while (token);
  return all;
}

/** The results of the batches; the one that asked the provider (no reused_from), and that every other names it. */
async function oneAsked(c: TestContext, batchIds: string[], key?: string) {
  const all = (await Promise.all(batchIds.map(async (b) => (await results(c, b, key)).map((e) => ({ ...e, batch_id: b }))))).flat();
  const asked = all.filter((e) => e.reused_from === undefined);
  expect(asked).toHaveLength(1);
  const first = asked[0]!;
  for (const e of all) {
    if (e === first) continue;
    expect(e.reused_from).toEqual({ batch_id: first.batch_id, authorizer_unique_id: first.authorizer_unique_id, timestamp: first.timestamp });
  }
  return { all, first };
}

describe('balance requests', () => {
  test('5 requests of 1,000 authorizers sharing one bank_link: one call; every item answered, all but the first marked reused; past the window one more', async () => {
    const { c } = await setup();
    const token = 'access-sandbox-bound-shared';
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 512.34, current: 600, last_updated_datetime: '2026-11-21T11:58:00Z' }]);
    const batches: string[] = [];
    for (let r = 0; r < 5; r++) {
      batches.push(await submit(c, Array.from({ length: 1000 }, (_, i) => bankAuthorizer(`shared-${r}-${i}`, { bank_link: plaidLink(token) }))));
    }
    await complete(c, batches);
    expect(plaidReads(token)).toBe(1);

    const { all, first } = await oneAsked(c, batches);
    expect(all).toHaveLength(5000);
    for (const e of all) {
      expect(e).toMatchObject({ balance: 512.34, balance_status_code: 0, balance_kind: 'available', as_of: '2026-11-21T11:58:00.000Z' });
    }
    // The history of a borrower shows the reuse too.
    const other = all.find((e) => e !== first)!;
    const hist = await c.json('GET', `/v1/monitoring/authorizers/${other.authorizer_unique_id}/history`);
    expect(hist.body.history[0]).toMatchObject({ status: 'success', balance_amount: 512.34, reused_from: other.reused_from });

    // Past the window: asked once more, that read's answer reused by the rest of its request.
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 7.5, current: 8 }]);
    c.clock.advance(WINDOW_MS);
    const later = await submit(c, Array.from({ length: 1000 }, (_, i) => bankAuthorizer(`later-${i}`, { bank_link: plaidLink(token) })));
    await complete(c, [later]);
    expect(plaidReads(token)).toBe(2);
    const again = await oneAsked(c, [later]);
    expect(again.first.batch_id).toBe(later);
    for (const e of again.all) expect(e).toMatchObject({ balance: 7.5, balance_status_code: 0, balance_kind: 'available' });
  });

  test('two lenders with the same link, through the same Plaid client, do not share an answer', async () => {
    const { c, clientId } = await setup();
    const other = c.newLender('other lender');
    await connectPlaid(c, other.key, clientId);
    const token = 'access-sandbox-bound-tenancy';
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 40, current: 40 }]);
    const mine = await submit(c, Array.from({ length: 20 }, (_, i) => bankAuthorizer(`mine-${i}`, { bank_link: plaidLink(token) })));
    await complete(c, [mine]);
    const theirs = await submit(c, Array.from({ length: 20 }, (_, i) => bankAuthorizer(`theirs-${i}`, { bank_link: plaidLink(token) })), other.key);
    await complete(c, [theirs], other.key);
    // One call each: the second lender's link is asked, within the first's window.
    expect(plaidReads(token)).toBe(2);
    // Each lender's results name only its own read.
    expect((await oneAsked(c, [mine])).first.batch_id).toBe(mine);
    expect((await oneAsked(c, [theirs], other.key)).first.batch_id).toBe(theirs);
  });

  test('another account of the same Item is another account: asked on its own', async () => {
    const { c } = await setup();
    const token = 'access-sandbox-bound-twoaccounts';
    plaid.addItem(token, [
      { account_id: 'acc_checking_0001', available: 1, current: 1 },
      { account_id: 'acc_savings_0002', available: 2, current: 2 },
    ]);
    const batch = await submit(c, [
      ...Array.from({ length: 5 }, (_, i) => bankAuthorizer(`chk-${i}`, { bank_link: plaidLink(token, 'acc_checking_0001') })),
      ...Array.from({ length: 5 }, (_, i) => bankAuthorizer(`sav-${i}`, { bank_link: plaidLink(token, 'acc_savings_0002') })),
    ]);
    await complete(c, [batch]);
    expect(plaidReads(token)).toBe(2);
    const all = await results(c, batch);
    expect(all.filter((e) => e.reused_from === undefined).map((e) => e.balance).sort()).toEqual([1, 2]);
    for (const e of all) expect(e.balance).toBe(e.authorizer_unique_id.startsWith('chk') ? 1 : 2);
  });

  test('a failure is reused as that failure, never as a balance, until the window passes', async () => {
    const { c } = await setup();
    // A failure that says nothing of the link's health (a closed or revoked account opens an episode instead, and
    // is probed rather than read: tests/modules/balance-requests/link-health.test.ts).
    const token = 'access-sandbox-bound-closed';
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 30, current: 30 }]);
    plaid.setItemError(token, 'PRODUCTS_NOT_SUPPORTED');
    const first = await submit(c, Array.from({ length: 10 }, (_, i) => bankAuthorizer(`closed-${i}`, { bank_link: plaidLink(token) })));
    await complete(c, [first]);
    expect(plaidReads(token)).toBe(1);
    for (const e of (await oneAsked(c, [first])).all) expect(e).toMatchObject({ balance: null, balance_status_code: 3300 });

    // The account answers again, but within the window the failure stands: asked no more.
    plaid.setItemError(token, null);
    const second = await submit(c, [bankAuthorizer('closed-again', { bank_link: plaidLink(token) })]);
    await complete(c, [second]);
    expect(plaidReads(token)).toBe(1);
    const [reused] = await results(c, second);
    expect(reused).toMatchObject({ balance: null, balance_status_code: 3300, reused_from: { batch_id: first } });
    const hist = await c.json('GET', '/v1/monitoring/authorizers/closed-again/history');
    expect(hist.body.history[0]).toMatchObject({ status: 'failed', error_message: 'Institution not supported', reused_from: { batch_id: first } });

    c.clock.advance(WINDOW_MS);
    const third = await submit(c, [bankAuthorizer('closed-third', { bank_link: plaidLink(token) })]);
    await complete(c, [third]);
    expect(plaidReads(token)).toBe(2);
    const [fresh] = await results(c, third);
    expect(fresh).toMatchObject({ balance: 30, balance_status_code: 0 });
    expect(fresh!.reused_from).toBeUndefined();
  });

  test('a relink answer is shared with its cause', async () => {
    const { c } = await setup();
    const token = 'access-sandbox-bound-relink';
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 5, current: 5 }]);
    plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
    const batch = await submit(c, Array.from({ length: 10 }, (_, i) => bankAuthorizer(`relink-${i}`, { bank_link: plaidLink(token) })));
    await complete(c, [batch]);
    expect(plaidReads(token)).toBe(1);
    for (const e of (await oneAsked(c, [batch])).all) {
      expect(e.balance_status_code).toBe(9000);
      const hist = await c.json('GET', `/v1/monitoring/authorizers/${e.authorizer_unique_id}/history`);
      expect(hist.body.history[0].error_message).toContain('relink_required');
    }
  });

  test('an outage is not remembered: the read is asked again after its backoff, and its answer then reused', async () => {
    const { c } = await setup();
    const token = 'access-sandbox-bound-outage';
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 12, current: 12 }]);
    // An outage (a rate limit is waited on for Plaid's minute instead: provider-budgets.test.ts).
    plaid.failNext(1, { status: 500, type: PlaidErrorType.ApiError, code: 'INTERNAL_SERVER_ERROR' });
    const first = await submit(c, [bankAuthorizer('outage-0', { bank_link: plaidLink(token) })]);
    await processBalances(c.rt);
    expect(plaidReads(token)).toBe(1);
    expect((await c.json('GET', `/v1/balance_requests/${first}`)).body.total_processed).toBe(0);
    // The retry is due 2 s later.
    c.clock.advance(2_000);
    await complete(c, [first]);
    expect(plaidReads(token)).toBe(2);
    const [read] = await results(c, first);
    expect(read).toMatchObject({ balance: 12, balance_status_code: 0 });
    expect(read!.reused_from).toBeUndefined();
    const second = await submit(c, Array.from({ length: 10 }, (_, i) => bankAuthorizer(`outage-${i + 1}`, { bank_link: plaidLink(token) })));
    await complete(c, [second]);
    expect(plaidReads(token)).toBe(2);
    for (const e of await results(c, second)) expect(e).toMatchObject({ balance: 12, reused_from: { batch_id: first, authorizer_unique_id: 'outage-0' } });
  });

  test('a Stripe account (fca_ and the lender’s connection): one read for many authorizers', async () => {
    const { c } = await setup();
    const fca = 'fca_1BoundShared01';
    stripe.control.addFcAccount(STRIPE_KEY, { id: fca, available: 81_00, current: 90_00 });
    const asked = () => stripe.requests.filter((r) => r.path.includes(fca)).length;
    const batch = await submit(c, Array.from({ length: 50 }, (_, i) => bankAuthorizer(`fc-${i}`, { bank_link: { provider: 'stripe', account: fca } })));
    const before = asked();
    await complete(c, [batch]);
    // One read: the account, and its refresh when the last one was not fresh.
    expect(asked() - before).toBeLessThanOrEqual(2);
    expect(stripe.control.refreshes(fca)).toBeLessThanOrEqual(1);
    for (const e of (await oneAsked(c, [batch])).all) expect(e).toMatchObject({ balance: 81, balance_status_code: 0, balance_kind: 'available' });
  });
});

describe('schedules', () => {
  test('a run now of 1,000 authorizers sharing a link: one call; a second run within the window none; past it one', async () => {
    const { c } = await setup();
    const token = 'access-sandbox-bound-schedule';
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 250, current: 260 }]);
    const created = await c.json('POST', '/v1/monitoring/scheduled_balance_request', {
      body: { name: 'shared link', interval_days: 7, time_of_day: '09:30', authorizers: Array.from({ length: 1000 }, (_, i) => bankAuthorizer(`sch-${i}`, { bank_link: plaidLink(token) })) },
    });
    expect(created.status).toBe(201);
    const runNow = async () => {
      const r = await c.json('POST', `/v1/monitoring/schedules/${created.body.schedule_id}/run`);
      expect(r.status).toBe(202);
      await complete(c, [r.body.batch_id]);
      return r.body.batch_id as string;
    };
    const first = await runNow();
    expect(plaidReads(token)).toBe(1);
    const one = await oneAsked(c, [first]);
    expect(one.all).toHaveLength(1000);
    for (const e of one.all) expect(e).toMatchObject({ balance: 250, balance_status_code: 0 });

    const second = await runNow();
    expect(plaidReads(token)).toBe(1);
    for (const e of await results(c, second)) expect(e.reused_from).toEqual({ batch_id: first, authorizer_unique_id: one.first.authorizer_unique_id, timestamp: one.first.timestamp });

    c.clock.advance(WINDOW_MS);
    const third = await runNow();
    expect(plaidReads(token)).toBe(2);
    expect((await oneAsked(c, [third])).first.batch_id).toBe(third);
  });
});

describe('monitoring', () => {
  test('due reads of borrowers sharing a link: one call, each enrollment’s last read marked; a read now within the window reuses it', async () => {
    const { c } = await setup();
    const token = 'access-sandbox-bound-monitor';
    // Below every borrower's collectable amount: no payment is started.
    plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 100, current: 100 }]);
    const ids = Array.from({ length: 300 }, (_, i) => `mon-${String(i).padStart(3, '0')}`);
    const enrolled = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: ids.map((id) => enrollBorrower(id, { bank_link: plaidLink(token) })) } });
    expect(enrolled.status).toBe(207);
    expect((await queueAllDueReads(c.rt)).queued).toBe(300);
    while ((await queueDepth(c.rt)) > 0) await processBalances(c.rt);
    expect(plaidReads(token)).toBe(1);
    const views = await enrollments(c);
    expect(views).toHaveLength(300);
    const asked = views.filter((v) => v.last_read!.reused_from === undefined);
    expect(asked).toHaveLength(1);
    for (const v of views) expect(v.last_read).toMatchObject({ balance_cents: 10000, balance_kind: 'available' });
    const first = asked[0]!;
    const reusedFrom = views.find((v) => v !== first)!.last_read!.reused_from!;
    expect(reusedFrom).toMatchObject({ authorizer_unique_id: first.authorizer_unique_id, timestamp: first.last_read!.at });

    // A read asked for now, within the window: the same answer, not a call.
    const now = await c.json('POST', `/v1/payment_enrollments/${first.authorizer_unique_id}/read`);
    expect(now.status).toBe(202);
    await complete(c, [now.body.batch_id]);
    expect(plaidReads(token)).toBe(1);
    const view = (await c.json('GET', `/v1/payment_enrollments/${first.authorizer_unique_id}`)).body;
    expect(view.last_read.reused_from).toEqual(reusedFrom);

    // Past the window: asked again.
    c.clock.advance(WINDOW_MS);
    const later = await c.json('POST', `/v1/payment_enrollments/${ids[7]}/read`);
    expect(later.status).toBe(202);
    await complete(c, [later.body.batch_id]);
    expect(plaidReads(token)).toBe(2);
    expect((await c.json('GET', `/v1/payment_enrollments/${ids[7]}`)).body.last_read.reused_from).toBeUndefined();
  });
});

interface EnrollmentView {
  authorizer_unique_id: string;
  last_read: { balance_cents: number | null; at: string; balance_kind?: string; reused_from?: { batch_id: string; authorizer_unique_id: string; timestamp: string } } | null;
}

/** Every enrollment of the context's lender, page by page. */
async function enrollments(c: TestContext): Promise<EnrollmentView[]> {
  const all: EnrollmentView[] = [];
  let token: string | null = null;
  do {
    const r: { body: { enrollments: EnrollmentView[]; has_more: boolean; next_page_token: string | null } } = await c.json('GET', `/v1/payment_enrollments?limit=100${token ? `&next_page_token=${token}` : ''}`);
    all.push(...r.body.enrollments);
    token = r.body.has_more ? r.body.next_page_token : null;
  } while (token);
  return all;
}

describe('the memory of answers', () => {
  test('holds at most its bound of accounts, the oldest read first out', async () => {
    const reads = new LinkReads(3);
    let calls = 0;
    const read = (key: string) =>
      reads.read(key, {
        now: () => 1_000,
        windowMs: WINDOW_MS,
        self: { batchId: 'b', aid: key },
        read: async () => {
          calls++;
          return { kind: 'balance', balanceCents: 1, balanceKind: 'available', asOf: null };
        },
      });
    for (const k of ['a', 'b', 'c', 'd']) expect((await read(k)).kind).toBe('fresh');
    expect(reads.size).toBe(3);
    expect(calls).toBe(4);
    // b, c and d are remembered; a was pushed out and is asked again.
    for (const k of ['b', 'c', 'd']) expect((await read(k)).kind).toBe('reused');
    expect(calls).toBe(4);
    expect((await read('a')).kind).toBe('fresh');
    expect(calls).toBe(5);
    expect(reads.size).toBe(3);
  });
});
