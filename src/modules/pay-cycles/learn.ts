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
// reads and the lender's balance checks alike): each rise between two reads is a deposit; and, once a linked
// account's transactions were read (history.ts), its income deposits, with the rises of the days after them.

/** A cycle is learned again no more often than this. */
const RELEARN_MS = DAY_MS - 3_600_000;

/** The history a cycle is learned from: the stored deposits of a transaction reading and the balance rises after them. */
function learnCycle(tx: Tx, v: { enrollmentId: string; lenderId: string; aid: string }, now: number) {
  const rises = depositsFromBalances(q.balanceHistory(tx, v.lenderId, v.aid, now - HISTORY_DAYS * DAY_MS));
  const history = q.historyOf(tx, v.enrollmentId);
  if (!history) return { ...inferPayCycle(rises, now), source: 'balances' as const };
  // A day the transactions cover is read from them alone: its balance rise is the same money.
  const after = rises.filter((r) => r.at >= history.coveredTo + DAY_MS);
  return { ...inferPayCycle([...history.deposits, ...after], now), source: 'transactions' as const };
}

/**
 * `at` is the read just recorded (null: none yet, so the first read stays due); `force` learns again whenever
 * it was last learned (a transaction reading has just been stored).
 */
export function learnAndSchedule(ctx: JobContext & { tx: Tx }, v: { enrollmentId: string; lenderId: string; aid: string; at: number | null; force?: boolean }): void {
  const { tx, deps } = ctx;
  const now = deps.clock.now();
  const e = q.cadenceStateOf(tx, v.enrollmentId);
  if (!e) return;
  let cycle = e.frequency === null ? null : { frequency: e.frequency, nextPayday: e.nextPayday, confidence: e.confidence ?? 0 };
  if (v.force || e.learnedAt === null || now - e.learnedAt >= RELEARN_MS || (e.nextPayday !== null && e.nextPayday + DAY_MS < now)) {
    const learned = learnCycle(tx, v, now);
    q.setPayCycle(tx, v.enrollmentId, { ...learned, at: now });
    cycle = learned;
  }
  if (v.at === null || e.state !== 'monitored' || isChainBlock(e.blockedReason) || e.nextReadAt === null || !cycle) return;
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
