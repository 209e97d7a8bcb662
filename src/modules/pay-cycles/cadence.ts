import { DAY_MS } from '../../platform/clock';
import { localTime } from '../../platform/zone';

export { localTime };
import type { PayCycle } from './infer';

// When to read a monitored borrower next (pure). A borrower with a known pay cycle is read around each predicted
// payday, in the morning (08:00 in the lender's time zone, UTC when it has none), and otherwise no more than
// every `quietIntervalMs`; one whose cycle is irregular or unknown is read on the fixed interval. Never more
// often than the fixed interval: a read is never sooner than one fixed interval after the last.
//
// Around a payday: the morning of it and the morning after (a deposit that posts late), and the morning before
// only for a borrower whose deposits have come a day early. Once the payday's deposit is seen the cycle's next
// payday is the one after (infer.ts), so the rest of that payday's reads are not made. A cycle believed well
// (confidence 0.8 and up) is read every third quiet interval between paydays: a deposit off its schedule is rare.

/** The morning read's hour, local time. */
export const READ_HOUR = 8;

/** A cycle worth reading around: a regular frequency, believed enough. */
export const MIN_CONFIDENCE = 0.5;
/** A cycle believed well enough to be checked a third as often between paydays. */
export const SURE = 0.8;

export interface CadenceInput {
  /** The borrower's cycle as learned at this read: its next payday is the first not yet paid. */
  cycle: Pick<PayCycle, 'frequency' | 'nextPayday' | 'confidence' | 'alternative' | 'landsEarly'>;
  lastReadAt: number | null;
  now: number;
  /** MONITOR_READ_INTERVAL_MS: the fixed interval, and the least time between two reads. */
  fixedIntervalMs: number;
  /** Between paydays (default 3 days). */
  quietIntervalMs: number;
  /** The lender's IANA time zone: payday reads are at 08:00 there (UTC when null). */
  timeZone?: string | null;
}

/** Whether reads follow the cycle (payday cadence) or the fixed interval. */
export const followsCycle = (c: CadenceInput['cycle']): boolean =>
  c.nextPayday !== null && c.confidence >= MIN_CONFIDENCE && c.frequency !== 'irregular' && c.frequency !== 'unknown';

/** The read slots around the predicted paydays (and the alternative's), in the morning of the lender's zone. */
export function paydaySlots(c: CadenceInput['cycle'], timeZone?: string | null): number[] {
  if (!followsCycle(c)) return [];
  const paydays = [c.nextPayday!, ...(c.alternative ? [c.alternative.nextPayday] : [])];
  const around = c.landsEarly ? [-1, 0, 1] : [0, 1];
  return paydays.flatMap((p) => around.map((k) => localTime(p + k * DAY_MS, READ_HOUR, timeZone))).sort((a, b) => a - b);
}

/** The time of the next read. */
export function nextReadAt(input: CadenceInput): number {
  const { cycle, lastReadAt, now, fixedIntervalMs, quietIntervalMs } = input;
  const floor = lastReadAt === null ? now : lastReadAt + fixedIntervalMs;
  if (!followsCycle(cycle)) return Math.max(floor, now);
  const slot = paydaySlots(cycle, input.timeZone).find((t) => t > now);
  // Between paydays, a cycle believed well (0.8 and up) is checked a third as often.
  const quiet = (lastReadAt ?? now) + (cycle.confidence >= SURE ? 3 : 1) * quietIntervalMs;
  return Math.max(floor, Math.min(slot ?? Infinity, quiet));
}
