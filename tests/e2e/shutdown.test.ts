// engine: both
// A stop is bounded by SHUTDOWN_GRACE_MS whatever is in flight: a webhook receiver that never answers (the
// attempt is cut and the delivery stays due) and an upload that stalls halfway (its connection is cut).
// The process checkpoints and exits 0 within the grace.
// Nothing in flight would end by itself before the test's timeout (the receiver never answers, with the
// longest webhook timeout there is; the upload keeps trickling, so it never completes and never idles out),
// so the exit is the stop's own doing, with no bound on the clock that a busy machine could miss.
import { afterAll, describe, expect, test } from 'bun:test';
import { ServiceHarness, TEST_API_KEY, waitFor } from '../helpers/server';
import { rawConnect } from '../helpers/raw-http';

const GRACE_MS = 2_500;

const arrivals: number[] = [];
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  idleTimeout: 0,
  async fetch(req) {
    arrivals.push(Date.now());
    await req.text();
    return new Promise<Response>(() => {});
  },
});
// The longest webhook timeout there is, far beyond the grace: only the stop can cut the attempt short.
const harness = new ServiceHarness({ WEBHOOK_TIMEOUT_MS: '60000', SHUTDOWN_GRACE_MS: String(GRACE_MS) });
afterAll(async () => {
  await harness.cleanup();
  receiver.stop(true);
});

describe('SIGTERM with work in flight', () => {
  test(`exits 0 within SHUTDOWN_GRACE_MS (${GRACE_MS} ms) although a receiver never answers and an upload stalls`, async () => {
    const service = await harness.start();
    const submit = await service.call('POST', '/v1/balance_requests', {
      webhook_url: `http://127.0.0.1:${receiver.port}/hook`,
      authorizers: [{ authorizer_unique_id: 'stop-1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' }],
    });
    expect(submit.status).toBe(201);
    await waitFor('the delivery to reach the receiver', async () => arrivals.length > 0);

    // An upload that declares 100 KB and sends ten bytes, then a space every 100 ms: never complete, never idle.
    const upload = await rawConnect(Number(new URL(service.url).port));
    await upload.write(
      `POST /v1/balance_requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_API_KEY}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"authori',
    );
    let stopped = false;
    const trickle = (async () => {
      while (!stopped) {
        await upload.write(' ');
        await Bun.sleep(100);
      }
    })();
    await Bun.sleep(100);

    const t0 = Date.now();
    service.proc.kill('SIGTERM');
    const code = await service.proc.exited;
    const took = Date.now() - t0;
    stopped = true;
    await trickle;
    upload.close();
    expect(code).toBe(0);
    // The upload was given the grace, less the reserve kept for closing (a quarter of it), before it was cut.
    expect(took).toBeGreaterThanOrEqual(GRACE_MS / 2);

    // The cut attempt is in the log, and the delivery is due again at once.
    const db = harness.database();
    try {
      const delivery = db.query('SELECT state, attempts, next_attempt_at AS next, lease_until AS lease FROM webhook_deliveries').get() as {
        state: string;
        attempts: number;
        next: number;
        lease: number;
      };
      expect(delivery.state).toBe('pending');
      expect(delivery.lease).toBe(0);
      expect(delivery.next).toBeLessThanOrEqual(Date.now());
      const attempts = db.query('SELECT status_code AS statusCode, error FROM webhook_attempts').all() as { statusCode: number | null; error: string }[];
      expect(attempts).toHaveLength(1);
      expect(attempts[0]!.error).toMatch(/^interrupted/);
      // Checkpointed: the WAL was folded into the database file (SQLite's; PostgreSQL keeps its own).
      if (!harness.pg) expect(Bun.file(`${harness.dbPath}-wal`).size).toBe(0);
    } finally {
      db.close();
    }
  }, 60_000);
});
