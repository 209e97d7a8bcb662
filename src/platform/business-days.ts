import { DAY_MS } from './clock';

// Business days for ACH: Monday to Friday, except the days the Federal Reserve Banks are closed. The Board's
// holiday schedule (federalreserve.gov, "Holidays Observed by the Federal Reserve System"): New Year's Day,
// Martin Luther King Jr.'s Birthday, Washington's Birthday, Memorial Day, Juneteenth, Independence Day, Labor
// Day, Columbus Day, Veterans Day, Thanksgiving Day and Christmas Day. A holiday on a Sunday is observed the
// next Monday; one on a Saturday is not moved (the Reserve Banks are open the Friday before).

/** The n-th given weekday (0 = Sunday) of a month, or the last one for n = -1, as a UTC date. */
function nthWeekday(year: number, month: number, weekday: number, n: number): number {
  if (n > 0) {
    const first = Date.UTC(year, month, 1);
    const shift = (weekday - new Date(first).getUTCDay() + 7) % 7;
    return first + (shift + 7 * (n - 1)) * DAY_MS;
  }
  const last = Date.UTC(year, month + 1, 0);
  const back = (new Date(last).getUTCDay() - weekday + 7) % 7;
  return last - back * DAY_MS;
}

const observed = (t: number): number => (new Date(t).getUTCDay() === 0 ? t + DAY_MS : t);

const cache = new Map<number, Set<number>>();

/** The Federal Reserve's holidays of a year, as UTC midnights of the days it is closed. */
export function fedHolidays(year: number): Set<number> {
  let days = cache.get(year);
  if (!days) {
    days = new Set([
      observed(Date.UTC(year, 0, 1)),
      nthWeekday(year, 0, 1, 3), // Martin Luther King Jr.'s Birthday: third Monday of January
      nthWeekday(year, 1, 1, 3), // Washington's Birthday: third Monday of February
      nthWeekday(year, 4, 1, -1), // Memorial Day: last Monday of May
      observed(Date.UTC(year, 5, 19)),
      observed(Date.UTC(year, 6, 4)),
      nthWeekday(year, 8, 1, 1), // Labor Day: first Monday of September
      nthWeekday(year, 9, 1, 2), // Columbus Day: second Monday of October
      observed(Date.UTC(year, 10, 11)),
      nthWeekday(year, 10, 4, 4), // Thanksgiving Day: fourth Thursday of November
      observed(Date.UTC(year, 11, 25)),
    ]);
    cache.set(year, days);
  }
  return days;
}

const midnight = (t: number): number => t - (((t % DAY_MS) + DAY_MS) % DAY_MS);

export function isBusinessDay(t: number): boolean {
  const day = midnight(t);
  const weekday = new Date(day).getUTCDay();
  return weekday !== 0 && weekday !== 6 && !fedHolidays(new Date(day).getUTCFullYear()).has(day);
}

/** The UTC midnight of the day `n` business days after the day of `from` (n ≥ 1). */
export function addBusinessDays(from: number, n: number): number {
  let day = midnight(from);
  for (let left = n; left > 0; ) {
    day += DAY_MS;
    if (isBusinessDay(day)) left--;
  }
  return day;
}

/** The day `n` business days before `day` (a calendar day as its UTC midnight; n ≥ 0): the mirror of addBusinessDays. */
export function businessDaysBefore(day: number, n: number): number {
  let d = midnight(day);
  for (let left = n; left > 0; ) {
    d -= DAY_MS;
    if (isBusinessDay(d)) left--;
  }
  return d;
}

/**
 * The business days from the day of `from` to the day of `to`: those after the first day up to and including
 * the last, so a day's own business is 0 and `addBusinessDays(from, n)` is n of them. 0 when `to` is not later.
 */
export function businessDaysBetween(from: number, to: number): number {
  const last = midnight(to);
  let n = 0;
  for (let day = midnight(from) + DAY_MS; day <= last; day += DAY_MS) if (isBusinessDay(day)) n++;
  return n;
}
