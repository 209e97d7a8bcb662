// Collection through Stripe, end to end: the real adapter and SDK against the fake Stripe server (via
// STRIPE_API_URL), one payment settled and one returned, read back by polling.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { startFakeStripe } from '../../fakes/stripe-server';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { pollProcessors } from '../../../src/modules/collection/poll';

const fake = startFakeStripe();
const ctx = createTestContext({ STRIPE_API_URL: fake.url });
afterAll(() => {
  ctx.close();
  fake.stop();
});
const KEY = 'sk_test_collection_e2e_account';

describe('collection through Stripe', () => {
  test('one debit settles, one is returned R01; events, ledger and monitor follow', async () => {
    const add = await ctx.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'ach', is_default: true } });
    expect(add.status).toBe(201);
    expect(add.body).toMatchObject({ processor: 'stripe', key_last4: 'ount' });
    await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('s-ok'), enrollBorrower('s-nsf')] } });
    await queueDueReads(ctx.rt);
    await processBalances(ctx.rt);
    await dispatchPayments(ctx.rt);
    const intents = fake.control.intents(KEY);
    expect(intents).toHaveLength(2);
    const byRef = Object.fromEntries(intents.map((pi) => [pi.metadata.drs_reference!.split('-')[2] === 'ok' ? 'ok' : 'nsf', pi.id]));
    // Each PaymentIntent was created with the service's payment id as its idempotency key.
    const payments = ctx.sql.query('SELECT id, processor_payment_id AS pi FROM payments').all() as { id: string; pi: string }[];
    for (const p of payments) {
      expect(fake.requests.find((r) => r.path === '/v1/payment_intents' && r.idempotencyKey === p.id)).toBeDefined();
      expect(intents.map((i) => i.id)).toContain(p.pi);
    }
    fake.control.succeed(byRef.ok!);
    fake.control.fail(byRef.nsf!, 'insufficient_funds');
    await pollProcessors(ctx.rt);
    const events = async (id: string) =>
      ((await ctx.json('GET', `/v1/payment_events?authorizer_unique_id=${id}`)).body.events as { status: string; return_code?: string }[]).map((e) =>
        e.return_code ? `${e.status}:${e.return_code}` : e.status,
      );
    expect(await events('s-ok')).toEqual(['processing', 'settled']);
    expect(await events('s-nsf')).toEqual(['processing', 'returned:R01']);
    expect((await ctx.json('GET', '/v1/payment_enrollments/s-ok')).body).toMatchObject({ state: 'collected', ledger: { net: 42500 } });
    expect((await ctx.json('GET', '/v1/payment_enrollments/s-nsf')).body).toMatchObject({ state: 'monitored', ledger: { net: 0 } });
    expect((await ctx.json('GET', '/v1/payment_connections')).body).toMatchObject({ ingested: 2, matched: 2 });
  });

  test('the ledger is the money the lender holds: a dispute won and a refund that failed are credited again', async () => {
    await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('s-dispute'), enrollBorrower('s-refund')] } });
    await queueDueReads(ctx.rt);
    await processBalances(ctx.rt);
    await dispatchPayments(ctx.rt);
    const pi = (aid: string) =>
      (ctx.sql.query('SELECT processor_payment_id AS pi FROM payments WHERE authorizer_unique_id = ?').get(aid) as { pi: string }).pi;
    const ledger = async (aid: string) => (await ctx.json('GET', `/v1/payment_enrollments/${aid}`)).body.ledger as { collected: number; reversed: number; net: number };
    for (const aid of ['s-dispute', 's-refund']) fake.control.succeed(pi(aid));
    await pollProcessors(ctx.rt);
    fake.control.dispute(pi('s-dispute'), 'fraudulent');
    fake.control.refund(pi('s-refund'));
    await pollProcessors(ctx.rt);
    expect(await ledger('s-dispute')).toMatchObject({ net: 0 });
    // A full refund gives the money back to the borrower: reversed like a return.
    expect(await ledger('s-refund')).toMatchObject({ net: 0 });
    fake.control.closeDispute(pi('s-dispute'), 'won');
    fake.control.failRefund(pi('s-refund'));
    await pollProcessors(ctx.rt);
    expect(await ledger('s-dispute')).toEqual(expect.objectContaining({ collected: 85000, reversed: 42500, net: 42500 }));
    expect(await ledger('s-refund')).toEqual(expect.objectContaining({ collected: 85000, reversed: 42500, net: 42500 }));
    const events = (await ctx.json('GET', '/v1/payment_events?authorizer_unique_id=s-dispute')).body.events.map((e: { status: string }) => e.status);
    expect(events).toEqual(['processing', 'settled', 'late_returned', 'settled']);
    // Read again from the start: nothing is recorded twice.
    ctx.sql.query('UPDATE payment_connections SET poll_cursor = NULL').run();
    await pollProcessors(ctx.rt);
    expect(await ledger('s-dispute')).toMatchObject({ net: 42500 });
  });
});
