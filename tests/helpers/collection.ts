import type { TestContext } from './context';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../src/modules/collection/dispatch';
import { pollProcessors } from '../../src/modules/collection/poll';

/** One cycle of the jobs, as the service runs them: due reads, the balance pipeline, dispatch, polling. */
export async function cycle(c: TestContext): Promise<void> {
  await queueDueReads(c.rt);
  await processBalances(c.rt);
  await dispatchPayments(c.rt);
  await pollProcessors(c.rt);
}

/**
 * After a cycle: the dispatch delay passes (a payment that failed transiently is retried, with the same key,
 * after its backoff), then two settlement periods, each polled, so what the sandbox settles or returns is recorded.
 */
export async function dispatchAndSettle(c: TestContext, settleMs: number): Promise<void> {
  c.clock.advance(10_000);
  await dispatchPayments(c.rt);
  for (let i = 0; i < 2; i++) {
    c.clock.advance(settleMs);
    await pollProcessors(c.rt);
  }
}
