// A recorded payment status only moves forward, whatever order its sources deliver it in, and presentments
// are counted per debt: the sequences that once wedged a key's feed, sent a payment back to processing,
// ignored an uploaded R08 or let removal and re-send reset the count, each replayed against the real service.
import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { startFakeStripe } from '../../fakes/stripe-server';
import { startReceiver } from '../webhooks/support';
import { signedIn } from '../../helpers/portal';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { reconcileKeys } from '../../../src/modules/collection/reconcile';
import { recordSlice } from '../../../src/modules/collection/record';
import { transaction } from '../../../src/platform/context';
import type { EventStatus } from '../../../db/schema/enums';

const SETTLE = 60_000;
const READ = 3_600_000;
const contexts: TestContext[] = [];
const fake = startFakeStripe();
const receiver = startReceiver();
afterAll(() => {
  contexts.forEach((c) => c.close());
  fake.stop();
  receiver.stop();
});

function setup(env: Record<string, string> = {}) {
  // The fake Stripe server dates its objects by the real clock: the service's clock starts there too.
  const c = createTestContext(
    { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ), STRIPE_API_URL: fake.url, SANDBOX_OUTAGE_MS: '60000', ...env },
    { clockAt: new Date().toISOString() },
  );
  contexts.push(c);
  return c;
}

const rows = <T>(c: TestContext, sql: string, ...args: (string | number)[]) => c.rows<T>(sql, ...args);
const paymentsOf = async (c: TestContext, aid: string) =>
  rows<{ id: string; status: string; returnCode: string | null; pid: string | null; reference: string; attempt: number; amount: number }>(
    c,
    `SELECT id, status, return_code AS returnCode, processor_payment_id AS pid, reference, attempt, amount_cents AS amount
       FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id`,
    aid,
  );
const enrollment = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${encodeURIComponent(aid)}`)).body;
const enroll = async (c: TestContext, borrower: Record<string, unknown>) => {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [borrower] } });
  expect(r.status).toBe(207);
  return r.body.results[0];
};
const remove = async (c: TestContext, aid: string) =>
  expect((await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: [aid] } })).body.removed).toBe(1);
const setAside = async (c: TestContext) => (await rows<{ n: number }>(c, 'SELECT COUNT(*) AS n FROM payment_observations_set_aside'))[0]!.n;

/** Every payment's events read in recording order carry non-decreasing times (invariant: times follow statuses). */
async function expectEventTimesInOrder(c: TestContext): Promise<void> {
  const events = await rows<{ pid: string; at: number }>(c, 'SELECT payment_id AS pid, occurred_at AS at FROM payment_events WHERE payment_id IS NOT NULL ORDER BY recorded_at, id');
  const last = new Map<string, number>();
  for (const e of events) {
    expect(e.at).toBeGreaterThanOrEqual(last.get(e.pid) ?? -Infinity);
    last.set(e.pid, e.at);
  }
}

/** Stripe's PaymentIntent status, in the service's words. */
const stripeStatus = (pi: { status: string }) =>
  ({ processing: 'processing', succeeded: 'settled', requires_payment_method: 'returned', canceled: 'voided' })[pi.status] ?? pi.status;

describe('any order of observations of one payment', () => {
  // Truthful histories of one payment (what the processor went through), and sources that report them late,
  // twice, out of order, from the feed, a look-up, reconciliation or an upload.
  const PATHS: EventStatus[][] = [
    ['processing', 'settled'],
    ['processing', 'settled', 'late_returned'],
    ['processing', 'settled', 'refunded'],
    ['processing', 'returned'],
    ['processing', 'invalid'],
    ['processing', 'voided'],
  ];
  const SOURCES = ['feed', 'lookup', 'reconcile', 'upload'] as const;

  test('the recorded status is the furthest the processor told; an upload never moves it; the feed never stops; a reinitiation in flight is never disturbed', async () => {
    const c = setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_forward_property_0001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    const lender = c.lender.id;
    const conn = (await rows<{ id: string }>(c, 'SELECT id FROM payment_connections'))[0]!.id;
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PATHS),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom(...SOURCES), fc.boolean()), { minLength: 1, maxLength: 12 }),
        async (path, picks) => {
          const aid = `prop-${n++}`;
          await enroll(c, enrollBorrower(aid, { collectable_amount: 1000 }));
          const eid = (await rows<{ id: string }>(c, 'SELECT id FROM enrollments WHERE authorizer_unique_id = ?', aid))[0]!.id;
          // The payment observed, and another of the same borrower in flight (a reinitiation), which holds the
          // one-in-flight index: a stale processing written back to the first would break it.
          const now = c.clock.now();
          const mk = (id: string, status: string) =>
            rows(
              c,
              `INSERT INTO payments (id, lender_id, enrollment_id, authorizer_unique_id, connection_id, rail, amount_cents, reference, status, state, created_at, updated_at, first_attempt_at)
               VALUES (?, ?, ?, ?, ?, 'ach', 1000, ?, ?, 'done', ?, ?, ?) RETURNING id`,
              id, lender, eid, aid, conn, `DRS-${aid}-${id}`, status, now, now, now,
            );
          const pid = `p-${aid}`;
          await mk(pid, 'initiating');
          // What the processor told (the feed, a look-up, reconciliation); an upload is the lender's report only.
          const observed: EventStatus[] = [];
          let seq = 0;
          for (const [i, source, withOther] of picks) {
            const status = path[i % path.length]!;
            if (source !== 'upload') observed.push(status);
            if (withOther && (await rows(c, "SELECT id FROM payments WHERE enrollment_id = ? AND status IN ('initiating','processing') AND id != ?", eid, pid)).length === 0) {
              // A reinitiation goes in flight once the observed payment has reached a final status.
              const cur = (await rows<{ status: string }>(c, 'SELECT status FROM payments WHERE id = ?', pid))[0]!.status;
              if (cur !== 'initiating' && cur !== 'processing') await mk(`q-${aid}`, 'processing');
            }
            const [r] = await transaction({ deps: c.rt }, (tx) =>
              recordSlice(tx, [{
                lenderId: lender,
                reference: `DRS-${aid}-${pid}`,
                status,
                amountCents: 1000,
                returnCode: status === 'returned' || status === 'late_returned' ? 'R01' : null,
                message: null,
                // Times that go backwards as well as forwards.
                occurredAt: now + ((i * 7919) % 13) * 1000,
                source: source === 'upload' ? 'upload' : 'processor',
                sourceEventId: `${source}:${pid}:${seq++ % 3}:${status}`,
                enrollmentId: eid,
                authorizerUniqueId: aid,
                paymentId: pid,
                connectionId: source === 'upload' ? null : conn,
              }]),
            );
            // Never set aside: a stale status is simply not ahead.
            expect(r).not.toBeNull();
          }
          // The furthest status the processor told along the true path (initiating while it told none).
          const furthest = observed.length === 0 ? 'initiating' : path[Math.max(...observed.map((s) => path.indexOf(s)))]!;
          expect((await rows<{ status: string }>(c, 'SELECT status FROM payments WHERE id = ?', pid))[0]!.status).toBe(furthest);
          // One event per status recorded, each ahead of the one before.
          const recorded = (await rows<{ status: string }>(c, 'SELECT status FROM payment_events WHERE payment_id = ? ORDER BY recorded_at, id', pid)).map((e) => e.status);
          expect(recorded.map((s) => path.indexOf(s as EventStatus))).toEqual([...recorded.map((s) => path.indexOf(s as EventStatus))].sort((a, b) => a - b));
          expect(new Set(recorded).size).toBe(recorded.length);
        },
      ),
      { numRuns: 200, seed: 20261125 },
    );
    expect(await setAside(c)).toBe(0);
    await expectEventTimesInOrder(c);
  }, 120_000);
});

describe('a lost answer, then the feed’s stale processing (fake Stripe)', () => {
  test('the feed goes on past the stale status and every payment ends with Stripe’s status', async () => {
    const c = setup();
    const key = 'sk_test_wedged_feed_account_01';
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'ach', is_default: true } })).status).toBe(201);
    // The create is done at Stripe but its answer is lost.
    fake.control.loseNextAnswers(1);
    await enroll(c, enrollBorrower('wedge', { collectable_amount: 4200 }));
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await dispatchPayments(c.rt);
    const [first] = await paymentsOf(c, 'wedge');
    expect(first!.status).toBe('initiating');
    const pi1 = fake.control.intents(key)[0]!;
    fake.control.fail(pi1.id, 'insufficient_funds');
    // Removed before the outcome is known: the retry only looks the payment up, and records R01 from it.
    await remove(c, 'wedge');
    c.clock.advance(10_000);
    await dispatchPayments(c.rt);
    expect((await paymentsOf(c, 'wedge'))[0]).toMatchObject({ status: 'returned', returnCode: 'R01' });
    // Sent again without a new authorization: a reinitiation of the same debt goes in flight.
    await enroll(c, enrollBorrower('wedge', { collectable_amount: 4200 }));
    c.clock.advance(READ);
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await dispatchPayments(c.rt);
    const second = (await paymentsOf(c, 'wedge'))[1]!;
    expect(second).toMatchObject({ status: 'processing', attempt: 2 });

    // The feed now delivers the first payment's processing, older than its recorded R01: kept out.
    const stale = Number((await c.rt.metrics.registry.getSingleMetricAsString('payment_observations_stale_total')).match(/source="processor"} (\d+)/)?.[1] ?? 0);
    await pollProcessors(c.rt);
    const conn = (await rows<{ error: string | null; cursor: string | null }>(c, 'SELECT last_poll_error AS error, poll_cursor AS cursor FROM payment_connections'))[0]!;
    expect(conn.error).toBeNull();
    expect(conn.cursor).toBe(fake.control.events(key).at(-1)!.id);
    expect(Number((await c.rt.metrics.registry.getSingleMetricAsString('payment_observations_stale_total')).match(/source="processor"} (\d+)/)?.[1])).toBeGreaterThan(stale);
    expect(await setAside(c)).toBe(0);
    const byPi = () => new Map(fake.control.intents(key).map((pi) => [pi.id, stripeStatus(pi)]));
    for (const p of await paymentsOf(c, 'wedge')) expect(p.status).toBe(byPi().get(p.pid!)!);

    // The second settles: recorded like every other outcome, the feed still moving.
    fake.control.succeed(second.pid!);
    await pollProcessors(c.rt);
    for (const p of await paymentsOf(c, 'wedge')) expect(p.status).toBe(byPi().get(p.pid!)!);
    expect((await paymentsOf(c, 'wedge')).map((p) => p.status)).toEqual(['returned', 'settled']);
    expect((await enrollment(c, 'wedge')).state).toBe('collected');
    await expectEventTimesInOrder(c);
  });
});

describe('an outage: the look-up records the outcome first (sandbox)', () => {
  test('the feed’s older processing never takes the payment back, and the borrower can be debited again', async () => {
    const c = setup({ SANDBOX_OUTAGE_MS: '60000' });
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_outage_lookup_first_01', rail_scope: 'both', is_default: true } })).status).toBe(201);
    const endpoint = await c.json('POST', '/v1/webhook_endpoints', { body: { url: receiver.url('/payments'), event_types: ['PAYMENT_EVENT'] } });
    expect(endpoint.status).toBe(201);
    // Cents 88: the answer is lost in an outage; the payment settles at the processor meanwhile.
    await enroll(c, enrollBorrower('outage', { collectable_amount: 1088 }));
    await cycle(c);
    expect((await paymentsOf(c, 'outage'))[0]!.status).toBe('initiating');
    await remove(c, 'outage');
    c.clock.advance(2 * SETTLE);
    // Removed, so only looked up: settled, recorded before the feed is read.
    await dispatchPayments(c.rt);
    expect((await paymentsOf(c, 'outage'))[0]!.status).toBe('settled');
    await pollProcessors(c.rt);
    expect((await paymentsOf(c, 'outage'))[0]!.status).toBe('settled');
    // The lender was told settled once, and never processing after it.
    const pushed = (await rows<{ payload: string }>(c, "SELECT payload FROM webhook_deliveries WHERE type = 'PAYMENT_EVENT' ORDER BY created_at, id")).map((d) => JSON.parse(d.payload).payment_event.status);
    expect(pushed.lastIndexOf('processing')).toBeLessThan(Math.max(0, pushed.indexOf('settled')));
    expect(pushed.filter((s) => s === 'settled')).toHaveLength(1);
    // Sent again: read, but not debited while the settled payment may still be returned late (its chain is
    // open for the policy's five business days); then a new debt, debited.
    expect((await enroll(c, enrollBorrower('outage', { collectable_amount: 1000 }))).outcome).toBe('enrolled');
    await cycle(c);
    expect((await paymentsOf(c, 'outage')).map((p) => p.status)).toEqual(['settled']);
    expect(await enrollment(c, 'outage')).toMatchObject({ state: 'monitored', blocked_reason: 'late_return_window' });
    expect((await enrollment(c, 'outage')).next_read_at).not.toBeNull();
    c.clock.advance(14 * 24 * 3_600_000);
    await cycle(c);
    expect((await paymentsOf(c, 'outage')).map((p) => p.status)).toEqual(['settled', 'processing']);
    expect((await enrollment(c, 'outage')).blocked_reason).toBeNull();
    await expectEventTimesInOrder(c);
  });
});

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
async function upload(c: TestContext, lines: string[]) {
  const form = new FormData();
  form.append('file', new File([[HEADER, ...lines].join('\n') + '\n'], 'results.csv', { type: 'text/csv' }));
  const res = await c.app.handle(new Request('http://localhost/v1/payment_results/uploads', { method: 'POST', headers: { authorization: `Bearer ${c.lender.key}` }, body: form }));
  expect(res.status).toBe(200);
  return (await res.json()) as { matched: number };
}

describe('an uploaded outcome of the service’s own payment is the lender’s report; an R08 stops at once', () => {
  test('an R08 row naming the borrower and the reference stops the borrower, the payment stays as its processor says; a re-send without authorization sends nothing', async () => {
    const c = setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_upload_r08_own_0001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    await enroll(c, enrollBorrower('stopper', { collectable_amount: 5000 }));
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    const [p] = await paymentsOf(c, 'stopper');
    expect(p!.status).toBe('settled');
    const day = new Date(c.clock.now()).toISOString().slice(0, 10);
    const report = await upload(c, [`stopper,${p!.reference},50.00,returned,${day},,${day},R08`]);
    expect(report.matched).toBe(1);
    // The lender's report of a late return R08: recorded as its event, the payment still settled, as its
    // processor says; a stop acts at once.
    expect((await paymentsOf(c, 'stopper'))[0]).toMatchObject({ status: 'settled', returnCode: null });
    expect((await enrollment(c, 'stopper')).state).toBe('stopped');
    expect((await c.json('GET', '/v1/payment_events?authorizer_unique_id=stopper')).body.events.at(-1)).toMatchObject({ status: 'late_returned', return_code: 'R08', source: 'upload' });
    // The processor is asked, and says settled: the report stands, saying so.
    await dispatchPayments(c.rt);
    expect((await enrollment(c, 'stopper')).payments[0].reported).toMatchObject({ status: 'late_returned', return_code: 'R08', held_because: expect.stringContaining('its processor says settled') });

    // Sent again with no authorization: monitored, blocked until the borrower authorizes again, not read.
    expect((await enroll(c, enrollBorrower('stopper', { collectable_amount: 5000 }))).outcome).toBe('enrolled');
    const blocked = await enrollment(c, 'stopper');
    expect(blocked).toMatchObject({ state: 'monitored', blocked_reason: 'reauthorization_required', next_read_at: null });
    for (let i = 0; i < 3; i++) {
      c.clock.advance(READ);
      await cycle(c);
    }
    expect(await paymentsOf(c, 'stopper')).toHaveLength(1);

    // A new authorization, obtained after the stop: reads resume, and a payment goes out once the settled
    // payment's late-return window has passed.
    c.clock.advance(60_000);
    const authorization = { obtained_at: new Date(c.clock.now()).toISOString(), reference: 'AUTH-2' };
    await enroll(c, enrollBorrower('stopper', { collectable_amount: 5000, authorization }));
    expect(await enrollment(c, 'stopper')).toMatchObject({ state: 'monitored', blocked_reason: 'late_return_window' });
    c.clock.advance(14 * 24 * 3_600_000);
    await cycle(c);
    expect(await paymentsOf(c, 'stopper')).toHaveLength(2);
  });
});

describe('presentments are counted per debt', () => {
  async function returnedCycle(c: TestContext) {
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
  }

  test('removal and re-send after R01 returns keep the chain: at most three presentments, then reinitiation_limit, pushed once, reads stopped; a new authorization gives the full count again', async () => {
    const c = setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_per_debt_chain_0001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: receiver.url('/blocked'), event_types: ['ENROLLMENT_BLOCKED'] } })).status).toBe(201);
    // Cents 91: every debit comes back R01.
    const debt = enrollBorrower('cycler', { collectable_amount: 2591 });
    await enroll(c, debt);
    for (let round = 0; round < 6; round++) {
      await returnedCycle(c);
      const v = await enrollment(c, 'cycler');
      if (v.state === 'monitored' && v.blocked_reason === null) {
        await remove(c, 'cycler');
        await enroll(c, debt);
      } else await enroll(c, debt);
      c.clock.advance(READ);
    }
    const ps = await paymentsOf(c, 'cycler');
    expect(ps).toHaveLength(3);
    expect(ps.map((p) => p.attempt)).toEqual([1, 2, 3]);
    expect(ps.every((p) => p.status === 'returned' && p.returnCode === 'R01')).toBe(true);
    const v = await enrollment(c, 'cycler');
    expect(v).toMatchObject({ state: 'monitored', blocked_reason: 'reinitiation_limit', next_read_at: null, payments_used: 3 });
    const pushed = (await rows<{ payload: string }>(c, "SELECT payload FROM webhook_deliveries WHERE type = 'ENROLLMENT_BLOCKED'")).map((d) => JSON.parse(d.payload));
    expect(pushed.filter((p) => p.blocked_reason === 'reinitiation_limit')).toHaveLength(1);
    // Reads stopped: no balance read of the borrower is queued however long the service runs.
    const reads = async () => (await rows<{ n: number }>(c, "SELECT COUNT(*) AS n FROM batches WHERE source = 'monitoring'"))[0]!.n;
    const before = await reads();
    for (let i = 0; i < 3; i++) {
      c.clock.advance(READ);
      await cycle(c);
    }
    expect(await reads()).toBe(before);
    // The portal's borrower page says why, and what would lift it.
    const page = await (await signedIn(c)).get('/portal/payments/borrowers/cycler');
    expect(page.status).toBe(200);
    expect(page.text).toContain('reinitiation_limit');
    expect(page.text).toContain('only a new authorization starts a new chain');

    // A new authorization obtained after the last return: a new chain, three presentments again.
    c.clock.advance(60_000);
    await enroll(c, { ...debt, authorization: { obtained_at: new Date(c.clock.now()).toISOString(), reference: 'AUTH-NEW' } });
    expect(await enrollment(c, 'cycler')).toMatchObject({ blocked_reason: null, payments_used: 0 });
    for (let round = 0; round < 4; round++) {
      await returnedCycle(c);
      c.clock.advance(READ);
    }
    const after = await paymentsOf(c, 'cycler');
    expect(after).toHaveLength(6);
    expect(after.slice(3).map((p) => p.attempt)).toEqual([1, 2, 3]);
    expect((await enrollment(c, 'cycler')).blocked_reason).toBe('reinitiation_limit');
  });

  test('payments_used counts the chain it shows: a re-send with an authorization while the last presentment is in flight', async () => {
    const c = setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_per_debt_inflight_01', rail_scope: 'both', is_default: true } })).status).toBe(201);
    const debt = enrollBorrower('counted', { collectable_amount: 2591 });
    await enroll(c, debt);
    for (let round = 0; round < 2; round++) {
      await returnedCycle(c);
      c.clock.advance(READ);
    }
    await cycle(c);
    expect((await paymentsOf(c, 'counted')).map((p) => [p.status, p.attempt])).toEqual([
      ['returned', 1],
      ['returned', 2],
      ['processing', 3],
    ]);
    // An authorization obtained before the third presentment's outcome: that presentment is still the chain's.
    await enroll(c, { ...debt, authorization: { obtained_at: new Date(c.clock.now()).toISOString(), reference: 'AUTH-MID' } });
    expect((await enrollment(c, 'counted')).payments_used).toBe(3);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect(await enrollment(c, 'counted')).toMatchObject({ blocked_reason: 'reinitiation_limit', payments_used: 3 });
  });
});

describe('an observation that cannot be recorded', () => {
  test('is undone alone, counted and set aside; the page, its cursor and every other payment go on', async () => {
    const c = setup();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_set_aside_feed_00001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('poisoned', { collectable_amount: 1000 }), enrollBorrower('healthy', { collectable_amount: 1000 })] } });
    expect(r.status).toBe(207);
    await cycle(c);
    const [bad] = await paymentsOf(c, 'poisoned');
    // A fault the recorder cannot foresee, injected in the database: any settled event of this reference fails.
    if (c.rt.pg) {
      c.sql.exec(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RAISE EXCEPTION ''injected fault''; END';
                  CREATE TRIGGER poison BEFORE INSERT ON payment_events FOR EACH ROW WHEN (NEW.reference = '${bad!.reference}' AND NEW.status = 'settled') EXECUTE FUNCTION poison()`);
    } else c.sql.run(`CREATE TEMP TRIGGER poison BEFORE INSERT ON payment_events WHEN NEW.reference = '${bad!.reference}' AND NEW.status = 'settled' BEGIN SELECT RAISE(ABORT, 'injected fault'); END`);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    expect((await paymentsOf(c, 'healthy'))[0]!.status).toBe('settled');
    expect((await paymentsOf(c, 'poisoned'))[0]!.status).toBe('processing');
    const conn = (await rows<{ error: string | null; cursor: string | null }>(c, 'SELECT last_poll_error AS error, poll_cursor AS cursor FROM payment_connections'))[0]!;
    expect(conn.error).toBeNull();
    const newest = (await rows<{ seq: number }>(c, 'SELECT MAX(seq) AS seq FROM sandbox_events'))[0]!.seq;
    expect(conn.cursor).toBe(String(newest));
    expect((await rows(c, 'SELECT reference, status, error FROM payment_observations_set_aside'))).toEqual([{ reference: bad!.reference, status: 'settled', error: 'injected fault' }]);
    expect(await c.rt.metrics.registry.getSingleMetricAsString('payment_observations_set_aside_total')).toContain('source="processor"} 1');
    // Nothing of it was half written: no ledger entry, no event, the borrower still monitored.
    expect((await rows(c, "SELECT id FROM payment_events WHERE reference = ? AND status = 'settled'", bad!.reference))).toEqual([]);
    expect((await enrollment(c, 'poisoned')).state).toBe('monitored');
    // Found again by reconciliation once the fault is gone.
    c.sql.exec(c.rt.pg ? 'DROP TRIGGER poison ON payment_events; DROP FUNCTION poison()' : 'DROP TRIGGER poison');
    await reconcileKeys(c.rt, { connectionIds: [(await rows<{ id: string }>(c, 'SELECT id FROM payment_connections'))[0]!.id] });
    expect((await paymentsOf(c, 'poisoned'))[0]!.status).toBe('settled');
  });
});
