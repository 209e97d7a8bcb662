// At-least-once across a crash, with the real process: `bun run src/index.ts` on a real SQLite file sends a
// batch-completed webhook to a receiver that accepts the request and never answers; the process is killed
// with SIGKILL mid-delivery; started again on the same files it sends the delivery again with the same
// webhook-id (and a signature that verifies), and the deliveries list shows it delivered.
import { afterAll, expect, test } from 'bun:test';
import { ServiceHarness, waitFor } from '../../helpers/server';
import { authorizer, hanging, startReceiver, verifyWithLibrary } from './support';

const harness = new ServiceHarness();
const hang = hanging();
const hook = startReceiver(0, (r, i) => (i === 0 ? hang.handler(r, i) : new Response('ok')));

afterAll(async () => {
  hang.release();
  await harness.cleanup();
  hook.stop();
});

test('a delivery claimed by a process killed mid-send is sent again after restart, with the same webhook-id', async () => {
  const first = await harness.start();
  const sub = await first.call('POST', '/v1/balance_requests', { authorizers: [authorizer()], webhook_url: hook.url('/batches') });
  expect(sub.status).toBe(201);
  const batchId = sub.body.batch_id as string;

  // The job picks the batch up, completes it and starts delivering; the receiver holds the request open.
  await hook.waitFor(1, 20_000);
  const firstTry = hook.requests[0]!;
  const webhookId = firstTry.headers['webhook-id']!;
  expect(JSON.parse(firstTry.body)).toEqual({ event_uuid: webhookId, type: 'BALANCE_BATCH_COMPLETED', batch_id: batchId });

  await first.kill('SIGKILL');
  expect(first.proc.signalCode).toBe('SIGKILL');

  // What the dead process left: the delivery still pending and claimed, no attempt recorded.
  const db = harness.database({ writable: true });
  let claimedUntil = 0;
  try {
    const row = db
      .query<{ id: string; state: string; attempts: number; lease_until: number }, []>(
        'SELECT id, state, attempts, lease_until FROM webhook_deliveries',
      )
      .all();
    expect(row).toHaveLength(1);
    expect(row[0]).toMatchObject({ id: webhookId, state: 'pending', attempts: 0 });
    expect(row[0]!.lease_until).toBeGreaterThan(Date.now());
    claimedUntil = row[0]!.lease_until;
  } finally {
    db.close();
  }
  hang.release();

  // Restarted on the same files: the claim is released at start and the delivery is sent again at once
  // (well before the 30 s claim would have lapsed), to the receiver that now answers 200.
  const second = await harness.start();
  try {
    await hook.waitFor(2, 30_000);
    const again = hook.requests[1]!;
    // Sent again while the dead process's claim still stood: released at start, not waited out.
    expect(again.at).toBeLessThan(claimedUntil);
    expect(again.headers['webhook-id']).toBe(webhookId);
    expect(again.body).toBe(firstTry.body);
    const { secret } = (await second.call('GET', '/v1/webhooks/secret')).body as { secret: string };
    expect(verifyWithLibrary(secret, again)).toEqual(JSON.parse(firstTry.body));

    // Recorded: poll until the job has written the outcome.
    const delivery = await waitFor('the delivery to be recorded', async () => {
      const d = (await second.call('GET', '/v1/webhooks/deliveries')).body.deliveries[0];
      return d?.state === 'delivered' ? d : null;
    });
    expect(delivery).toMatchObject({
      id: webhookId,
      type: 'BALANCE_BATCH_COMPLETED',
      target_url: hook.url('/batches'),
      state: 'delivered',
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
    });
    // Sent again exactly once, not once per tick.
    await Bun.sleep(600);
    expect(hook.requests).toHaveLength(2);
  } finally {
    await second.kill('SIGTERM');
  }
  expect(second.proc.exitCode).toBe(0);
}, 90_000);
