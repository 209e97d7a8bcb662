// Running a schedule now: a run beside its cadence, its webhook told as for a regular run, bounded per lender.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, useTestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { ON_DEMAND_BURST, ON_DEMAND_REFILL_S } from '../../../src/platform/on-demand';

const ctx = useTestContext({}, { clockAt: '2026-11-21T12:00:00.000Z' });

const received: Record<string, any>[] = [];
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    received.push((await req.json()) as Record<string, any>);
    return new Response('ok');
  },
});
afterAll(() => receiver.stop(true));
const hook = `http://127.0.0.1:${receiver.port}/run-now`;

let n = 0;
async function schedule(c = ctx, over: Record<string, unknown> = {}) {
  const id = ++n;
  const r = await c.json('POST', '/v1/monitoring/scheduled_balance_request', {
    body: { name: `run-now-${id}`, interval_days: 7, time_of_day: '09:30', webhook: hook, threshold_amount: 100, authorizers: [bankAuthorizer(`rn-${id}-a`), bankAuthorizer(`rn-${id}-b`)], ...over },
  });
  expect(r.status).toBe(201);
  return r.body.schedule_id as string;
}

describe('POST /v1/monitoring/schedules/{id}/run', () => {
  test('202: a run now, as a batch of the schedule; next_run_at does not move; the webhook gets the run and its alerts', async () => {
    const id = await schedule();
    const before = (await ctx.json('GET', `/v1/monitoring/schedules/${id}`)).body;
    const r = await ctx.json('POST', `/v1/monitoring/schedules/${id}/run`);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ schedule_id: id, total_authorizers: 2, submitted_at: '2026-11-21T12:00:00.000Z' });
    const batch = (await ctx.json('GET', `/v1/balance_requests/${r.body.batch_id}`)).body;
    expect(batch).toMatchObject({ source: 'schedule', schedule_id: id, total_authorizers: 2 });
    const after = (await ctx.json('GET', `/v1/monitoring/schedules/${id}`)).body;
    expect(after.next_run_at).toBe(before.next_run_at);

    // While the run is going, a second one is refused, naming the batch.
    const again = await ctx.json('POST', `/v1/monitoring/schedules/${id}/run`);
    expect(again.status).toBe(409);
    expect(again.body.error.message).toContain(r.body.batch_id);

    while ((await ctx.json('GET', `/v1/balance_requests/${r.body.batch_id}`)).body.status !== 'completed') await processBalances(ctx.rt);
    await deliverDueWebhooks(ctx.rt);
    const mine = received.filter((b) => b.batch_id === r.body.batch_id);
    expect(mine.map((b) => b.type).sort()).toEqual(['BALANCE_BATCH_COMPLETED', 'BALANCE_THRESHOLD_ALERT']);
    expect(mine.find((b) => b.type === 'BALANCE_THRESHOLD_ALERT')!.alerts.map((a: { authorizer_unique_id: string }) => a.authorizer_unique_id).sort()).toEqual([
      `rn-${n}-a`,
      `rn-${n}-b`,
    ]);
    // Once it completed, it may run again.
    expect((await ctx.json('POST', `/v1/monitoring/schedules/${id}/run`)).status).toBe(202);
  });

  test('409 for a disabled schedule; 404 for another lender’s or an unknown one', async () => {
    const id = await schedule();
    expect((await ctx.json('DELETE', `/v1/monitoring/schedules/${id}`)).status).toBe(200);
    const disabled = await ctx.json('POST', `/v1/monitoring/schedules/${id}/run`);
    expect(disabled.status).toBe(409);
    expect(disabled.body.error.message).toContain('DISABLED');
    const other = ctx.newLender();
    const mine = await schedule();
    expect((await ctx.json('POST', `/v1/monitoring/schedules/${mine}/run`, { key: other.key })).status).toBe(404);
    expect((await ctx.json('POST', '/v1/monitoring/schedules/nope/run')).status).toBe(404);
  });

  test('bounded per lender: a burst, then one every few seconds (429 with Retry-After); another lender is not held', async () => {
    const c = createTestContext({}, { clockAt: '2026-11-21T12:00:00.000Z' });
    try {
      const ids: string[] = [];
      for (let i = 0; i <= ON_DEMAND_BURST; i++) ids.push(await schedule(c));
      for (let i = 0; i < ON_DEMAND_BURST; i++) expect((await c.json('POST', `/v1/monitoring/schedules/${ids[i]}/run`)).status).toBe(202);
      const refused = await c.json('POST', `/v1/monitoring/schedules/${ids[ON_DEMAND_BURST]}/run`);
      expect(refused.status).toBe(429);
      expect(refused.res.headers.get('retry-after')).toBe(String(ON_DEMAND_REFILL_S));
      expect(c.sql.query('SELECT COUNT(*) AS n FROM batches').get()).toEqual({ n: ON_DEMAND_BURST });
      const other = c.newLender();
      const theirs = await c.json('POST', '/v1/monitoring/scheduled_balance_request', {
        key: other.key,
        body: { name: 'theirs', interval_days: 7, authorizers: [bankAuthorizer('theirs-1')] },
      });
      expect((await c.json('POST', `/v1/monitoring/schedules/${theirs.body.schedule_id}/run`, { key: other.key })).status).toBe(202);
      c.clock.advance(ON_DEMAND_REFILL_S * 1000);
      expect((await c.json('POST', `/v1/monitoring/schedules/${ids[ON_DEMAND_BURST]}/run`)).status).toBe(202);
    } finally {
      c.close();
    }
  });

  test('the lender’s bound on authorizers waiting is checked before the run is queued', async () => {
    const c = createTestContext({ MAX_PENDING_AUTHORIZERS_PER_LENDER: '3' }, { clockAt: '2026-11-21T12:00:00.000Z' });
    try {
      const a = await schedule(c);
      const b = await schedule(c);
      expect((await c.json('POST', `/v1/monitoring/schedules/${a}/run`)).status).toBe(202);
      const full = await c.json('POST', `/v1/monitoring/schedules/${b}/run`);
      expect(full.status).toBe(429);
      expect(full.body.error.message).toContain('waiting to be checked');
      expect(c.sql.query('SELECT COUNT(*) AS n FROM batches').get()).toEqual({ n: 1 });
    } finally {
      c.close();
    }
  });
});
