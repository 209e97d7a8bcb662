// engine: both
// A borrower's revocation of its authorization (Regulation E, 12 CFR 1005.10(c)), as the lender records it:
// every debit stops at once (a scheduled payment voided, one made and not yet sent never sent, the claim the
// line as for a removal), the borrower shows why, and only a re-send with an authorization dated after the
// revocation lets a debit go again.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments, planSend, sendPlanned } from '../../../src/modules/collection/dispatch';

const READ_EVERY = 3_600_000;
const DAY = 86_400_000;
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

async function setup(policy: Record<string, unknown> = {}) {
  const c = createTestContext({ MONITOR_READ_INTERVAL_MS: String(READ_EVERY) });
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_revocation_0000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
  expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/blocked', event_types: ['ENROLLMENT_BLOCKED'] } })).status).toBe(201);
  if (Object.keys(policy).length > 0) expect((await c.json('PATCH', '/v1/collection_policy', { body: policy })).status).toBe(200);
  return c;
}
const enroll = async (c: TestContext, ...borrowers: Record<string, unknown>[]) =>
  expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;
const revoke = (c: TestContext, aid: string, body: Record<string, unknown>, key?: string) =>
  c.json('POST', `/v1/payment_enrollments/${encodeURIComponent(aid)}/revocation`, { body, ...(key ? { key } : {}) });
const payments = (c: TestContext, aid: string) =>
  c.rows<{ id: string; status: string }>('SELECT id, status FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id', aid);
const atSandbox = async (c: TestContext, paymentId: string) =>
  (await c.rows<{ n: number }>('SELECT COUNT(*) AS n FROM sandbox_payments WHERE idempotency_key = ?', paymentId))[0]!.n;
const at = (c: TestContext, offset = 0) => new Date(c.clock.now() + offset).toISOString();

describe('a revocation recorded', () => {
  test('voids a scheduled payment, blocks the borrower and is pushed; nothing goes out however long it waits', async () => {
    const c = await setup({ notice_days: 3 });
    await enroll(c, enrollBorrower('sched', { collectable_amount: 42500 }));
    await cycle(c);
    expect(await payments(c, 'sched')).toMatchObject([{ status: 'scheduled' }]);
    const r = await revoke(c, 'sched', { received_at: at(c), channel: 'electronic', evidence_ref: 'ticket-1' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ authorizer_unique_id: 'sched', state: 'monitored', blocked_reason: 'authorization_revoked', revocation: { received_at: at(c), channel: 'electronic', evidence_ref: 'ticket-1' } });
    expect(await payments(c, 'sched')).toMatchObject([{ status: 'voided' }]);
    expect(await view(c, 'sched')).toMatchObject({ blocked_reason: 'authorization_revoked', next_read_at: null, revocation: { channel: 'electronic' } });
    const pushed = (await c.rows<{ payload: string }>("SELECT payload FROM webhook_deliveries WHERE type = 'ENROLLMENT_BLOCKED'")).map((d) => JSON.parse(d.payload));
    expect(pushed).toMatchObject([{ authorizer_unique_id: 'sched', blocked_reason: 'authorization_revoked' }]);
    for (let i = 0; i < 3; i++) {
      c.clock.advance(DAY);
      await cycle(c);
    }
    expect(await payments(c, 'sched')).toMatchObject([{ status: 'voided' }]);
  });

  test('a payment made and not yet sent is never sent; one planned before and claimed after the revocation is not sent either', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('made', { collectable_amount: 1200 }), enrollBorrower('planned', { collectable_amount: 1200 }));
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    const due = await c.rt.stores.dispatch.claimDuePayments({ deps: c.rt }, 10, c.clock.now());
    expect(due).toHaveLength(2);
    const planned = due.find((p) => p.authorizerUniqueId === 'planned')!;
    const plan = await planSend({ deps: c.rt }, planned);
    expect(plan.kind).toBe('planned');
    expect((await revoke(c, 'planned', { received_at: at(c), channel: 'phone' })).status).toBe(200);
    const step = await sendPlanned({ deps: c.rt }, planned, plan as Extract<typeof plan, { kind: 'planned' }>);
    expect(step.kind).toBe('done');
    expect(await atSandbox(c, planned.id)).toBe(0);
    expect(await payments(c, 'planned')).toMatchObject([{ status: 'not_attempted' }]);
    // The other, never sent: revoked, then taken again by the dispatch once its lease has run out.
    expect((await revoke(c, 'made', { received_at: at(c), channel: 'written' })).status).toBe(200);
    c.clock.advance(200_000);
    await dispatchPayments(c.rt);
    const [made] = await payments(c, 'made');
    expect(made!.status).toBe('not_attempted');
    expect(await atSandbox(c, made!.id)).toBe(0);
  });

  test('only an authorization dated after it lifts it; an earlier revocation never moves it back; bad requests are refused', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('r', { collectable_amount: 9_000_000 }));
    const revokedAt = c.clock.now() - 60_000;
    expect((await revoke(c, 'r', { received_at: new Date(revokedAt).toISOString(), channel: 'written' })).status).toBe(200);
    // Earlier than the one recorded: it stands.
    expect((await revoke(c, 'r', { received_at: new Date(revokedAt - DAY).toISOString(), channel: 'phone' })).body.revocation).toEqual({
      received_at: new Date(revokedAt).toISOString(),
      channel: 'written',
      evidence_ref: null,
    });
    // Re-sent with an authorization from before it: still blocked.
    await enroll(c, enrollBorrower('r', { collectable_amount: 42500, authorization: { obtained_at: new Date(revokedAt - 1000).toISOString() } }));
    expect(await view(c, 'r')).toMatchObject({ blocked_reason: 'authorization_revoked' });
    await cycle(c);
    expect(await payments(c, 'r')).toEqual([]);
    // With one after it: read again and debited.
    await enroll(c, enrollBorrower('r', { collectable_amount: 42500, authorization: { obtained_at: new Date(revokedAt + 1000).toISOString() } }));
    expect(await view(c, 'r')).toMatchObject({ blocked_reason: null });
    await cycle(c);
    expect(await payments(c, 'r')).toMatchObject([{ status: 'processing' }]);

    for (const body of [{ received_at: at(c, DAY), channel: 'written' }, { received_at: at(c), channel: 'carrier_pigeon' }, { channel: 'written' }, { received_at: 'yesterday', channel: 'written' }]) {
      expect((await revoke(c, 'r', body)).status).toBe(400);
    }
    expect((await revoke(c, 'nobody', { received_at: at(c), channel: 'written' })).status).toBe(404);
    const other = c.newLender();
    expect((await revoke(c, 'r', { received_at: at(c), channel: 'written' }, other.key)).status).toBe(404);
  });
});
