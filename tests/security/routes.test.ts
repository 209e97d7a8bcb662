// One security table for every /v1 route: no key and a wrong key are 401 before anything else happens, and
// another lender's object is not found (or, for the CSV export, forbidden, as the spec says). A route added
// without a row here fails the first test.
import { afterAll, describe, expect, test } from 'bun:test';
import { checkResponse, routeSchemas, useTestContext } from '../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { startFakePlaid } from '../fakes/plaid-server';

const plaid = startFakePlaid();
afterAll(() => plaid.stop());
plaid.addClient('security_client', 'security-secret');
const ctx = useTestContext({ PLAID_API_URL: plaid.url });
const owner = ctx.lender;
const stranger = ctx.newLender();

// The owner's objects, which the stranger must not reach.
const batch = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('sec-1')] } });
const schedule = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', {
  body: { name: 'security', interval_days: 7, authorizers: [bankAuthorizer('sec-2')] },
});
const endpointId = (await ctx.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/owned', event_types: ['PAYMENT_EVENT'] } })).body.id as string;
const plaidBody = { provider: 'plaid', client_id: 'security_client', secret: 'security-secret', environment: 'sandbox' };
const bankDataId = (await ctx.json('POST', '/v1/bank_data_connections', { body: plaidBody })).body.id as string;
const connection = await ctx.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_security_00000000001', rail_scope: 'both', is_default: true } });
await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('sec-6')] } });
const recordedForm = new FormData();
recordedForm.append('file', new Blob(['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\nsec-6,SEC-0,10.00,sent,2026-11-02,,,\n'], { type: 'text/csv' }), 'r.csv');
await ctx.json('POST', '/v1/payment_results/uploads', { form: recordedForm });
const uploadId = (await ctx.json('GET', '/v1/payment_results/uploads')).body.uploads[0].id as string;
const bankAccountId = (await ctx.json('GET', '/v1/payment_enrollments/sec-6')).body.bank_account_id as string;
// A Notification of Change on it held for the owner's review: the apply route's object.
await ctx.json('PATCH', '/v1/collection_policy', { body: { apply_notifications_of_change: 'review' } });
const nocForm = new FormData();
nocForm.append('file', new Blob(['authorizer_unique_id,change_code,corrected_data\nsec-6,C05,37\n'], { type: 'text/csv' }), 'noc.csv');
await ctx.json('POST', '/v1/payment_results/uploads', { form: nocForm });
const changeId = (await ctx.json('GET', `/v1/bank_accounts/${bankAccountId}`)).body.pending_change_id as string;
const batchId: string = batch.body.batch_id;
const connectionId: string = connection.body.id;
const scheduleId: string = schedule.body.schedule_id;

interface Row {
  /** The request as the owner would make it on its own object. */
  path: string;
  body?: unknown;
  form?: () => FormData;
  /** What the stranger gets on the owner's object: 404 or 403; null where the route holds no object of the owner's. */
  stranger: 404 | 403 | null;
}

const resultsForm = () => {
  const f = new FormData();
  f.append('file', new Blob(['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\nsec-6,SEC-1,10.00,sent,2026-11-02,,,\n'], { type: 'text/csv' }), 'r.csv');
  return f;
};
const csvForm = () => {
  const f = new FormData();
  f.append('file', new Blob(['authorizer_unique_id,ssn,account_number,routing_number\nsec-3,123456789,0001234567,110000000\n'], { type: 'text/csv' }), 'a.csv');
  return f;
};

const TABLE: Record<string, Row> = {
  'POST /v1/balance_requests': { path: '/v1/balance_requests', body: { authorizers: [bankAuthorizer('sec-4')] }, stranger: null },
  'POST /v1/balance_requests/csv': { path: '/v1/balance_requests/csv', form: csvForm, stranger: null },
  'GET /v1/balance_requests/:batch_id': { path: `/v1/balance_requests/${batchId}`, stranger: 404 },
  'GET /v1/balances': { path: `/v1/balances?batchId=${batchId}`, stranger: 404 },
  'GET /v1/balances/csv': { path: `/v1/balances/csv?batch_ids=${batchId}`, stranger: 403 },
  'GET /v1/monitoring/authorizers/:id/history': { path: '/v1/monitoring/authorizers/sec-1/history', stranger: null },
  'POST /v1/monitoring/scheduled_balance_request': {
    path: '/v1/monitoring/scheduled_balance_request',
    body: { name: 'security-2', interval_days: 7, authorizers: [bankAuthorizer('sec-5')] },
    stranger: null,
  },
  'GET /v1/monitoring/schedules': { path: '/v1/monitoring/schedules', stranger: null },
  'GET /v1/monitoring/schedules/:id': { path: `/v1/monitoring/schedules/${scheduleId}`, stranger: 404 },
  'PATCH /v1/monitoring/schedules/:id': { path: `/v1/monitoring/schedules/${scheduleId}`, body: { interval_days: 3 }, stranger: 404 },
  'PATCH /v1/monitoring/schedules/:id/authorizers': {
    path: `/v1/monitoring/schedules/${scheduleId}/authorizers`,
    body: { authorizer_unique_ids: ['nobody'] },
    stranger: 404,
  },
  'POST /v1/monitoring/schedules/:id/run': { path: `/v1/monitoring/schedules/${scheduleId}/run`, stranger: 404 },
  'DELETE /v1/monitoring/schedules/:id': { path: `/v1/monitoring/schedules/${scheduleId}`, stranger: 404 },
  'GET /v1/webhooks/secret': { path: '/v1/webhooks/secret', stranger: null },
  'POST /v1/webhooks/secret/rotate': { path: '/v1/webhooks/secret/rotate', stranger: null },
  'GET /v1/webhooks/deliveries': { path: '/v1/webhooks/deliveries', stranger: null },
  'POST /v1/payment_connections': { path: '/v1/payment_connections', body: { api_key: 'sbx_security_00000000002', rail_scope: 'ach' }, stranger: null },
  'GET /v1/payment_connections': { path: '/v1/payment_connections', stranger: null },
  'PATCH /v1/payment_connections/:id': { path: `/v1/payment_connections/${connectionId}`, body: { label: 'Renamed' }, stranger: 404 },
  'DELETE /v1/payment_connections/:id': { path: `/v1/payment_connections/${connectionId}`, stranger: 404 },
  'POST /v1/bank_data_connections': { path: '/v1/bank_data_connections', body: plaidBody, stranger: null },
  'GET /v1/bank_data_connections': { path: '/v1/bank_data_connections', stranger: null },
  'GET /v1/bank_data_connections/:id/usage': { path: `/v1/bank_data_connections/${bankDataId}/usage`, stranger: 404 },
  'DELETE /v1/bank_data_connections/:id': { path: `/v1/bank_data_connections/${bankDataId}`, stranger: 404 },
  'POST /v1/payment_enrollments': { path: '/v1/payment_enrollments', body: { borrowers: [enrollBorrower('sec-7')] }, stranger: null },
  'GET /v1/payment_enrollments': { path: '/v1/payment_enrollments', stranger: null },
  'GET /v1/payment_enrollments/:authorizer_unique_id': { path: '/v1/payment_enrollments/sec-6', stranger: 404 },
  'POST /v1/payment_enrollments/:authorizer_unique_id/read': { path: '/v1/payment_enrollments/sec-6/read', stranger: 404 },
  // Its tenancy (another lender's borrower is 404) is in tests/modules/balance-requests/link-health.test.ts: sec-6 has no bank_link.
  'POST /v1/payment_enrollments/:authorizer_unique_id/bank_link/check': { path: '/v1/payment_enrollments/sec-6/bank_link/check', stranger: null },
  // Its tenancy (another lender's borrower is 404) is in tests/modules/collection/rights-notice.test.ts: sec-6 owes no notice.
  'POST /v1/payment_enrollments/:authorizer_unique_id/rights_notice': {
    path: '/v1/payment_enrollments/sec-6/rights_notice',
    body: { sent_at: '2026-11-20T10:00:00.000Z', channel: 'mail' },
    stranger: null,
  },
  'GET /v1/compliance/notices': { path: '/v1/compliance/notices', stranger: null },
  'GET /v1/fraud_monitoring/rules': { path: '/v1/fraud_monitoring/rules', stranger: null },
  'GET /v1/fraud_monitoring/policy': { path: '/v1/fraud_monitoring/policy', stranger: null },
  'PUT /v1/fraud_monitoring/policy': { path: '/v1/fraud_monitoring/policy', body: { notes: 'security' }, stranger: null },
  'GET /v1/fraud_alerts': { path: '/v1/fraud_alerts', stranger: null },
  // Their tenancy (another lender's alert is 404) is in tests/modules/fraud-monitoring/policy.test.ts: the owner here has no alert.
  'GET /v1/fraud_alerts/:id': { path: '/v1/fraud_alerts/no-such-alert', stranger: null },
  'POST /v1/fraud_alerts/:id/disposition': { path: '/v1/fraud_alerts/no-such-alert/disposition', body: { disposition: 'cleared' }, stranger: null },
  'POST /v1/fraud_monitoring/reviews': { path: '/v1/fraud_monitoring/reviews', body: { reviewed_on: '2026-11-20', reviewer: 'sec', policy_version: 0 }, stranger: null },
  'GET /v1/fraud_monitoring/reviews': { path: '/v1/fraud_monitoring/reviews', stranger: null },
  'GET /v1/fraud_monitoring/report': { path: '/v1/fraud_monitoring/report?year=2026', stranger: null },
  // The providers' webhooks take no API key: without the provider's signature they are 401 all the same.
  'POST /v1/bank_data_webhooks/plaid': { path: '/v1/bank_data_webhooks/plaid', body: { webhook_type: 'ITEM', webhook_code: 'ERROR', item_id: 'item_1' }, stranger: null },
  'POST /v1/bank_data_webhooks/stripe/:connection_id': { path: `/v1/bank_data_webhooks/stripe/${bankDataId}`, body: { id: 'evt_1', type: 'x', data: { object: {} } }, stranger: null },
  'DELETE /v1/payment_enrollments': { path: '/v1/payment_enrollments', body: { authorizer_unique_ids: ['sec-6'] }, stranger: null },
  'DELETE /v1/persisted_authorizers': { path: '/v1/persisted_authorizers', body: { authorizer_unique_ids: ['sec-6'] }, stranger: null },
  'GET /v1/payment_events': { path: '/v1/payment_events?authorizer_unique_id=sec-6', stranger: null },
  'GET /v1/bank_accounts': { path: '/v1/bank_accounts', stranger: null },
  'GET /v1/bank_accounts/:id': { path: `/v1/bank_accounts/${bankAccountId}`, stranger: 404 },
  'POST /v1/payment_enrollments/:authorizer_unique_id/revocation': {
    path: '/v1/payment_enrollments/sec-6/revocation',
    body: { received_at: '2026-11-20T10:00:00.000Z', channel: 'written' },
    stranger: 404,
  },
  // Its tenancy (another lender's borrower is 404) is in tests/modules/collection/payment-notices.test.ts: sec-6 owes no rights notice.
  'POST /v1/payment_enrollments/:authorizer_unique_id/authorizations': {
    path: '/v1/payment_enrollments/sec-6/authorizations',
    body: { obtained_at: '2026-11-20T10:00:00.000Z', method: 'signed', evidence_ref: 'sec', transfers: [{ date: '2026-12-20', max_amount_cents: 100, channel: 'ach' }] },
    stranger: null,
  },
  'GET /v1/payment_enrollments/:authorizer_unique_id/authorizations': { path: '/v1/payment_enrollments/sec-6/authorizations', stranger: 404 },
  // Its tenancy is in tests/modules/collection/payment-notices.test.ts too: sec-6 has no processor key to pay with.
  'POST /v1/payment_enrollments/:authorizer_unique_id/payments': {
    path: '/v1/payment_enrollments/sec-6/payments',
    body: { consumer_initiated: true, amount_cents: 100, date: '2026-12-20' },
    stranger: null,
  },
  'POST /v1/payment_enrollments/:authorizer_unique_id/reg_e_election': { path: '/v1/payment_enrollments/sec-6/reg_e_election', body: { election: null }, stranger: 404 },
  // Its tenancy (another lender's payment is 404) is in tests/modules/collection/payment-notices.test.ts: no payment has this id.
  'POST /v1/payments/:id/notice': { path: '/v1/payments/sec-payment/notice', body: { sent_at: '2026-11-20T10:00:00.000Z', channel: 'electronic' }, stranger: null },
  'POST /v1/bank_accounts/:id/changes/:change_id/apply': { path: `/v1/bank_accounts/${bankAccountId}/changes/${changeId}/apply`, stranger: 404 },
  'GET /v1/collection_policy': { path: '/v1/collection_policy', stranger: null },
  'GET /v1/return_rates': { path: '/v1/return_rates', stranger: null },
  'GET /v1/reports/ach': { path: '/v1/reports/ach?month=2026-11', stranger: null },
  'POST /v1/webhook_endpoints': { path: '/v1/webhook_endpoints', body: { url: 'https://127.0.0.1:9/hook', event_types: ['PAYMENT_EVENT'] }, stranger: null },
  'GET /v1/webhook_endpoints': { path: '/v1/webhook_endpoints', stranger: null },
  'DELETE /v1/webhook_endpoints/:id': { path: `/v1/webhook_endpoints/${endpointId}`, stranger: 404 },
  'PATCH /v1/collection_policy': { path: '/v1/collection_policy', body: { max_reinitiations: 2 }, stranger: null },
  'POST /v1/payment_results/uploads': { path: '/v1/payment_results/uploads?dry_run=true', form: resultsForm, stranger: null },
  'GET /v1/payment_results/uploads': { path: '/v1/payment_results/uploads', stranger: null },
  'GET /v1/payment_results/uploads/:id': { path: `/v1/payment_results/uploads/${uploadId}`, stranger: 404 },
};

const send = (route: string, row: Row, key: string | null) => {
  const method = route.split(' ')[0]!;
  return ctx.json(method, row.path, { key, ...(row.body !== undefined ? { body: row.body } : {}), ...(row.form ? { form: row.form() } : {}) });
};

describe('every /v1 route', () => {
  test('has a row in the security table', () => {
    const routes = ctx.app.routes.filter((r) => r.path.startsWith('/v1/')).map((r) => `${r.method} ${r.path}`);
    expect(routes.sort()).toEqual(Object.keys(TABLE).sort());
  });

  for (const [route, row] of Object.entries(TABLE)) {
    test(`${route}: no key and a wrong key are 401 UNAUTHORIZED`, async () => {
      for (const key of [null, 'drs_live_' + 'x'.repeat(32)]) {
        const r = await send(route, row, key);
        expect(r.status).toBe(401);
        expect(r.body.error.code).toBe('UNAUTHORIZED');
      }
    });
  }

  for (const [route, row] of Object.entries(TABLE).filter(([, r]) => r.stranger !== null)) {
    test(`${route}: another lender's object is ${row.stranger}, and the owner's request still works`, async () => {
      const r = await send(route, row, stranger.key);
      expect(r.status).toBe(row.stranger!);
      if (!route.startsWith('DELETE ')) {
        const mine = await send(route, row, owner.key);
        expect(mine.status).toBeLessThan(300);
      }
    });
  }

  test("another lender's history of the same authorizer id is empty", async () => {
    const r = await ctx.json('GET', '/v1/monitoring/authorizers/sec-1/history', { key: stranger.key });
    expect(r.status).toBe(200);
    expect(r.body.total_count).toBe(0);
  });
});

describe('the response check of the test helper', () => {
  test('refuses a body that drifts from the documented schema', () => {
    const routes = routeSchemas(ctx.app);
    const good = { batch_id: batchId, status: 'pending', source: 'api', schedule_id: null, creator: null, submitted_at: '2026-11-21T12:00:00.000Z', completed_at: null, total_authorizers: 1, total_processed: 0 };
    expect(() => checkResponse(routes, 'GET', `/v1/balance_requests/${batchId}`, 200, good)).not.toThrow();
    expect(() => checkResponse(routes, 'GET', `/v1/balance_requests/${batchId}`, 200, { ...good, total_processed: '0' })).toThrow(/documented schema/);
    expect(() => checkResponse(routes, 'GET', `/v1/balance_requests/${batchId}`, 404, { status: 'error' })).toThrow(/documented schema/);
  });
});
