import { DAY_MS, parseDate } from '../../platform/clock';

// Run times of a schedule, all in UTC. Slots are anchor + k·interval; the final run is on the expires_at
// date at time_of_day, whether or not that date is on the grid (when it is, it is one run, not two).

export const TIME_OF_DAY = /^([01]\d|2[0-3]):([0-5]\d)$/;
export { parseDate };

export const dateOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
export const startOfDay = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

export function minutesOf(timeOfDay: string): number {
  const m = TIME_OF_DAY.exec(timeOfDay);
  if (!m) throw new Error(`bad time_of_day ${timeOfDay}`);
  return Number(m[1]) * 60 + Number(m[2]);
}

/** A random minute in the 08:00 to 11:00 UTC window, for schedules created without a time. */
export function randomTimeOfDay(random = Math.random): string {
  const minute = 8 * 60 + Math.floor(random() * 181);
  return `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;
}

export interface ScheduleTiming {
  intervalDays: number;
  timeOfDay: string;
  startsAt: string | null;
  expiresAt: string;
  createdAt: number;
}

/** The first run: time_of_day on the start date, or without a start the next time_of_day after creation. */
export function anchorOf(s: ScheduleTiming): number {
  const tod = minutesOf(s.timeOfDay) * 60_000;
  if (s.startsAt) return parseDate(s.startsAt)! + tod;
  const today = startOfDay(s.createdAt) + tod;
  return today > s.createdAt ? today : today + DAY_MS;
}

export const finalRunOf = (s: ScheduleTiming): number => parseDate(s.expiresAt)! + minutesOf(s.timeOfDay) * 60_000;

/** The first slot strictly after `t`, or null when the final run is not after `t`. */
export function nextRunAfter(s: ScheduleTiming, t: number): number | null {
  const anchor = anchorOf(s);
  const final = finalRunOf(s);
  if (final < anchor) return t < final ? final : null;
  let slot: number;
  if (t < anchor) slot = anchor;
  else {
    const step = s.intervalDays * DAY_MS;
    slot = anchor + (Math.floor((t - anchor) / step) + 1) * step;
  }
  if (slot >= final) return t < final ? final : null;
  return slot;
}
