// engine: both
// Bank accounts end to end against the sandbox processor: one record per lender per account, linked from
// every ACH enrollment; a return of any borrower's debit sets the account's state (one table of codes), and
// while it blocks, no payment is created, released or sent to the account for any borrower on it; a new
// enrollment of it is blocked at once; a later authorization lifts `unauthorized` for its borrower only.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { tellAccountBlocks } from '../../../src/modules/collection/account-blocks';
import { linkUnlinkedBorrowers } from '../../../src/modules/enrollments/account-links';
import { SandboxProcessor } from '../../../src/adapters/processors/sandbox';
import { ACCOUNT_STATE_OF_RETURN } from '../../../src/adapters/processors/account-states';

const SETTLE = 60_000;
const READ_EVERY = 3_600_000;
const KEY = 'sbx_bank_accounts_0000000001';
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

async function setup(env: Record<string, string> = {}) {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ_EVERY), ...env });
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(201);
  // Every ENROLLMENT_BLOCKED is kept in the outbox (never delivered here: nothing listens on port 9).
  expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/blocked', event_types: ['ENROLLMENT_BLOCKED'] } })).status).toBe(201);
  return c;
}

/** Borrowers on one account: 0001234567 (a balance of 12,345.67), the fixture's. */
const enroll = async (c: TestContext, ...borrowers: Record<string, unknown>[]) => {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
  expect(r.status).toBe(207);
  return r.body.results as { authorizer_unique_id: string; outcome: string }[];
};
const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;
const account = async (c: TestContext, id: string) => (await c.json('GET', `/v1/bank_accounts/${id}`)).body;
const payments = (c: TestContext, aid: string) =>
  c.rows<{ id: string; status: string; reference: string; bankAccountId: string | null }>(
    'SELECT id, status, reference, bank_account_id AS bankAccountId FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id',
    aid,
  );
const blockedPushes = async (c: TestContext) =>
  (await c.rows<{ payload: string }>("SELECT payload FROM webhook_deliveries WHERE type = 'ENROLLMENT_BLOCKED' ORDER BY created_at, id")).map((d) => JSON.parse(d.payload));
const sandboxReferences = async (c: TestContext) => {
  const sandbox = new SandboxProcessor({ ...(c.rt.pg ? { pg: c.rt.pg } : { sqlite: c.rt.sqlite }), clock: c.clock, settlementMs: SETTLE });
  return new Set((await sandbox.listChanges(KEY, null)).changes.map((ch) => ch.reference));
};

/** A borrower's payment sent and its outcome read: the sandbox's, by the cents of the amount. */
async function debitAndSettle(c: TestContext) {
  await cycle(c);
  await dispatchAndSettle(c, SETTLE);
}

describe('an account is one record per lender, linked from every ACH enrollment', () => {
  test('two borrowers on one account share it; another account, a card borrower and an erased one do not; the number is never shown', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('a', { collectable_amount: 9_000_000 }), enrollBorrower('b', { collectable_amount: 9_000_000 }), enrollBorrower('other', { account_number: '0007654321' }));
    await enroll(c, enrollBorrower('card', { charge_instrument: { processor_token: 'sbxpm_card', card_last4: '4242' } }));
    const [a, b, other, card] = [await view(c, 'a'), await view(c, 'b'), await view(c, 'other'), await view(c, 'card')];
    expect(a.bank_account_id).toEqual(expect.any(String));
    expect(b.bank_account_id).toBe(a.bank_account_id);
    expect(other.bank_account_id).not.toBe(a.bank_account_id);
    expect(card.bank_account_id).toBeNull();
    const shown = await account(c, a.bank_account_id);
    expect(shown).toMatchObject({
      id: a.bank_account_id,
      last4: '4567',
      state: 'ok',
      return_codes: [],
      state_reference: null,
      last_return_at: null,
      enrollment_count: 2,
      enrollments: [{ authorizer_unique_id: 'a' }, { authorizer_unique_id: 'b' }],
    });
    expect(JSON.stringify(shown)).not.toContain('0001234567');
    expect(Object.keys(shown)).not.toContain('fingerprint');
    // Re-sent with another account number: linked to that one; the first keeps its other borrower.
    await enroll(c, enrollBorrower('b', { collectable_amount: 9_000_000, account_number: '0007654321' }));
    expect((await view(c, 'b')).bank_account_id).toBe(other.bank_account_id);
    expect((await account(c, a.bank_account_id)).enrollments).toEqual([{ authorizer_unique_id: 'a' }]);
    // Erased: no account any more (the account's record stays, naming no erased borrower).
    expect((await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['a'] } })).status).toBe(200);
    expect((await view(c, 'a')).bank_account_id).toBeNull();
    expect(await account(c, a.bank_account_id)).toMatchObject({ state: 'ok', enrollment_count: 0, enrollments: [] });
  });

  test('GET /v1/bank_accounts: the lender’s own, paged by id, filtered by state; another lender’s is 404; a bad filter 400', async () => {
    const c = await setup();
    for (let i = 0; i < 3; i++) await enroll(c, enrollBorrower(`p${i}`, { account_number: `000999000${i}`, collectable_amount: 9_000_000 }));
    const first = await c.json('GET', '/v1/bank_accounts?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.bank_accounts).toHaveLength(2);
    expect(first.body.has_more).toBe(true);
    const second = await c.json('GET', `/v1/bank_accounts?limit=2&next_page_token=${encodeURIComponent(first.body.next_page_token)}`);
    expect(second.body).toMatchObject({ has_more: false, next_page_token: null });
    const all = [...first.body.bank_accounts, ...second.body.bank_accounts].map((a: { id: string }) => a.id);
    expect(all).toEqual([...all].sort());
    expect(new Set(all).size).toBe(3);
    expect((await c.json('GET', '/v1/bank_accounts?state=ok')).body.bank_accounts).toHaveLength(3);
    expect((await c.json('GET', '/v1/bank_accounts?state=unauthorized')).body.bank_accounts).toEqual([]);
    expect((await c.json('GET', '/v1/bank_accounts?state=closed')).status).toBe(400);
    // A token of one filter is refused by another.
    expect((await c.json('GET', `/v1/bank_accounts?state=ok&limit=2&next_page_token=${encodeURIComponent(first.body.next_page_token)}`)).status).toBe(400);
    const other = c.newLender();
    expect((await c.json('GET', '/v1/bank_accounts', { key: other.key })).body.bank_accounts).toEqual([]);
    const notFound = await c.json('GET', `/v1/bank_accounts/${all[0]}`, { key: other.key });
    expect(notFound.status).toBe(404);
    expect((await c.json('GET', '/v1/bank_accounts/no-such-account')).status).toBe(404);
  });
});

describe('a return blocks every borrower on the account', () => {
  test('an R10 on one of two borrowers: no later payment to the account for either; a third enrollment is blocked at once', async () => {
    const c = await setup();
    // a's debit comes back R10 (cents 94). b waits (its balance does not cover the debit buffer yet).
    await enroll(c, enrollBorrower('a', { collectable_amount: 42594 }));
    await cycle(c);
    expect(await payments(c, 'a')).toMatchObject([{ status: 'processing' }]);
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { debit_buffer_cents: 10_000_000 } })).status).toBe(200);
    await enroll(c, enrollBorrower('b', { collectable_amount: 42500 }));
    await cycle(c);
    expect(await payments(c, 'b')).toEqual([]);
    const accountId = (await view(c, 'a')).bank_account_id;
    expect((await view(c, 'b')).bank_account_id).toBe(accountId);
    // The payment was made for the account.
    expect((await payments(c, 'a'))[0]!.bankAccountId).toBe(accountId);

    await dispatchAndSettle(c, SETTLE);
    const [returned] = await payments(c, 'a');
    expect(returned).toMatchObject({ status: 'returned' });
    expect(await view(c, 'a')).toMatchObject({ state: 'stopped', reason: 'R10' });
    expect(await account(c, accountId)).toMatchObject({ state: 'unauthorized', return_codes: ['R10'], state_reference: returned!.reference, enrollment_count: 2 });
    const since = (await account(c, accountId)).state_since;
    expect((await account(c, accountId)).last_return_at).toBe(since);
    expect((await c.json('GET', '/v1/bank_accounts?state=unauthorized')).body.bank_accounts.map((x: { id: string }) => x.id)).toEqual([accountId]);

    // b's balance now covers (no buffer), and it is read: the decision refuses, whatever the balance.
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { debit_buffer_cents: 0 } })).status).toBe(200);
    c.clock.advance(READ_EVERY);
    await cycle(c);
    expect(await payments(c, 'b')).toEqual([]);
    expect(await view(c, 'b')).toMatchObject({ state: 'monitored', blocked_reason: 'account_unauthorized', next_read_at: null });
    expect((await blockedPushes(c)).filter((p) => p.authorizer_unique_id === 'b')).toMatchObject([{ state: 'monitored', blocked_reason: 'account_unauthorized' }]);
    // Not read again: nothing goes out however long it waits.
    for (let i = 0; i < 3; i++) {
      c.clock.advance(READ_EVERY);
      await debitAndSettle(c);
    }
    expect(await payments(c, 'b')).toEqual([]);

    // A third enrollment of the account: accepted, blocked at once, the lender told; never read or debited.
    expect(await enroll(c, enrollBorrower('c', { collectable_amount: 1000 }))).toEqual([{ authorizer_unique_id: 'c', outcome: 'enrolled' }]);
    expect(await view(c, 'c')).toMatchObject({ state: 'monitored', blocked_reason: 'account_unauthorized', next_read_at: null, bank_account_id: accountId });
    expect((await blockedPushes(c)).filter((p) => p.authorizer_unique_id === 'c')).toMatchObject([{ blocked_reason: 'account_unauthorized' }]);
    c.clock.advance(READ_EVERY);
    await debitAndSettle(c);
    expect(await payments(c, 'c')).toEqual([]);
    // a, re-sent without a new authorization, is blocked as well.
    await enroll(c, enrollBorrower('a', { collectable_amount: 1000 }));
    expect(await view(c, 'a')).toMatchObject({ state: 'monitored', blocked_reason: 'account_unauthorized' });
    await debitAndSettle(c);
    expect(await payments(c, 'a')).toHaveLength(1);
  });

  test('a re-send with an authorization after the return lifts it for that borrower only; one dated before it does not', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('a', { collectable_amount: 42594 }));
    await debitAndSettle(c);
    await enroll(c, enrollBorrower('b', { collectable_amount: 1000 }), enrollBorrower('c', { collectable_amount: 1000 }));
    expect((await view(c, 'b')).blocked_reason).toBe('account_unauthorized');
    const accountId = (await view(c, 'b')).bank_account_id;
    const returnedAt = Date.parse((await account(c, accountId)).last_return_at);

    // An authorization obtained before the return changes nothing.
    await enroll(c, enrollBorrower('b', { collectable_amount: 1000, authorization: { obtained_at: new Date(returnedAt - 1000).toISOString() } }));
    expect(await view(c, 'b')).toMatchObject({ blocked_reason: 'account_unauthorized', next_read_at: null });
    // One obtained after it: b is read at once and debited; c stays blocked.
    c.clock.advance(60_000);
    await enroll(c, enrollBorrower('b', { collectable_amount: 1000, authorization: { obtained_at: new Date(returnedAt + 30_000).toISOString() } }));
    const b = await view(c, 'b');
    expect(b).toMatchObject({ state: 'monitored', blocked_reason: null });
    expect(b.next_read_at).not.toBeNull();
    await cycle(c);
    expect(await payments(c, 'b')).toMatchObject([{ status: 'processing', bankAccountId: accountId }]);
    expect(await view(c, 'c')).toMatchObject({ blocked_reason: 'account_unauthorized' });
    expect(await payments(c, 'c')).toEqual([]);
    // The account stays unauthorized: a state never moves back by itself.
    expect((await account(c, accountId)).state).toBe('unauthorized');
    // A new borrower enrolled with an authorization after the return is not blocked by it either.
    await enroll(c, enrollBorrower('d', { collectable_amount: 9_000_000, authorization: { obtained_at: new Date(returnedAt + 1000).toISOString() } }));
    expect(await view(c, 'd')).toMatchObject({ state: 'monitored', blocked_reason: null });
  });

  test('a payment made for b and not yet sent when a’s R10 is recorded is never sent: not attempted, with the account’s reason', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('a', { collectable_amount: 42594 }));
    await cycle(c);
    // b is read and its payment made, not sent.
    await enroll(c, enrollBorrower('b', { collectable_amount: 42500 }));
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    const [made] = await payments(c, 'b');
    expect(made).toMatchObject({ status: 'initiating' });
    // a's return is recorded first.
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await payments(c, 'a')).toMatchObject([{ status: 'returned' }]);
    await dispatchPayments(c.rt);
    expect(await payments(c, 'b')).toMatchObject([{ id: made!.id, status: 'not_attempted' }]);
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=b')).body.events;
    expect(events).toMatchObject([{ status: 'not_attempted', source: 'service', message: expect.stringContaining('not sent: a return said debits to the bank account are not authorized') }]);
    // The processor never saw it; b shows why, and its slot is given back.
    expect((await sandboxReferences(c)).has(made!.reference)).toBe(false);
    expect(await view(c, 'b')).toMatchObject({ state: 'monitored', blocked_reason: 'account_unauthorized', payments_used: 0 });
    await debitAndSettle(c);
    expect(await payments(c, 'b')).toHaveLength(1);
  });

  test('the account-blocks job tells every monitored borrower at once: blocked, pushed once, its scheduled payment voided', async () => {
    const c = await setup();
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { notice_days: 3 } })).status).toBe(200);
    // a's R02 (cents 93) closes the account; b has a payment scheduled meanwhile, c waits for funds.
    await enroll(c, enrollBorrower('a', { collectable_amount: 42593 }));
    await cycle(c);
    c.clock.advance(4 * 86_400_000);
    await cycle(c);
    expect(await payments(c, 'a')).toMatchObject([{ status: 'processing' }]);
    await enroll(c, enrollBorrower('b', { collectable_amount: 1000 }), enrollBorrower('c', { collectable_amount: 9_000_000 }));
    await cycle(c);
    expect(await payments(c, 'b')).toMatchObject([{ status: 'scheduled' }]);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await view(c, 'a')).toMatchObject({ state: 'stopped', reason: 'R02' });
    const accountId = (await view(c, 'a')).bank_account_id;
    expect(await account(c, accountId)).toMatchObject({ state: 'invalid', return_codes: ['R02'] });

    expect(await tellAccountBlocks(c.rt)).toEqual({ blocked: 2 });
    for (const aid of ['b', 'c']) expect(await view(c, aid)).toMatchObject({ state: 'monitored', blocked_reason: 'account_invalid', next_read_at: null, scheduled_payment: null });
    expect(await payments(c, 'b')).toMatchObject([{ status: 'voided' }]);
    const voided = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=b')).body.events;
    expect(voided).toMatchObject([{ status: 'voided', source: 'service', message: 'not debited: a return said the bank account is closed or invalid' }]);
    const pushed = (await blockedPushes(c)).filter((p) => p.blocked_reason === 'account_invalid').map((p) => p.authorizer_unique_id).sort();
    expect(pushed).toEqual(['b', 'c']);
    // Told once: a second tick has nothing to do.
    expect(await tellAccountBlocks(c.rt)).toEqual({ blocked: 0 });
    expect((await blockedPushes(c)).filter((p) => p.blocked_reason === 'account_invalid')).toHaveLength(2);
    // A scheduled payment's day: nothing goes out for anyone on the account.
    c.clock.advance(5 * 86_400_000);
    await debitAndSettle(c);
    expect((await payments(c, 'b')).map((p) => p.status)).toEqual(['voided']);
    expect(await payments(c, 'c')).toEqual([]);
  });

  test('a scheduled payment whose day comes after the account was blocked is voided by the decision with the account’s reason', async () => {
    const c = await setup();
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { notice_days: 2 } })).status).toBe(200);
    await enroll(c, enrollBorrower('a', { collectable_amount: 42594 }));
    await cycle(c);
    c.clock.advance(3 * 86_400_000);
    await cycle(c);
    await enroll(c, enrollBorrower('b', { collectable_amount: 1000 }));
    await cycle(c);
    expect(await payments(c, 'b')).toMatchObject([{ status: 'scheduled' }]);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await view(c, 'a')).toMatchObject({ state: 'stopped', reason: 'R10' });
    // The job has not run: on its day the decision voids it, and blocks b.
    c.clock.advance(3 * 86_400_000);
    await debitAndSettle(c);
    expect((await payments(c, 'b')).map((p) => p.status)).toEqual(['voided']);
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=b')).body.events;
    expect(events).toMatchObject([{ status: 'voided', message: expect.stringContaining('not debited: a return said debits to the bank account are not authorized') }]);
    expect(await view(c, 'b')).toMatchObject({ blocked_reason: 'account_unauthorized' });
  });
});

describe('the action of every return code on the account', () => {
  const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
  // Every code of the table, and codes that say nothing of the account (the borrower's own rules still apply).
  const expected: [string, string, string | null][] = [
    ...Object.entries(ACCOUNT_STATE_OF_RETURN).map(([code, state]): [string, string, string] => [code, state, `account_${state}`]),
    ['R01', 'ok', null],
    ['R09', 'ok', null],
    ['R06', 'ok', null],
    ['R08', 'ok', null],
    ['R17', 'ok', null],
  ];
  test('the table has every code of the four states', () => {
    expect(Object.keys(ACCOUNT_STATE_OF_RETURN).sort()).toEqual(['R02', 'R03', 'R04', 'R05', 'R07', 'R10', 'R11', 'R12', 'R13', 'R14', 'R15', 'R16', 'R20', 'R29', 'R51']);
  });
  test('a return of each code, uploaded for a payment made elsewhere: the account’s state, and what it does to a new borrower on it', async () => {
    const c = await setup();
    for (const [i, [code, state, block]] of expected.entries()) {
      const number = `00088${String(i).padStart(5, '0')}`;
      await enroll(c, enrollBorrower(`x-${code}`, { account_number: number, collectable_amount: 9_000_000 }));
      const form = new FormData();
      form.append('file', new Blob([`${HEADER}\nx-${code},ELSEWHERE-${code},100.00,returned,2026-11-18,,2026-11-20,${code}\n`], { type: 'text/csv' }), 'results.csv');
      const up = await c.json('POST', '/v1/payment_results/uploads', { form });
      expect([code, up.status, up.body.matched]).toEqual([code, 200, 1]);
      const accountId = (await view(c, `x-${code}`)).bank_account_id;
      const shown = await account(c, accountId);
      expect([code, shown.state, shown.return_codes]).toEqual([code, state, state === 'ok' ? [] : [code]]);
      if (state !== 'ok') expect([code, shown.state_reference]).toEqual([code, `ELSEWHERE-${code}`]);
      await enroll(c, enrollBorrower(`y-${code}`, { account_number: number, collectable_amount: 9_000_000 }));
      expect([code, (await view(c, `y-${code}`)).blocked_reason]).toEqual([code, block]);
    }
  });

  test('the sandbox’s R02 closes the account for its other borrower; R01 leaves it ok and its other borrower debited', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('closed', { collectable_amount: 42593, account_number: '0002222222' }), enrollBorrower('funds', { collectable_amount: 42591, account_number: '0003333333' }));
    await debitAndSettle(c);
    const closed = (await view(c, 'closed')).bank_account_id;
    const funds = (await view(c, 'funds')).bank_account_id;
    expect(await account(c, closed)).toMatchObject({ state: 'invalid', return_codes: ['R02'] });
    expect(await account(c, funds)).toMatchObject({ state: 'ok', return_codes: [] });
    await enroll(c, enrollBorrower('closed-2', { account_number: '0002222222' }), enrollBorrower('funds-2', { account_number: '0003333333' }));
    expect((await view(c, 'closed-2')).blocked_reason).toBe('account_invalid');
    await cycle(c);
    expect(await payments(c, 'closed-2')).toEqual([]);
    expect(await payments(c, 'funds-2')).toHaveLength(1);
  });

  test('an unauthorized return uploaded for the service’s own payment marks the account at once, before its processor confirms it', async () => {
    const c = await setup();
    // Cents 97: processing, never resolves at the sandbox.
    await enroll(c, enrollBorrower('own', { collectable_amount: 42597 }), enrollBorrower('other', { collectable_amount: 9_000_000 }));
    await cycle(c);
    const [p] = await payments(c, 'own');
    expect(p).toMatchObject({ status: 'processing' });
    const form = new FormData();
    form.append('file', new Blob([`${HEADER}\nown,${p!.reference},425.97,returned,2026-11-21,,2026-11-21,R10\n`], { type: 'text/csv' }), 'results.csv');
    expect((await c.json('POST', '/v1/payment_results/uploads', { form })).status).toBe(200);
    // A report moves nothing of the payment, but the stop acts: the borrower stopped, the account unauthorized.
    expect(await payments(c, 'own')).toMatchObject([{ status: 'processing' }]);
    expect(await view(c, 'own')).toMatchObject({ state: 'stopped', reason: 'R10' });
    const accountId = (await view(c, 'own')).bank_account_id;
    expect(await account(c, accountId)).toMatchObject({ state: 'unauthorized', return_codes: ['R10'], state_reference: p!.reference });
    await tellAccountBlocks(c.rt);
    expect((await view(c, 'other')).blocked_reason).toBe('account_unauthorized');
  });
});

describe('borrowers stored before accounts were known', () => {
  /** The borrowers' links taken away, as an enrollment stored by an earlier version has none. */
  const unlink = async (c: TestContext) => {
    c.sql.query('UPDATE enrollments SET bank_account_id = NULL').run();
  };

  test('the start-up job links them, a slice at a time, to the accounts already known', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('old-1', { collectable_amount: 9_000_000 }), enrollBorrower('old-2', { collectable_amount: 9_000_000 }), enrollBorrower('old-3', { collectable_amount: 9_000_000, account_number: '0007654321' }));
    const before = await Promise.all(['old-1', 'old-2', 'old-3'].map(async (aid) => (await view(c, aid)).bank_account_id));
    await unlink(c);
    expect((await view(c, 'old-1')).bank_account_id).toBeNull();
    expect(await linkUnlinkedBorrowers(c.rt)).toEqual({ linked: 3 });
    expect(await Promise.all(['old-1', 'old-2', 'old-3'].map(async (aid) => (await view(c, aid)).bank_account_id))).toEqual(before);
    // Nothing left: the next pass finds none.
    expect(await linkUnlinkedBorrowers(c.rt)).toEqual({ linked: 0 });
  });

  test('a return of an unlinked borrower links it and marks the account; the decision links an unlinked borrower before deciding', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('a', { collectable_amount: 42594 }));
    await cycle(c);
    await enroll(c, enrollBorrower('b', { collectable_amount: 9_000_000 }));
    const accountId = (await view(c, 'a')).bank_account_id;
    // As an earlier version stored them: no link on the borrowers, none on a's payment.
    await unlink(c);
    c.sql.query('UPDATE payments SET bank_account_id = NULL').run();
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await view(c, 'a')).toMatchObject({ state: 'stopped', reason: 'R10', bank_account_id: accountId });
    expect(await account(c, accountId)).toMatchObject({ state: 'unauthorized' });
    // b, still unlinked, is linked when it is decided, and blocked by the account.
    expect((await view(c, 'b')).bank_account_id).toBeNull();
    c.clock.advance(READ_EVERY);
    await cycle(c);
    expect(await view(c, 'b')).toMatchObject({ bank_account_id: accountId, blocked_reason: 'account_unauthorized' });
    expect(await payments(c, 'b')).toEqual([]);
  });
});

describe('a lender’s stricter actions of return codes', () => {
  test('R01 set to frozen in the policy blocks the account for every borrower; R10 set to deceased is kept as the more severe', async () => {
    const c = await setup();
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { account_return_states: { R01: 'frozen', R10: 'deceased' } } })).status).toBe(200);
    expect((await c.json('GET', '/v1/collection_policy')).body.account_return_states).toEqual({ R01: 'frozen', R10: 'deceased' });
    // a's debit comes back R01 (cents 91): under Nacha's table alone it says nothing of the account.
    await enroll(c, enrollBorrower('a', { collectable_amount: 42591 }), enrollBorrower('b', { collectable_amount: 9_000_000 }));
    await debitAndSettle(c);
    const accountId = (await view(c, 'a')).bank_account_id;
    expect(await account(c, accountId)).toMatchObject({ state: 'frozen', return_codes: ['R01'] });
    await tellAccountBlocks(c.rt);
    expect(await view(c, 'b')).toMatchObject({ state: 'monitored', blocked_reason: 'account_frozen' });
    // An R10 of another account's borrower, under the lender's table: deceased.
    await enroll(c, enrollBorrower('x', { account_number: '0007654321', collectable_amount: 42594 }));
    await debitAndSettle(c);
    expect(await account(c, (await view(c, 'x')).bank_account_id)).toMatchObject({ state: 'deceased', return_codes: ['R10'] });
    // Another lender's table is its own: the same codes under Nacha's alone.
    const other = c.newLender();
    expect((await c.json('GET', '/v1/collection_policy', { key: other.key })).body.account_return_states).toEqual({});
  });
});
