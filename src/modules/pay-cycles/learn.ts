import type { JobContext } from '../../deps';
import { DAY_MS } from '../../platform/clock';
import { dayStart } from '../../platform/zone';
import type { TxCtx } from '../../platform/store';
import { policyOf } from '../collection-policy/service';
import type { CollectionPolicy } from '../collection-policy/policy';
import { isStandingBlock } from '../enrollments/monitor';
import { nextReadAt, type CadenceInput } from './cadence';
import { depositsFromBalances, HISTORY_DAYS, inferPayCycle } from './infer';
import { type CadenceState, type Deposit } from './store';

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
function learnCycle(balances: { at: number; balanceCents: number }[], history: { coveredTo: number; deposits: Deposit[] } | null, now: number) {
  const rises = depositsFromBalances(balances);
  if (!history) return { ...inferPayCycle(rises, now), source: 'balances' as const };
  // A day the transactions cover is read from them alone: its balance rise is the same money.
  const after = rises.filter((r) => r.at >= history.coveredTo + DAY_MS);
  return { ...inferPayCycle([...history.deposits, ...after], now), source: 'transactions' as const };
}

type Learn = { enrollmentId: string; lenderId: string; aid: string; at: number | null; force?: boolean };

/** The cycle as stored, or null when none was learned yet. */
const storedCycle = (e: CadenceState): CadenceInput['cycle'] | null =>
  e.frequency === null
    ? null
    : {
        frequency: e.frequency,
        nextPayday: e.nextPayday,
        confidence: e.confidence ?? 0,
        landsEarly: e.landsEarly === 1,
        ...(e.altFrequency !== null && e.altNextPayday !== null ? { alternative: { frequency: e.altFrequency, nextPayday: e.altNextPayday } } : {}),
      };

/** Whether the cycle is learned again at this read. */
function relearns(e: CadenceState, v: Learn, now: number): boolean {
  const nearPayday = (p: number | null) => p !== null && now >= p - AROUND_PAYDAY_MS;
  return !!v.force || e.learnedAt === null || now - e.learnedAt >= RELEARN_MS || nearPayday(e.nextPayday) || nearPayday(e.altNextPayday);
}

/** Whether the next read follows the cycle (asked of the lender's policy next). */
const mayFollowCycle = (e: CadenceState, v: Learn, cycle: CadenceInput['cycle'] | null): cycle is CadenceInput['cycle'] =>
  !(v.at === null || e.state !== 'monitored' || isStandingBlock(e.blockedReason) || e.nextReadAt === null || !cycle);

/** The next read around the cycle's paydays, or null when the lender's cadence is the fixed interval. */
function paydayRead(deps: JobContext['deps'], policy: CollectionPolicy, cycle: CadenceInput['cycle'], lastReadAt: number, now: number): number | null {
  if (policy.readCadence !== 'payday') return null;
  return nextReadAt({
    cycle,
    lastReadAt,
    now,
    fixedIntervalMs: deps.config.monitorReadIntervalMs,
    quietIntervalMs: deps.config.monitorQuietReadIntervalMs,
    timeZone: policy.timeZone,
  });
}

/**
 * `at` is the read just recorded (null: none yet, so the first read stays due); `force` learns again whenever
 * it was last learned (a transaction reading has just been stored).
 */
export async function learnAndSchedule(ctx: JobContext & TxCtx, v: Learn): Promise<void> {
  await learnAndScheduleEach(ctx, [v]);
}

/**
 * learnAndSchedule for several borrowers, each given once (a flush's borrowers, once decided): what it reads
 * and writes of them is read and written once for all of them (their cadence states, their scheduled payments,
 * their next reads); a cycle learned again reads its borrower's history alone.
 */
export async function learnAndScheduleEach(ctx: JobContext & TxCtx, list: readonly Learn[]): Promise<void> {
  const next = await learnNextReads(ctx, list);
  if (next.length > 0) await ctx.deps.stores.enrollments.setNextReadEach(ctx, next);
}

/**
 * learnAndScheduleEach's cycles learned and next reads found, the next reads given back rather than written:
 * the balance chain writes each with its borrower's last read, in one write of the row (modules/balance-results.ts).
 */
export async function learnNextReads(ctx: JobContext & TxCtx, list: readonly Learn[]): Promise<{ enrollmentId: string; at: number }[]> {
  if (list.length === 0) return [];
  const now = ctx.deps.clock.now();
  const states = await ctx.deps.stores.payCycles.cadenceStatesOf(ctx, list.map((v) => v.enrollmentId));
  const following: { enrollmentId: string; next: number; policy: CollectionPolicy }[] = [];
  for (const v of list) {
    const e = states.get(v.enrollmentId);
    if (!e) continue;
    let cycle = storedCycle(e);
    if (relearns(e, v, now)) {
      const balances = await ctx.deps.stores.payCycles.balanceHistory(ctx, v.lenderId, v.aid, now - HISTORY_DAYS * DAY_MS);
      const learned = learnCycle(balances, await ctx.deps.stores.payCycles.historyOf(ctx, v.enrollmentId), now);
      await ctx.deps.stores.enrollments.setPayCycle(ctx, v.enrollmentId, { ...learned, at: now });
      cycle = learned;
    }
    if (!mayFollowCycle(e, v, cycle)) continue;
    const policy = await policyOf(ctx, e.lenderId);
    const next = paydayRead(ctx.deps, policy, cycle, v.at!, now);
    if (next !== null) following.push({ enrollmentId: v.enrollmentId, next, policy });
  }
  if (following.length === 0) return [];
  // A scheduled payment's day comes before the cycle's next read: the borrower is read when it begins (the
  // payment goes out only at a read on its day).
  const scheduled = await ctx.deps.stores.decisions.scheduledPaymentsOf(ctx, following.map((f) => f.enrollmentId));
  return following.map(({ enrollmentId, next, policy }) => {
    const p = scheduled.get(enrollmentId);
    const itsDay = p ? dayStart(p.debitOn, policy.timeZone) : null;
    return { enrollmentId, at: itsDay !== null && itsDay > now && itsDay < next ? itsDay : next };
  });
}
