// engine: both
// Notifications of Change and validation evidence, end to end: a C01 uploaded is applied to every borrower on
// the account and the next debit (through the real Stripe adapter, against the fake Stripe server) carries
// the corrected number, due six banking days after receipt; under `review` nothing goes out until the lender
// applies it, however long it waits; a first debit to an account without validation evidence is never sent,
// and the same account with a bank link (Plaid, against the fake Plaid server) or the lender's evidence is.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower, SANDBOX_BANK } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { openBorrower } from '../../../src/modules/enrollments/borrower';
import { fromResponseBody } from '../../../src/adapters/bank-data/http-contract';
import { startFakeStripe } from '../../fakes/stripe-server';
import { startFakePlaid } from '../../fakes/plaid-server';
import { changeDueBy } from '../../../src/modules/bank-accounts/changes';
import { applyReceivedChanges } from '../../../src/modules/collection/account-changes';
import { tellAccountBlocks } from '../../../src/modules/collection/account-blocks';
import { addBusinessDays } from '../../../src/platform/business-days';
import { SANDBOX_ROUTING_NUMBERS } from '../../../src/adapters/routing';
import { searchBorrowers } from '../../../src/modules/enrollments/search';
import type { Ctx } from '../../../src/deps';

const DAY = 86_400_000;
const READ_EVERY = 3_600_000;
const stripe = startFakeStripe();
const plaid = startFakePlaid();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  stripe.stop();
  plaid.stop();
});

let n = 0;
/** A service whose ACH debits go to the fake Stripe (so what a debit was sent with can be read back). */
async function setup(policy: Record<string, unknown> = {}) {
  const c = createTestContext({ STRIPE_API_URL: stripe.url, PLAID_API_URL: plaid.url, MONITOR_READ_INTERVAL_MS: String(READ_EVERY) });
  contexts.push(c);
  const key = `sk_test_noc_${String(++n).padStart(24, '0')}`;
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'ach', is_default: true } })).status).toBe(201);
  expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/hooks', event_types: ['ACCOUNT_CHANGE_NOTIFIED', 'ACCOUNT_CORRECTED', 'ENROLLMENT_BLOCKED'] } })).status).toBe(201);
  if (Object.keys(policy).length > 0) expect((await c.json('PATCH', '/v1/collection_policy', { body: policy })).status).toBe(200);
  return { c, key };
}

const enroll = async (c: TestContext, ...borrowers: Record<string, unknown>[]) => {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
  expect(r.status).toBe(207);
  return r.body.results as { authorizer_unique_id: string; outcome: string; message?: string }[];
};
const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;
const account = async (c: TestContext, id: string) => (await c.json('GET', `/v1/bank_accounts/${id}`)).body;
async function upload(c: TestContext, csv: string, opts: { dryRun?: boolean } = {}) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'changes.csv');
  const r = await c.json('POST', `/v1/payment_results/uploads${opts.dryRun ? '?dry_run=true' : ''}`, { form });
  expect(r.status).toBe(200);
  return r.body;
}
/** The account numbers of the debits sent to Stripe with this key, in order. */
const sentTo = (key: string) =>
  stripe.requests
    .filter((r) => r.key === key && r.method === 'POST' && r.path === '/v1/payment_intents')
    .map((r) => (r.params as { payment_method_data?: { us_bank_account?: { account_number?: string; account_type?: string } } }).payment_method_data?.us_bank_account);
const pushes = async (c: TestContext, type: string) =>
  (await c.rows<{ payload: string }>('SELECT payload FROM webhook_deliveries WHERE type = ? ORDER BY created_at, id', type)).map((d) => JSON.parse(d.payload));
const payments = (c: TestContext, aid: string) => c.rows<{ status: string }>('SELECT status FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id', aid);

describe('a Notification of Change uploaded is applied to every borrower on the account', () => {
  test('a C01: due six banking days after receipt, applied at once, and the next debit uses the corrected number', async () => {
    // No debit before the change: the balance does not cover the buffer.
    const { c, key } = await setup({ debit_buffer_cents: 10_000_000 });
    await enroll(c, enrollBorrower('a', { collectable_amount: 42500 }), enrollBorrower('b', { collectable_amount: 42500 }));
    await cycle(c);
    expect(sentTo(key)).toEqual([]);
    const accountId = (await view(c, 'a')).bank_account_id;
    expect((await view(c, 'b')).bank_account_id).toBe(accountId);
    expect((await account(c, accountId)).validation).toMatchObject({ method: 'bank_link', source: 'sandbox', current: true });

    // A processor's NOC report: no status column; the code as banks word it.
    const csv = 'Authorizer ID,NOC Code,Corrected Data\na,C01 - Incorrect DFI Account Number,000 9876 543\n';
    const dry = await upload(c, csv, { dryRun: true });
    expect(dry).toMatchObject({ format: 'notifications_of_change', notifications_of_change: 1, dry_run: true, row_count: 0 });
    expect((await account(c, accountId)).changes).toEqual([]);
    const receivedAt = c.clock.now();
    const report = await upload(c, csv);
    expect(report).toMatchObject({ format: 'notifications_of_change', notifications_of_change: 1, data_row_count: 1 });
    expect(report.problems).toEqual([]);
    const held = await account(c, accountId);
    expect(held.pending_change_id).toEqual(expect.any(String));
    expect(held.changes).toEqual([
      {
        bank_account_id: accountId,
        change_id: held.pending_change_id,
        code: 'C01',
        source: 'upload',
        reference: null,
        old_last4: '4567',
        new_last4: '6543',
        status: 'received',
        received_at: new Date(receivedAt).toISOString(),
        due_by: new Date(changeDueBy(receivedAt)).toISOString(),
        applied_at: null,
        applied_by: null,
      },
    ]);
    // Six banking days: weekends and Federal Reserve holidays are not counted.
    expect(changeDueBy(receivedAt)).toBe(addBusinessDays(receivedAt, 6) + DAY - 1);
    expect(JSON.stringify(held)).not.toContain('9876543');
    expect(await pushes(c, 'ACCOUNT_CHANGE_NOTIFIED')).toMatchObject([{ code: 'C01', old_last4: '4567', new_last4: '6543', status: 'received' }]);
    // The same report again records nothing twice.
    const again = await upload(c, csv);
    expect(again.notifications_of_change).toBe(0);
    expect(again.problems).toMatchObject([{ row: 2, severity: 'warning' }]);
    expect(again.problems[0].reason).toContain('recorded by an earlier upload');

    // Applied: both borrowers have the corrected details; the account its new last four; validation asked again.
    // Two appliers at once (two replicas, or the job twice): applied once, told once.
    const both = await Promise.all([applyReceivedChanges(c.rt), applyReceivedChanges(c.rt)]);
    expect(both.map((r) => r.applied).sort()).toEqual([0, 1]);
    expect(await applyReceivedChanges(c.rt)).toEqual({ applied: 0 });
    const corrected = await account(c, accountId);
    expect(corrected).toMatchObject({ last4: '6543', pending_change_id: null, enrollment_count: 2, validation: { current: false } });
    expect(corrected.number_changed_at).toEqual(expect.any(String));
    expect(corrected.changes[0]).toMatchObject({ status: 'applied', applied_by: 'automatic' });
    expect(await pushes(c, 'ACCOUNT_CORRECTED')).toMatchObject([{ code: 'C01', old_last4: '4567', new_last4: '6543', status: 'applied' }]);
    // Found by its new last four; never by the old one.
    const search = async (q: string) => (await searchBorrowers({ ctx: { lender: { id: c.lender.id, name: 'noc', debitCardApproved: false }, deps: c.rt } as Ctx, input: { q } })).matches.map((m) => m.authorizer_unique_id).sort();
    expect(await search('6543')).toEqual(['a', 'b']);
    expect(await search('4567')).toEqual([]);
    await tellAccountBlocks(c.rt);
    expect(await view(c, 'a')).toMatchObject({ state: 'monitored', blocked_reason: 'validation_required' });

    // Validated again (the lender's micro-deposits after the correction), and the buffer lifted: the debit goes
    c.clock.advance(60_000);
    // out with the corrected number, never the old one.
    await enroll(c, enrollBorrower('a', { account_number: '0009876543', collectable_amount: 42500, account_validation: { method: 'micro_deposits', reference: 'md-1', validated_at: new Date(c.clock.now()).toISOString() } }));
    expect((await view(c, 'a')).bank_account_id).toBe(accountId);
    expect(await view(c, 'a')).toMatchObject({ blocked_reason: null });
    expect((await account(c, accountId)).validation).toMatchObject({ method: 'micro_deposits', reference: 'md-1', current: true });
    // b, on the same account, is told: its block lifts too.
    expect(await view(c, 'b')).toMatchObject({ blocked_reason: 'validation_required' });
    await tellAccountBlocks(c.rt);
    expect(await view(c, 'b')).toMatchObject({ blocked_reason: null });
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { debit_buffer_cents: 0 } })).status).toBe(200);
    c.clock.advance(READ_EVERY);
    await cycle(c);
    expect(sentTo(key).map((s) => s?.account_number)).toEqual(['0009876543', '0009876543']);
  });

  test('a C02 and a C05 in a results file: the routing number and the account type the next debit carries; C09 is recorded only', async () => {
    const { c, key } = await setup({ debit_buffer_cents: 10_000_000, require_account_validation: false });
    await enroll(c, enrollBorrower('r', { collectable_amount: 42500 }), enrollBorrower('t', { collectable_amount: 42500, account_number: '0002345678' }), enrollBorrower('i', { collectable_amount: 42500, account_number: '0003456789' }));
    const csv =
      'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code,change_code,corrected_data\n' +
      // A row of results that carries a NOC: the outcome is recorded, and the change too.
      `r,INV-1,425.00,returned,2026-01-05,,2026-01-07,R01,C02,${SANDBOX_ROUTING_NUMBERS.unvalidated}\n` +
      't,INV-2,425.00,returned,2026-01-05,,2026-01-07,R01,C05,37\n' +
      'i,INV-3,425.00,returned,2026-01-05,,2026-01-07,R01,C09,ID-778899\n' +
      // One that cannot be read: the outcome is recorded, the change is not, and the report says why.
      'i,INV-4,425.00,returned,2026-01-05,,2026-01-07,R01,C02,123456789\n';
    const report = await upload(c, csv);
    expect(report).toMatchObject({ format: 'generic', row_count: 4, notifications_of_change: 3 });
    expect(report.problems).toMatchObject([{ row: 5, severity: 'warning' }]);
    expect(report.problems[0].reason).toContain('C02');
    expect(await applyReceivedChanges(c.rt)).toEqual({ applied: 2 });
    const routed = await account(c, (await view(c, 'r')).bank_account_id);
    expect(routed.changes[0]).toMatchObject({ code: 'C02', status: 'applied', old_last4: '4567', new_last4: '4567' });
    const typed = await account(c, (await view(c, 't')).bank_account_id);
    expect(typed).toMatchObject({ account_type: 'savings', number_changed_at: null });
    const recorded = await account(c, (await view(c, 'i')).bank_account_id);
    expect(recorded).toMatchObject({ pending_change_id: null, changes: [{ code: 'C09', status: 'recorded', applied_by: 'none' }] });
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { debit_buffer_cents: 0 } })).status).toBe(200);
    await cycle(c);
    const sent = sentTo(key);
    expect(sent).toHaveLength(3);
    expect(sent.find((s) => s?.account_number === '0002345678')).toMatchObject({ account_type: 'savings' });
    expect(sent.find((s) => s?.account_number === '0001234567')!.account_type).toBeUndefined();
    const r = stripe.requests.find((q) => q.key === key && q.path === '/v1/payment_intents' && (q.params as any).payment_method_data?.us_bank_account?.account_number === '0001234567');
    expect((r!.params as any).payment_method_data.us_bank_account.routing_number).toBe(SANDBOX_ROUTING_NUMBERS.unvalidated);
  });

  test('under review: no debit goes out until the lender applies it, even past due_by; then it does, with the new number', async () => {
    const { c, key } = await setup({ apply_notifications_of_change: 'review', require_account_validation: false, debit_buffer_cents: 10_000_000 });
    await enroll(c, enrollBorrower('a', { collectable_amount: 42500 }));
    const accountId = (await view(c, 'a')).bank_account_id;
    await upload(c, 'authorizer_unique_id,change_code,corrected_data\na,C01,0009876543\n');
    const held = await account(c, accountId);
    expect(held.changes[0]).toMatchObject({ status: 'review' });
    expect(await applyReceivedChanges(c.rt)).toEqual({ applied: 0 });
    await tellAccountBlocks(c.rt);
    expect(await view(c, 'a')).toMatchObject({ state: 'monitored', blocked_reason: 'account_change_pending' });
    expect((await pushes(c, 'ENROLLMENT_BLOCKED')).filter((p) => p.authorizer_unique_id === 'a')).toMatchObject([{ blocked_reason: 'account_change_pending' }]);
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { debit_buffer_cents: 0 } })).status).toBe(200);
    // Past due_by and beyond: nothing goes to the old details, or at all.
    for (let i = 0; i < 3; i++) {
      c.clock.advance(5 * DAY);
      await cycle(c);
    }
    expect(sentTo(key)).toEqual([]);
    expect(await payments(c, 'a')).toEqual([]);
    // Another lender cannot apply it; a wrong account is not found.
    const other = c.newLender();
    expect((await c.json('POST', `/v1/bank_accounts/${accountId}/changes/${held.pending_change_id}/apply`, { key: other.key })).status).toBe(404);
    expect((await c.json('POST', `/v1/bank_accounts/no-such/changes/${held.pending_change_id}/apply`)).status).toBe(404);
    const applied = await c.json('POST', `/v1/bank_accounts/${accountId}/changes/${held.pending_change_id}/apply`);
    expect(applied.status).toBe(200);
    expect(applied.body).toMatchObject({ status: 'applied', applied_by: 'lender', new_last4: '6543' });
    expect((await c.json('POST', `/v1/bank_accounts/${accountId}/changes/${held.pending_change_id}/apply`)).status).toBe(409);
    await tellAccountBlocks(c.rt);
    expect(await view(c, 'a')).toMatchObject({ blocked_reason: null });
    c.clock.advance(READ_EVERY);
    await cycle(c);
    expect(sentTo(key).map((s) => s?.account_number)).toEqual(['0009876543']);
  });
});

describe('an account sold to another bank (R12)', () => {
  test('invalid until a new routing number is applied, then ok for every borrower on it; with another code kept beside it, it stays invalid', async () => {
    const { c } = await setup({ require_account_validation: false });
    await enroll(c, enrollBorrower('sold-1', { collectable_amount: 9_000_000 }), enrollBorrower('sold-2', { collectable_amount: 9_000_000 }));
    await enroll(c, enrollBorrower('closed', { account_number: '0007654321', collectable_amount: 9_000_000 }), enrollBorrower('closed-2', { account_number: '0007654321', collectable_amount: 9_000_000 }));
    const results = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\n';
    await upload(c, results + 'sold-1,EXT-R12,10.00,returned,2026-01-05,,2026-01-07,R12\nclosed,EXT-R12B,10.00,returned,2026-01-05,,2026-01-07,R12\nclosed,EXT-R02,10.00,returned,2026-01-06,,2026-01-08,R02\n');
    const sold = (await view(c, 'sold-2')).bank_account_id;
    const closed = (await view(c, 'closed')).bank_account_id;
    expect(await account(c, sold)).toMatchObject({ state: 'invalid', return_codes: ['R12'] });
    expect(await account(c, closed)).toMatchObject({ state: 'invalid', return_codes: ['R12', 'R02'] });
    await tellAccountBlocks(c.rt);
    expect(await view(c, 'sold-2')).toMatchObject({ blocked_reason: 'account_invalid' });
    // The bank's correction: the new routing number.
    await upload(c, `authorizer_unique_id,change_code,corrected_data\nsold-2,C02,${SANDBOX_ROUTING_NUMBERS.unvalidated}\nclosed,C02,${SANDBOX_ROUTING_NUMBERS.unvalidated}\n`);
    expect(await applyReceivedChanges(c.rt)).toEqual({ applied: 2 });
    expect(await account(c, sold)).toMatchObject({ state: 'ok', state_reference: null, return_codes: ['R12'] });
    expect(await account(c, closed)).toMatchObject({ state: 'invalid' });
    await tellAccountBlocks(c.rt);
    expect(await view(c, 'sold-2')).toMatchObject({ blocked_reason: null });
    // The borrowers whose own returns these were are stopped by them; the others on the accounts are held by the account's state.
    expect(await view(c, 'sold-1')).toMatchObject({ state: 'stopped', reason: 'R12' });
    expect(await view(c, 'closed-2')).toMatchObject({ state: 'monitored', blocked_reason: 'account_invalid' });
  });
});

describe('a Notification of Change from the processor', () => {
  test('the sandbox processor tells one with the settlement of a debit to a 9996 account: received once, applied, the borrower corrected', async () => {
    const c = createTestContext({ SANDBOX_SETTLEMENT_MS: '60000' });
    contexts.push(c);
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_noc_processor_000001', rail_scope: 'ach', is_default: true } })).status).toBe(201);
    await enroll(c, enrollBorrower('p', { account_number: '9996234567', collectable_amount: 42500 }));
    await cycle(c);
    await dispatchAndSettle(c, 60_000);
    expect(await payments(c, 'p')).toEqual([{ status: 'settled' }]);
    const accountId = (await view(c, 'p')).bank_account_id;
    expect((await account(c, accountId)).changes).toMatchObject([{ code: 'C01', source: 'processor', status: 'received', old_last4: '4567', new_last4: '4567' }]);
    // Read again (the feed from the start): nothing is recorded twice.
    await c.sql.query('UPDATE payment_connections SET poll_cursor = NULL').run();
    await pollProcessors(c.rt);
    expect((await account(c, accountId)).change_count).toBe(1);
    expect(await applyReceivedChanges(c.rt)).toEqual({ applied: 1 });
    expect((await account(c, accountId)).changes[0]).toMatchObject({ status: 'applied', applied_by: 'automatic' });
    const [{ sealed }] = await c.rows<{ sealed: string }>('SELECT sealed FROM enrollments WHERE authorizer_unique_id = ?', 'p');
    expect(openBorrower(c.rt, sealed).s.accountNumber).toBe('0006234567');
  });
});

describe('a Notification of Change from the HTTP bank-data bridge', () => {
  test('passed on with a monitored borrower’s read: received before the read decides, once however often it is passed on; a garbled one is a transient failure', async () => {
    let answer: unknown = { balance_status_code: 0, balance: 5000, notification_of_change: { code: 'C02', corrected_data: SANDBOX_BANK } };
    const bridge = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Response.json(answer) });
    try {
      const c = createTestContext({ BANK_DATA_PROVIDER: 'http', BANK_DATA_URL: `http://127.0.0.1:${bridge.port}`, BANK_DATA_TOKEN: 'bridge-token', MONITOR_READ_INTERVAL_MS: String(READ_EVERY) });
      contexts.push(c);
      expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_noc_bridge_00000001', rail_scope: 'ach', is_default: true } })).status).toBe(201);
      await enroll(c, enrollBorrower('h', { routing_number: SANDBOX_ROUTING_NUMBERS.unvalidated, collectable_amount: 42500, account_validation: { method: 'third_party', validated_at: new Date(c.clock.now() - DAY).toISOString() } }));
      const accountId = (await view(c, 'h')).bank_account_id;
      await cycle(c);
      // Received before the decision: nothing goes out to the old routing number.
      expect(await payments(c, 'h')).toEqual([]);
      expect((await account(c, accountId)).changes).toMatchObject([{ code: 'C02', source: 'bank_data', status: 'received' }]);
      c.clock.advance(READ_EVERY);
      await cycle(c);
      expect((await account(c, accountId)).change_count).toBe(1);
      expect(await applyReceivedChanges(c.rt)).toEqual({ applied: 1 });
      expect((await c.rows<{ routing: string }>('SELECT routing_number AS routing FROM enrollments WHERE authorizer_unique_id = ?', 'h'))[0]!.routing).toBe(SANDBOX_BANK);
      // Not of the contract: the answer is refused as a whole (a transient failure), never read as a balance.
      expect(fromResponseBody({ balance_status_code: 0, balance: 50, notification_of_change: { code: 7 } })).toBeNull();
      expect(fromResponseBody({ balance_status_code: 0, balance: 50, notification_of_change: 'C01' })).toBeNull();
      expect(fromResponseBody({ balance_status_code: 0, balance: 50, notification_of_change: null })).toEqual({ kind: 'balance', balanceCents: 5000 });
      answer = { balance_status_code: 0, balance: 5000 };
    } finally {
      bridge.stop(true);
    }
  });
});

describe('validation evidence before a first debit', () => {
  test('no evidence: never sent (validation_required); the lender’s evidence lifts it; off in the policy, it goes', async () => {
    const { c, key } = await setup();
    const routing = SANDBOX_ROUTING_NUMBERS.unvalidated;
    await enroll(c, enrollBorrower('none', { routing_number: routing, collectable_amount: 42500 }));
    expect(await view(c, 'none')).toMatchObject({ state: 'monitored', blocked_reason: 'validation_required' });
    const accountId = (await view(c, 'none')).bank_account_id;
    expect((await account(c, accountId)).validation).toBeNull();
    for (let i = 0; i < 2; i++) {
      c.clock.advance(READ_EVERY);
      await cycle(c);
    }
    expect(sentTo(key)).toEqual([]);
    // Evidence in the future is refused, naming the field; evidence given lifts the block and the debit goes.
    const future = await enroll(c, enrollBorrower('none', { routing_number: routing, collectable_amount: 42500, account_validation: { method: 'prenote', validated_at: new Date(c.clock.now() + DAY).toISOString() } }));
    expect(future[0]).toMatchObject({ outcome: 'failed' });
    expect(future[0]!.message).toContain('account_validation.validated_at');
    await enroll(c, enrollBorrower('none', { routing_number: routing, collectable_amount: 42500, account_validation: { method: 'prenote', reference: 'trace-0001', validated_at: new Date(c.clock.now()).toISOString() } }));
    expect(await account(c, accountId)).toMatchObject({ validation: { method: 'prenote', source: null, reference: 'trace-0001', current: true } });
    c.clock.advance(READ_EVERY);
    await cycle(c);
    expect(sentTo(key)).toHaveLength(1);

    // A lender that does not require it: a borrower without evidence is debited.
    const off = await setup({ require_account_validation: false });
    await enroll(off.c, enrollBorrower('loose', { routing_number: routing, collectable_amount: 42500 }));
    expect(await view(off.c, 'loose')).toMatchObject({ blocked_reason: null });
    await cycle(off.c);
    expect(sentTo(off.key)).toHaveLength(1);
  });

  test('an uploaded debit to an account without evidence is recorded and reported; one with evidence is not reported', async () => {
    const { c } = await setup();
    await enroll(c, enrollBorrower('bare', { routing_number: SANDBOX_ROUTING_NUMBERS.unvalidated }), enrollBorrower('known', {}));
    const csv =
      'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\n' +
      'bare,EXT-1,10.00,returned,2026-01-05,,2026-01-07,R01\n' +
      'known,EXT-2,10.00,returned,2026-01-05,,2026-01-07,R01\n';
    for (const dryRun of [true, false]) {
      const report = await upload(c, csv, { dryRun });
      expect(report).toMatchObject({ row_count: 2, matched: 2 });
      expect(report.problems).toMatchObject([{ row: 2, severity: 'warning' }]);
      expect(report.problems[0].reason).toContain('without validation evidence');
    }
    expect(await payments(c, 'bare')).toEqual([]);
    // Off in the policy: nothing is reported.
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { require_account_validation: false } })).status).toBe(200);
    const off = await upload(c, csv.replace(/EXT-/g, 'EXT-B-'));
    expect(off.problems).toEqual([]);
  });

  test('the same account with a Plaid bank link is validated by it, and debited', async () => {
    const { c, key } = await setup();
    const clientId = `client-noc-${n}`;
    plaid.addClient(clientId, `secret-${clientId}`);
    expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: clientId, secret: `secret-${clientId}`, environment: 'production' } })).status).toBe(201);
    const token = `access-production-noc${n}`;
    plaid.addItem(token, [{ account_id: 'acc_noc_0001', available: 9000, current: 9000 }]);
    const link = { provider: 'plaid', access_token: token, account_id: 'acc_noc_0001' };
    await enroll(c, enrollBorrower('linked', { routing_number: SANDBOX_ROUTING_NUMBERS.unvalidated, bank_link: link, collectable_amount: 42500 }));
    const v = await view(c, 'linked');
    expect(v).toMatchObject({ blocked_reason: null });
    expect((await account(c, v.bank_account_id)).validation).toMatchObject({ method: 'bank_link', source: 'plaid', current: true });
    await cycle(c);
    expect(sentTo(key).map((s) => s?.account_number)).toEqual(['0001234567']);
    expect(SANDBOX_BANK).not.toBe(SANDBOX_ROUTING_NUMBERS.unvalidated);
  });
});
