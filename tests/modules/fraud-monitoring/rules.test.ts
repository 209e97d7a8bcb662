// engine: both
// Fraud monitoring end to end against the sandbox bank and processor: one scenario borrower per rule raises
// exactly one alert with its rule id, and a clean borrower none; evaluating the same fact again raises nothing
// more; a hold rule's alert keeps the debit unsent (the decision shows fraud_hold, the dispatch waits, and the
// claim refuses a send planned before the hold) until it is cleared, after which it goes out; confirmed_fraud on
// one borrower freezes the account and leaves no payment to it for any borrower; FRAUD_ALERT_RAISED carries each.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower, ownAccount } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { dispatchPayments, planSend, sendPlanned } from '../../../src/modules/collection/dispatch';
import { tellAccountBlocks } from '../../../src/modules/collection/account-blocks';
import { applyReceivedChanges } from '../../../src/modules/collection/account-changes';
import { transaction } from '../../../src/platform/context';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';

const SETTLE = 60_000;
const READ = 3_600_000;
const DAY = 86_400_000;
const UNVALIDATED_BANK = '110000039';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

function context() {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) }, { clockAt: '2026-11-25T12:00:00.000Z' });
  contexts.push(c);
  return c;
}

type Lender = { id: string; key: string };
let keys = 0;
/** A lender of its own, with a sandbox processor key, an endpoint for FRAUD_ALERT_RAISED, and the policies given. */
async function lender(c: TestContext, fraud?: Record<string, unknown>, collection?: Record<string, unknown>): Promise<Lender> {
  const l = c.newLender();
  const key = `sbx_fraud_rules_${String(++keys).padStart(8, '0')}`;
  expect((await c.json('POST', '/v1/payment_connections', { key: l.key, body: { api_key: key, rail_scope: 'both', is_default: true } })).status).toBe(201);
  expect((await c.json('POST', '/v1/webhook_endpoints', { key: l.key, body: { url: 'https://127.0.0.1:9/fraud', event_types: ['FRAUD_ALERT_RAISED'] } })).status).toBe(201);
  if (fraud) expect((await c.json('PUT', '/v1/fraud_monitoring/policy', { key: l.key, body: fraud })).status).toBe(200);
  if (collection) expect((await c.json('PATCH', '/v1/collection_policy', { key: l.key, body: collection })).status).toBe(200);
  return l;
}

async function enroll(c: TestContext, l: Lender, ...borrowers: Record<string, unknown>[]) {
  const r = await c.json('POST', '/v1/payment_enrollments', { key: l.key, body: { borrowers } });
  expect(r.status).toBe(207);
  expect(r.body.failed).toBe(0);
}

/** A round: reads and the debits they allow, dispatched, then settled or returned one settlement period later. */
async function run(c: TestContext, rounds = 1) {
  for (let i = 0; i < rounds; i++) {
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    c.clock.advance(READ);
  }
}

const alerts = async (c: TestContext, l: Lender, query = '') => {
  const r = await c.json('GET', `/v1/fraud_alerts${query}`, { key: l.key });
  expect(r.status).toBe(200);
  return r.body.alerts as { id: string; rule: string; authorizer_unique_id: string | null; action: string; holds: boolean; state: string; details: Record<string, unknown>; subject: string; payment_id: string | null; bank_account_id: string | null }[];
};
const raised = async (c: TestContext, l: Lender) =>
  (await c.rows<{ payload: string }>("SELECT payload FROM webhook_deliveries WHERE type = 'FRAUD_ALERT_RAISED' AND lender_id = ? ORDER BY created_at, id", l.id)).map((d) => JSON.parse(d.payload));
const payments = (c: TestContext, l: Lender, aid?: string) =>
  c.rows<{ id: string; aid: string; status: string; firstAttemptAt: number | null; bankAccountId: string | null }>(
    `SELECT id, authorizer_unique_id AS aid, status, first_attempt_at AS firstAttemptAt, bank_account_id AS bankAccountId FROM payments
      WHERE lender_id = ?${aid ? ' AND authorizer_unique_id = ?' : ''} ORDER BY created_at, id`,
    ...(aid ? [l.id, aid] : [l.id]),
  );
const dispose = (c: TestContext, l: Lender, id: string, body: Record<string, unknown>) => c.json('POST', `/v1/fraud_alerts/${id}/disposition`, { key: l.key, body });

describe('one scenario borrower per rule raises exactly one alert, with its rule id; a clean borrower none', () => {
  const c = context();

  test('clean: a validated account of its own, a usual amount, one debit', async () => {
    const l = await lender(c);
    await enroll(c, l, enrollBorrower('clean', { account_number: ownAccount(0), collectable_amount: 10000 }));
    await run(c);
    expect((await payments(c, l)).map((p) => p.status)).toEqual(['settled']);
    expect(await alerts(c, l)).toEqual([]);
    expect(await raised(c, l)).toEqual([]);
  });

  test('first_debit_unvalidated: the first debit to an account with no validation evidence', async () => {
    const l = await lender(c, undefined, { require_account_validation: false });
    await enroll(c, l, enrollBorrower('unvalidated', { routing_number: UNVALIDATED_BANK, account_number: ownAccount(1), collectable_amount: 10000 }));
    await run(c, 2);
    const found = await alerts(c, l);
    expect(found).toMatchObject([{ rule: 'first_debit_unvalidated', authorizer_unique_id: 'unvalidated', action: 'alert', holds: false, state: 'open', details: { validated_at: null } }]);
    const [p] = await payments(c, l);
    expect(found[0]!.payment_id).toBe(p!.id);
    // Pushed once, as the alert is shown.
    expect(await raised(c, l)).toMatchObject([{ type: 'FRAUD_ALERT_RAISED', alert_id: found[0]!.id, rule: 'first_debit_unvalidated', authorizer_unique_id: 'unvalidated' }]);
  });

  test('account_changed: a re-send with another account, then a debit within the window', async () => {
    const l = await lender(c);
    await enroll(c, l, enrollBorrower('mover', { account_number: ownAccount(2), collectable_amount: 10000 }));
    c.clock.advance(DAY);
    await enroll(c, l, enrollBorrower('mover', { account_number: ownAccount(3), collectable_amount: 10000 }));
    await run(c);
    expect(await alerts(c, l)).toMatchObject([{ rule: 'account_changed', authorizer_unique_id: 'mover', details: { source: 'resend', window_days: 30 } }]);
  });

  test('account_changed: a Notification of Change applied to the account, then a debit within the window', async () => {
    // A debit to a 9996 account settles with a C01 from the sandbox processor, applied at once; the borrower,
    // re-sent with what it owes now under the corrected number, is debited again on the same account.
    const l = await lender(c, undefined, { require_account_validation: false });
    await enroll(c, l, enrollBorrower('noc', { account_number: '9996234567', collectable_amount: 10000 }));
    await cycle(c);
    await dispatchAndSettle(c, SETTLE);
    // Applied by the job once received (the poll that records the settlement receives it).
    for (let i = 0; i < 5 && (await applyReceivedChanges(c.rt)).applied === 0; i++) await pollProcessors(c.rt);
    expect(await c.rows('SELECT code, status FROM account_changes WHERE lender_id = ?', l.id)).toEqual([{ code: 'C01', status: 'applied' }]);
    // Past the settled debit's late-return window (five business days), well inside account_changed's 30 days.
    c.clock.advance(8 * DAY);
    await enroll(c, l, enrollBorrower('noc', { account_number: '0006234567', collectable_amount: 10000 }));
    await run(c);
    const paid = await payments(c, l, 'noc');
    expect(paid.map((p) => p.status)).toEqual(['settled', 'settled']);
    expect(paid[1]!.bankAccountId).toBe(paid[0]!.bankAccountId);
    expect(await alerts(c, l)).toMatchObject([{ rule: 'account_changed', authorizer_unique_id: 'noc', payment_id: paid[1]!.id, details: { source: 'notification_of_change', window_days: 30 } }]);
  });

  test('shared_account: a second borrower of another name on an account', async () => {
    const l = await lender(c);
    await enroll(c, l, enrollBorrower('ada', { account_number: ownAccount(4), collectable_amount: 10000 }));
    await enroll(c, l, enrollBorrower('charles', { account_number: ownAccount(4), first_name: 'Charles', last_name: 'Babbage', collectable_amount: 10000 }));
    // The same borrower sent again is the same fact: nothing more.
    await enroll(c, l, enrollBorrower('charles', { account_number: ownAccount(4), first_name: 'Charles', last_name: 'Babbage', collectable_amount: 10000 }));
    await run(c);
    const found = await alerts(c, l);
    expect(found).toMatchObject([{ rule: 'shared_account', authorizer_unique_id: 'charles', details: { borrowers: 2, max_borrowers: 2, names_differ: true } }]);
    expect(found[0]!.subject).toBe(`bank_account:${found[0]!.bank_account_id}`);
  });

  test('amount_outlier: a debit more than three times the lender’s usual', async () => {
    const l = await lender(c);
    await enroll(c, l, ...[10, 11, 12].map((i) => enrollBorrower(`usual-${i}`, { account_number: ownAccount(i), collectable_amount: 10000 })));
    await run(c);
    await enroll(c, l, enrollBorrower('big', { account_number: ownAccount(13), collectable_amount: 100000 }));
    await run(c);
    expect(await alerts(c, l)).toMatchObject([{ rule: 'amount_outlier', authorizer_unique_id: 'big', details: { amount: 100000, median: 10000, compared_with: 'lender', factor: 3 } }]);
  });

  test('velocity: more debits to one account within the window than the policy allows', async () => {
    const l = await lender(c, { rules: { velocity: { settings: { max_debits: 1 } } } });
    await enroll(c, l, enrollBorrower('v-1', { account_number: ownAccount(14), collectable_amount: 10000 }), enrollBorrower('v-2', { account_number: ownAccount(14), collectable_amount: 10000 }));
    await run(c);
    expect((await payments(c, l)).map((p) => p.status)).toEqual(['settled', 'settled']);
    const found = await alerts(c, l);
    expect(found).toMatchObject([{ rule: 'velocity', details: { debits: 2, max_debits: 1, window_days: 7 } }]);
    expect(found[0]!.subject).toBe(`bank_account:${found[0]!.bank_account_id}`);
  });

  test('unauthorized_streak: three R10 returns on one routing number within the window', async () => {
    const l = await lender(c);
    // Enrolled on three days, so no day of enrollments clusters; each debit is returned R10 (cents 94).
    for (const i of [15, 16, 17]) {
      await enroll(c, l, enrollBorrower(`u-${i}`, { account_number: ownAccount(i), collectable_amount: 10094 }));
      c.clock.advance(DAY);
    }
    await run(c);
    expect((await payments(c, l)).map((p) => p.status)).toEqual(['returned', 'returned', 'returned']);
    const found = await alerts(c, l);
    expect(found).toMatchObject([{ rule: 'unauthorized_streak', subject: 'routing:110000000', action: 'alert', details: { returns: 3, threshold: 3, window_days: 30, code: 'R10' } }]);
    expect(await alerts(c, l, '?rule=unauthorized_streak')).toHaveLength(1);
    expect(await alerts(c, l, '?rule=velocity')).toEqual([]);
  });
});

describe('a hold rule keeps the debit until its alert is cleared, after which it goes out', () => {
  const c = context();

  test('held unsent through dispatch and reads (fraud_hold), cleared once, then sent and settled; a second disposition is 409', async () => {
    const l = await lender(c, { rules: { first_debit_unvalidated: { action: 'hold' } } }, { require_account_validation: false });
    await enroll(c, l, enrollBorrower('held', { routing_number: UNVALIDATED_BANK, account_number: ownAccount(20), collectable_amount: 10000 }));
    await cycle(c);
    const [p] = await payments(c, l, 'held');
    expect(p).toMatchObject({ status: 'initiating', firstAttemptAt: null });
    const [a] = await alerts(c, l);
    expect(a).toMatchObject({ rule: 'first_debit_unvalidated', action: 'hold', holds: true, payment_id: p!.id });
    // Dispatch waits, however often it comes back; the next read shows why.
    for (let i = 0; i < 3; i++) {
      c.clock.advance(20 * 60_000);
      await dispatchPayments(c.rt);
    }
    c.clock.advance(READ);
    await cycle(c);
    expect(await payments(c, l, 'held')).toMatchObject([{ status: 'initiating', firstAttemptAt: null }]);
    expect((await c.json('GET', '/v1/payment_enrollments/held', { key: l.key })).body.blocked_reason).toBe('fraud_hold');
    // needs_info keeps it held.
    expect((await dispose(c, l, a!.id, { disposition: 'needs_info', note: 'asked the borrower for a statement' })).body).toMatchObject({ state: 'needs_info', holds: true });
    c.clock.advance(20 * 60_000);
    await dispatchPayments(c.rt);
    expect(await payments(c, l, 'held')).toMatchObject([{ status: 'initiating', firstAttemptAt: null }]);

    const cleared = await dispose(c, l, a!.id, { disposition: 'cleared', note: 'statement matches', disposed_by: 'j.doe' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ state: 'cleared', holds: false, disposed_at: new Date(c.clock.now()).toISOString() });
    expect(cleared.body.dispositions.map((d: { disposition: string; disposed_by: string }) => [d.disposition, d.disposed_by])).toEqual([
      ['needs_info', `api_key:${(await c.rows<{ id: string }>('SELECT id FROM api_keys WHERE lender_id = ?', l.id))[0]!.id}`],
      ['cleared', 'j.doe'],
    ]);
    c.clock.advance(20 * 60_000);
    await dispatchPayments(c.rt);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await payments(c, l, 'held')).toMatchObject([{ id: p!.id, status: 'settled' }]);
    expect((await dispose(c, l, a!.id, { disposition: 'confirmed_fraud' })).status).toBe(409);
    expect((await dispose(c, l, a!.id, { disposition: 'needs_info' })).status).toBe(409);
    expect((await c.json('GET', `/v1/fraud_alerts/${a!.id}`, { key: l.key })).body.dispositions).toHaveLength(2);
    expect(await alerts(c, l)).toHaveLength(1);
  });

  test('a hold that arrives after the send was planned and before it was claimed: the claim refuses, nothing reaches the processor', async () => {
    const l = await lender(c);
    await enroll(c, l, enrollBorrower('raced', { account_number: ownAccount(21), collectable_amount: 10000 }));
    await cycle(c);
    // The debit was sent in the cycle; a second borrower's is left due to drive by hand.
    await enroll(c, l, enrollBorrower('raced-2', { account_number: ownAccount(22), collectable_amount: 10000 }));
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    const due = (await c.rt.stores.dispatch.claimDuePayments({ deps: c.rt }, 10, c.clock.now())).find((d) => d.authorizerUniqueId === 'raced-2')!;
    expect(due).toBeDefined();
    const plan = await planSend({ deps: c.rt }, due);
    expect(plan.kind).toBe('planned');
    const enrollmentId = (await c.rows<{ id: string }>("SELECT id FROM enrollments WHERE authorizer_unique_id = 'raced-2' AND lender_id = ?", l.id))[0]!.id;
    await transaction({ deps: c.rt }, (tx) =>
      tx.deps.stores.fraud.insertAlert(tx, {
        id: 'hold-in-between',
        lenderId: l.id,
        rule: 'velocity',
        ruleVersion: 1,
        policyVersion: 1,
        action: 'hold',
        subject: 'raced',
        fact: 'raced',
        enrollmentId,
        aid: 'raced-2',
        bankAccountId: null,
        paymentId: due.id,
        details: '{}',
        createdAt: c.clock.now(),
      }),
    );
    const step = await sendPlanned({ deps: c.rt }, due, plan as Extract<typeof plan, { kind: 'planned' }>);
    expect(step.kind).toBe('wait');
    expect(await payments(c, l, 'raced-2')).toMatchObject([{ status: 'initiating', firstAttemptAt: null }]);
  });
});

describe('confirmed_fraud freezes the account: no payment to it goes out for any borrower', () => {
  const c = context();

  test('two borrowers on one account, both held; fraud confirmed on one: the account is frozen, both payments never attempted, both borrowers blocked', async () => {
    const l = await lender(c, { rules: { first_debit_unvalidated: { action: 'hold' } } }, { require_account_validation: false });
    await enroll(c, l, enrollBorrower('f-1', { routing_number: UNVALIDATED_BANK, account_number: ownAccount(30), collectable_amount: 10000 }));
    await enroll(c, l, enrollBorrower('f-2', { routing_number: UNVALIDATED_BANK, account_number: ownAccount(30), collectable_amount: 10000 }));
    await cycle(c);
    const found = await alerts(c, l, '?authorizer_unique_id=f-1');
    expect(found).toMatchObject([{ rule: 'first_debit_unvalidated', holds: true }]);
    const r = await dispose(c, l, found[0]!.id, { disposition: 'confirmed_fraud', note: 'the account holder never heard of the loan' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ state: 'confirmed_fraud', holds: false });
    const account = (await c.json('GET', `/v1/bank_accounts/${found[0]!.bank_account_id}`, { key: l.key })).body;
    expect(account).toMatchObject({ state: 'frozen', state_reference: `fraud_alert:${found[0]!.id}`, return_codes: [] });
    await tellAccountBlocks(c.rt);
    c.clock.advance(20 * 60_000);
    await dispatchPayments(c.rt);
    const left = await payments(c, l);
    expect(left.map((p) => [p.aid, p.status, p.firstAttemptAt])).toEqual([
      ['f-1', 'not_attempted', null],
      ['f-2', 'not_attempted', null],
    ]);
    for (const aid of ['f-1', 'f-2']) expect((await c.json('GET', `/v1/payment_enrollments/${aid}`, { key: l.key })).body.blocked_reason).toBe('account_frozen');
    // Reads go on for neither, and nothing new is made for them.
    c.clock.advance(READ);
    await run(c);
    expect(await payments(c, l)).toHaveLength(2);
  });
});
