// Reading a borrower now: a monitoring read queued at once, handled as every monitoring read is.
import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { ON_DEMAND_BURST } from '../../../src/platform/on-demand';

const HOUR = 3_600_000;
const ctx = useTestContext({ MONITOR_READ_INTERVAL_MS: String(HOUR) }, { clockAt: '2026-11-21T12:00:00.000Z' });

async function enroll(id: string, over: Record<string, unknown> = {}, key = ctx.lender.key) {
  const r = await ctx.json('POST', '/v1/payment_enrollments', { key, body: { borrowers: [enrollBorrower(id, { account_number: '0000012345', ...over })] } });
  expect(r.status).toBe(207);
  // The read at enrollment, done.
  await queueDueReads(ctx.rt);
  await processBalances(ctx.rt);
}

describe('POST /v1/payment_enrollments/{authorizer_unique_id}/read', () => {
  test('202: the balance is read now, set on the enrollment, and the next regular read moves one interval on', async () => {
    await enroll('now-1');
    ctx.clock.advance(10 * 60_000);
    const r = await ctx.json('POST', '/v1/payment_enrollments/now-1/read');
    expect(r.status).toBe(202);
    const at = new Date(ctx.clock.now()).toISOString();
    expect(r.body).toMatchObject({ authorizer_unique_id: 'now-1', submitted_at: at, next_read_at: new Date(ctx.clock.now() + HOUR).toISOString() });
    expect((await ctx.json('GET', `/v1/balance_requests/${r.body.batch_id}`)).body).toMatchObject({ source: 'monitoring', total_authorizers: 1 });
    await processBalances(ctx.rt);
    const view = (await ctx.json('GET', '/v1/payment_enrollments/now-1')).body;
    expect(view.last_read).toEqual({ balance_cents: 12345, at });
    expect(view.next_read_at).toBe(r.body.next_read_at);
    // Not read again before the interval has passed.
    expect((await queueDueReads(ctx.rt)).queued).toBe(0);
    const history = (await ctx.json('GET', '/v1/monitoring/authorizers/now-1/history')).body.history;
    expect(history.length).toBe(2);
  });

  test('409 for a borrower no longer monitored; 404 for an unknown or another lender’s borrower', async () => {
    await enroll('now-removed');
    expect((await ctx.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['now-removed'] } })).status).toBe(200);
    const removed = await ctx.json('POST', '/v1/payment_enrollments/now-removed/read');
    expect(removed.status).toBe(409);
    expect(removed.body.error.message).toContain('removed');
    expect((await ctx.json('POST', '/v1/payment_enrollments/nobody/read')).status).toBe(404);
    const other = ctx.newLender();
    expect((await ctx.json('POST', '/v1/payment_enrollments/now-1/read', { key: other.key })).status).toBe(404);
  });

  test('shares the lender’s on-demand bound with schedule runs: past the burst, 429 and nothing queued', async () => {
    const other = ctx.newLender();
    await enroll('burst-1', {}, other.key);
    for (let i = 0; i < ON_DEMAND_BURST; i++) expect((await ctx.json('POST', '/v1/payment_enrollments/burst-1/read', { key: other.key })).status).toBe(202);
    const before = ctx.sql.query("SELECT COUNT(*) AS n FROM batches WHERE lender_id = ?").get(other.id);
    const refused = await ctx.json('POST', '/v1/payment_enrollments/burst-1/read', { key: other.key });
    expect(refused.status).toBe(429);
    expect(refused.res.headers.get('retry-after')).not.toBeNull();
    expect(ctx.sql.query("SELECT COUNT(*) AS n FROM batches WHERE lender_id = ?").get(other.id)).toEqual(before);
  });
});
