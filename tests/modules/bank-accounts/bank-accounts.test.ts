// engine: both
// Bank accounts: one record per lender per account, linked from every ACH enrollment and re-send, and from
// borrowers stored before accounts were known by the start-up job; read through GET /v1/bank_accounts.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { linkUnlinkedBorrowers } from '../../../src/modules/enrollments/account-links';

const SETTLE = 60_000;
const READ_EVERY = 3_600_000;
const KEY = 'sbx_bank_accounts_0000000001';
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

async function setup(env: Record<string, string> = {}) {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ_EVERY), ...env });
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(201);
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
});
