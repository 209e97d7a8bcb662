// engine: both
// kill -9 at any moment, with the processor answering slowly (50 ms and 3 s), then a restart: exactly one
// processor payment per service payment, each recorded with the processor's status, never more than three
// per enrollment, and not_attempted only for payments the processor does not hold. Then a return that
// happened while the service was stopped for longer than the processor keeps its change feed, and the two
// sequences that once collected twice, by name.
// Each scenario has its own service process and database, and most of its time is spent waiting on the
// processor's latency and settlement, so all of them run at once. The two sequences kill at a chosen moment of
// a payment's answer, with seconds to spare on either side: 1.2 s into an answer that takes 3 s, and a re-send
// well inside a settlement of 25 s.
import { afterAll, describe, expect, test } from 'bun:test';
import { ServiceHarness, waitFor, type ServiceProcess } from '../helpers/server';
import { enrollBorrower, ownAccount } from '../helpers/fixtures';
import { atRest, checkInvariants, read, rng, snapshot } from '../helpers/collection-crash';

const harnesses: ServiceHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.cleanup();
});

for (const latency of [50, 3000]) {
  describe(`kill -9 at random moments, processor latency ${latency} ms`, () => {
    test.concurrent('one processor payment per service payment, each recorded with the processor’s status', async () => {
      const h = new ServiceHarness({
        SANDBOX_PROCESSOR_LATENCY_MS: String(latency),
        SANDBOX_SETTLEMENT_MS: '600',
        MONITOR_READ_INTERVAL_MS: '200',
        PROCESSOR_POLL_INTERVAL_MS: '150',
      });
      harnesses.push(h);
      let svc: ServiceProcess = await h.start();
      expect((await svc.call('POST', '/v1/payment_connections', { api_key: `sbx_latency_${latency}_00000001`, rail_scope: 'both', is_default: true })).status).toBe(201);
      // Settle, R01 (reinitiated), late R10, transient first attempt, late R01; cards settle or decline at once.
      const cents = [0, 91, 95, 98, 99];
      const n = latency >= 1000 ? 20 : 40;
      const borrowers = Array.from({ length: n }, (_, i) =>
        enrollBorrower(`lat-${i}`, {
          collectable_amount: 1000 + cents[i % cents.length]!,
          account_number: ownAccount(i),
          ...(i % 4 === 3 ? { charge_instrument: { processor_token: 'sbxpm_crash_token', card_last4: '4242' } } : {}),
        }),
      );
      expect((await svc.call('POST', '/v1/payment_enrollments', { borrowers })).status).toBe(207);
      const random = rng(latency);
      for (let k = 0; k < 6; k++) {
        // Inside and around the window while answers are on the wire.
        await Bun.sleep(Math.round(random() * (latency + 600)) + 50);
        await svc.kill('SIGKILL');
        svc = await h.start();
      }
      // A send cut off by a kill is retried after a back-off that doubles from 5 s: on a loaded machine rest can
      // take minutes. What was still in flight is named if it never comes.
      const s = await atRest(h, n, 180_000);
      await svc.kill('SIGTERM');
      expect(s.payments.length).toBeGreaterThanOrEqual(n);
      expect(s.atProcessor.size).toBeGreaterThan(0);
      checkInvariants(s);
    }, 300_000);
  });
}

describe('a return while the service was stopped longer than the processor keeps its feed', () => {
  test.concurrent('recorded after restart, by reconciliation', async () => {
    const h = new ServiceHarness({
      SANDBOX_SETTLEMENT_MS: '1500',
      SANDBOX_EVENT_RETENTION_MS: '2000',
      MONITOR_READ_INTERVAL_MS: '300',
      PROCESSOR_POLL_INTERVAL_MS: '200',
    });
    harnesses.push(h);
    let svc = await h.start();
    await svc.call('POST', '/v1/payment_connections', { api_key: 'sbx_retention_test_00001', rail_scope: 'both', is_default: true });
    // Cents 99: processing, settled one period on, late-returned R01 a period after that.
    expect((await svc.call('POST', '/v1/payment_enrollments', { borrowers: [enrollBorrower('r1', { collectable_amount: 1099 })] })).status).toBe(207);
    await waitFor('settled', async () => ((await svc.call('GET', '/v1/payment_enrollments/r1')).body.state === 'collected' ? true : null), 20_000);
    await svc.kill('SIGKILL');
    // Stopped while the late return happens and then leaves the feed.
    await Bun.sleep(1500 + 2000 + 1000);
    svc = await h.start();
    // The returned payment's events: R01 lets the borrower be debited again, and on a busy machine the
    // reinitiation's own events may be recorded before these are read.
    const events = await waitFor('the late return to be recorded', async () => {
      const r = await svc.call('GET', '/v1/payment_events?authorizer_unique_id=r1');
      const late = r.body.events.find((e: { status: string }) => e.status === 'late_returned');
      return late ? r.body.events.filter((e: { reference: string }) => e.reference === late.reference) : null;
    }, 20_000);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    await svc.kill('SIGTERM');
    expect(events.map((e: { status: string; return_code?: string }) => (e.return_code ? `${e.status}:${e.return_code}` : e.status))).toEqual([
      'processing',
      'settled',
      'late_returned:R01',
    ]);
    expect(metrics).toMatch(/payments_reconciled_total\{processor="sandbox",status="late_returned"\} 1/);
  }, 60_000);
});

describe('the sequences that once collected twice', () => {
  test.concurrent('removed while its payment was on the wire, killed, restarted, re-sent: one payment at the processor, a ledger of 1000', async () => {
    const h = new ServiceHarness({
      SANDBOX_PROCESSOR_LATENCY_MS: '3000',
      // Long enough that the payment is still on its way when the borrower is sent again, even with a restart on
      // a busy machine: a debt settled before a re-send is a new debt, and would be debited again by design.
      SANDBOX_SETTLEMENT_MS: '25000',
      MONITOR_READ_INTERVAL_MS: '500',
      PROCESSOR_POLL_INTERVAL_MS: '500',
    });
    harnesses.push(h);
    let svc = await h.start();
    await svc.call('POST', '/v1/payment_connections', { api_key: 'sbx_sequence_one_0000001', rail_scope: 'both', is_default: true });
    const b1 = enrollBorrower('b1', { collectable_amount: 1000, account_number: '0001234567' });
    expect((await svc.call('POST', '/v1/payment_enrollments', { borrowers: [b1] })).status).toBe(207);
    // The sandbox holds its payment and polling has recorded processing (the create's answer is still on the wire).
    await waitFor('polling to record processing', async () => {
      const r = await svc.call('GET', '/v1/payment_events?authorizer_unique_id=b1');
      return r.body.events?.some((e: { status: string }) => e.status === 'processing');
    }, 20_000);
    expect((await svc.call('DELETE', '/v1/payment_enrollments', { authorizer_unique_ids: ['b1'] })).body.removed).toBe(1);
    await svc.kill('SIGKILL');
    svc = await h.start();
    expect((await svc.call('POST', '/v1/payment_enrollments', { borrowers: [b1] })).body.results[0].outcome).toBe('enrolled');
    // Still on its way when sent again (the premise of this sequence).
    expect(snapshot(h).payments.filter((p) => p.aid === 'b1').map((p) => p.status)).toEqual(['processing']);
    await waitFor('the payment to settle', async () => ((await svc.call('GET', '/v1/payment_enrollments/b1')).body.state === 'collected' ? true : null), 90_000);
    // Time for a second payment to appear if the service were going to make one.
    await Bun.sleep(2_000);
    const s = snapshot(h);
    await svc.kill('SIGTERM');
    expect(s.atProcessor.size).toBe(1);
    checkInvariants(s);
    expect(s.payments.filter((p) => p.aid === 'b1').map((p) => p.status)).toEqual(['settled']);
    const view = snapshotLedger(h, 'b1');
    expect(view.net).toBe(1000);
  }, 180_000);

  test.concurrent('a card payment created, killed 1.2 s later while the answer was on the wire: recorded settled, its slot kept, at most three in all', async () => {
    const h = new ServiceHarness({
      SANDBOX_PROCESSOR_LATENCY_MS: '3000',
      SANDBOX_SETTLEMENT_MS: '4000',
      MONITOR_READ_INTERVAL_MS: '500',
      PROCESSOR_POLL_INTERVAL_MS: '500',
    });
    harnesses.push(h);
    let svc = await h.start();
    await svc.call('POST', '/v1/payment_connections', { api_key: 'sbx_sequence_two_0000001', rail_scope: 'both', is_default: true });
    const card = enrollBorrower('c1', { collectable_amount: 1099, charge_instrument: { processor_token: 'sbxpm_sequence_two', card_last4: '4242' } });
    expect((await svc.call('POST', '/v1/payment_enrollments', { borrowers: [card] })).status).toBe(207);
    await waitFor('the processor to create the payment', async () => (snapshot(h).atProcessor.size > 0 ? true : null), 20_000);
    await Bun.sleep(1_200);
    await svc.kill('SIGKILL');
    svc = await h.start();
    await waitFor('the first payment to be recorded', async () => {
      const first = snapshot(h).payments[0];
      return first && first.status !== 'initiating' ? first : null;
    }, 20_000);
    const first = snapshot(h).payments[0]!;
    expect(first.status).not.toBe('not_attempted');
    // The late return R01 (one settlement period on) makes the borrower eligible again: reinitiations follow,
    // three payments at most in all.
    await Bun.sleep(14_000);
    const s = await atRest(h, 1, 30_000);
    await svc.kill('SIGTERM');
    checkInvariants(s);
    expect(s.payments.filter((p) => p.status !== 'not_attempted').length).toBeLessThanOrEqual(3);
  }, 90_000);
});

function snapshotLedger(h: ServiceHarness, aid: string): { net: number } {
  return read(
    h,
    (db) =>
      db
        .query(
          `SELECT COALESCE(SUM(CASE WHEN l.kind = 'credit' THEN l.amount_cents ELSE -l.amount_cents END), 0) AS net
             FROM ledger_entries l JOIN enrollments e ON e.id = l.enrollment_id WHERE e.authorizer_unique_id = ?`,
        )
        .get(aid) as { net: number },
  );
}
