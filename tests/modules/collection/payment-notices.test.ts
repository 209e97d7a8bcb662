// engine: both
// Payment notices that bind the debit engine, end to end against the sandbox processor: a covered borrower's debit
// that needs the payday rule's notice is scheduled with its window and PAYMENT_NOTICE_DUE; it goes out on its day
// only once the lender confirmed the notice inside the window, and one whose window passes is voided and planned
// again; Regulation E's varying-amount notice schedules a debit 10 days ahead; a consumer-initiated payment goes
// out on its date without one, even for a borrower the payday rule stops; a revocation refuses it.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { transaction } from '../../../src/platform/context';

const SETTLE = 60_000;
const READ = 3_600_000;
const DAY = 86_400_000;
/** Monday 23 November 2026, 16:00 UTC (10:00 in Chicago): Thursday is Thanksgiving. */
const AT = '2026-11-23T16:00:00.000Z';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

let keys = 0;
async function setup(policy: Record<string, unknown>) {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) }, { clockAt: AT });
  contexts.push(c);
  const key = `sbx_payment_notices_${String(++keys).padStart(7, '0')}`;
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'both', is_default: true } })).status).toBe(201);
  // Kept in the outbox (never delivered here: nothing listens on port 9).
  expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/notices', event_types: ['PAYMENT_NOTICE_DUE'] } })).status).toBe(201);
  expect((await c.json('PATCH', '/v1/collection_policy', { body: policy })).status).toBe(200);
  return c;
}

const enroll = async (c: TestContext, ...borrowers: Record<string, unknown>[]) => {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
  expect(r.body.results.map((x: { outcome: string }) => x.outcome)).toEqual(borrowers.map(() => 'enrolled'));
};
const payments = (c: TestContext, aid: string) =>
  c.rows<{ id: string; status: string; debitOn: number | null; noticeClass: string | null; noticeNeeds: string | null; noticeDueFrom: number | null; noticeDueBy: number | null; firstAttemptAt: number | null; amountCents: number }>(
    `SELECT id, status, debit_on AS "debitOn", notice_class AS "noticeClass", notice_needs AS "noticeNeeds", notice_due_from AS "noticeDueFrom", notice_due_by AS "noticeDueBy",
            first_attempt_at AS "firstAttemptAt", amount_cents AS "amountCents"
       FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id`,
    aid,
  );
const pushes = async (c: TestContext) =>
  (await c.rows<{ payload: string }>("SELECT payload FROM webhook_deliveries WHERE type = 'PAYMENT_NOTICE_DUE' ORDER BY created_at, id")).map((d) => JSON.parse(d.payload));
const atProcessor = async (c: TestContext) => (await c.rows<{ n: number }>('SELECT COUNT(*) AS n FROM sandbox_payments'))[0]!.n;
const confirm = (c: TestContext, id: string, body: Record<string, unknown>, key?: string) => c.json('POST', `/v1/payments/${id}/notice`, { body, ...(key ? { key } : {}) });
const iso = (ms: number) => new Date(ms).toISOString();
const num = (v: unknown) => Number(v);

describe('the payday rule’s notices bind a covered borrower’s debits', () => {
  test('the first debit is scheduled with its window and PAYMENT_NOTICE_DUE; it goes out on its day only once the notice is confirmed inside the window', async () => {
    const c = await setup({ cfpb_covered: true, notice_channel: 'electronic', time_zone: 'America/Chicago' });
    await enroll(c, enrollBorrower('told', { collectable_amount: 1000 }));
    await cycle(c);
    const [p] = await payments(c, 'told');
    // First payment, electronic: no later than 3 business days before; the default lead is 4 (Thursday is
    // Thanksgiving): Monday 30 November, the notice by the end of Tuesday 24 in Chicago.
    expect(p).toMatchObject({ status: 'scheduled', noticeClass: 'first', noticeNeeds: 'cfpb', firstAttemptAt: null });
    expect(iso(num(p!.debitOn)).slice(0, 10)).toBe('2026-11-30');
    expect(iso(num(p!.noticeDueBy))).toBe('2026-11-25T05:59:59.999Z');
    const [pushed] = await pushes(c);
    expect(pushed).toMatchObject({
      type: 'PAYMENT_NOTICE_DUE',
      payment_id: p!.id,
      authorizer_unique_id: 'told',
      amount: 1000,
      debit_on: '2026-11-30',
      payment_channel: 'ach',
      notice_class: 'first',
      requirements: ['cfpb'],
      notice_channel: 'electronic',
      notice_due_by: '2026-11-25T05:59:59.999Z',
      failed_attempt: null,
    });
    // Refused: in the future; after the window; another lender’s; a body that is not one.
    expect((await confirm(c, p!.id, { sent_at: iso(c.clock.now() + DAY), channel: 'electronic' })).status).toBe(400);
    expect((await confirm(c, 'no-such-payment', { sent_at: iso(c.clock.now()), channel: 'electronic' })).status).toBe(404);
    expect((await confirm(c, p!.id, { sent_at: iso(c.clock.now()), channel: 'pigeon' })).status).toBe(400);
    // A mail notice of a first payment is sent no later than 6 business days before: already past.
    const mail = await confirm(c, p!.id, { sent_at: iso(c.clock.now()), channel: 'mail' });
    expect(mail.status).toBe(400);
    expect(JSON.stringify(mail.body)).toContain('/sent_at');
    const ok = await confirm(c, p!.id, { sent_at: iso(c.clock.now()), channel: 'electronic', evidence_ref: 'msg-1' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ payment_id: p!.id, status: 'scheduled', notice_class: 'first', requirements: ['cfpb'], notice_sent_channel: 'electronic', evidence_ref: 'msg-1' });
    expect((await confirm(c, p!.id, { sent_at: iso(c.clock.now()), channel: 'electronic' })).status).toBe(409);
    // The enrollment shows the payment, its class and its notice, sent.
    expect((await c.json('GET', '/v1/payment_enrollments/told')).body.scheduled_payment).toEqual({
      payment_id: p!.id,
      reference: expect.stringMatching(/^DRS-told-/),
      amount: 1000,
      debit_on: '2026-11-30',
      notice_class: 'first',
      notice: { requirements: ['cfpb'], due_from: expect.any(String), due_by: '2026-11-25T05:59:59.999Z', sent_at: iso(c.clock.now()) },
    });
    // Nothing reaches the processor before its day (midnight in Chicago).
    c.clock.set(Date.parse('2026-11-30T05:30:00.000Z'));
    await cycle(c);
    await dispatchPayments(c.rt);
    expect(await atProcessor(c)).toBe(0);
    c.clock.set(Date.parse('2026-11-30T06:30:00.000Z'));
    await cycle(c);
    await dispatchPayments(c.rt);
    expect(await atProcessor(c)).toBe(1);
    expect((await payments(c, 'told'))[0]!.status).not.toBe('scheduled');
  });

  test('a window that passes without a confirmed notice: voided with that reason, never sent, and planned again with a new window', async () => {
    const c = await setup({ cfpb_covered: true, notice_channel: 'electronic' });
    await enroll(c, enrollBorrower('silent', { collectable_amount: 1000 }));
    await cycle(c);
    const [first] = await payments(c, 'silent');
    c.clock.set(num(first!.noticeDueBy) + 1);
    await cycle(c);
    await dispatchPayments(c.rt);
    expect(await atProcessor(c)).toBe(0);
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=silent')).body.events;
    expect(events).toEqual([expect.objectContaining({ status: 'voided', source: 'service', message: expect.stringContaining('no notice was confirmed inside its window') })]);
    // Too late now: a confirmation of the voided one is refused.
    expect((await confirm(c, first!.id, { sent_at: iso(c.clock.now()), channel: 'electronic' })).status).toBe(409);
    c.clock.advance(READ);
    await cycle(c);
    const all = await payments(c, 'silent');
    expect(all.map((p) => p.status)).toEqual(['voided', 'scheduled']);
    expect(num(all[1]!.noticeDueBy)).toBeGreaterThan(c.clock.now());
    expect(await pushes(c)).toHaveLength(2);
  });

  test('notice_channel null (what lenders there before the upgrade have): a covered borrower’s debit waits for no notice', async () => {
    const c = await setup({ cfpb_covered: true, notice_channel: null });
    await enroll(c, enrollBorrower('untold', { collectable_amount: 1000 }));
    await cycle(c);
    expect((await payments(c, 'untold'))[0]).toMatchObject({ noticeClass: 'first', noticeNeeds: null, debitOn: null });
    expect(await atProcessor(c)).toBe(1);
    expect(await pushes(c)).toEqual([]);
  });
});

describe('a scheduled payment’s day', () => {
  test('the borrower is read when its day begins, whatever its cadence; a payment whose day passed unread is voided, not sent late', async () => {
    // Reads a month apart: only the payment's own day brings the next one forward.
    const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(30 * DAY) }, { clockAt: AT });
    contexts.push(c);
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_payment_day_000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: true, notice_channel: 'electronic', time_zone: 'America/Chicago' } })).status).toBe(200);
    await enroll(c, enrollBorrower('on-time', { collectable_amount: 1000 }), enrollBorrower('too-late', { collectable_amount: 1000, account_number: '0701234567' }));
    await cycle(c);
    const nextRead = async (aid: string) => num((await c.rows<{ at: unknown }>('SELECT next_read_at AS "at" FROM enrollments WHERE authorizer_unique_id = ?', aid))[0]!.at);
    // Monday 30 November begins at 06:00 UTC in Chicago.
    const dayBegins = Date.parse('2026-11-30T06:00:00.000Z');
    expect(await nextRead('on-time')).toBe(dayBegins);
    expect(await nextRead('too-late')).toBe(dayBegins);
    for (const aid of ['on-time', 'too-late']) {
      const [p] = await payments(c, aid);
      expect((await confirm(c, p!.id, { sent_at: iso(c.clock.now()), channel: 'electronic' })).status).toBe(200);
    }
    // The service down all of Monday for one of them: its read comes on Tuesday.
    const [late1] = await c.rows<{ id: string }>("SELECT id FROM enrollments WHERE authorizer_unique_id = 'too-late'");
    await transaction({ deps: c.rt }, (tx) => tx.deps.stores.enrollments.setNextReadEach(tx, [{ enrollmentId: late1!.id, at: Date.parse('2026-12-01T07:00:00.000Z') }]));
    c.clock.set(dayBegins);
    await cycle(c);
    await dispatchPayments(c.rt);
    expect((await payments(c, 'on-time'))[0]!.firstAttemptAt).not.toBeNull();
    expect((await payments(c, 'too-late'))[0]!.status).toBe('scheduled');
    c.clock.set(Date.parse('2026-12-01T07:00:00.000Z'));
    await cycle(c);
    await dispatchPayments(c.rt);
    const late = await payments(c, 'too-late');
    expect(late[0]).toMatchObject({ status: 'voided', firstAttemptAt: null });
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=too-late')).body.events;
    expect(events).toEqual([expect.objectContaining({ status: 'voided', message: expect.stringContaining('its day passed') })]);
  });
});

describe('Regulation E’s varying-amount notice', () => {
  test('a debit whose amount the borrower has not been told is scheduled at least 10 days ahead, with its window', async () => {
    const c = await setup({ reg_e_election: { type: 'always' } });
    await enroll(c, enrollBorrower('varies', { collectable_amount: 1000 }), enrollBorrower('ranged', { collectable_amount: 1000 }));
    // The second borrower elected notice only outside 500 to 1500: none needed.
    expect((await c.json('POST', '/v1/payment_enrollments/ranged/reg_e_election', { body: { election: { type: 'outside_range', min_cents: 500, max_cents: 1500 } } })).body).toEqual({
      authorizer_unique_id: 'ranged',
      election: { type: 'outside_range', min_cents: 500, max_cents: 1500 },
      from_policy: false,
    });
    expect((await c.json('POST', '/v1/payment_enrollments/ranged/reg_e_election', { body: { election: { type: 'outside_range', min_cents: 5, max_cents: 1 } } })).status).toBe(400);
    expect((await c.json('POST', '/v1/payment_enrollments/nobody/reg_e_election', { body: { election: null } })).status).toBe(404);
    await cycle(c);
    const [p] = await payments(c, 'varies');
    expect(p).toMatchObject({ status: 'scheduled', noticeNeeds: 'reg_e' });
    expect(num(p!.debitOn) - Date.parse('2026-11-23T00:00:00.000Z')).toBeGreaterThanOrEqual(10 * DAY);
    expect(num(p!.noticeDueBy)).toBeLessThan(num(p!.debitOn) - 9 * DAY);
    expect((await payments(c, 'ranged'))[0]).toMatchObject({ noticeNeeds: null, debitOn: null });
  });
});

describe('a payment the borrower asked for (12 CFR 1041.8(d))', () => {
  test('goes out on its date without a new authorization, even for a borrower the payday rule stops; refused when revoked, in flight, or above the amount', async () => {
    // The first two debits need no notice here (the lender sends its own), so the payday rule stops the borrower soon.
    const c = await setup({ cfpb_covered: true, notice_channel: null });
    // Cents 91: every debit is returned R01; two of them stop the borrower.
    await enroll(c, enrollBorrower('asks', { collectable_amount: 1091 }));
    for (let i = 0; i < 5; i++) {
      await cycle(c);
      c.clock.advance(SETTLE);
      await pollProcessors(c.rt);
      c.clock.advance(READ);
    }
    expect((await c.json('GET', '/v1/payment_enrollments/asks')).body.blocked_reason).toBe('reauthorization_required');
    const ask = (body: Record<string, unknown>) => c.json('POST', '/v1/payment_enrollments/asks/payments', { body: { consumer_initiated: true, ...body } });
    // At most two debits to one account in a week before fraud monitoring's velocity rule speaks.
    expect((await c.json('PUT', '/v1/fraud_monitoring/policy', { body: { rules: { velocity: { settings: { max_debits: 2, window_days: 7 } } } } })).status).toBe(200);
    expect((await ask({ amount_cents: 2000, date: '2026-11-24' })).status).toBe(400);
    expect((await ask({ amount_cents: 500, date: '2026-11-01' })).status).toBe(400);
    const r = await ask({ amount_cents: 500, date: '2026-11-24' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ authorizer_unique_id: 'asks', amount: 500, debit_on: '2026-11-24', notice_class: 'consumer_initiated', status: 'initiating' });
    expect((await ask({ amount_cents: 500, date: '2026-11-25' })).status).toBe(409);
    // Another lender's borrower: 404, for the payment, the authorization and the notice alike.
    const other = c.newLender('another-lender');
    expect((await c.json('POST', '/v1/payment_enrollments/asks/payments', { key: other.key, body: { consumer_initiated: true, amount_cents: 500, date: '2026-11-25' } })).status).toBe(404);
    const otherAuth = { obtained_at: iso(c.clock.now()), method: 'signed', evidence_ref: 'x', transfers: [{ date: '2026-12-01', max_amount_cents: 100, channel: 'ach' }] };
    expect((await c.json('POST', '/v1/payment_enrollments/asks/authorizations', { key: other.key, body: otherAuth })).status).toBe(404);
    expect((await c.json('POST', `/v1/payments/${r.body.payment_id}/notice`, { key: other.key, body: { sent_at: iso(c.clock.now()), channel: 'electronic' } })).status).toBe(404);
    const before = await atProcessor(c);
    await dispatchPayments(c.rt);
    expect(await atProcessor(c)).toBe(before);
    c.clock.set(Date.parse('2026-11-24T00:00:01.000Z'));
    await dispatchPayments(c.rt);
    expect(await atProcessor(c)).toBe(before + 1);
    const mine = (await payments(c, 'asks')).find((p) => p.id === r.body.payment_id)!;
    // Fraud monitoring asked its debit rules of it as of any debit: a velocity alert on the account (its third debit in 7 days).
    const alerts = (await c.json('GET', '/v1/fraud_alerts?rule=velocity')).body.alerts;
    expect(alerts.map((a: { payment_id: string }) => a.payment_id)).toContain(r.body.payment_id);
    expect(mine).toMatchObject({ noticeClass: 'consumer_initiated', amountCents: 500, firstAttemptAt: expect.anything() });
    // Revoked: refused.
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect((await c.json('POST', '/v1/payment_enrollments/asks/revocation', { body: { received_at: iso(c.clock.now()), channel: 'phone' } })).status).toBe(200);
    expect((await ask({ amount_cents: 500, date: '2026-11-30' })).status).toBe(409);
  });
});
