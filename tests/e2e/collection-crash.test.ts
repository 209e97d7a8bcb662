// engine: both
// Invariant 4: a crash (SIGKILL of the real service) at any point of initiation or polling, then a restart,
// yields exactly one processor payment per payment row and no lost or repeated event. The service runs with
// fast intervals against the sandbox processor; it is killed several times while borrowers are being read,
// debited and polled.
import { afterAll, describe, expect, test } from 'bun:test';
import { ServiceHarness, waitFor, type ServiceProcess } from '../helpers/server';
import { enrollBorrower, ownAccount } from '../helpers/fixtures';

const harnesses: ServiceHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.cleanup();
});

/** Nothing initiating or processing, every status the processor gave recorded, and every borrower debited. */
function atRest(s: ReturnType<typeof snapshot>): boolean {
  const busy = s.payments.some((p) => p.status === 'initiating' || p.status === 'processing');
  const unseen = s.processorStatuses.filter((ps) => !s.events.some((e) => e.reference.endsWith(ps.key) && e.status === ps.status));
  return !busy && unseen.length === 0 && s.payments.length >= 60;
}

function snapshot(h: ServiceHarness) {
  const db = h.database();
  try {
    return {
      payments: db.query('SELECT id, reference, status FROM payments').all() as { id: string; reference: string; status: string }[],
      atProcessor: db.query('SELECT idempotency_key AS key, COUNT(*) AS n FROM sandbox_payments GROUP BY idempotency_key').all() as { key: string; n: number }[],
      processorStatuses: db
        .query('SELECT p.idempotency_key AS key, e.status FROM sandbox_events e JOIN sandbox_payments p ON p.id = e.payment_id')
        .all() as { key: string; status: string }[],
      events: db.query('SELECT reference, status FROM payment_events').all() as { reference: string; status: string }[],
    };
  } finally {
    db.close();
  }
}

describe('crash and restart during collection', () => {
  test('killed repeatedly mid-initiation and mid-polling: one processor payment per payment row, every status recorded once', async () => {
    const h = new ServiceHarness({
      SANDBOX_SETTLEMENT_MS: '300',
      MONITOR_READ_INTERVAL_MS: '200',
      PROCESSOR_POLL_INTERVAL_MS: '100',
    });
    harnesses.push(h);
    let svc: ServiceProcess = await h.start();
    expect((await svc.call('POST', '/v1/payment_connections', { api_key: 'sbx_crash_test_000000001', rail_scope: 'both', is_default: true })).status).toBe(201);
    // Outcomes by the cents: settle, R01 (reinitiated), late return, transient failure first, late R01.
    const cents = [0, 91, 95, 98, 99];
    const borrowers = Array.from({ length: 60 }, (_, i) => enrollBorrower(`crash-${i}`, { collectable_amount: 1000 + cents[i % cents.length]!, account_number: ownAccount(i) }));
    expect((await svc.call('POST', '/v1/payment_enrollments', { borrowers })).status).toBe(207);
    for (const delay of [150, 400, 250, 700, 350]) {
      await Bun.sleep(delay);
      await svc.kill('SIGKILL');
      svc = await h.start();
    }
    // Let it run to rest: nothing initiating or processing, and the feed read to its end. What is checked is
    // read with the service stopped: a service at rest may still start a new presentment (a return re-read)
    // between the last look and the stop, whose statuses it could not read before the stop. A stop that caught
    // it so is followed by a start and another wait for rest; a status the service truly lost never comes to
    // rest, and the wait fails.
    let s: ReturnType<typeof snapshot> | null = null;
    for (let round = 0; !s; round++) {
      await waitFor('collection to come to rest', async () => (atRest(snapshot(h)) ? true : null), 60_000);
      await svc.kill('SIGTERM');
      const stopped = snapshot(h);
      if (atRest(stopped)) s = stopped;
      else if (round === 4) throw new Error('the service was never stopped at rest in 5 rounds');
      else svc = await h.start();
    }
    // Exactly one processor payment per payment row that was sent, and none that no row accounts for.
    const rows = new Map(s.payments.map((p) => [p.id, p]));
    for (const a of s.atProcessor) {
      expect(a.n).toBe(1);
      expect(rows.has(a.key)).toBe(true);
    }
    const sent = s.payments.filter((p) => p.status !== 'not_attempted');
    expect(s.atProcessor.length).toBe(sent.length);
    // No lost event: every status the processor gave each payment is recorded; none twice.
    for (const ps of s.processorStatuses) {
      const ref = rows.get(ps.key)!.reference;
      expect(s.events.filter((e) => e.reference === ref && e.status === ps.status)).toHaveLength(1);
    }
    const keys = s.events.map((e) => `${e.reference}|${e.status}`);
    expect(new Set(keys).size).toBe(keys.length);
  }, 120_000);
});
