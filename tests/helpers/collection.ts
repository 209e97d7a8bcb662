import type { TestContext } from './context';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../src/modules/collection/dispatch';
import { pollProcessors } from '../../src/modules/collection/poll';

/** One cycle of the jobs, as the service runs them: due reads, the balance pipeline, dispatch, polling. */
export async function cycle(c: TestContext): Promise<void> {
  queueDueReads(c.rt);
  await processBalances(c.rt);
  await dispatchPayments(c.rt);
  await pollProcessors(c.rt);
}
