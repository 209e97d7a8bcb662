import { DAY_MS } from '../../platform/clock';
import type { PayCycle } from './infer';

// When to read a monitored borrower next (pure). A borrower with a known pay cycle is read the day before, on
// and the day after each predicted payday, in the morning, and otherwise no more than every
// `quietIntervalMs`; one whose cycle is irregular or unknown is read on the fixed interval. Never more often
// than the fixed interval: a read is never sooner than one fixed interval after the last. A cycle believed well
// (confidence 0.8 and up) is read every other quiet interval between paydays.

const HOUR_MS = 3_600_000;

/** A cycle worth reading around: a regular frequency, believed enough. */
export const MIN_CONFIDENCE = 0.5;
/** A cycle believed well enough to be checked half as often between paydays. */
export const SURE = 0.8;

export interface CadenceInput {
  /** The borrower's cycle as of the day before now (so that the day after a payday still sees it). */
  cycle: Pick<PayCycle, 'frequency' | 'nextPayday' | 'confidence' | 'alternative'>;
  lastReadAt: number | null;
  now: number;
  /** MONITOR_READ_INTERVAL_MS: the fixed interval, and the least time between two reads. */
  fixedIntervalMs: number;
  /** Between paydays (default 3 days). */
  quietIntervalMs: number;
  /** The morning hour of a payday read, in UTC (08:00 by default; a lender's time zone moves it). */
  readHourUtc?: number;
}

/** Whether reads follow the cycle (payday cadence) or the fixed interval. */
export const followsCycle = (c: CadenceInput['cycle']): boolean =>
  c.nextPayday !== null && c.confidence >= MIN_CONFIDENCE && c.frequency !== 'irregular' && c.frequency !== 'unknown';

/** The read slots around the predicted paydays: the day before, the day and the day after, in the morning. */
export function paydaySlots(c: CadenceInput['cycle'], readHourUtc = 8): number[] {
  if (!followsCycle(c)) return [];
  const paydays = [c.nextPayday!, ...(c.alternative ? [c.alternative.nextPayday] : [])];
  return paydays.flatMap((p) => [-1, 0, 1].map((k) => p + k * DAY_MS + readHourUtc * HOUR_MS)).sort((a, b) => a - b);
}

/** The time of the next read. */
export function nextReadAt(input: CadenceInput): number {
  const { cycle, lastReadAt, now, fixedIntervalMs, quietIntervalMs } = input;
  const floor = lastReadAt === null ? now : lastReadAt + fixedIntervalMs;
  if (!followsCycle(cycle)) return Math.max(floor, now);
  const slot = paydaySlots(cycle, input.readHourUtc).find((t) => t > now);
  // Between paydays, a cycle believed well (0.8 and up) is checked half as often: a deposit off its schedule is rare.
  const quiet = (lastReadAt ?? now) + (cycle.confidence >= SURE ? 2 : 1) * quietIntervalMs;
  return Math.max(floor, Math.min(slot ?? Infinity, quiet));
}
