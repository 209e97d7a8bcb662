// Every distinct Stripe key tried made an SDK client that stayed for good (about 50 KB each), refused keys
// included: 10,000 refused keys through the connection routes took the process from 89 to 599 MB. The clients
// are now a least-recently-used cache of MAX_STRIPE_CLIENTS, for payments and Financial Connections alike.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { startFakeStripe } from '../../fakes/stripe-server';
import { MAX_STRIPE_CLIENTS } from '../../../src/adapters/processors/stripe-clients';
import { StripeProcessor } from '../../../src/adapters/processors/stripe';
import { StripeFcSource } from '../../../src/adapters/bank-data/stripe-fc';

const fake = startFakeStripe();
const c = createTestContext({ STRIPE_API_URL: fake.url });
afterAll(() => {
  c.close();
  fake.stop();
});

const refusedKey = (i: number) => `sk_test_${String(i).padStart(8, '0')}_refused_key`;
const rssMb = () => {
  Bun.gc(true);
  return process.memoryUsage().rss / 1024 / 1024;
};

describe('Stripe SDK clients', () => {
  test('refused keys through both connection routes leave at most MAX_STRIPE_CLIENTS clients', async () => {
    for (let i = 0; i < 200; i++) {
      expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: refusedKey(i), rail_scope: 'ach' } })).status).toBe(400);
      expect((await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'stripe', api_key: refusedKey(10_000 + i) } })).status).toBe(400);
    }
    expect((c.rt.processors.byName('stripe') as StripeProcessor).clientCount).toBe(MAX_STRIPE_CLIENTS);
    expect((c.rt.linked.stripe as StripeFcSource).clientCount).toBe(MAX_STRIPE_CLIENTS);
  });

  test('20,000 distinct refused keys: the memory of the process stays within 50 MB of where it started', async () => {
    const stripe = new StripeProcessor({ apiUrl: fake.url });
    // The SDK's own first allocations are not the cache's: warmed up before the start is taken.
    for (let i = 0; i < MAX_STRIPE_CLIENTS * 2; i++) await stripe.verifyKey(refusedKey(i)).catch(() => undefined);
    fake.requests.length = 0;
    const start = rssMb();
    let next = 100_000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < 120_000) {
          await stripe.verifyKey(refusedKey(next++)).catch(() => undefined);
          // The fake server (in this process) keeps every request it saw: not the service's memory.
          if (next % 1000 === 0) fake.requests.length = 0;
        }
      }),
    );
    expect(stripe.clientCount).toBe(MAX_STRIPE_CLIENTS);
    expect(rssMb() - start).toBeLessThan(50);
  }, 120_000);
});
