// The return-rate watch: RETURN_RATE_ALERT once per change of a class's status (uploads, a processor return,
// the timed evaluation), verified with the standardwebhooks package; the pause on breach on and off by itself,
// card payments not paused; the gauges. Webhooks are delivered at least once in no promised order
// (docs/webhooks.md): the alerts are compared as a set, and their figures say which change each one was.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { startReceiver, verifyWithLibrary, type Receiver } from '../webhooks/support';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { evaluateAll, readReturnRates, saveReturnRates } from '../../../src/modules/return-rates/watch';
import { readSnapshot, transaction } from '../../../src/platform/context';

const contexts: TestContext[] = [];
const receivers: Receiver[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  receivers.forEach((r) => r.stop());
});

const HEADER = 'reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
const NOW = Date.parse('2026-11-20T15:00:00Z');
const day = (ago: number) => new Date(NOW - ago * 86_400_000).toISOString().slice(0, 10);
const settled = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i},10.00,settled,${day(20)},${day(18)},,`);
const returned = (prefix: string, n: number, code: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i},10.00,returned,${day(19)},,${day(16)},${code}`);

async function upload(c: TestContext, rows: string[]) {
  const form = new FormData();
  form.append('file', new File([[HEADER, ...rows].join('\n') + '\n'], 'results.csv', { type: 'text/csv' }));
  const res = await c.app.handle(new Request('http://localhost/v1/payment_results/uploads', { method: 'POST', headers: { authorization: `Bearer ${c.lender.key}` }, body: form }));
  expect(res.status).toBe(200);
}

function setup(env: Record<string, string> = {}) {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: '60000', MONITOR_READ_INTERVAL_MS: '3600000', ...env }, { clockAt: new Date(NOW).toISOString() });
  contexts.push(c);
  const r = startReceiver();
  receivers.push(r);
  return { c, r };
}

async function alerts(c: TestContext, r: Receiver) {
  await deliverDueWebhooks(c.rt);
  const secret = (await c.json('GET', '/v1/webhooks/secret')).body.secret as string;
  const got = r.requests.map((q) => verifyWithLibrary(secret, q) as Record<string, any>).filter((p) => p.type === 'RETURN_RATE_ALERT');
  return unordered(got);
}

/** Alerts in one order whatever order they arrived in: by class, then by the debits of their change. */
function unordered<T extends Record<string, any>>(items: T[]): T[] {
  return [...items].sort((a, b) => String(a.class).localeCompare(String(b.class)) || Number(a.debits) - Number(b.debits));
}

describe('RETURN_RATE_ALERT', () => {
  test('once per change of a class’s status, with the figures of the change; nothing when nothing changes', async () => {
    const { c, r } = setup();
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/rates'), event_types: ['RETURN_RATE_ALERT'] } });
    // 97 settled and 3 R02: administrative 3 of 100 = 3%, exactly its threshold.
    await upload(c, [...settled('S', 97), ...returned('A', 3, 'R02')]);
    // The same file again changes nothing, nor does the timed evaluation.
    await upload(c, [...settled('S', 97), ...returned('A', 3, 'R02')]);
    await evaluateAll(c.rt);
    // 25 more debits: 3 of 125 = 2.4%, exactly 80% of it.
    await upload(c, settled('T', 25));
    // One more: 3 of 126, under 80%.
    await upload(c, settled('V', 1));
    await evaluateAll(c.rt);
    const got = await alerts(c, r);
    const base = { event_uuid: expect.any(String), type: 'RETURN_RATE_ALERT', class: 'administrative', threshold: 0.03, returns: 3, window_days: 60 };
    expect(got).toEqual([
      { ...base, status: 'exceeded', rate: 3 / 100, debits: 100 },
      { ...base, status: 'warning', rate: 3 / 125, debits: 125 },
      { ...base, status: 'ok', rate: 3 / 126, debits: 126 },
    ]);
    // What GET /v1/return_rates answers agrees with the last alert.
    expect((await c.json('GET', '/v1/return_rates')).body.rates.administrative).toEqual({ returns: 3, rate: 3 / 126, threshold: 0.03, status: 'ok' });
    // As the window slides past every row, the statuses stay ok: no alert.
    c.clock.advance(61 * 86_400_000);
    await evaluateAll(c.rt);
    expect(await alerts(c, r)).toHaveLength(3);
    // The gauges hold the last evaluation.
    const text = await c.rt.metrics.registry.metrics();
    expect(text).toContain(`ach_debits_window{lender="${c.lender.id}"} 0`);
    expect(text).toContain(`ach_return_rate{lender="${c.lender.id}",class="administrative"} 0`);
  });

  test('rates read on a snapshot and saved after (an upload’s): saved as read, or read again when an evaluation was saved in between', async () => {
    const { c, r } = setup();
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/rates'), event_types: ['RETURN_RATE_ALERT'] } });
    const ctx = { deps: c.rt };
    const read = () => readSnapshot(ctx, (tx) => readReturnRates(tx, c.lender.id));
    const save = (rates: Awaited<ReturnType<typeof read>>) => transaction(ctx, (tx) => saveReturnRates(tx, c.lender.id, rates));
    // 3 R02 of 100 debits: administrative exceeded.
    await upload(c, [...settled('S', 97), ...returned('A', 3, 'R02')]);
    const before = await read();
    expect(before.rates.rates.administrative.status).toBe('exceeded');
    // 26 more debits, evaluated by their upload: 3 of 126, ok.
    await upload(c, settled('T', 26));
    // Saved as read, the rates of before would take it back to exceeded: they are read again instead.
    expect(await save(before)).toEqual({ unauthorized: 'ok', administrative: 'ok', overall: 'ok' });
    const got = await alerts(c, r);
    expect(got.map((a) => [a.class, a.status, a.debits])).toEqual([
      ['administrative', 'exceeded', 100],
      ['administrative', 'ok', 126],
    ]);
    // Nothing saved in between: saved as read, though the window has slid past every row since.
    const now = await read();
    c.clock.advance(61 * 86_400_000);
    expect(await save(now)).toEqual({ unauthorized: 'ok', administrative: 'ok', overall: 'ok' });
    expect(await c.rt.metrics.registry.metrics()).toContain(`ach_debits_window{lender="${c.lender.id}"} 126`);
    await evaluateAll(c.rt);
    expect(await c.rt.metrics.registry.metrics()).toContain(`ach_debits_window{lender="${c.lender.id}"} 0`);
    expect(await alerts(c, r)).toHaveLength(2);
  });

  test('a return read from the processor is evaluated at once', async () => {
    const { c, r } = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_rates_alert_0000001', rail_scope: 'both', is_default: true } });
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/rates'), event_types: ['RETURN_RATE_ALERT'] } });
    // Cents 93: processing, then returned R02: 1 debit, 1 administrative return.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('ret', { collectable_amount: 1093 })] } });
    await cycle(c);
    c.clock.advance(60_000);
    await cycle(c);
    const got = await alerts(c, r);
    expect(got.map((a) => [a.class, a.status, a.returns, a.debits])).toEqual([
      ['administrative', 'exceeded', 1, 1],
      ['overall', 'exceeded', 1, 1],
    ]);
    const text = await c.rt.metrics.registry.metrics();
    expect(text).toContain(`ach_return_rate{lender="${c.lender.id}",class="overall"} 1`);
    expect(text).toContain(`ach_debits_window{lender="${c.lender.id}"} 1`);
  });
});

describe('the pause on breach', () => {
  test('no new ACH payment while a class is exceeded, resumed by itself once every class is under; cards go on', async () => {
    const { c, r } = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_rates_pause_0000001', rail_scope: 'both', is_default: true } });
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/blocked'), event_types: ['ENROLLMENT_BLOCKED'] } });
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { return_rate_pause: true } })).body.return_rate_pause).toBe(true);
    // Unauthorized: 1 R10 of 10 debits, far over 0.5%.
    await upload(c, [...settled('S', 9), ...returned('U', 1, 'R10')]);
    expect((await c.json('GET', '/v1/return_rates')).body.paused).toBe(true);
    // A shorter window says whether the pause is in force too: it is measured over 60 days.
    expect((await c.json('GET', '/v1/return_rates?window_days=1')).body.paused).toBe(true);

    await c.json('POST', '/v1/payment_enrollments', {
      body: {
        borrowers: [
          enrollBorrower('ach-paused', { collectable_amount: 1000 }),
          enrollBorrower('card-goes', { collectable_amount: 1000, charge_instrument: { processor_token: 'sbxpm_pause', card_last4: '4242' } }),
        ],
      },
    });
    await cycle(c);
    const ach = (await c.json('GET', '/v1/payment_enrollments/ach-paused')).body;
    expect(ach).toMatchObject({ state: 'monitored', blocked_reason: 'return_rate_paused' });
    expect(ach.payments).toEqual([]);
    const card = (await c.json('GET', '/v1/payment_enrollments/card-goes')).body;
    expect(card.payments).toHaveLength(1);
    expect(card.blocked_reason).toBeNull();
    expect(await c.rt.metrics.registry.metrics()).toContain('payments_skipped_total{reason="return_rate_paused"} 1');
    await deliverDueWebhooks(c.rt);
    const secret = (await c.json('GET', '/v1/webhooks/secret')).body.secret as string;
    expect(r.requests.map((q) => verifyWithLibrary(secret, q))).toEqual([
      { event_uuid: expect.any(String), type: 'ENROLLMENT_BLOCKED', authorizer_unique_id: 'ach-paused', state: 'monitored', reason: null, blocked_reason: 'return_rate_paused' },
    ]);

    // Reads go on and the pause holds.
    c.clock.advance(3_600_000);
    await cycle(c);
    expect((await c.json('GET', '/v1/payment_enrollments/ach-paused')).body.payments).toEqual([]);

    // 191 more debits: 1 of 201 is under 0.5% (a warning): the pause lifts by itself at the next read.
    await upload(c, settled('T', 191));
    expect((await c.json('GET', '/v1/return_rates')).body).toMatchObject({ paused: false, rates: { unauthorized: { status: 'warning' } } });
    c.clock.advance(3_600_000);
    await cycle(c);
    const resumed = (await c.json('GET', '/v1/payment_enrollments/ach-paused')).body;
    expect(resumed.payments).toHaveLength(1);
    expect(resumed.blocked_reason).toBeNull();
  });

  test('returns with no debits in the window: exceeded at rate 1, alerted, and ACH collection paused', async () => {
    const { c, r } = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_rates_nodebit_000001', rail_scope: 'both', is_default: true } });
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/rates'), event_types: ['RETURN_RATE_ALERT'] } });
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { return_rate_pause: true } })).body.return_rate_pause).toBe(true);
    // Three R10 returns of debits submitted 70 days ago, before the window: no debit in it.
    await upload(c, Array.from({ length: 3 }, (_, i) => `OLD-${i},10.00,returned,${day(70)},,${day(5)},R10`));
    const rates = (await c.json('GET', '/v1/return_rates')).body;
    expect(rates.debits).toBe(0);
    expect(rates.rates.unauthorized).toEqual({ returns: 3, rate: 1, threshold: 0.005, status: 'exceeded' });
    expect(rates.rates.overall).toEqual({ returns: 3, rate: 1, threshold: 0.15, status: 'exceeded' });
    expect(rates.rates.administrative).toEqual({ returns: 0, rate: 0, threshold: 0.03, status: 'ok' });
    expect(rates.paused).toBe(true);
    const base = { event_uuid: expect.any(String), type: 'RETURN_RATE_ALERT', status: 'exceeded', rate: 1, returns: 3, debits: 0, window_days: 60 };
    expect(await alerts(c, r)).toEqual([
      { ...base, class: 'overall', threshold: 0.15 },
      { ...base, class: 'unauthorized', threshold: 0.005 },
    ]);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('no-debits', { collectable_amount: 1000 })] } });
    await cycle(c);
    const e = (await c.json('GET', '/v1/payment_enrollments/no-debits')).body;
    expect(e).toMatchObject({ state: 'monitored', blocked_reason: 'return_rate_paused' });
    expect(e.payments).toEqual([]);
  });

  test('without return_rate_pause a breach does not stop collection; paused stays false', async () => {
    const { c } = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_rates_nopause_00001', rail_scope: 'both', is_default: true } });
    await upload(c, [...settled('S', 9), ...returned('U', 1, 'R10')]);
    expect((await c.json('GET', '/v1/return_rates')).body).toMatchObject({ paused: false, rates: { unauthorized: { status: 'exceeded' } } });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('ach-goes', { collectable_amount: 1000 })] } });
    await cycle(c);
    expect((await c.json('GET', '/v1/payment_enrollments/ach-goes')).body.payments).toHaveLength(1);
  });

  test('a scheduled ACH payment due on a paused day is voided, not sent', async () => {
    const { c } = setup();
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_rates_notice_000001', rail_scope: 'both', is_default: true } });
    await c.json('PATCH', '/v1/collection_policy', { body: { notice_days: 1, return_rate_pause: true } });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('noticed', { collectable_amount: 1000 })] } });
    await cycle(c);
    expect((await c.json('GET', '/v1/payment_enrollments/noticed')).body.scheduled_payment).not.toBeNull();
    // A breach before its day.
    await upload(c, [...settled('S', 9), ...returned('U', 1, 'R10')]);
    c.clock.advance(4 * 86_400_000);
    await cycle(c);
    const e = (await c.json('GET', '/v1/payment_enrollments/noticed')).body;
    expect(e.scheduled_payment).toBeNull();
    expect(e.blocked_reason).toBe('return_rate_paused');
    expect(e.payments.map((p: { status: string }) => p.status)).toEqual(['voided']);
    const sent = c.sql.query("SELECT COUNT(*) AS n FROM sandbox_payments").get() as { n: number };
    expect(sent.n).toBe(0);
  });
});
