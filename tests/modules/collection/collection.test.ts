// Automatic collection end to end against the sandbox processor: enroll → read → decide → debit → poll →
// events, ledger and monitor state; every outcome of the sandbox table; the rules of the decision.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { SandboxProcessor, createSandboxCharge } from '../../../src/adapters/processors/sandbox';
import { DAY_MS } from '../../../src/platform/clock';

const SETTLE = 60_000;
const READ_EVERY = 3_600_000;
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

async function setup(opts: { key?: boolean } = {}) {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ_EVERY) });
  contexts.push(c);
  if (opts.key !== false) {
    const r = await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_collect_00000000000001', rail_scope: 'both', is_default: true } });
    expect(r.status).toBe(201);
  }
  return c;
}


const events = async (c: TestContext, id: string, key?: string) =>
  (await c.json('GET', `/v1/payment_events?authorizer_unique_id=${id}`, key ? { key } : {})).body.events as {
    event_id: string;
    reference: string;
    status: string;
    amount: number;
    return_code?: string | null;
    source: string;
  }[];
const view = async (c: TestContext, id: string) => (await c.json('GET', `/v1/payment_enrollments/${id}`)).body;
const statuses = (evs: { status: string; return_code?: string | null }[]) => evs.map((e) => (e.return_code ? `${e.status}:${e.return_code}` : e.status));
const payments = (c: TestContext, aid: string) =>
  c.sql.query('SELECT id, status, amount_cents AS amount, reference FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id').all(aid) as {
    id: string;
    status: string;
    amount: number;
    reference: string;
  }[];

describe('the walk-through: a borrower whose account covers the amount is debited and settles', () => {
  test('processing, then settled; the monitor is collected; the ledger credits the amount', async () => {
    const c = await setup();
    // Balance 12,345.67 covers 425.00 (cents 00: the sandbox settles it).
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('walk', { collectable_amount: 42500 })] } });
    await cycle(c);
    const [p] = payments(c, 'walk');
    expect(p).toMatchObject({ status: 'processing', amount: 42500 });
    expect(p!.reference).toBe(`DRS-walk-${p!.id}`);
    expect(statuses(await events(c, 'walk'))).toEqual(['processing']);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    const evs = await events(c, 'walk');
    expect(statuses(evs)).toEqual(['processing', 'settled']);
    expect(evs.every((e) => e.reference === p!.reference && e.amount === 42500 && e.source === 'processor')).toBe(true);
    const v = await view(c, 'walk');
    expect(v).toMatchObject({ state: 'collected', payments_used: 1, ledger: { collected: 42500, reversed: 0, net: 42500 } });
    expect(v.ledger.entries).toEqual([{ reference: p!.reference, kind: 'credit', amount: 42500, at: expect.any(String) }]);
    // Collected: no more reads, no more payments.
    c.clock.advance(10 * READ_EVERY);
    await cycle(c);
    expect(payments(c, 'walk')).toHaveLength(1);
    const list = (await c.json('GET', '/v1/payment_connections')).body;
    expect(list).toMatchObject({ ingested: 1, matched: 1 });
    expect(list.last_poll_at).not.toBeNull();
  });
});

describe('the sandbox outcome table through collection (ACH)', () => {
  // cents → events a poll sees after one and two settlement periods, and the monitor after.
  const table: [number, string[], string][] = [
    [42500, ['processing', 'settled'], 'collected'],
    [42591, ['processing', 'returned:R01'], 'monitored'],
    [42592, ['processing', 'returned:R09'], 'monitored'],
    [42593, ['processing', 'returned:R02'], 'stopped'],
    [42594, ['processing', 'returned:R10'], 'stopped'],
    [42595, ['processing', 'settled', 'late_returned:R10'], 'stopped'],
    [42596, ['invalid'], 'stopped'],
    [42597, ['processing'], 'monitored'],
    [42598, ['processing', 'settled'], 'collected'],
    [42599, ['processing', 'settled', 'late_returned:R01'], 'monitored'],
  ];
  for (const [amount, expected, state] of table) {
    test(`cents ${amount % 100}: ${expected.join(' → ')}; monitor ${state}`, async () => {
      const c = await setup();
      const id = `t${amount}`;
      await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(id, { collectable_amount: amount })] } });
      await cycle(c);
      // 98 fails transiently on the first try: the retry, with the same key, comes after its backoff.
      await dispatchAndSettle(c, SETTLE);
      expect(statuses(await events(c, id))).toEqual(expected);
      expect(payments(c, id)).toHaveLength(1);
      const v = await view(c, id);
      expect(v.state).toBe(state);
      if (state === 'stopped') expect(v.reason).toBeTruthy();
    });
  }

  test('R01 leaves the borrower eligible: reinitiated with a new reference and the amount current then, at most 3 payments', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('again', { collectable_amount: 10091 })] } });
    for (let round = 0; round < 5; round++) {
      await cycle(c);
      c.clock.advance(SETTLE);
      await pollProcessors(c.rt);
      if (round === 0) {
        // A re-send changes the amount for the next payment only.
        await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('again', { collectable_amount: 20091 })] } });
      }
      c.clock.advance(READ_EVERY);
    }
    const ps = payments(c, 'again');
    expect(ps.map((p) => [p.status, p.amount])).toEqual([
      ['returned', 10091],
      ['returned', 20091],
      ['returned', 20091],
    ]);
    expect(new Set(ps.map((p) => p.reference)).size).toBe(3);
    expect((await view(c, 'again')).payments_used).toBe(3);
  });
});

describe('the decision', () => {
  test('no key for the rail: skipped with blocked_reason, then collected once a default key is added', async () => {
    const c = await setup({ key: false });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('nokey')] } });
    await cycle(c);
    expect(payments(c, 'nokey')).toHaveLength(0);
    expect((await view(c, 'nokey')).blocked_reason).toBe('no_processor_key');
    expect(await events(c, 'nokey')).toEqual([]);
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_late_key_000000000001', rail_scope: 'ach', is_default: true } });
    c.clock.advance(READ_EVERY);
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await view(c, 'nokey')).toMatchObject({ state: 'collected', blocked_reason: null });
  });

  test('a balance below the amount (plus margin) initiates nothing; a balance that meets it does', async () => {
    const c = await setup();
    // Balance 123.45; 123.46 is not covered, 123.45 is.
    await c.json('POST', '/v1/payment_enrollments', {
      body: { borrowers: [enrollBorrower('short', { account_number: '0000012345', collectable_amount: 12346 }), enrollBorrower('exact', { account_number: '0000012345', collectable_amount: 12345 })] },
    });
    await cycle(c);
    expect(payments(c, 'short')).toHaveLength(0);
    expect(payments(c, 'exact')).toHaveLength(1);
  });

  test('removal returned before dispatch: the payment never reaches the processor, is not counted, and its end is an event the lender is told of', async () => {
    const c = await setup();
    expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/payments', event_types: ['PAYMENT_EVENT'] } })).status).toBe(201);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('gone')] } });
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    expect(payments(c, 'gone')).toMatchObject([{ status: 'initiating' }]);
    await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['gone'] } });
    await dispatchPayments(c.rt);
    expect(payments(c, 'gone')).toMatchObject([{ status: 'not_attempted' }]);
    const sandbox = new SandboxProcessor({ ...(c.rt.pg ? { pg: c.rt.pg } : { sqlite: c.rt.sqlite }), clock: c.clock, settlementMs: SETTLE });
    expect((await sandbox.listChanges('sbx_collect_00000000000001', null)).changes).toEqual([]);
    expect((await view(c, 'gone')).payments_used).toBe(0);
    // Recorded as every outcome is: its event (the service's word: the processor was never asked) and a push.
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=gone')).body.events;
    expect(events).toMatchObject([{ status: 'not_attempted', source: 'service', message: 'monitoring of the borrower stopped before the payment was sent' }]);
    const pushed = (await c.rows<{ payload: string }>("SELECT payload FROM webhook_deliveries WHERE type = 'PAYMENT_EVENT'")).map((d) => JSON.parse(d.payload).payment_event);
    expect(pushed).toEqual(events);
  });

  test('card borrowers (token and raw card) are charged on the card rail', async () => {
    const c = await setup();
    const future = new Date().getUTCFullYear() + 2;
    await c.json('POST', '/v1/payment_enrollments', {
      body: {
        borrowers: [
          enrollBorrower('card-raw', { collectable_amount: 5000, charge_instrument: { card: { debit_card_number: '4242424242424242', expiration_month: 12, expiration_year: future } } }),
          enrollBorrower('card-token', { collectable_amount: 5000, charge_instrument: { processor_token: 'sbxpm_lender_token', card_last4: '4242' } }),
        ],
      },
    });
    await cycle(c);
    for (const id of ['card-raw', 'card-token']) {
      // Cards settle at once in the sandbox.
      expect(statuses(await events(c, id))).toEqual(['settled']);
      expect((await view(c, id)).state).toBe('collected');
    }
  });
});

describe('payments the lender creates at the processor', () => {
  test('a DRS- reference of a borrower is matched and counted; one without is ingested only; an ambiguous one is unmatched', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_enrollments', {
      body: { borrowers: [enrollBorrower('acme', { account_number: '0000000001' }), enrollBorrower('acme-1', { account_number: '0000000001' }), enrollBorrower('solo', { account_number: '0000000001' })] },
    });
    await cycle(c); // balances of 0.01: nothing is initiated by the service
    const sandbox = new SandboxProcessor({ ...(c.rt.pg ? { pg: c.rt.pg } : { sqlite: c.rt.sqlite }), clock: c.clock, settlementMs: SETTLE });
    const key = 'sbx_collect_00000000000001';
    await createSandboxCharge(sandbox, key, { amountCents: 7000, reference: 'DRS-solo-INV-77', rail: 'ach' });
    await createSandboxCharge(sandbox, key, { amountCents: 7100, reference: 'INVOICE-12', rail: 'ach' });
    // "acme" and "acme-1" are both borrowers: the split is ambiguous.
    await createSandboxCharge(sandbox, key, { amountCents: 7200, reference: 'DRS-acme-1-2', rail: 'ach' });
    await pollProcessors(c.rt);
    expect(statuses(await events(c, 'solo'))).toEqual(['processing']);
    expect((await events(c, 'solo'))[0]!.reference).toBe('DRS-solo-INV-77');
    expect(await events(c, 'acme')).toEqual([]);
    expect(await events(c, 'acme-1')).toEqual([]);
    expect((await c.json('GET', '/v1/payment_connections')).body).toMatchObject({ ingested: 3, matched: 1 });
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(statuses(await events(c, 'solo'))).toEqual(['processing', 'settled']);
    expect((await view(c, 'solo')).ledger.collected).toBe(7000);
    // Counted once per processor payment, whatever the number of its events.
    expect((await c.json('GET', '/v1/payment_connections')).body).toMatchObject({ ingested: 3, matched: 1 });
  });

  test('a borrower collected through a charge made outside the service keeps no stale blocked_reason', async () => {
    const c = await setup({ key: false });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('outside', { collectable_amount: 1000 })] } });
    await cycle(c);
    expect(await view(c, 'outside')).toMatchObject({ state: 'monitored', blocked_reason: 'no_processor_key' });
    const key = 'sbx_collect_outside_000001';
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'both', is_default: true } })).status).toBe(201);
    const sandbox = new SandboxProcessor({ ...(c.rt.pg ? { pg: c.rt.pg } : { sqlite: c.rt.sqlite }), clock: c.clock, settlementMs: SETTLE });
    await createSandboxCharge(sandbox, key, { amountCents: 1000, reference: 'DRS-outside-INV-9', rail: 'ach' });
    await pollProcessors(c.rt);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await view(c, 'outside')).toMatchObject({ state: 'collected', blocked_reason: null, ledger: { collected: 1000 } });
  });

  test("another lender's borrower: empty events, and its payments never match mine", async () => {
    const c = await setup();
    const other = c.newLender();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('shared-id')] } });
    await cycle(c);
    expect(await events(c, 'shared-id')).toHaveLength(1);
    expect(await events(c, 'shared-id', other.key)).toEqual([]);
    expect((await c.json('GET', '/v1/payment_events', { key: other.key })).status).toBe(400);
  });
});

describe('events are stable', () => {
  test('event ids are unique and the same on every read; polling the same changes again records nothing', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('stable', { collectable_amount: 42599 })] } });
    await cycle(c);
    for (let i = 0; i < 2; i++) {
      c.clock.advance(SETTLE);
      await pollProcessors(c.rt);
    }
    const first = await events(c, 'stable');
    expect(new Set(first.map((e) => e.event_id)).size).toBe(first.length);
    // Read the whole feed again from the start: every change is seen a second time.
    c.sql.query('UPDATE payment_connections SET poll_cursor = NULL').run();
    await pollProcessors(c.rt);
    expect(await events(c, 'stable')).toEqual(first);
    expect(c.sql.query('SELECT COUNT(*) AS n FROM ledger_entries').get()).toEqual({ n: 2 });
  });

  test('a late return outside the window stops the monitor even for R01', async () => {
    const c = await setup();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('late', { collectable_amount: 42599 })] } });
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect((await view(c, 'late')).state).toBe('collected');
    c.clock.advance(31 * DAY_MS);
    await pollProcessors(c.rt);
    expect(statuses(await events(c, 'late'))).toEqual(['processing', 'settled', 'late_returned:R01']);
    expect((await view(c, 'late')).state).toBe('stopped');
    expect((await view(c, 'late')).ledger).toMatchObject({ collected: 42599, reversed: 42599, net: 0 });
  });
});
