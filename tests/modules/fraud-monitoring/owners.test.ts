// engine: both
// owner_mismatch against the fake Plaid and Stripe servers through the real adapters: a borrower enrolled with a
// bank_link whose account's owners (Plaid /identity/get, Stripe's account ownership) include none of its name
// raises exactly one alert, however often it is sent; one whose owner matches (any case, order or accents)
// raises none; the owners are asked only through a connection with the identity product, each call counted in
// the connection's usage; with the rule off nothing is asked.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { startFakeStripe } from '../../fakes/stripe-server';

const plaid = startFakePlaid();
const stripe = startFakeStripe();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
  stripe.stop();
});

let n = 0;
/** A lender's context with a Plaid connection and a Stripe one, each with the identity product or not. */
async function setup(identity: boolean) {
  // The fake Stripe server dates what it answers by the real clock: the service's clock starts there too.
  const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const clientId = `client_owners_${++n}_${Date.now()}`;
  plaid.addClient(clientId, `secret-${clientId}`);
  const stripeKey = `rk_test_owners${String(n).padStart(20, '0')}`;
  const p = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'sandbox', identity } });
  expect(p.status).toBe(201);
  expect(p.body.identity).toBe(identity);
  const s = await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: stripeKey, identity } });
  expect(s.status).toBe(201);
  return { c, stripeKey, plaidId: p.body.id as string, stripeId: s.body.id as string };
}

const plaidLink = (token: string) => ({ provider: 'plaid', access_token: token, account_id: 'acc_owners_0001' });
const enroll = async (c: TestContext, ...borrowers: Record<string, unknown>[]) => {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
  expect(r.status).toBe(207);
  expect(r.body.failed).toBe(0);
};
const alerts = async (c: TestContext) => (await c.json('GET', '/v1/fraud_alerts')).body.alerts as { rule: string; authorizer_unique_id: string; subject: string; details: Record<string, unknown> }[];
const identityCalls = (token: string) => plaid.requests.filter((r) => r.path === '/identity/get' && r.body.access_token === token).length;
const ownershipCalls = (key: string, fca: string) =>
  stripe.requests.filter((r) => r.key === key && r.method === 'GET' && r.path === `/v1/financial_connections/accounts/${fca}` && JSON.stringify(r.params).includes('ownership')).length;

describe('owner_mismatch', () => {
  test('an owner of another name raises one alert per linked account, however often sent; a matching owner none; each call counted', async () => {
    const { c, stripeKey, plaidId } = await setup(true);
    plaid.addItem(`access-own-${n}`, [{ account_id: 'acc_owners_0001', available: 100, current: 100, owners: [['LOVELACE, Ada'], ['Joint Holder']] }]);
    plaid.addItem(`access-other-${n}`, [{ account_id: 'acc_owners_0001', available: 100, current: 100, owners: [['Charles Babbage']] }]);
    stripe.control.addFcAccount(stripeKey, { id: `fca_1OwnersOwn${n}`, owners: ['Ada K. Lovelace'] });
    stripe.control.addFcAccount(stripeKey, { id: `fca_1OwnersOther${n}`, owners: ['Grace Hopper'] });
    stripe.control.addFcAccount(stripeKey, { id: `fca_1OwnersNone${n}` });
    await enroll(
      c,
      enrollBorrower('own-plaid', { bank_link: plaidLink(`access-own-${n}`) }),
      enrollBorrower('other-plaid', { bank_link: plaidLink(`access-other-${n}`) }),
      enrollBorrower('own-stripe', { bank_link: { provider: 'stripe', account: `fca_1OwnersOwn${n}` } }),
      enrollBorrower('other-stripe', { bank_link: { provider: 'stripe', account: `fca_1OwnersOther${n}` } }),
      enrollBorrower('no-owners', { bank_link: { provider: 'stripe', account: `fca_1OwnersNone${n}` } }),
    );
    // Sent again: asked again, the same fact, no second alert.
    await enroll(c, enrollBorrower('other-plaid', { bank_link: plaidLink(`access-other-${n}`) }));
    const found = (await alerts(c)).filter((a) => a.rule === 'owner_mismatch');
    expect(found.map((a) => a.authorizer_unique_id).sort()).toEqual(['other-plaid', 'other-stripe']);
    expect(found.find((a) => a.authorizer_unique_id === 'other-plaid')!.details).toEqual({ provider: 'plaid', owners: 1 });
    expect(found.find((a) => a.authorizer_unique_id === 'other-stripe')!.details).toEqual({ provider: 'stripe', owners: 1 });
    // Never a name in what is stored or answered of the alert.
    expect(JSON.stringify(await alerts(c))).not.toContain('Babbage');
    expect(identityCalls(`access-own-${n}`)).toBe(1);
    expect(identityCalls(`access-other-${n}`)).toBe(2);
    expect(ownershipCalls(stripeKey, `fca_1OwnersOther${n}`)).toBe(1);
    const month = new Date(c.clock.now()).toISOString().slice(0, 7);
    const usage = (await c.json('GET', `/v1/bank_data_connections/${plaidId}/usage?month=${month}`)).body;
    expect(usage.endpoints).toContainEqual({ endpoint: '/identity/get', calls: 3 });
  });

  test('without the identity product on the connection, or with the rule off, nothing is asked and nothing raised', async () => {
    const { c, stripeKey } = await setup(false);
    plaid.addItem(`access-noid-${n}`, [{ account_id: 'acc_owners_0001', available: 100, current: 100, owners: [['Charles Babbage']] }]);
    stripe.control.addFcAccount(stripeKey, { id: `fca_1OwnersNoId${n}`, owners: ['Grace Hopper'] });
    await enroll(c, enrollBorrower('noid-plaid', { bank_link: plaidLink(`access-noid-${n}`) }), enrollBorrower('noid-stripe', { bank_link: { provider: 'stripe', account: `fca_1OwnersNoId${n}` } }));
    expect(identityCalls(`access-noid-${n}`)).toBe(0);
    expect(ownershipCalls(stripeKey, `fca_1OwnersNoId${n}`)).toBe(0);
    expect(await alerts(c)).toEqual([]);

    const on = await setup(true);
    expect((await on.c.json('PUT', '/v1/fraud_monitoring/policy', { body: { rules: { owner_mismatch: { enabled: false } } } })).status).toBe(200);
    plaid.addItem(`access-off-${n}`, [{ account_id: 'acc_owners_0001', available: 100, current: 100, owners: [['Charles Babbage']] }]);
    await enroll(on.c, enrollBorrower('off-plaid', { bank_link: plaidLink(`access-off-${n}`) }));
    expect(identityCalls(`access-off-${n}`)).toBe(0);
    expect(await alerts(on.c)).toEqual([]);
  });
});
