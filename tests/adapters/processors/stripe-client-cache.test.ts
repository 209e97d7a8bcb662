// Every distinct Stripe key tried made an SDK client that stayed for good (about 50 KB each), refused keys
// included: 10,000 refused keys through the connection routes took the process from 89 to 599 MB. The clients
// are now a least-recently-used cache of MAX_STRIPE_CLIENTS, for payments and Financial Connections alike.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { startFakeStripe } from '../../fakes/stripe-server';
import { join } from 'node:path';
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
    // In a process of its own, so that nothing else this test run holds counts in its memory.
    const script = `
      import { StripeProcessor } from ${JSON.stringify(join(import.meta.dir, '../../../src/adapters/processors/stripe.ts'))};
      const key = (i) => 'sk_test_' + String(i).padStart(8, '0') + '_refused_key';
      const rss = () => { Bun.gc(true); return process.memoryUsage().rss / 1024 / 1024; };
      const stripe = new StripeProcessor({ apiUrl: process.env.FAKE_STRIPE_URL });
      for (let i = 0; i < 128; i++) await stripe.verifyKey(key(i)).catch(() => undefined);
      const start = rss();
      let next = 100000;
      await Promise.all(Array.from({ length: 16 }, async () => { while (next < 120000) await stripe.verifyKey(key(next++)).catch(() => undefined); }));
      console.log(JSON.stringify({ growth: rss() - start, clients: stripe.clientCount }));
    `;
    const proc = Bun.spawn(['bun', '-e', script], { env: { ...process.env, FAKE_STRIPE_URL: fake.url }, stdout: 'pipe', stderr: 'pipe' });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(err.trim() === '' || code === 0).toBe(true);
    expect(code).toBe(0);
    const { growth, clients } = JSON.parse(out.trim().split('\n').pop()!) as { growth: number; clients: number };
    expect(clients).toBe(MAX_STRIPE_CLIENTS);
    expect(growth).toBeLessThan(50);
  }, 120_000);
});
