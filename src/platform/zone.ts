import { DAY_MS } from './clock';

// Calendar days and times of day in a lender's IANA time zone, across daylight-saving changes. A calendar day
// is held as the UTC midnight of its date, so business-day arithmetic (business-days.ts) works on it as is.

const HOUR_MS = 3_600_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

/** How far a zone's wall clock is ahead of UTC at an instant (ms; negative west of Greenwich). */
function zoneOffset(t: number, timeZone: string): number {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(timeZone, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(t)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) - (t - (((t % 1000) + 1000) % 1000));
}

/**
 * The instant of a local time of day (`hour`) on a calendar day (given as its UTC midnight) in a zone, across
 * daylight-saving changes: the zone's offset at that instant, found in two steps.
 */
export function localTime(day: number, hour: number, timeZone?: string | null): number {
  const wall = day + hour * HOUR_MS;
  if (!timeZone || timeZone === 'UTC') return wall;
  const guess = wall - zoneOffset(wall, timeZone);
  const offset = zoneOffset(guess, timeZone);
  return wall - offset;
}

/** The first instant of a calendar day (given as its UTC midnight) in a zone: a scheduled payment's day begins. */
export const dayStart = (day: number, timeZone?: string | null): number => localTime(day, 0, timeZone);

/** The calendar day (its UTC midnight) an instant falls on in a zone (null: UTC). */
export function localDayOf(t: number, timeZone?: string | null): number {
  const wall = !timeZone || timeZone === 'UTC' ? t : t + zoneOffset(t, timeZone);
  return wall - (((wall % DAY_MS) + DAY_MS) % DAY_MS);
}
