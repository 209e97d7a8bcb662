// Uploaded outcomes of the service's own payments: the processor's word wins. A lender's file saying `voided`
// or `returned` for a payment still processing at the processor is kept as the lender's report; it moves
// nothing (no status, ledger, reinitiation) until the processor says the same, the payment is looked up at once,
// and the borrower is never debited twice for one debt. A stop (R08, an unauthorized return) acts at once.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { startFakeStripe } from '../../fakes/stripe-server';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';

const READ = 3_600_000;
// Long enough for several reads of a borrower while its payment is in flight.
const SETTLE = 10 * READ;
const contexts: TestContext[] = [];
const fake = startFakeStripe();
afterAll(() => {
  contexts.forEach((c) => c.close());
  fake.stop();
});

async function setup(key = `sbx_reported_${contexts.length.toString().padStart(12, '0')}`) {
  // The fake Stripe server dates its objects by the real clock: the service's clock starts there too.
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ), STRIPE_API_URL: fake.url }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'both', is_default: true } })).status).toBe(201);
  return c;
}

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
async function upload(c: TestContext, lines: string[], dryRun = false) {
  const form = new FormData();
  form.append('file', new File([[HEADER, ...lines].join('\n') + '\n'], 'results.csv', { type: 'text/csv' }));
  const res = await c.app.handle(
    new Request(`http://localhost/v1/payment_results/uploads${dryRun ? '?dry_run=true' : ''}`, { method: 'POST', headers: { authorization: `Bearer ${c.lender.key}` }, body: form }),
  );
  expect(res.status).toBe(200);
  return (await res.json()) as { matched: number; problems: { row: number; reason: string; severity: string }[] };
}

const paymentsOf = (c: TestContext, aid: string) =>
  c.rows<{ id: string; status: string; returnCode: string | null; pid: string | null; reference: string; attempt: number }>(
    `SELECT id, status, return_code AS returnCode, processor_payment_id AS pid, reference, attempt FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id`,
    aid,
  );
const atSandbox = async (c: TestContext, aid: string) =>
  (await c.rows<{ n: number }>('SELECT COUNT(*) AS n FROM sandbox_payments s JOIN payments p ON p.id = s.idempotency_key WHERE p.authorizer_unique_id = ?', aid))[0]!.n;
const enrollment = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${encodeURIComponent(aid)}`)).body;
const events = async (c: TestContext, aid: string) =>
  ((await c.json('GET', `/v1/payment_events?authorizer_unique_id=${aid}`)).body.events as { status: string; return_code?: string; source: string }[]).map(
    (e) => `${e.source}:${e.status}${e.return_code ? `:${e.return_code}` : ''}`,
  );
const enroll = async (c: TestContext, aid: string, amount: number) =>
  expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: amount })] } })).status).toBe(207);
const day = (c: TestContext) => new Date(c.clock.now()).toISOString().slice(0, 10);

/** Reads and jobs for a while, inside the settlement period: a borrower with a payment in flight is read, never debited. */
async function readAFewTimes(c: TestContext) {
  for (let i = 0; i < 3; i++) {
    c.clock.advance(READ);
    await cycle(c);
  }
}

describe('an uploaded outcome of a payment still processing at the processor', () => {
  test('voided in the lender’s books: kept as its report, looked up, and the processor’s settlement stands; one debit', async () => {
    const c = await setup();
    // Cents 00: processing, settled one settlement period later.
    await enroll(c, 'void', 1600);
    await cycle(c);
    const [p] = await paymentsOf(c, 'void');
    expect(p!.status).toBe('processing');
    const report = await upload(c, [`void,${p!.reference},16.00,voided,${day(c)},,,`]);
    expect(report.matched).toBe(1);
    expect(report.problems).toEqual([{ row: 2, severity: 'warning', reason: expect.stringContaining('is a payment the service made: voided is kept as your report') }]);
    expect(report.problems[0]!.reason).toContain('the processor is asked now');
    // Recorded as the lender's report; the payment is still what the processor said.
    expect(await events(c, 'void')).toEqual(['processor:processing', 'upload:voided']);
    expect((await paymentsOf(c, 'void'))[0]!.status).toBe('processing');
    expect((await enrollment(c, 'void')).payments[0].reported).toEqual({ status: 'voided', return_code: null, reported_at: expect.any(String), held_because: null });
    // Asked at once: still processing, and said so.
    await dispatchPayments(c.rt);
    expect((await enrollment(c, 'void')).payments[0].reported.held_because).toContain('still processing');
    await readAFewTimes(c);
    expect(await atSandbox(c, 'void')).toBe(1);
    // The processor settles it: recorded, credited once; the report stands, saying it was not confirmed.
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect((await paymentsOf(c, 'void'))[0]!.status).toBe('settled');
    const v = await enrollment(c, 'void');
    expect(v).toMatchObject({ state: 'collected', ledger: { collected: 1600, reversed: 0, net: 1600 } });
    expect(v.payments[0].reported.held_because).toContain('recorded settled');
    for (let i = 0; i < 3; i++) {
      c.clock.advance(READ);
      await cycle(c);
    }
    expect(await atSandbox(c, 'void')).toBe(1);
  });

  test('returned R01 before the processor says so: no reinitiation while the original is in flight; both never settle', async () => {
    const c = await setup();
    await enroll(c, 'early', 1700);
    await cycle(c);
    const [p] = await paymentsOf(c, 'early');
    const report = await upload(c, [`early,${p!.reference},17.00,returned,${day(c)},,${day(c)},R01`]);
    expect(report.matched).toBe(1);
    // R01 keeps the borrower eligible, but the payment is in flight: read, never debited again.
    expect(await enrollment(c, 'early')).toMatchObject({ state: 'monitored' });
    await readAFewTimes(c);
    expect(await atSandbox(c, 'early')).toBe(1);
    expect((await paymentsOf(c, 'early')).map((x) => x.status)).toEqual(['processing']);
    c.clock.advance(SETTLE);
    await cycle(c);
    expect((await paymentsOf(c, 'early')).map((x) => x.status)).toEqual(['settled']);
    const v = await enrollment(c, 'early');
    expect(v).toMatchObject({ state: 'collected', ledger: { net: 1700 } });
    expect(await atSandbox(c, 'early')).toBe(1);
  });

  test('returned R01, then the processor returns it too: recorded from the processor, the report cleared, and the reinitiation follows', async () => {
    const c = await setup();
    // Cents 91: processing, returned R01 one settlement period later.
    await enroll(c, 'confirmed', 1791);
    await cycle(c);
    const [p] = await paymentsOf(c, 'confirmed');
    await upload(c, [`confirmed,${p!.reference},17.91,returned,${day(c)},,${day(c)},R01`]);
    await dispatchPayments(c.rt);
    expect((await paymentsOf(c, 'confirmed')).map((x) => x.status)).toEqual(['processing']);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect((await paymentsOf(c, 'confirmed'))[0]).toMatchObject({ status: 'returned', returnCode: 'R01' });
    expect((await enrollment(c, 'confirmed')).payments[0].reported).toBeNull();
    expect(await events(c, 'confirmed')).toEqual(['processor:processing', 'upload:returned:R01', 'processor:returned:R01']);
    // The return counts once in the lender's return rates: the processor's, not the report before it.
    expect((await c.json('GET', '/v1/return_rates')).body.rates.overall.returns).toBe(1);
    // Confirmed: the reinitiation goes out at the next read.
    c.clock.advance(READ);
    await cycle(c);
    expect((await paymentsOf(c, 'confirmed')).map((x) => [x.status, x.attempt])).toEqual([
      ['returned', 1],
      ['processing', 2],
    ]);
  });

  test('a dry run says the same, and records nothing', async () => {
    const c = await setup();
    await enroll(c, 'dry', 1800);
    await cycle(c);
    const [p] = await paymentsOf(c, 'dry');
    const report = await upload(c, [`dry,${p!.reference},18.00,returned,${day(c)},,${day(c)},R01`], true);
    expect(report.problems[0]!.reason).toContain('is a payment the service made: returned is kept as your report');
    expect(await events(c, 'dry')).toEqual(['processor:processing']);
    expect((await enrollment(c, 'dry')).payments[0].reported).toBeNull();
  });
});

describe('an uploaded outcome the processor cannot confirm', () => {
  test('its key deleted: held, saying why in the upload report and the enrollment; the borrower is not debited again', async () => {
    const c = await setup();
    // Cents 97: processing, never resolved.
    await enroll(c, 'keyless', 1897);
    await cycle(c);
    const [p] = await paymentsOf(c, 'keyless');
    const conn = (await c.json('GET', '/v1/payment_connections')).body.connections[0].id;
    expect((await c.json('DELETE', `/v1/payment_connections/${conn}`)).status).toBe(204);
    // Another key: the borrower could be debited through it, were the outcome taken on the lender's word.
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_reported_second_key01', rail_scope: 'both', is_default: true } })).status).toBe(201);
    const report = await upload(c, [`keyless,${p!.reference},18.97,returned,${day(c)},,${day(c)},R01`]);
    expect(report.problems[0]!.reason).toContain('held: the processor key this payment went through was deleted');
    expect((await enrollment(c, 'keyless')).payments[0].reported.held_because).toContain('was deleted');
    for (let i = 0; i < 3; i++) {
      c.clock.advance(READ);
      await cycle(c);
    }
    expect(await atSandbox(c, 'keyless')).toBe(1);
    expect((await paymentsOf(c, 'keyless')).map((x) => x.status)).toEqual(['processing']);
  });

  test('the processor unreachable: held, saying so, and asked again until it answers (fake Stripe)', async () => {
    const key = 'sk_test_reported_unreachable_01';
    const c = await setup(key);
    await enroll(c, 'far', 2000);
    await cycle(c);
    const [p] = await paymentsOf(c, 'far');
    expect(p!.status).toBe('processing');
    await upload(c, [`far,${p!.reference},20.00,returned,${day(c)},,${day(c)},R01`]);
    fake.control.failNext(20, 503);
    await dispatchPayments(c.rt);
    expect((await enrollment(c, 'far')).payments[0].reported.held_because).toContain('its processor could not be asked');
    fake.control.failNext(0);
    // The processor returns it meanwhile; the next look-up records it from the processor.
    fake.control.fail(p!.pid!, 'insufficient_funds');
    c.clock.advance(READ);
    await dispatchPayments(c.rt);
    expect((await paymentsOf(c, 'far'))[0]).toMatchObject({ status: 'returned', returnCode: 'R01' });
    expect((await enrollment(c, 'far')).payments[0].reported).toBeNull();
  });
});

describe('a stop uploaded is acted on at once', () => {
  test('an unauthorized return (R10) stops the borrower before the processor says anything', async () => {
    const c = await setup();
    await enroll(c, 'fraud', 1997);
    await cycle(c);
    const [p] = await paymentsOf(c, 'fraud');
    await upload(c, [`fraud,${p!.reference},19.97,returned,${day(c)},,${day(c)},R10`]);
    expect(await enrollment(c, 'fraud')).toMatchObject({ state: 'stopped', reason: 'R10' });
    expect((await paymentsOf(c, 'fraud'))[0]!.status).toBe('processing');
  });
});
