// Removal against a send: the claim is the line. A send is claimed by one conditional UPDATE (payment still
// initiating, borrower still monitored) committed before the request leaves. A removal committed before the
// claim wins and nothing is sent; one committed after it finds the payment claimed, and its outcome is the
// processor's. The steps are driven one by one here, with the removal in between, as two callers interleaved at
// their awaits would run them.
import { afterAll, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { finish, planSend, sendPlanned } from '../../../src/modules/collection/dispatch';

const KEY = 'sbx_removal_claim_000001';
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

async function duePayment(aid: string) {
  const c = createTestContext({ MONITOR_READ_INTERVAL_MS: '86400000' });
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(201);
  expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: 1200 })] } })).status).toBe(207);
  await queueDueReads(c.rt);
  await processBalances(c.rt);
  const [p] = await c.rt.stores.dispatch.claimDuePayments({ deps: c.rt }, 10, c.clock.now());
  expect(p).toBeDefined();
  return { c, p: p! };
}

const atSandbox = (c: TestContext, paymentId: string) =>
  (c.sql.query('SELECT COUNT(*) AS n FROM sandbox_payments WHERE idempotency_key = ?').get(paymentId) as { n: number }).n;
const paymentRow = (c: TestContext, id: string) =>
  c.sql.query('SELECT status, first_attempt_at AS firstAttemptAt FROM payments WHERE id = ?').get(id) as { status: string; firstAttemptAt: number | null };
const remove = async (c: TestContext, aid: string) =>
  expect((await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: [aid] } })).body.removed).toBe(1);

test('a removal committed after the send was planned and before it was claimed: nothing reaches the processor', async () => {
  const { c, p } = await duePayment('removed-before-claim');
  const plan = await planSend({ deps: c.rt }, p);
  expect(plan.kind).toBe('planned');
  await remove(c, 'removed-before-claim');
  const step = await sendPlanned({ deps: c.rt }, p, plan as Extract<typeof plan, { kind: 'planned' }>);
  expect(step.kind).toBe('done');
  expect(atSandbox(c, p.id)).toBe(0);
  expect(paymentRow(c, p.id)).toMatchObject({ status: 'not_attempted', firstAttemptAt: null });
});

test('a removal committed after the claim: the send goes out, and the payment is what the processor says', async () => {
  const { c, p } = await duePayment('removed-after-claim');
  const plan = await planSend({ deps: c.rt }, p);
  const step = await sendPlanned({ deps: c.rt }, p, plan as Extract<typeof plan, { kind: 'planned' }>);
  expect(step.kind).toBe('send');
  expect(paymentRow(c, p.id).firstAttemptAt).not.toBeNull();
  await remove(c, 'removed-after-claim');
  await finish({ deps: c.rt }, p, step as Extract<typeof step, { kind: 'send' }>);
  expect(atSandbox(c, p.id)).toBe(1);
  expect(paymentRow(c, p.id).status).toBe('processing');
});

test('sent once with its answer lost, then removed before the re-send was claimed: looked up, never created twice', async () => {
  const { c, p } = await duePayment('removed-before-resend');
  const first = await sendPlanned({ deps: c.rt }, p, (await planSend({ deps: c.rt }, p)) as never);
  expect(first.kind).toBe('send');
  // The answer is lost: the payment stays initiating with its first attempt recorded.
  await (first as Extract<typeof first, { kind: 'send' }>).call;
  expect(paymentRow(c, p.id)).toMatchObject({ status: 'initiating' });
  const again = await planSend({ deps: c.rt }, p);
  expect(again.kind).toBe('planned');
  await remove(c, 'removed-before-resend');
  const step = await sendPlanned({ deps: c.rt }, p, again as Extract<typeof again, { kind: 'planned' }>);
  expect(step.kind).toBe('look');
  await finish({ deps: c.rt }, p, step as Extract<typeof step, { kind: 'look' }>);
  expect(atSandbox(c, p.id)).toBe(1);
  expect(paymentRow(c, p.id).status).toBe('processing');
});
