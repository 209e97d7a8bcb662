// Work queued wakes the balance pipeline's job: a batch is read once it commits, not at the job's next tick.
// The job here ticks once an hour, so only a wake-up reads what these tests queue.
import { afterEach, expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { waitFor } from '../../helpers/server';
import { JobRunner } from '../../../src/platform/jobs';
import { balanceProcessingJob } from '../../../src/modules/balance-requests/processing';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import type { Deps } from '../../../src/deps';

const ctx = useTestContext();
let runner: JobRunner<Deps> | null = null;
afterEach(async () => {
  await runner?.stop();
  runner = null;
});

/** The pipeline's job on its own, ticking at start and then once an hour. */
async function hourlyPipeline() {
  runner = new JobRunner<Deps>(ctx.rt, [{ ...balanceProcessingJob, intervalMs: 3_600_000 }]);
  runner.start();
  await runner.runOnce(balanceProcessingJob); // the tick at start, over before anything is queued
}

const batchStatus = async (id: string) => (await ctx.json('GET', `/v1/balance_requests/${id}`)).body.status as string;

test('a balance request accepted is read at once', async () => {
  await hourlyPipeline();
  const r = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('wake-1'), bankAuthorizer('wake-2')] } });
  expect(r.status).toBe(201);
  await waitFor('the batch read', async () => (await batchStatus(r.body.batch_id)) === 'completed');
});

test('the due monitoring reads queued are read at once', async () => {
  const enrolled = await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('wake-m', { account_number: '0000012345' })] } });
  expect(enrolled.status).toBe(207);
  await hourlyPipeline();
  expect((await queueDueReads(ctx.rt)).queued).toBe(1); // the read at enrollment, in a batch of its own
  await waitFor('the read recorded on the enrollment', async () => (await ctx.json('GET', '/v1/payment_enrollments/wake-m')).body.last_read !== null);
  expect((await ctx.json('GET', '/v1/payment_enrollments/wake-m')).body.last_read.balance_cents).toBe(12345);
});
