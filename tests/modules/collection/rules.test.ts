// The collection rules: the planner of the next payment directly (a fake timeline), then end to end through
// the sandbox processor and the policy routes.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { DEFAULT_POLICY } from '../../../src/modules/collection-policy/policy';
import { chainPresentments, lateReturnWindowEnd, planPayment, REINITIATION_WINDOW_MS, type PastPayment } from '../../../src/modules/collection/rules';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { DAY_MS } from '../../../src/platform/clock';

const T0 = Date.UTC(2026, 10, 1);
let n = 0;
const pay = (status: string, code: string | null, at: number, over: Partial<PastPayment> = {}): PastPayment => ({
  id: `p${++n}`,
  status,
  returnCode: code,
  amountCents: 1000,
  attempt: 1,
  reinitiationOf: null,
  createdAt: at,
  updatedAt: at + DAY_MS,
  firstAttemptAt: at,
  reportedReturnCode: null,
  reportedAt: null,
  debitOn: null,
  noticeClass: null,
  ...over,
});
const plan = (history: PastPayment[], over: Partial<Parameters<typeof planPayment>[0]> = {}) =>
  planPayment({ history, authorizationAt: null, covered: false, policy: DEFAULT_POLICY, collectableCents: 1000, now: T0 + 10 * DAY_MS, ...over });

describe('the planner of the next payment', () => {
  test('nothing yet, or the last one settled: an original of the current amount', () => {
    expect(plan([])).toEqual({ ok: true, amountCents: 1000, attempt: 1, reinitiationOf: null });
    expect(plan([pay('settled', null, T0)], { collectableCents: 700 })).toEqual({ ok: true, amountCents: 700, attempt: 1, reinitiationOf: null });
  });

  test('after R01/R09: reinitiations of the original, at most the policy’s number', () => {
    const o = pay('returned', 'R01', T0);
    expect(plan([o])).toEqual({ ok: true, amountCents: 1000, attempt: 2, reinitiationOf: o.id });
    const r1 = pay('returned', 'R09', T0 + DAY_MS, { attempt: 2, reinitiationOf: o.id });
    expect(plan([o, r1])).toEqual({ ok: true, amountCents: 1000, attempt: 3, reinitiationOf: o.id });
    const r2 = pay('returned', 'R01', T0 + 2 * DAY_MS, { attempt: 3, reinitiationOf: o.id });
    expect(plan([o, r1, r2])).toEqual({ ok: false, blocked: 'reinitiation_limit' });
    expect(plan([o], { policy: { ...DEFAULT_POLICY, maxReinitiations: 0 } })).toEqual({ ok: false, blocked: 'reinitiation_limit' });
    expect(plan([o, r1], { policy: { ...DEFAULT_POLICY, maxReinitiations: 1 } })).toEqual({ ok: false, blocked: 'reinitiation_limit' });
  });

  test('a settled payment keeps its chain open until its late-return window passes: nothing new goes out before', () => {
    // Settled on Monday 2 November 2026; five business days later is Monday the 9th, so the window ends at its close.
    const o = pay('returned', 'R01', T0);
    const r1 = pay('settled', null, T0 + DAY_MS, { attempt: 2, reinitiationOf: o.id, updatedAt: Date.UTC(2026, 10, 2, 15) });
    const end = lateReturnWindowEnd(r1.updatedAt, 5);
    expect(end).toBe(Date.UTC(2026, 10, 10));
    expect(plan([o, r1], { now: end - 1 })).toEqual({ ok: false, blocked: 'late_return_window' });
    expect(chainPresentments([o, r1], null, end - 1, 5)).toBe(2);
    // Its window passed: the debt stayed collected, and the next payment is a new debt's original.
    expect(plan([o, r1], { now: end })).toEqual({ ok: true, amountCents: 1000, attempt: 1, reinitiationOf: null });
    expect(chainPresentments([o, r1], null, end, 5)).toBe(0);
    // Returned late inside it: the chain's failure, and its last reinitiation follows.
    const late = { ...r1, status: 'late_returned', returnCode: 'R01', updatedAt: end - DAY_MS };
    expect(plan([o, late], { now: end + DAY_MS })).toEqual({ ok: true, amountCents: 1000, attempt: 3, reinitiationOf: o.id });
    // Under the payday rule that is the second failure in a row: a new authorization is needed.
    expect(plan([o, late], { now: end + DAY_MS, covered: true })).toEqual({ ok: false, blocked: 'reauthorization_required' });
    // A longer window from the policy holds longer; a new authorization does not end the wait for the money.
    const policy = { ...DEFAULT_POLICY, lateReturnWindowDays: 10 };
    expect(plan([o, r1], { now: end, policy })).toEqual({ ok: false, blocked: 'late_return_window' });
    expect(plan([o, r1], { now: end - 1, authorizationAt: end - 2 })).toEqual({ ok: false, blocked: 'late_return_window' });
  });

  test('payments_used counts the open chain, a payment in flight where it stands', () => {
    const o = pay('returned', 'R01', T0);
    const r1 = pay('returned', 'R01', T0 + DAY_MS, { attempt: 2, reinitiationOf: o.id });
    const r2 = pay('processing', null, T0 + 2 * DAY_MS, { attempt: 3, reinitiationOf: o.id });
    // An authorization obtained while the third presentment is in flight does not close its chain.
    expect(chainPresentments([o, r1, r2], T0 + 2 * DAY_MS + 1, T0 + 3 * DAY_MS, 5)).toBe(3);
    expect(chainPresentments([o, r1], null, T0 + 3 * DAY_MS, 5)).toBe(2);
    // An authorization after the last return: the next payment starts a new chain.
    expect(chainPresentments([o, r1], r1.updatedAt + 1, T0 + 3 * DAY_MS, 5)).toBe(0);
    expect(chainPresentments([pay('returned', 'R02', T0)], null, T0 + 3 * DAY_MS, 5)).toBe(0);
  });

  test('never later than 180 days after the original first reached the processor', () => {
    const o = pay('returned', 'R01', T0);
    expect(plan([o], { now: T0 + REINITIATION_WINDOW_MS })).toMatchObject({ ok: true, attempt: 2 });
    expect(plan([o], { now: T0 + REINITIATION_WINDOW_MS + 1 })).toEqual({ ok: false, blocked: 'reinitiation_window' });
  });

  test('with reinitiation_amount original: the returned amount, and none when the collectable amount dropped below it', () => {
    const o = pay('returned', 'R01', T0, { amountCents: 1000 });
    const policy = { ...DEFAULT_POLICY, reinitiationAmount: 'original' as const };
    expect(plan([o], { policy, collectableCents: 1500 })).toEqual({ ok: true, amountCents: 1000, attempt: 2, reinitiationOf: o.id });
    expect(plan([o], { policy, collectableCents: 999 })).toEqual({ ok: false, blocked: 'amount_changed' });
    // A new authorization starts afresh: an original of the current amount.
    expect(plan([o], { policy, collectableCents: 999, authorizationAt: o.updatedAt + 1 })).toEqual({ ok: true, amountCents: 999, attempt: 1, reinitiationOf: null });
  });

  test('an R08 the lender uploaded counts at once, before its processor confirms it', () => {
    const p = pay('settled', null, T0, { reportedReturnCode: 'R08', reportedAt: T0 + 2 * DAY_MS });
    expect(plan([p])).toEqual({ ok: false, blocked: 'reauthorization_required' });
    expect(plan([p], { authorizationAt: T0 + 2 * DAY_MS + 1 })).toEqual({ ok: true, amountCents: 1000, attempt: 1, reinitiationOf: null });
    // Another code reported is nothing until the processor says it.
    expect(plan([{ ...p, reportedReturnCode: 'R01' }])).toEqual({ ok: true, amountCents: 1000, attempt: 1, reinitiationOf: null });
  });

  test('R08 waits on an authorization later than the stop, across re-sends', () => {
    const stop = pay('returned', 'R08', T0 - 40 * DAY_MS);
    expect(plan([stop])).toEqual({ ok: false, blocked: 'reauthorization_required' });
    expect(plan([stop], { authorizationAt: stop.updatedAt - 1 })).toEqual({ ok: false, blocked: 'reauthorization_required' });
    expect(plan([stop], { authorizationAt: stop.updatedAt + 1 })).toMatchObject({ ok: true, attempt: 1 });
  });

  test('the payday rule: two consecutive failures for funds stop a covered borrower until a new authorization under the rule; a settlement resets', () => {
    const a = pay('returned', 'R01', T0);
    const b = pay('returned', 'R09', T0 + DAY_MS, { attempt: 2, reinitiationOf: a.id });
    expect(plan([a, b])).toMatchObject({ ok: true, attempt: 3 });
    expect(plan([a, b], { covered: true })).toEqual({ ok: false, blocked: 'reauthorization_required' });
    // A re-send's authorization, whenever dated, lifts nothing for a covered borrower (12 CFR 1041.8(c) asks for
    // one naming dates, amounts and a channel); it still does for one the rule does not cover.
    for (const at of [a.updatedAt - 1, b.updatedAt - 1, b.updatedAt + 1]) {
      expect(plan([a, b], { covered: true, authorizationAt: at })).toEqual({ ok: false, blocked: 'reauthorization_required' });
    }
    expect(plan([a, b], { covered: false, authorizationAt: b.updatedAt + 1 })).toEqual({ ok: true, amountCents: 1000, attempt: 1, reinitiationOf: null });
    // A new authorization under the rule from before both failures does not lift it; one between them restarts the count; one after them lifts it.
    expect(plan([a, b], { covered: true, reauthorizedAt: a.updatedAt - 1 })).toEqual({ ok: false, blocked: 'reauthorization_required' });
    expect(plan([a, b], { covered: true, reauthorizedAt: b.updatedAt - 1 })).toMatchObject({ ok: true });
    expect(plan([a, b], { covered: true, reauthorizedAt: b.updatedAt + 1 })).toEqual({ ok: true, amountCents: 1000, attempt: 1, reinitiationOf: null });
    // Counted across channels and enrollment periods; broken by a settlement, or by anything that is not a failure for funds.
    const s = pay('settled', null, T0 + 2 * DAY_MS);
    const c = pay('returned', 'R01', T0 + 3 * DAY_MS);
    expect(plan([a, b, s, c], { covered: true })).toMatchObject({ ok: true });
    const older = pay('returned', 'R01', T0 - 60 * DAY_MS);
    expect(plan([older, pay('returned', 'R01', T0 + 4 * DAY_MS)], { covered: true })).toEqual({ ok: false, blocked: 'reauthorization_required' });
    // A payment the borrower asked for is outside the count: settled, it lifts nothing; returned, it is no failure and is never reinitiated.
    const asked = (status: string, code: string | null) => pay(status, code, T0 + 2 * DAY_MS, { noticeClass: 'consumer_initiated' });
    expect(plan([a, b, asked('settled', null)], { covered: true })).toEqual({ ok: false, blocked: 'reauthorization_required' });
    expect(plan([a, asked('returned', 'R01')], { covered: true })).toMatchObject({ ok: true, attempt: 2, reinitiationOf: a.id });
    expect(plan([asked('returned', 'R01')])).toEqual({ ok: true, amountCents: 1000, attempt: 1, reinitiationOf: null });
    // Payments that never reached the account are not failures.
    expect(plan([a, pay('not_attempted', null, T0 + DAY_MS)], { covered: true })).toMatchObject({ ok: true });
  });
});

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
const SETTLE = 60_000;
const READ = 3_600_000;

async function setup() {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) });
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_rules_e2e_0000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
  return c;
}
/** Reads and payments until the borrower rests: each returned R01 after one settlement period. */
async function run(c: TestContext, rounds: number) {
  for (let i = 0; i < rounds; i++) {
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    c.clock.advance(READ);
  }
}
const view = async (c: TestContext, id: string) => (await c.json('GET', `/v1/payment_enrollments/${id}`)).body;

describe('collection inside the rules, end to end (sandbox)', () => {
  test('the policy: defaults, a change, and refusals naming the field', async () => {
    const c = await setup();
    expect((await c.json('GET', '/v1/collection_policy')).body).toEqual({ cfpb_covered: false, max_reinitiations: 2, reinitiation_amount: 'current', notice_days: 0, return_rate_pause: false, read_cadence: 'payday', debit_buffer_cents: 0, time_zone: null, late_return_window_days: 5, allow_current_balance: false, current_balance_buffer_cents: 0, max_balance_age_minutes: 60, apply_notifications_of_change: 'automatic', require_account_validation: true, account_return_states: {}, notice_channel: 'electronic', reg_e_election: { type: 'none' }, updated_at: null });
    const r = await c.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: true } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ cfpb_covered: true, max_reinitiations: 2, reinitiation_amount: 'current', notice_days: 0, updated_at: expect.any(String) });
    for (const [body, field] of [
      [{}, ''],
      [{ max_reinitiations: 3 }, 'max_reinitiations'],
      [{ reinitiation_amount: 'half' }, 'reinitiation_amount'],
      [{ cfpb_covered: 'yes' }, 'cfpb_covered'],
      [{ notice_days: 11 }, 'notice_days'],
      [{ notice_days: 1.5 }, 'notice_days'],
      [{ return_rate_pause: 'on' }, 'return_rate_pause'],
      [{ read_cadence: 'hourly' }, 'read_cadence'],
      [{ debit_buffer_cents: -1 }, 'debit_buffer_cents'],
      [{ time_zone: 'Mars/Olympus_Mons' }, 'time_zone'],
      [{ time_zone: '+05:00' }, 'time_zone'],
      [{ time_zone: '' }, 'time_zone'],
      [{ time_zone: 5 }, 'time_zone'],
      [{ late_return_window_days: 1 }, 'late_return_window_days'],
      [{ late_return_window_days: 61 }, 'late_return_window_days'],
      [{ paused: true }, ''],
      [{ apply_notifications_of_change: 'later' }, 'apply_notifications_of_change'],
      [{ require_account_validation: 'yes' }, 'require_account_validation'],
      [{ account_return_states: { R10: 'ok' } }, 'account_return_states'],
      [{ account_return_states: { X10: 'frozen' } }, 'account_return_states'],
      // Looser than Nacha's table: R02 closes the account (invalid); unauthorized would let a new authorization lift it.
      [{ account_return_states: { R02: 'unauthorized' } }, 'account_return_states/R02'],
      [{ notice_channel: 'fax' }, 'notice_channel'],
      // Covered (set above): the lead of the payday rule's notices stays inside their electronic window (3 to 7 business days).
      [{ notice_channel: 'electronic', notice_days: 2 }, 'notice_days'],
      [{ notice_channel: 'electronic', notice_days: 8 }, 'notice_days'],
      [{ notice_channel: 'mail', notice_days: 5 }, 'notice_days'],
      [{ reg_e_election: { type: 'sometimes' } }, 'reg_e_election'],
      [{ reg_e_election: { type: 'outside_range', min_cents: 500, max_cents: 100 } }, 'reg_e_election/min_cents'],
    ] as const) {
      const bad = await c.json('PATCH', '/v1/collection_policy', { body });
      expect(bad.status).toBe(400);
      if (field) expect(JSON.stringify(bad.body)).toContain(field);
    }
    // A time zone: stored in its canonical spelling; null is UTC again; a refused one changed nothing.
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { time_zone: 'america/chicago' } })).body.time_zone).toBe('America/Chicago');
    const unknownZone = await c.json('PATCH', '/v1/collection_policy', { body: { time_zone: 'Mars/Olympus_Mons' } });
    expect(unknownZone.body.error.message).toContain('Unknown time zone');
    expect((await c.json('GET', '/v1/collection_policy')).body.time_zone).toBe('America/Chicago');
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: false } })).body.time_zone).toBe('America/Chicago');
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { time_zone: null } })).body.time_zone).toBeNull();
    // Another lender has its own policy.
    const other = c.newLender();
    expect((await c.json('GET', '/v1/collection_policy', { key: other.key })).body.cfpb_covered).toBe(false);
    expect((await c.json('GET', '/v1/collection_policy', { key: null })).status).toBe(401);
  });

  test('a covered borrower is not debited a third time after two failures for funds; only a new authorization under the rule lifts it, for its dates and amounts', async () => {
    const c = await setup();
    // The payday rule's payment notices are the lender's own here (payment-notices.test.ts binds them).
    await c.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: true, notice_channel: null } });
    // Cents 91: every debit is returned R01.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('nsf', { collectable_amount: 1091 })] } });
    await run(c, 5);
    let v = await view(c, 'nsf');
    expect(v.payments.map((p: { status: string; attempt: number }) => `${p.status}:${p.attempt}`)).toEqual(['returned:1', 'returned:2']);
    expect(v).toMatchObject({ state: 'monitored', blocked_reason: 'reauthorization_required' });
    expect(v.payments[1].reinitiation_of).toBe(v.payments[0].reference);
    // The reinitiation was sent as one.
    const described = c.sql.query('SELECT entry_description AS d FROM sandbox_payments ORDER BY created_at').all() as { d: string | null }[];
    expect(described.map((x) => x.d)).toEqual([null, 'RETRY PYMT']);
    // A re-send with an authorization obtained now (after the second failure) lifts nothing: it names no dates.
    const now = new Date(c.clock.now()).toISOString();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('nsf', { collectable_amount: 1091, authorization: { obtained_at: now, reference: 'AUTH-2' } })] } });
    await run(c, 1);
    v = await view(c, 'nsf');
    expect(v.authorization).toEqual({ obtained_at: now, reference: 'AUTH-2' });
    expect(v).toMatchObject({ blocked_reason: 'reauthorization_required' });
    expect(v.payments).toHaveLength(2);
    // A new authorization under the rule is asked for only once the rights notice is sent.
    const today = now.slice(0, 10);
    const auth = (obtainedAt: string, transfers: unknown[]) =>
      c.json('POST', '/v1/payment_enrollments/nsf/authorizations', { body: { obtained_at: obtainedAt, method: 'signed', evidence_ref: 'AUTH-3', transfers } });
    const one = [{ date: today, max_amount_cents: 1000, channel: 'ach' }];
    expect((await auth(now, one)).status).toBe(409);
    expect((await c.json('POST', '/v1/payment_enrollments/nsf/rights_notice', { body: { sent_at: now, channel: 'electronic' } })).status).toBe(200);
    c.clock.advance(60_000);
    const later = new Date(c.clock.now()).toISOString();
    // Refused: obtained before the notice was sent; a date before it was obtained; a date twice.
    expect((await auth(new Date(Date.parse(now) - 1).toISOString(), one)).status).toBe(400);
    expect((await auth(later, [{ date: '2026-01-02', max_amount_cents: 1000, channel: 'ach' }]))).toMatchObject({ status: 400, body: { error: { details: { errors: [{ path: '/transfers/0/date' }] } } } });
    expect((await auth(later, [...one, ...one])).status).toBe(400);
    const r = await auth(later, one);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ blocked_reason: null, reauthorization: { obtained_at: later, method: 'signed', transfers: one } });
    expect((await view(c, 'nsf')).reauthorization).toEqual(r.body.reauthorization);
    expect((await c.json('GET', '/v1/payment_enrollments/nsf/authorizations')).body).toEqual({ authorizer_unique_id: 'nsf', authorizations: [r.body.reauthorization] });
    // Debited on its date, for at most its amount: attempt 1 of a new chain, 1000 cents of the 1091 collectable.
    await run(c, 1);
    v = await view(c, 'nsf');
    expect(v.payments.map((p: { attempt: number; amount: number; notice_class: string }) => [p.attempt, p.amount, p.notice_class])).toEqual([
      [1, 1091, 'first'],
      [2, 1091, 'reinitiation'],
      [1, 1000, 'regular'],
    ]);
    // Its one date used, nothing more goes out (the sandbox returns it: cents 00 settle, but the date is gone either way).
    await run(c, 3);
    v = await view(c, 'nsf');
    expect(v.payments).toHaveLength(3);
  });

  test('not covered: the spec’s default, an original and two reinitiations', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('plain', { collectable_amount: 1091 })] } });
    await run(c, 5);
    const v = await view(c, 'plain');
    expect(v.payments.map((p: { attempt: number }) => p.attempt)).toEqual([1, 2, 3]);
  });

  test('max_reinitiations 0: no reinitiation after R01', async () => {
    const c = await setup();
    await c.json('PATCH', '/v1/collection_policy', { body: { max_reinitiations: 0 } });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('once', { collectable_amount: 1091 })] } });
    await run(c, 4);
    const v = await view(c, 'once');
    expect(v.payments).toHaveLength(1);
    expect(v.blocked_reason).toBe('reinitiation_limit');
  });

  test('an authorization in the future is refused for that borrower', async () => {
    const c = await setup();
    const future = new Date(c.clock.now() + DAY_MS).toISOString();
    const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('early', { authorization: { obtained_at: future } })] } });
    expect(r.body.results[0]).toMatchObject({ outcome: 'failed', reason: 'tokenization_failed', message: expect.stringContaining('authorization.obtained_at') });
  });

  test('a card declined as stolen (sandbox cents 89) stops the borrower with the code, and nothing more is tried on the card', async () => {
    const c = await setup();
    const card = { processor_token: 'sbxpm_rules_card', card_last4: '4242' };
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('stolen', { collectable_amount: 1089, charge_instrument: card })] } });
    await run(c, 4);
    const v = await view(c, 'stolen');
    expect(v).toMatchObject({ state: 'stopped', reason: 'stolen_card' });
    expect(v.payments).toHaveLength(1);
    expect((c.sql.query('SELECT COUNT(*) AS n FROM sandbox_payments').get() as { n: number }).n).toBe(1);
  });
});

describe('notice before debit (notice_days)', () => {
  // Wednesday 25 November 2026, 12:00 UTC: Thursday is Thanksgiving, so two business days on is Monday the 30th.
  const AT = '2026-11-25T12:00:00.000Z';
  async function noticed(aid: string, amount = 1000) {
    const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) }, { clockAt: AT });
    contexts.push(c);
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_notice_e2e_00000000001', rail_scope: 'both', is_default: true } });
    await c.json('PATCH', '/v1/collection_policy', { body: { notice_days: 2 } });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: amount })] } });
    await cycle(c);
    return c;
  }
  const atProcessor = (c: TestContext) => (c.sql.query('SELECT COUNT(*) AS n FROM sandbox_payments').get() as { n: number }).n;

  test('scheduled for its business day, nothing reaches the processor before it, then debited with the notice’s amount', async () => {
    const c = await noticed('told');
    let v = await view(c, 'told');
    expect(v.scheduled_payment).toMatchObject({ amount: 1000, debit_on: '2026-11-30' });
    expect(v.payments.map((p: { status: string }) => p.status)).toEqual(['scheduled']);
    // Reads every hour up to the last minute of Sunday the 29th: still nothing at the processor.
    while (c.clock.now() < Date.parse('2026-11-30T00:00:00.000Z') - READ) {
      c.clock.advance(READ);
      await cycle(c);
      expect(atProcessor(c)).toBe(0);
    }
    c.clock.set(Date.parse('2026-11-30T00:30:00.000Z'));
    await cycle(c);
    await dispatchPayments(c.rt);
    expect(atProcessor(c)).toBe(1);
    const amount = (c.sql.query('SELECT amount_cents AS a FROM sandbox_payments').get() as { a: number }).a;
    expect(amount).toBe(1000);
    v = await view(c, 'told');
    expect(v.scheduled_payment).toBeNull();
    expect(v.payments[0].reference).toBe(v.payments[0].reference);
  });

  test('removed before its day: voided at once, and nothing ever reaches the processor', async () => {
    const c = await noticed('gone-early');
    const ref = (await view(c, 'gone-early')).scheduled_payment.reference;
    expect((await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['gone-early'] } })).body.removed).toBe(1);
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=gone-early')).body.events;
    expect(events).toEqual([expect.objectContaining({ reference: ref, status: 'voided', source: 'service' })]);
    c.clock.advance(10 * DAY_MS);
    await cycle(c);
    await dispatchPayments(c.rt);
    expect(atProcessor(c)).toBe(0);
    expect((await view(c, 'gone-early')).payments_used).toBe(0);
  });

  test('the amount changed before its day: voided on the day, never debited with another amount', async () => {
    const c = await noticed('changed', 1000);
    const ref = (await view(c, 'changed')).scheduled_payment.reference;
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('changed', { collectable_amount: 1200 })] } });
    c.clock.set(Date.parse('2026-11-30T00:30:00.000Z'));
    await cycle(c);
    await dispatchPayments(c.rt);
    expect(atProcessor(c)).toBe(0);
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=changed')).body.events;
    expect(events).toEqual([expect.objectContaining({ reference: ref, status: 'voided', source: 'service', message: expect.stringContaining('amount changed') })]);
  });
});

