import type { JobContext } from '../../deps';
import type { Tx } from '../../platform/context';
import { DAY_MS } from '../../platform/clock';
import { policyOfNow as policyOf } from '../collection-policy/service';
import { isChainBlock } from '../enrollments/monitor';
import { nextReadAt, type CadenceInput } from './cadence';
import { depositsFromBalances, HISTORY_DAYS, inferPayCycle } from './infer';
import * as q from './queries';

// After each monitoring read: the borrower's pay cycle learned again from its history (at most once a day:
// the history changes by a read or a few; and at every read around a predicted payday, which may have brought
// its deposit, or may be the second payday missed, which makes the cycle irregular at once), and, when the
// lender's read cadence is `payday`, its next read set around the predicted paydays in the lender's morning.
// The history is the service's own balance reads of the borrower (monitoring reads and the lender's balance
// checks alike): each rise between two reads is a deposit; and, once a linked account's transactions were read
// (history.ts), its income deposits, with the rises of the days after them.

/** A cycle is learned again no more often than this, away from its paydays. */
const RELEARN_MS = DAY_MS - 3_600_000;
/** From this long before a predicted payday (the morning before it, in any time zone), every read learns again. */
const AROUND_PAYDAY_MS = 2 * DAY_MS;

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
  let cycle: CadenceInput['cycle'] | null =
    e.frequency === null
      ? null
      : {
          frequency: e.frequency,
          nextPayday: e.nextPayday,
          confidence: e.confidence ?? 0,
          landsEarly: e.landsEarly === 1,
          ...(e.altFrequency !== null && e.altNextPayday !== null ? { alternative: { frequency: e.altFrequency, nextPayday: e.altNextPayday } } : {}),
        };
  const nearPayday = (p: number | null) => p !== null && now >= p - AROUND_PAYDAY_MS;
  if (v.force || e.learnedAt === null || now - e.learnedAt >= RELEARN_MS || nearPayday(e.nextPayday) || nearPayday(e.altNextPayday)) {
    const learned = learnCycle(tx, v, now);
    q.setPayCycle(tx, v.enrollmentId, { ...learned, at: now });
    cycle = learned;
  }
  if (v.at === null || e.state !== 'monitored' || isChainBlock(e.blockedReason) || e.nextReadAt === null || !cycle) return;
  const policy = policyOf(tx, e.lenderId);
  if (policy.readCadence !== 'payday') return;
  const next = nextReadAt({
    cycle,
    lastReadAt: v.at,
    now,
    fixedIntervalMs: deps.config.monitorReadIntervalMs,
    quietIntervalMs: deps.config.monitorQuietReadIntervalMs,
    timeZone: policy.timeZone,
  });
  q.setNextRead(tx, v.enrollmentId, next);
}
