import { describe, expect, test } from 'bun:test';
import { addBusinessDays, businessDaysBetween, fedHolidays, isBusinessDay } from '../../src/platform/business-days';

const d = (s: string) => Date.parse(`${s}T00:00:00.000Z`);
const iso = (t: number) => new Date(t).toISOString().slice(0, 10);

describe('business days', () => {
  test('the Federal Reserve holidays of 2026 and 2027, Sunday holidays observed on Monday', () => {
    expect([...fedHolidays(2026)].map(iso).sort()).toEqual([
      '2026-01-01', '2026-01-19', '2026-02-16', '2026-05-25', '2026-06-19', '2026-07-04',
      '2026-09-07', '2026-10-12', '2026-11-11', '2026-11-26', '2026-12-25',
    ]);
    // 2027: Juneteenth and Independence Day fall on Saturday/Sunday, Christmas on Saturday.
    expect([...fedHolidays(2027)].map(iso).sort()).toEqual([
      '2027-01-01', '2027-01-18', '2027-02-15', '2027-05-31', '2027-06-19', '2027-07-05',
      '2027-09-06', '2027-10-11', '2027-11-11', '2027-11-25', '2027-12-25',
    ]);
  });

  test('weekends and holidays are skipped', () => {
    expect(isBusinessDay(d('2026-11-25'))).toBe(true);
    expect(isBusinessDay(d('2026-11-26'))).toBe(false); // Thanksgiving
    expect(isBusinessDay(d('2026-11-28'))).toBe(false); // Saturday
    // Wednesday before Thanksgiving + 2 business days: Friday 27th, then Monday 30th.
    expect(iso(addBusinessDays(d('2026-11-25') + 15 * 3_600_000, 2))).toBe('2026-11-30');
    // Friday + 1: Monday; Christmas Eve 2026 (Thursday) + 1: Monday 28th (Christmas Friday).
    expect(iso(addBusinessDays(d('2026-11-20'), 1))).toBe('2026-11-23');
    expect(iso(addBusinessDays(d('2026-12-24'), 1))).toBe('2026-12-28');
    expect(iso(addBusinessDays(d('2026-12-31'), 10))).toBe('2027-01-15');
  });

  test('the business days between two times: after the first day, up to and including the last', () => {
    const h = 3_600_000;
    // The same day, whatever the hours: none.
    expect(businessDaysBetween(d('2026-11-23') + 9 * h, d('2026-11-23') + 23 * h)).toBe(0);
    // Monday to Tuesday: one; Friday to Monday: one (the weekend is not counted).
    expect(businessDaysBetween(d('2026-11-23') + 20 * h, d('2026-11-24') + h)).toBe(1);
    expect(businessDaysBetween(d('2026-11-20'), d('2026-11-23'))).toBe(1);
    // Received on a Saturday, applied on Monday: one.
    expect(businessDaysBetween(d('2026-11-21') + 12 * h, d('2026-11-23'))).toBe(1);
    // Over Thanksgiving: Wednesday to Monday is Friday and Monday.
    expect(businessDaysBetween(d('2026-11-25'), d('2026-11-30'))).toBe(2);
    // n business days later is n between, from any hour of the day.
    for (const [from, n] of [['2026-11-25', 6], ['2026-12-24', 1], ['2026-12-31', 10], ['2026-11-20', 3]] as const) {
      expect(businessDaysBetween(d(from) + 17 * h, addBusinessDays(d(from) + 17 * h, n))).toBe(n);
    }
    // An end before the start: none.
    expect(businessDaysBetween(d('2026-11-24'), d('2026-11-20'))).toBe(0);
  });
});
