import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { DAY_MS } from '../../platform/clock';
import { policyOf } from '../collection-policy/service';
import { isChainBlock } from '../enrollments/monitor';
import { nextReadAt } from './cadence';
import { depositsFromBalances, HISTORY_DAYS, inferPayCycle } from './infer';
import * as q from './queries';

// After each monitoring read: the borrower's pay cycle learned again from its history (at most once a day:
// the history changes by a read or a few), and, when the lender's read cadence is `payday`, its next read set
// around the predicted paydays. The history is the service's own balance reads of the borrower (monitoring
// reads and the lender's balance checks alike): each rise between two reads is a deposit.

/** A cycle is learned again no more often than this. */
const RELEARN_MS = DAY_MS - 3_600_000;

export function learnAndSchedule(ctx: JobContext & { tx: Tx }, v: { enrollmentId: string; lenderId: string; aid: string; at: number }): void {
  const { tx, deps } = ctx;
  const now = deps.clock.now();
  const e = q.cadenceStateOf(tx, v.enrollmentId);
  if (!e) return;
  let cycle = e.frequency === null ? null : { frequency: e.frequency, nextPayday: e.nextPayday, confidence: e.confidence ?? 0 };
  if (e.learnedAt === null || now - e.learnedAt >= RELEARN_MS || (e.nextPayday !== null && e.nextPayday + DAY_MS < now)) {
    const reads = q.balanceHistory(tx, v.lenderId, v.aid, now - HISTORY_DAYS * DAY_MS);
    const learned = inferPayCycle(depositsFromBalances(reads), now);
    q.setPayCycle(tx, v.enrollmentId, { ...learned, source: 'balances', at: now });
    cycle = learned;
  }
  if (e.state !== 'monitored' || isChainBlock(e.blockedReason) || e.nextReadAt === null || !cycle) return;
  if (policyOf(tx, e.lenderId).readCadence !== 'payday') return;
  // The cycle as of the day before: the morning after a payday still reads around it.
  const next = nextReadAt({
    cycle,
    lastReadAt: v.at,
    now,
    fixedIntervalMs: deps.config.monitorReadIntervalMs,
    quietIntervalMs: deps.config.monitorQuietReadIntervalMs,
  });
  q.setNextRead(tx, v.enrollmentId, next);
}
