// One page of a processor's feed, recorded borrower by borrower: what an earlier change of the page tells a
// later one (the processor's id of our payment, for a change that comes without our reference), and the
// lender's return rates evaluated once for the page's returns rather than once per borrower.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { startReceiver, verifyWithLibrary, type Receiver } from '../webhooks/support';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { Processors, type Processor } from '../../../src/adapters/processors';
import type { Deps } from '../../../src/deps';

const SETTLE = 60_000;
const contexts: TestContext[] = [];
const receivers: Receiver[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  receivers.forEach((r) => r.stop());
});

async function setup(key: string) {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: '3600000' });
  contexts.push(c);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'both', is_default: true } })).status).toBe(201);
  return c;
}

describe('a change without our reference', () => {
  test('is matched by the processor id an earlier change of the same page told, and that id is kept once', async () => {
    const c = await setup('sbx_poll_page_taught_0001');
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('taught', { collectable_amount: 42500 })] } });
    // Read and debited, the answer recorded; the feed not read yet.
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await dispatchPayments(c.rt);
    const [sent] = await c.rows<{ id: string; pid: string; status: string }>('SELECT id, processor_payment_id AS pid, status FROM payments');
    expect(sent).toMatchObject({ status: 'processing', pid: expect.stringMatching(/^sbxpay_/) });
    // As if the answer had been lost: the service does not know the processor's id of its payment.
    c.sql.run('UPDATE payments SET processor_payment_id = NULL');
    c.clock.advance(SETTLE);
    // The feed's page: processing with our reference, then settled with the processor's id only.
    const sandbox = c.rt.processors.byName('sandbox');
    const stripped: Processor = Object.assign(Object.create(sandbox) as Processor, {
      async listChanges(key: string, cursor: string | null, opts?: { limit?: number }) {
        const page = await sandbox.listChanges(key, cursor, opts);
        return { ...page, changes: page.changes.map((ch) => (ch.status === 'settled' ? { ...ch, reference: null } : ch)) };
      },
    });
    const deps = { ...c.rt, processors: new Processors({ sandbox: () => stripped, stripe: () => stripped }) } as Deps;
    const r = await pollProcessors(deps);
    expect(r).toMatchObject({ changes: 2, failures: 0 });

    const [p] = await c.rows<{ pid: string; status: string }>('SELECT processor_payment_id AS pid, status FROM payments');
    expect(p).toEqual({ pid: sent!.pid, status: 'settled' });
    const events = (await c.json('GET', '/v1/payment_events?authorizer_unique_id=taught')).body.events as { status: string }[];
    expect(events.map((e) => e.status).sort()).toEqual(['processing', 'settled']);
    expect((await c.json('GET', '/v1/payment_enrollments/taught')).body.state).toBe('collected');
    const [conn] = await c.rows<{ ingested: number; matched: number }>('SELECT ingested, matched FROM payment_connections');
    expect({ ingested: Number(conn!.ingested), matched: Number(conn!.matched) }).toEqual({ ingested: 1, matched: 1 });
  });
});

describe('returns of several borrowers in one page', () => {
  test('move the return rates once: one RETURN_RATE_ALERT per class, with every return of the page counted', async () => {
    const c = await setup('sbx_poll_page_returns_01');
    const r = startReceiver();
    receivers.push(r);
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: r.url('/rates'), event_types: ['RETURN_RATE_ALERT'] } });
    // Cents 93: processing, then returned R02 a settlement period later; four borrowers, one page.
    const borrowers = Array.from({ length: 4 }, (_, i) => enrollBorrower(`ret-${i}`, { collectable_amount: 1093 }));
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
    await cycle(c);
    c.clock.advance(SETTLE);
    const polled = await pollProcessors(c.rt);
    expect(polled).toMatchObject({ changes: 4, failures: 0 });
    const returned = await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM payments WHERE status = 'returned'");
    expect(Number(returned[0]!.n)).toBe(4);

    await deliverDueWebhooks(c.rt);
    const secret = (await c.json('GET', '/v1/webhooks/secret')).body.secret as string;
    const alerts = r.requests.map((q) => verifyWithLibrary(secret, q) as Record<string, any>).filter((a) => a.type === 'RETURN_RATE_ALERT');
    expect(alerts.map((a) => [a.class, a.status, a.returns, a.debits]).sort()).toEqual([
      ['administrative', 'exceeded', 4, 4],
      ['overall', 'exceeded', 4, 4],
    ]);
  });
});
