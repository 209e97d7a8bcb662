// engine: both
// A crash at any point loses no submitted authorizer and records no result twice: the real service is
// killed (SIGKILL) in the middle of a batch and of a schedule run, then started again on the same file.
import { afterAll, describe, expect, test } from 'bun:test';
import { ServiceHarness, waitFor } from '../helpers/server';
import { bankAuthorizer } from '../helpers/fixtures';

const harnesses: ServiceHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.cleanup();
});

function resultCounts(h: ServiceHarness, batchId: string) {
  const db = h.database();
  try {
    return db
      .query<{ results: number; items: number; authorizers: number }, [string]>(
        `SELECT COUNT(*) AS results, COUNT(DISTINCT item_id) AS items, COUNT(DISTINCT authorizer_unique_id) AS authorizers
           FROM balance_results WHERE batch_id = ?`,
      )
      .get(batchId)!;
  } finally {
    db.close();
  }
}

describe('crash and restart', () => {
  test('a batch killed mid-way finishes after restart with exactly one result per authorizer', async () => {
    const h = new ServiceHarness({ SANDBOX_LATENCY_MS: '20', BALANCE_CONCURRENCY: '4' });
    harnesses.push(h);
    let svc = await h.start();
    const authorizers = Array.from({ length: 300 }, (_, i) => bankAuthorizer(`k-${i}`, { account_number: String(i).padStart(10, '0') }));
    const submitted = await svc.call('POST', '/v1/balance_requests', { authorizers });
    expect(submitted.status).toBe(201);
    const batchId = submitted.body.batch_id as string;
    const partial = await waitFor('some results', async () => {
      const s = await svc.call('GET', `/v1/balance_requests/${batchId}`);
      return s.body.total_processed > 20 ? s.body.total_processed : null;
    });
    await svc.kill('SIGKILL');
    expect(partial).toBeLessThan(300);

    svc = await h.start();
    await waitFor(
      'the batch to complete',
      async () => (await svc.call('GET', `/v1/balance_requests/${batchId}`)).body.status === 'completed',
      30_000,
    );
    const status = await svc.call('GET', `/v1/balance_requests/${batchId}`);
    expect(status.body.total_processed).toBe(300);
    await svc.kill('SIGTERM');
    expect(resultCounts(h, batchId)).toEqual({ results: 300, items: 300, authorizers: 300 });
  }, 60_000);

  test('a schedule run killed mid-way is neither lost nor run twice', async () => {
    const h = new ServiceHarness({ SANDBOX_LATENCY_MS: '20', BALANCE_CONCURRENCY: '4' });
    harnesses.push(h);
    let svc = await h.start();
    const created = await svc.call('POST', '/v1/monitoring/scheduled_balance_request', {
      name: 'restart check',
      interval_days: 1,
      time_of_day: '09:00',
      authorizers: Array.from({ length: 200 }, (_, i) => bankAuthorizer(`sr-${i}`)),
    });
    expect(created.status).toBe(201);
    const scheduleId = created.body.schedule_id as string;
    await svc.kill('SIGTERM');
    // While the service is down the run falls due (as after downtime); it runs once when it starts.
    const db = h.database({ writable: true });
    db.query('UPDATE schedules SET next_run_at = ? WHERE id = ?').run(Date.now() - 60_000, scheduleId);
    db.close();

    svc = await h.start();
    const batchId = await waitFor('the run to start', async () => {
      const d = h.database();
      try {
        return d.query<{ id: string }, [string]>('SELECT id FROM batches WHERE schedule_id = ?').get(scheduleId)?.id;
      } finally {
        d.close();
      }
    });
    await waitFor('some results', async () => (await svc.call('GET', `/v1/balance_requests/${batchId}`)).body.total_processed > 10);
    await svc.kill('SIGKILL');

    svc = await h.start();
    await waitFor(
      'the run to complete',
      async () => (await svc.call('GET', `/v1/balance_requests/${batchId}`)).body.status === 'completed',
      30_000,
    );
    const schedule = await svc.call('GET', `/v1/monitoring/schedules/${scheduleId}`);
    expect(schedule.body.last_run_at).not.toBeNull();
    expect(Date.parse(schedule.body.next_run_at)).toBeGreaterThan(Date.now());
    await svc.kill('SIGTERM');
    const d = h.database();
    const runs = d.query<{ n: number }, [string]>('SELECT COUNT(*) AS n FROM batches WHERE schedule_id = ?').get(scheduleId)!.n;
    d.close();
    expect(runs).toBe(1);
    expect(resultCounts(h, batchId)).toEqual({ results: 200, items: 200, authorizers: 200 });
  }, 60_000);
});
