// POST/DELETE /v1/payment_enrollments, DELETE /v1/persisted_authorizers, the reads, monitor states, lapses,
// held borrowers and monitoring reads through the balance pipeline.
import { afterAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { createTestContext, type TestContext } from '../../helpers/context';
import { cardNumberWithBalance, enrollBorrower, SANDBOX_TESTING_BANK, SANDBOX_UNSUPPORTED_BANK } from '../../helpers/fixtures';
import { KeyRefused, ProcessorUnavailable, type Processor } from '../../../src/adapters/processors';
import { lapseDueMonitors, queueDueReads, recheckHeld } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { DAY_MS } from '../../../src/platform/clock';

// A Stripe account that cannot be reached (the outside world, faked): tokenization must fail softly.
const downStripe: Processor = {
  name: 'stripe',
  verifyKey: async () => ({ accountId: 'acct_down' }),
  tokenizeCard: () => Promise.reject(new ProcessorUnavailable('connection refused')),
  createDebit: () => Promise.reject(new KeyRefused()),
  listChanges: () => Promise.reject(new KeyRefused()),
  findPayment: () => Promise.reject(new ProcessorUnavailable('connection refused')),
  listPayments: () => Promise.reject(new ProcessorUnavailable('connection refused')),
  cancelPayment: () => Promise.reject(new ProcessorUnavailable('connection refused')),
};

const contexts: TestContext[] = [];
const fresh = (env: Record<string, string> = {}) => {
  const c = createTestContext(env, { stripe: () => downStripe });
  contexts.push(c);
  return c;
};
afterAll(() => contexts.forEach((c) => c.close()));

const enroll = (c: TestContext, borrowers: unknown[], key?: string) =>
  c.json('POST', '/v1/payment_enrollments', { body: { borrowers }, ...(key ? { key } : {}) });
const read = (c: TestContext, id: string, key?: string) => c.json('GET', `/v1/payment_enrollments/${id}`, key ? { key } : {});
const addKey = (c: TestContext, body: Record<string, unknown>) => c.json('POST', '/v1/payment_connections', { body });
const future = new Date().getUTCFullYear() + 3;

describe('POST /v1/payment_enrollments: field rules', () => {
  const c = fresh();
  // Each rule with a failing borrower (and the field its message names) and the same borrower corrected.
  const rules: [string, Record<string, unknown>, Record<string, unknown>, RegExp][] = [
    ['first_name missing', { first_name: undefined }, {}, /first_name/],
    ['first_name blank', { first_name: ' ' }, {}, /first_name/],
    ['last_name missing', { last_name: undefined }, {}, /last_name/],
    ['phone_number missing', { phone_number: undefined }, {}, /phone_number/],
    ['phone_number not 10 digits', { phone_number: '55501' }, { phone_number: '+12025550143' }, /phone_number/],
    ['date_of_birth missing', { date_of_birth: undefined }, {}, /date_of_birth/],
    ['date_of_birth not a real date', { date_of_birth: { day: 30, month: 2, year: 1990 } }, { date_of_birth: { day: 28, month: 2, year: 1990 } }, /date_of_birth/],
    ['date_of_birth in the future', { date_of_birth: { day: 1, month: 1, year: 2099 } }, {}, /date_of_birth/],
    ['address missing', { address: undefined }, {}, /address/],
    ['zip_code missing', { address: { city: 'Boston' } }, { address: { city: 'Boston', zip_code: '02139-1234' } }, /zip_code/],
    ['zip_code lost a leading zero', { address: { zip_code: '2139' } }, {}, /zip_code/],
    ['neither ssn nor ein', { ssn: undefined }, { ssn: undefined, ein: '123456789' }, /ssn or ein/],
    ['ssn of 8 digits', { ssn: '23456789' }, { ssn: '023456789' }, /ssn/],
    ['account_number missing', { account_number: undefined }, {}, /account_number/],
    ['routing_number missing', { routing_number: undefined }, {}, /routing_number/],
    ['routing_number failing the checksum', { routing_number: '110000001' }, {}, /routing|checksum|check digit/i],
    ['collectable_amount missing', { collectable_amount: undefined }, {}, /collectable_amount/],
    ['collectable_amount 0', { collectable_amount: 0 }, { collectable_amount: 1 }, /collectable_amount/],
    ['collectable_amount over 10,000,000', { collectable_amount: 10_000_001 }, { collectable_amount: 10_000_000 }, /collectable_amount/],
    ['collectable_amount in dollars', { collectable_amount: 425.5 }, {}, /collectable_amount/],
    ['days_past_due negative', { days_past_due: -1 }, { days_past_due: 0 }, /days_past_due/],
    ['merchant_ref not a tag', { merchant_ref: 'Shop 1' }, { merchant_ref: 'shop-1' }, /merchant_ref/],
    ['a card field outside charge_instrument', { debit_card_number: cardNumberWithBalance(1) }, {}, /debit_card_number/],
    ['an unknown field', { favourite_color: 'red' }, {}, /favourite_color/],
  ];
  for (const [name, bad, good, field] of rules) {
    test(`${name}: failed / tokenization_failed naming the field; corrected, enrolled`, async () => {
      const id = `rule-${name.replace(/\W+/g, '-')}`;
      const r = await enroll(c, [enrollBorrower(id, bad), enrollBorrower(`${id}-ok`, good)]);
      expect(r.status).toBe(207);
      expect(r.body.results[0]).toMatchObject({ authorizer_unique_id: id, outcome: 'failed', reason: 'tokenization_failed' });
      expect(r.body.results[0].message).toMatch(field);
      expect(r.body.results[1]).toEqual({ authorizer_unique_id: `${id}-ok`, outcome: 'enrolled' });
      expect((await read(c, id)).status).toBe(404);
    });
  }

  test('a body that is not {borrowers: [...]}, empty, or over 1000 is a 400 for the whole request', async () => {
    for (const body of [[], { borrowers: [] }, { borrowers: 'x' }, { borrowers: [enrollBorrower('x')], extra: 1 }, { borrowers: Array.from({ length: 1001 }, (_, i) => enrollBorrower(`b${i}`)) }]) {
      const r = await c.json('POST', '/v1/payment_enrollments', { body });
      expect(r.status).toBe(400);
    }
    expect((await read(c, 'b0')).status).toBe(404);
  });
});

describe('POST /v1/payment_enrollments: outcomes', () => {
  test('duplicate_in_request on every copy; the others go ahead', async () => {
    const c = fresh();
    const r = await enroll(c, [enrollBorrower('dup'), enrollBorrower('solo'), enrollBorrower('dup', { collectable_amount: 1 })]);
    expect(r.body.results.map((x: { outcome: string; reason?: string }) => `${x.outcome}:${x.reason ?? ''}`)).toEqual([
      'failed:duplicate_in_request',
      'enrolled:',
      'failed:duplicate_in_request',
    ]);
    expect(r.body).toMatchObject({ enrolled: 1, updated: 0, held: 0, failed: 2, already_enrolled: 0 });
  });

  test('held: unresolvable_routing_number and institution_not_supported, stored but not monitored', async () => {
    const c = fresh();
    const r = await enroll(c, [
      enrollBorrower('unknown-bank', { routing_number: '021000021' }),
      enrollBorrower('testing-bank', { routing_number: SANDBOX_TESTING_BANK }),
      enrollBorrower('unsupported-bank', { routing_number: SANDBOX_UNSUPPORTED_BANK }),
    ]);
    expect(r.body.results.map((x: { outcome: string; reason?: string }) => `${x.outcome}:${x.reason}`)).toEqual([
      'held:unresolvable_routing_number',
      'held:institution_not_supported',
      'held:institution_not_supported',
    ]);
    const view = (await read(c, 'unknown-bank')).body;
    expect(view).toMatchObject({ state: 'held', reason: 'unresolvable_routing_number', window_started_at: null, next_read_at: null });
    expect((await queueDueReads(c.rt)).queued).toBe(0);
  });

  test('cards: token with last4, raw card tokenized (number never stored), every card failure', async () => {
    const c = fresh();
    // No key for card payments yet.
    const noKey = await enroll(c, [enrollBorrower('card-nokey', { charge_instrument: { card: { debit_card_number: cardNumberWithBalance(5), expiration_month: 12, expiration_year: future } } })]);
    expect(noKey.body.results[0]).toMatchObject({ outcome: 'failed', reason: 'card_tokenization_failed', message: 'no processor key for card payments' });
    expect((await addKey(c, { api_key: 'sbx_cards_0000000000000001', rail_scope: 'card', is_default: true })).status).toBe(201);
    expect((await addKey(c, { api_key: 'sk_test_downdowndown0001', rail_scope: 'card', merchant_ref: 'far-away' })).status).toBe(201);
    const number = cardNumberWithBalance(777);
    const r = await enroll(c, [
      enrollBorrower('card-raw', { charge_instrument: { card: { debit_card_number: number, cvv: '123', expiration_month: 12, expiration_year: future } } }),
      enrollBorrower('card-token', { charge_instrument: { processor_token: 'pm_123', card_last4: '4242' } }),
      enrollBorrower('card-token-nolast4', { charge_instrument: { processor_token: 'pm_123' } }),
      enrollBorrower('card-both', { charge_instrument: { processor_token: 'pm_1', card_last4: '4242', card: { debit_card_number: number, expiration_month: 1, expiration_year: future } } }),
      enrollBorrower('card-luhn', { charge_instrument: { card: { debit_card_number: '4000000000000001', expiration_month: 12, expiration_year: future } } }),
      enrollBorrower('card-expired', { charge_instrument: { card: { debit_card_number: number, expiration_month: 1, expiration_year: 2020 } } }),
      enrollBorrower('card-month', { charge_instrument: { card: { debit_card_number: number, expiration_month: 13, expiration_year: future } } }),
      enrollBorrower('card-unreachable', { merchant_ref: 'far-away', charge_instrument: { card: { debit_card_number: number, expiration_month: 12, expiration_year: future } } }),
    ]);
    expect(r.body.results.map((x: { outcome: string; reason?: string }) => `${x.outcome}:${x.reason ?? ''}`)).toEqual([
      'enrolled:',
      'enrolled:',
      'failed:card_tokenization_failed',
      'failed:card_tokenization_failed',
      'failed:card_tokenization_failed',
      'failed:card_tokenization_failed',
      'failed:card_tokenization_failed',
      'failed:chunk_failed',
    ]);
    expect((await read(c, 'card-raw')).body.instrument).toMatchObject({ rail: 'card', last4: number.slice(-4) });
    expect((await read(c, 'card-token')).body.instrument).toMatchObject({ rail: 'card', last4: '4242' });
    expect(c.storedInClear(number) ? 'card number found in the database files' : 'absent').toBe('absent');
  });

  test('1000 borrowers with mixed outcomes come back in request order', async () => {
    const c = fresh();
    const borrowers = Array.from({ length: 1000 }, (_, i) => {
      if (i % 10 === 3) return enrollBorrower(`m${i}`, { ssn: '1' });
      if (i % 10 === 7) return enrollBorrower(`m${i}`, { routing_number: SANDBOX_UNSUPPORTED_BANK });
      if (i === 500 || i === 900) return enrollBorrower('twice');
      return enrollBorrower(`m${i}`);
    });
    const r = await enroll(c, borrowers);
    expect(r.status).toBe(207);
    expect(r.body.results).toHaveLength(1000);
    r.body.results.forEach((x: { authorizer_unique_id: string; outcome: string }, i: number) => {
      expect(x.authorizer_unique_id).toBe(i === 500 || i === 900 ? 'twice' : `m${i}`);
      const want = i === 500 || i === 900 ? 'failed' : i % 10 === 3 ? 'failed' : i % 10 === 7 ? 'held' : 'enrolled';
      expect(x.outcome).toBe(want);
    });
    expect(r.body.failed + r.body.held + r.body.enrolled).toBe(1000);
  });
});

describe('re-sends and monitor states', () => {
  test('a monitored re-send is updated: window unchanged, amount applied, card back to ACH when the instrument is omitted', async () => {
    const c = fresh();
    await addKey(c, { api_key: 'sbx_resend_000000000000001', rail_scope: 'both', is_default: true });
    await enroll(c, [enrollBorrower('re', { charge_instrument: { processor_token: 'pm_x', card_last4: '1111' } })]);
    const first = (await read(c, 're')).body;
    expect(first).toMatchObject({ state: 'monitored', collectable_amount: 42500, instrument: { rail: 'card', last4: '1111' } });
    c.clock.advance(5 * DAY_MS);
    const again = await enroll(c, [enrollBorrower('re', { collectable_amount: 30000, days_past_due: 40 })]);
    expect(again.body.results[0]).toEqual({ authorizer_unique_id: 're', outcome: 'updated' });
    const after = (await read(c, 're')).body;
    expect(after).toMatchObject({ state: 'monitored', collectable_amount: 30000, days_past_due: 40, instrument: { rail: 'ach', bank_name: 'Sandbox Bank', last4: '4567' } });
    expect(after.window_started_at).toBe(first.window_started_at);
    expect(after.window_ends_at).toBe(first.window_ends_at);
    // An unchanged re-send is updated too.
    expect((await enroll(c, [enrollBorrower('re', { collectable_amount: 30000, days_past_due: 40 })])).body.results[0].outcome).toBe('updated');
  });

  test('lapse at day 30, not before; a re-send after lapse, removal or stop starts fresh', async () => {
    const c = fresh();
    const start = c.clock.now();
    await enroll(c, [enrollBorrower('lapse'), enrollBorrower('gone'), enrollBorrower('halt')]);
    c.clock.set(start + 30 * DAY_MS - 1);
    expect((await lapseDueMonitors(c.rt)).lapsed).toBe(0);
    expect((await read(c, 'lapse')).body.state).toBe('monitored');
    c.clock.set(start + 30 * DAY_MS);
    expect((await lapseDueMonitors(c.rt)).lapsed).toBe(3);
    expect((await read(c, 'lapse')).body).toMatchObject({ state: 'lapsed', next_read_at: null });

    const again = start + 31 * DAY_MS;
    c.clock.set(again);
    await enroll(c, [enrollBorrower('gone')]);
    await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['gone'] } });
    await enroll(c, [enrollBorrower('halt')]);
    // A return with a code other than R01/R09 stops a monitor (recorded by collection).
    c.sql.query("UPDATE enrollments SET state = 'stopped', reason = 'R02' WHERE authorizer_unique_id = 'halt'").run();
    const r = await enroll(c, [enrollBorrower('lapse'), enrollBorrower('gone'), enrollBorrower('halt')]);
    expect(r.body.results.map((x: { outcome: string }) => x.outcome)).toEqual(['enrolled', 'enrolled', 'enrolled']);
    for (const id of ['lapse', 'gone', 'halt']) {
      expect((await read(c, id)).body).toMatchObject({
        state: 'monitored',
        reason: null,
        window_started_at: new Date(again).toISOString(),
        window_ends_at: new Date(again + 30 * DAY_MS).toISOString(),
        payments_used: 0,
      });
    }
  });

  test('held → monitored by itself when a routing directory that knows the bank is loaded and the re-check runs', async () => {
    const first = fresh();
    await enroll(first, [enrollBorrower('held-1', { routing_number: '021000021' })]);
    expect((await read(first, 'held-1')).body.state).toBe('held');
    // The operator adds a FedACH directory and restarts: the same database and vault, a new runtime.
    const env = {
      ...first.sameDatabase(),
      VAULT_KEY_FILE: first.rt.config.vaultKeyFile,
      ROUTING_DIRECTORY_FILE: join(import.meta.dir, '../../fixtures/fedach-sample.txt'),
    };
    const restarted = fresh(env);
    restarted.clock.set(first.clock.now() + DAY_MS);
    const historyDue = () => restarted.sql.query<{ dueAt: number }, []>("SELECT h.due_at AS dueAt FROM pay_history h JOIN enrollments e ON e.id = h.enrollment_id WHERE e.authorizer_unique_id = 'held-1'").get()?.dueAt ?? null;
    // A held borrower's account is not read for its transactions…
    expect(historyDue()).toBeNull();
    expect((await recheckHeld(restarted.rt)).started).toBe(1);
    // …until it is monitored.
    expect(historyDue()).toBe(restarted.clock.now());
    const view = (await read(first, 'held-1')).body;
    expect(view).toMatchObject({ state: 'monitored', reason: null, instrument: { bank_name: 'JPMORGAN CHASE BANK, NA' } });
    expect(view.window_started_at).toBe(new Date(restarted.clock.now()).toISOString());
    expect((await recheckHeld(restarted.rt)).started).toBe(0);
  });
});

describe('removal and erasure', () => {
  test('removed, not_monitored (also on retry), unknown; another lender’s borrower is unknown', async () => {
    const c = fresh();
    const other = c.newLender();
    await enroll(c, [enrollBorrower('r1'), enrollBorrower('r-held', { routing_number: SANDBOX_UNSUPPORTED_BANK })]);
    await enroll(c, [enrollBorrower('theirs')], other.key);
    const r = await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['r1', 'r-held', 'nobody', 'theirs'] } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      results: [
        { authorizer_unique_id: 'r1', outcome: 'removed' },
        { authorizer_unique_id: 'r-held', outcome: 'not_monitored' },
        { authorizer_unique_id: 'nobody', outcome: 'unknown' },
        { authorizer_unique_id: 'theirs', outcome: 'unknown' },
      ],
      removed: 1,
      not_monitored: 1,
      unknown: 2,
    });
    const retry = await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['r1'] } });
    expect(retry.body.results).toEqual([{ authorizer_unique_id: 'r1', outcome: 'not_monitored' }]);
    expect((await read(c, 'r1')).body).toMatchObject({ state: 'removed', next_read_at: null });
    expect((await read(c, 'theirs', other.key)).body.state).toBe('monitored');
    expect((await read(c, 'theirs')).status).toBe(404);
    expect((await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: [] } })).status).toBe(400);
  });

  test('erasure: deleted / unknown; no personal data left in the database files; the record and state kept', async () => {
    const c = fresh();
    await addKey(c, { api_key: 'sbx_erase_0000000000000001', rail_scope: 'card', is_default: true });
    const person = {
      first_name: 'Wilhelmina',
      last_name: 'Zebulonsky',
      ssn: '987654321',
      account_number: '0005554443',
      phone_number: '2025559876',
      address: { zip_code: '94110', street_address_line1: '77 Quintessence Way' },
      metadata: { loan_officer: 'Bartholomew-Quill' },
      charge_instrument: { processor_token: 'pm_ERASEME_token_9', card_last4: '9876' },
    };
    await enroll(c, [enrollBorrower('erase-me', person)]);
    // A monitoring read puts a copy of the phone and zip in the balance queue.
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    const r = await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['erase-me', 'nobody'] } });
    expect(r.body).toEqual({
      results: [
        { authorizer_unique_id: 'erase-me', outcome: 'deleted' },
        { authorizer_unique_id: 'nobody', outcome: 'unknown' },
      ],
      deleted: 1,
      unknown: 1,
    });
    expect((await read(c, 'erase-me')).body).toMatchObject({ state: 'removed', instrument: { rail: 'card', last4: null } });
    // SQLite: its free pages folded away (secure_delete zeroed them); PostgreSQL: every live row (docs/operations.md: VACUUM).
    if (!c.rt.pg) {
      c.sql.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      c.sql.exec('VACUUM');
    }
    const bytes = c.storedText();
    // Checked one by one with a short message: the file itself must never be printed.
    const found = (v: string) => bytes.includes(v);
    for (const value of ['Wilhelmina', 'Zebulonsky', '987654321', '0005554443', '2025559876', '+12025559876', '94110', 'Quintessence', 'Bartholomew-Quill', 'pm_ERASEME_token_9']) {
      expect(found(value) ? `${value} found in the database files` : 'absent').toBe('absent');
    }
  });

  test('erasure of several borrowers in one request: each one named loses its details, search entries and pay history; one not named keeps its own', async () => {
    const c = fresh();
    const ids = ['many-1', 'many-2', 'kept-1'];
    await enroll(c, ids.map((id, i) => enrollBorrower(id, { first_name: `Name${i}`, phone_number: `202555014${i}` })));
    const idOf = (aid: string) => c.sql.query<{ id: string }, [string]>('SELECT id FROM enrollments WHERE authorizer_unique_id = ?').get(aid)!.id;
    const rowsOf = (aid: string) => ({
      sealed: c.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM enrollments WHERE authorizer_unique_id = ? AND sealed IS NOT NULL').get(aid)!.n,
      searchable: c.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM searchable_borrowers WHERE authorizer_unique_id = ?').get(aid)!.n,
      entries: c.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM borrower_search WHERE authorizer_unique_id = ?').get(aid)!.n,
      history: c.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM pay_history WHERE enrollment_id = ?').get(idOf(aid))!.n,
    });
    for (const id of ids) expect([id, rowsOf(id)]).toEqual([id, { sealed: 1, searchable: 1, entries: expect.any(Number), history: 1 }]);
    expect(rowsOf('kept-1').entries).toBeGreaterThan(0);
    const kept = rowsOf('kept-1');

    const r = await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['many-1', 'many-2'] } });
    expect(r.body).toMatchObject({ deleted: 2, unknown: 0 });
    for (const id of ['many-1', 'many-2']) {
      expect([id, rowsOf(id)]).toEqual([id, { sealed: 0, searchable: 0, entries: 0, history: 0 }]);
      expect((await read(c, id)).body).toMatchObject({ state: 'removed' });
    }
    expect(rowsOf('kept-1')).toEqual(kept);
    expect((await read(c, 'kept-1')).body).toMatchObject({ state: 'monitored' });
  });
});

describe('monitoring reads and reads of enrollments', () => {
  test('a read at enrollment and then every MONITOR_READ_INTERVAL_MS, through the balance pipeline, in the history', async () => {
    const c = fresh({ MONITOR_READ_INTERVAL_MS: '3600000' });
    await enroll(c, [enrollBorrower('watch', { account_number: '0000012345' })]);
    expect((await queueDueReads(c.rt)).queued).toBe(1);
    expect((await queueDueReads(c.rt)).queued).toBe(0); // queued once
    await processBalances(c.rt);
    const view = (await read(c, 'watch')).body;
    expect(view.last_read).toEqual({ balance_cents: 12345, at: new Date(c.clock.now()).toISOString() });
    expect(view.next_read_at).toBe(new Date(c.clock.now() + 3_600_000).toISOString());
    c.clock.advance(3_600_000 - 1);
    expect((await queueDueReads(c.rt)).queued).toBe(0);
    c.clock.advance(1);
    expect((await queueDueReads(c.rt)).queued).toBe(1);
    await processBalances(c.rt);
    const history = (await c.json('GET', '/v1/monitoring/authorizers/watch/history')).body;
    expect(history.total_count).toBe(2);
    expect(history.history[0]).toMatchObject({ status: 'success', balance_amount: 123.45 });
    // Not after removal.
    await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['watch'] } });
    c.clock.advance(10 * 3_600_000);
    expect((await queueDueReads(c.rt)).queued).toBe(0);
  });

  test('GET /v1/payment_enrollments lists by state, paginated; the read shows no personal data; another lender’s is 404', async () => {
    const c = fresh();
    await enroll(c, [enrollBorrower('a'), enrollBorrower('b'), enrollBorrower('c', { routing_number: SANDBOX_UNSUPPORTED_BANK })]);
    const monitored = (await c.json('GET', '/v1/payment_enrollments?state=monitored&limit=1')).body;
    expect(monitored.enrollments.map((e: { authorizer_unique_id: string }) => e.authorizer_unique_id)).toEqual(['a']);
    const next = (await c.json('GET', `/v1/payment_enrollments?state=monitored&limit=1&next_page_token=${monitored.next_page_token}`)).body;
    expect(next.enrollments.map((e: { authorizer_unique_id: string }) => e.authorizer_unique_id)).toEqual(['b']);
    expect(next.has_more).toBe(false);
    const held = (await c.json('GET', '/v1/payment_enrollments?state=held')).body;
    expect(held.enrollments.map((e: { authorizer_unique_id: string }) => e.authorizer_unique_id)).toEqual(['c']);
    const one = (await read(c, 'a')).body;
    expect(JSON.stringify(one)).not.toMatch(/Ada|Lovelace|123456789|0001234567|2025550143|02139/);
    expect(one.ledger).toEqual({ entries: [], collected: 0, reversed: 0, net: 0 });
    expect((await read(c, 'a', c.newLender().key)).status).toBe(404);
  });

  test('no log line carries personal data', async () => {
    const c = fresh();
    await enroll(c, [enrollBorrower('logs', { first_name: 'Perpetua', ssn: '555443333', account_number: '0009988776' })]);
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    const erased = await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['logs'] } });
    const reqId = erased.res.headers.get('x-request-id')!;
    for (let i = 0; i < 100 && !c.logs.join('').includes(reqId); i++) await Bun.sleep(10);
    expect(c.logs.join('')).toContain(reqId);
    for (const line of c.logs) expect(line).not.toMatch(/Perpetua|555443333|0009988776|2025550143/);
  });
});
