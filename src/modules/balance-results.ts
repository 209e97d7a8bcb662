import type { BalanceResultChain, JobContext } from '../deps';
import type { Tx } from '../platform/context';
import type { CompletedBatch, RecordedRead } from './balance-requests/results';
import { enrollmentsOfReads, monitoringReadsAmong, readAfterRepair, setLastReads } from './enrollments/monitoring';
import { decideCollections, holdBorrowers } from './collection/decide';
import { learnAndScheduleEach, learnNextReads } from './pay-cycles/learn';
import { onScheduleBatchCompleted } from './schedules/runs';
import { noticeDigest, receiveNotice } from './bank-accounts/changes';
import { fingerprintKey } from './bank-accounts/fingerprint';
import type { ChangeNotice } from '../adapters/bank-data/types';

// What a balance result sets off, in one place. The balance pipeline (balance-requests/processing.ts) records
// a flush of results in one transaction and calls these two steps inside it, so what they write commits with
// the results or not at all. It sits below the features reached here, so the composition root hands it this
// chain (deps.balanceResults) instead of the pipeline importing them.
//
// afterBalanceResults, for the results of monitoring batches (the due check's, or a read asked for now):
//   1. each borrower's enrollment is found (enrollments/monitoring.ts) and held as its decisions hold it
//      (collection/decide.ts); then, for each result in order (what the decisions read of the borrowers is
//      read for all of them at once):
//   2. collection decides (collection/decide.ts): a scheduled payment goes out on its day or is voided, a
//      payment of the collectable amount is initiated (scheduled, with PAYMENT_SCHEDULED in the outbox, when
//      the policy gives notice), or the borrower is blocked (ENROLLMENT_BLOCKED in the outbox). For a lender
//      that pauses on breach, an ACH payment first has the return rates evaluated (return-rates/watch.ts),
//      which puts RETURN_RATE_ALERT in the outbox when a class changes status;
//   3. the next read is found from the borrower's pay cycle and the lender's cadence (pay-cycles/learn.ts);
//   4. each borrower's enrollment takes its result as its last read, with that next read, in one write of its
//      row (enrollments/monitoring.ts). Nothing in 2 and 3 reads the last read.
// The pipeline then counts each batch's results; with a batch's last one it marks the batch completed and
// puts BALANCE_BATCH_COMPLETED in the outbox for the batch's webhook_url, then
// afterBatchCompleted:
//   5. a schedule's run: last_run_at, and BALANCE_THRESHOLD_ALERT in the outbox (schedules/runs.ts).
//
// The outbox is the webhooks feature's (webhooks/endpoints.ts, webhooks/service.ts): what is put in it is
// delivered after the transaction commits.

export async function afterBalanceResults(ctx: JobContext & { tx: Tx }, reads: RecordedRead[]): Promise<void> {
  // Step 1 for every read at once, then 2 read by read, then 3 for the borrowers decided, with what the
  // decisions and the cadence read of the borrowers in one statement per kind for all of them
  // (collection/decide.ts, pay-cycles/learn.ts), and 4 in one statement for all of them.
  const monitoring = await monitoringReadsAmong(ctx, reads);
  const ids = await enrollmentsOfReads(ctx, monitoring);
  await holdBorrowers(ctx, ids.filter((id): id is string => id !== null));
  const enrolled: (RecordedRead & { enrollmentId: string })[] = [];
  for (const [i, r] of monitoring.entries()) {
    const enrollmentId = ids[i];
    if (!enrollmentId) continue;
    enrolled.push({ ...r, enrollmentId });
    // A Notification of Change the bank-data source passed on: received before the decision, which then
    // holds the account's debits until it is applied.
    if (r.change) await receiveSourceNotice(ctx, r, enrollmentId);
  }
  const next = new Map<string, number>();
  await decideCollections(ctx, enrolled, async (decided, alone) => {
    const list = decided.map((r) => ({ enrollmentId: r.enrollmentId, lenderId: r.lenderId, aid: r.authorizerUniqueId, at: r.at }));
    // A borrower read twice in the flush is decided each time alone, and its next decision reads what this one
    // wrote: its next read is written at once. The others' wait for step 4.
    if (alone) await learnAndScheduleEach(ctx, list);
    else for (const n of await learnNextReads(ctx, list)) next.set(n.enrollmentId, n.at);
  });
  await setLastReads(ctx, enrolled, next);
}

async function receiveSourceNotice(ctx: JobContext & { tx: Tx }, r: RecordedRead & { change?: ChangeNotice }, enrollmentId: string): Promise<void> {
  const notice = r.change!;
  const key = await fingerprintKey(ctx);
  await receiveNotice(ctx, {
    lenderId: r.lenderId,
    paymentId: null,
    enrollmentId,
    notice,
    reference: null,
    source: 'bank_data',
    sourceKey: `bank_data:${enrollmentId}:${noticeDigest(key, notice.code, notice.correctedData)}`,
    receivedAt: r.at,
  });
}

export async function afterBatchCompleted(ctx: JobContext & { tx: Tx }, batch: CompletedBatch): Promise<void> {
  await onScheduleBatchCompleted(ctx, batch);
}

// afterLinkRepaired, when the provider says a borrower's linked account is well again (balance-requests/link-health.ts):
//   5. a block the link set on the borrower's collection lifts, and the borrower is read at once (enrollments/monitoring.ts).
export async function afterLinkRepaired(ctx: JobContext & { tx: Tx }, link: { lenderId: string; aid: string; now: number }): Promise<void> {
  await readAfterRepair(ctx, link);
}

export const balanceResultChain: BalanceResultChain = { afterResults: afterBalanceResults, afterBatchCompleted, afterLinkRepaired };
