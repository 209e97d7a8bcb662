// Due reads are claimed in the transaction that queues them: two due checks running at once (their slices
// interleaved at the turns of the event loop between them) queue every due borrower exactly once.
import { expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { queueAllDueReads, READS_PER_SLICE } from '../../../src/modules/enrollments/monitoring';

const ctx = useTestContext({ MONITOR_READ_INTERVAL_MS: '86400000' });

test('two due checks at once queue each due borrower once, across several slices', async () => {
  const n = READS_PER_SLICE * 2 + 37;
  for (let i = 0; i < n; i += 500) {
    const borrowers = Array.from({ length: Math.min(500, n - i) }, (_, j) => enrollBorrower(`due-claim-${i + j}`));
    expect((await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
  }
  const [a, b] = await Promise.all([queueAllDueReads(ctx.rt), queueAllDueReads(ctx.rt)]);
  expect(a.queued + b.queued).toBe(n);
  // Both ran slices: the interleaving was exercised, not one check after the other.
  expect(a.queued).toBeGreaterThan(0);
  expect(b.queued).toBeGreaterThan(0);
  const queued = ctx.sql.query("SELECT COALESCE(SUM(total_authorizers), 0) AS n FROM batches WHERE source = 'monitoring'").get() as { n: number };
  expect(queued.n).toBe(n);
  // Nothing is due any more: a third check finds nothing.
  expect((await queueAllDueReads(ctx.rt)).queued).toBe(0);
});
