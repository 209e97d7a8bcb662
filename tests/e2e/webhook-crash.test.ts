// engine: both
// A webhook attempt cut short by a crash is still in the delivery log: its row is written before the
// request leaves, so killing the process mid-send leaves it (marked at the next start), and the delivery
// is sent again.
import { afterAll, describe, expect, test } from 'bun:test';
import { ServiceHarness, waitFor } from '../helpers/server';
import { CUT_SHORT, SENDING } from '../../src/modules/webhooks/store';

let silent = true;
const arrivals: string[] = [];
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  idleTimeout: 0,
  async fetch(req) {
    arrivals.push(req.headers.get('webhook-id') ?? '');
    await req.text();
    // Silent: never answers, as a receiver that hangs.
    if (silent) return new Promise<Response>(() => {});
    return new Response('ok');
  },
});
const harness = new ServiceHarness({ WEBHOOK_TIMEOUT_MS: '60000' });
afterAll(async () => {
  await harness.cleanup();
  receiver.stop(true);
});

const attemptsOf = (h: ServiceHarness) => {
  const db = h.database();
  try {
    return db.query('SELECT delivery_id AS deliveryId, status_code AS statusCode, error FROM webhook_attempts ORDER BY id').all() as {
      deliveryId: string;
      statusCode: number | null;
      error: string | null;
    }[];
  } finally {
    db.close();
  }
};

describe('a crash in the middle of a webhook attempt', () => {
  test('leaves the attempt in the log; the next start marks it cut short and sends the delivery again', async () => {
    const first = await harness.start();
    const submit = await first.call('POST', '/v1/balance_requests', {
      webhook_url: `http://127.0.0.1:${receiver.port}/hook`,
      authorizers: [{ authorizer_unique_id: 'crash-1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' }],
    });
    expect(submit.status).toBe(201);
    await waitFor('the delivery to reach the receiver', async () => arrivals.length > 0);
    await first.kill('SIGKILL');

    const cut = attemptsOf(harness);
    expect(cut).toHaveLength(1);
    expect(cut[0]).toMatchObject({ statusCode: null, error: SENDING });

    silent = false;
    const second = await harness.start();
    await waitFor('the delivery to be delivered', async () => {
      const r = await second.call('GET', '/v1/webhooks/deliveries');
      return r.body.deliveries?.[0]?.state === 'delivered';
    });
    const log = attemptsOf(harness);
    expect(log.map((a) => [a.statusCode, a.error])).toEqual([
      [null, CUT_SHORT],
      [200, null],
    ]);
    // The same event, with the same webhook-id, both times.
    expect(new Set(arrivals).size).toBe(1);
    await second.kill('SIGTERM');
  }, 60_000);
});
