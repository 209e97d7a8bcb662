// A lender's webhook endpoints: the routes (rules, tenancy), and the pushes through the outbox to a real
// receiver on 127.0.0.1, verified with the standardwebhooks package: PAYMENT_EVENT equal to the events read
// back, ENROLLMENT_BLOCKED when collection stops, PAYMENT_SCHEDULED with a notice. Delivery is at least once
// and promises no order (a retried delivery arrives after later ones; docs/webhooks.md): what one poll
// sends is compared as a set.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { startReceiver, verifyWithLibrary, type Receiver } from './support';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { pollProcessors } from '../../../src/modules/collection/poll';

const contexts: TestContext[] = [];
const receivers: Receiver[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  receivers.forEach((r) => r.stop());
});

/** The same items in one order whatever order they came in (compared as a set). */
const unordered = <T>(items: T[]): T[] => [...items].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

function setup() {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: '60000', MONITOR_READ_INTERVAL_MS: '3600000' }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  const r = startReceiver();
  receivers.push(r);
  return { c, r };
}

describe('/v1/webhook_endpoints', () => {
  test('add, list, delete; the rules; another lender’s endpoint is not found', async () => {
    const { c, r } = setup();
    const made = await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url(), event_types: ['PAYMENT_EVENT', 'PAYMENT_EVENT'], description: 'ops' } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ url: r.url(), event_types: ['PAYMENT_EVENT'], description: 'ops', created_at: expect.any(String) });
    expect((await c.json('GET', '/v1/webhook_endpoints')).body.endpoints).toEqual([made.body]);
    for (const body of [
      { url: r.url(), event_types: [] },
      { url: r.url(), event_types: ['RETURN_RATE_ALERT', 'NOT_A_TYPE'] },
      { url: 'ftp://example.com/hook', event_types: ['PAYMENT_EVENT'] },
      { url: r.url(), event_types: ['PAYMENT_EVENT'], extra: 1 },
    ]) {
      expect((await c.json('POST', '/v1/webhook_endpoints', { body })).status).toBe(400);
    }
    const other = c.newLender();
    expect((await c.json('GET', '/v1/webhook_endpoints', { key: other.key })).body.endpoints).toEqual([]);
    expect((await c.json('DELETE', `/v1/webhook_endpoints/${made.body.id}`, { key: other.key })).status).toBe(404);
    expect((await c.json('DELETE', '/v1/webhook_endpoints/unknown')).status).toBe(404);
    for (let i = 1; i < 10; i++) expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url(`/h${i}`), event_types: ['PAYMENT_EVENT'] } })).status).toBe(201);
    expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/h10'), event_types: ['PAYMENT_EVENT'] } })).status).toBe(409);
    expect((await c.json('DELETE', `/v1/webhook_endpoints/${made.body.id}`)).status).toBe(204);
    expect((await c.json('GET', '/v1/webhook_endpoints')).body.endpoints).toHaveLength(9);
    expect((await c.json('GET', '/v1/webhook_endpoints', { key: null })).status).toBe(401);
  });

  test('PAYMENT_EVENT: every event read from the processor, signed, equal to GET /v1/payment_events; ENROLLMENT_BLOCKED when collection stops', async () => {
    const { c, r } = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_endpoints_e2e_000001', rail_scope: 'both', is_default: true } });
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/events'), event_types: ['PAYMENT_EVENT', 'ENROLLMENT_BLOCKED'] } });
    // Cents 93: processing, then returned R02, which stops the borrower.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('pushed', { collectable_amount: 1093 })] } });
    await cycle(c);
    c.clock.advance(60_000);
    await pollProcessors(c.rt);
    await deliverDueWebhooks(c.rt);
    await r.waitFor(3);
    const secret = (await c.json('GET', '/v1/webhooks/secret')).body.secret as string;
    const payloads = r.requests.map((q) => verifyWithLibrary(secret, q) as Record<string, any>);
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=pushed')).body.events;
    expect(unordered(payloads.filter((p) => p.type === 'PAYMENT_EVENT').map((p) => p.payment_event))).toEqual(unordered(events));
    expect(payloads.filter((p) => p.type === 'ENROLLMENT_BLOCKED')).toEqual([
      { event_uuid: expect.any(String), type: 'ENROLLMENT_BLOCKED', authorizer_unique_id: 'pushed', state: 'stopped', reason: 'R02', blocked_reason: null },
    ]);
    for (const p of payloads) expect(p.event_uuid).toMatch(/^[0-9a-f-]{36}$/);
    // Listed with the lender's deliveries.
    const deliveries = (await c.json('GET', '/v1/webhooks/deliveries?type=PAYMENT_EVENT')).body.deliveries;
    expect(deliveries).toHaveLength(2);
  });

  test('PAYMENT_SCHEDULED: the notice of a scheduled payment, so the lender can tell the borrower', async () => {
    const { c, r } = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_endpoints_notice_001', rail_scope: 'both', is_default: true } });
    await c.json('PATCH', '/v1/collection_policy', { body: { notice_days: 3 } });
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/notices'), event_types: ['PAYMENT_SCHEDULED'] } });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('noticed', { collectable_amount: 1000 })] } });
    await cycle(c);
    await deliverDueWebhooks(c.rt);
    await r.waitFor(1);
    const secret = (await c.json('GET', '/v1/webhooks/secret')).body.secret as string;
    const scheduled = (await c.json('GET', '/v1/payment_enrollments/noticed')).body.scheduled_payment;
    expect(verifyWithLibrary(secret, r.requests[0]!)).toEqual({
      event_uuid: expect.any(String),
      type: 'PAYMENT_SCHEDULED',
      authorizer_unique_id: 'noticed',
      reference: scheduled.reference,
      amount: 1000,
      debit_on: scheduled.debit_on,
    });
  });
});
