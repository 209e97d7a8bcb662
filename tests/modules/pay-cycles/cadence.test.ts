// The read cadence: around predicted paydays, quiet in between, the fixed interval for unknown cycles, and
// never more often than the fixed interval would read.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { localTime, nextReadAt, paydaySlots, type CadenceInput } from '../../../src/modules/pay-cycles/cadence';
import { FREQUENCIES } from '../../../src/modules/pay-cycles/infer';

const D = 86_400_000;
const H = 3_600_000;
const day = (s: string) => Date.parse(`${s}T00:00:00Z`);
const biweekly = { frequency: 'biweekly' as const, nextPayday: day('2026-12-04'), confidence: 0.7 };

describe('reads around paydays', () => {
  test('the morning of a payday and the morning after; every three days between', () => {
    const base = { cycle: biweekly, fixedIntervalMs: 4 * H, quietIntervalMs: 3 * D };
    expect(paydaySlots(biweekly).map((t) => new Date(t).toISOString())).toEqual(['2026-12-04T08:00:00.000Z', '2026-12-05T08:00:00.000Z']);
    // Far from the payday: the quiet interval.
    expect(nextReadAt({ ...base, lastReadAt: day('2026-11-25') + 8 * H, now: day('2026-11-25') + 9 * H })).toBe(day('2026-11-28') + 8 * H);
    // Believed well: every third quiet interval.
    expect(nextReadAt({ ...base, cycle: { ...biweekly, confidence: 0.9 }, lastReadAt: day('2026-11-20') + 8 * H, now: day('2026-11-20') + 9 * H })).toBe(day('2026-11-29') + 8 * H);
    // The payday slot comes first.
    expect(nextReadAt({ ...base, lastReadAt: day('2026-12-02') + 8 * H, now: day('2026-12-02') + 9 * H })).toBe(day('2026-12-04') + 8 * H);
    expect(nextReadAt({ ...base, lastReadAt: day('2026-12-04') + 8 * H, now: day('2026-12-04') + 8 * H })).toBe(day('2026-12-05') + 8 * H);
  });

  test('the morning before too, for pay that has come a day early', () => {
    const early = { ...biweekly, landsEarly: true };
    expect(paydaySlots(early).map((t) => new Date(t).toISOString())).toEqual(['2026-12-03T08:00:00.000Z', '2026-12-04T08:00:00.000Z', '2026-12-05T08:00:00.000Z']);
    expect(nextReadAt({ cycle: early, fixedIntervalMs: 4 * H, quietIntervalMs: 3 * D, lastReadAt: day('2026-12-01') + 8 * H, now: day('2026-12-01') + 9 * H })).toBe(day('2026-12-03') + 8 * H);
  });

  test("the lender's morning: 08:00 in its time zone, through daylight-saving changes", () => {
    const base = { fixedIntervalMs: 4 * H, quietIntervalMs: 3 * D, lastReadAt: day('2026-12-02') + 14 * H, now: day('2026-12-02') + 15 * H };
    // Chicago in December: UTC-6.
    expect(nextReadAt({ ...base, cycle: biweekly, timeZone: 'America/Chicago' })).toBe(day('2026-12-04') + 14 * H);
    // Chicago in July: UTC-5; Tokyo: the morning of the payday is 23:00 UTC the day before.
    const july = { ...biweekly, nextPayday: day('2026-07-10') };
    expect(paydaySlots(july, 'America/Chicago').map((t) => new Date(t).toISOString())).toEqual(['2026-07-10T13:00:00.000Z', '2026-07-11T13:00:00.000Z']);
    expect(paydaySlots(july, 'Asia/Tokyo').map((t) => new Date(t).toISOString())).toEqual(['2026-07-09T23:00:00.000Z', '2026-07-10T23:00:00.000Z']);
    // Across the change: Sunday 8 March 2026 (clocks forward at 02:00) and Sunday 1 November 2026 (back).
    expect(localTime(day('2026-03-07'), 8, 'America/New_York')).toBe(day('2026-03-07') + 13 * H);
    expect(localTime(day('2026-03-08'), 8, 'America/New_York')).toBe(day('2026-03-08') + 12 * H);
    expect(localTime(day('2026-10-31'), 8, 'America/New_York')).toBe(day('2026-10-31') + 12 * H);
    expect(localTime(day('2026-11-01'), 8, 'America/New_York')).toBe(day('2026-11-01') + 13 * H);
    expect(localTime(day('2026-11-01'), 8, null)).toBe(day('2026-11-01') + 8 * H);
  });

  test('biweekly and semimonthly both standing: both paydays are read around', () => {
    const both = { ...biweekly, alternative: { frequency: 'semimonthly' as const, nextPayday: day('2026-12-01') } };
    expect(paydaySlots(both)).toHaveLength(4);
    expect(nextReadAt({ cycle: both, fixedIntervalMs: 4 * H, quietIntervalMs: 3 * D, lastReadAt: day('2026-11-29') + 8 * H, now: day('2026-11-29') + 9 * H })).toBe(day('2026-12-01') + 8 * H);
    expect(nextReadAt({ cycle: both, fixedIntervalMs: 4 * H, quietIntervalMs: 3 * D, lastReadAt: day('2026-12-02') + 8 * H, now: day('2026-12-02') + 9 * H })).toBe(day('2026-12-04') + 8 * H);
  });

  test('irregular, unknown or doubtful: the fixed interval', () => {
    for (const cycle of [
      { frequency: 'irregular' as const, nextPayday: null, confidence: 0.2 },
      { frequency: 'unknown' as const, nextPayday: null, confidence: 0 },
      { ...biweekly, confidence: 0.3 },
    ]) {
      expect(nextReadAt({ cycle, lastReadAt: day('2026-12-01'), now: day('2026-12-01') + H, fixedIntervalMs: 4 * H, quietIntervalMs: 3 * D })).toBe(day('2026-12-01') + 4 * H);
    }
  });
});

describe('as a property', () => {
  test('over any stretch, reads are never closer than the fixed interval, so never more than it would make', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...FREQUENCIES),
        fc.integer({ min: 1, max: 72 }),
        fc.integer({ min: 1, max: 7 }),
        fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 6 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (frequency, fixedHours, quietDays, paydayOffsets, confidence) => {
          const start = day('2026-11-01');
          const end = start + 60 * D;
          const fixed = fixedHours * H;
          const paydays = [...new Set(paydayOffsets)].sort((a, b) => a - b).map((o) => start + o * D);
          const reads: number[] = [];
          let last: number | null = null;
          for (let now = start; now <= end; ) {
            reads.push(now);
            last = now;
            const upcoming = paydays.find((p) => p + 2 * D > now) ?? null;
            const cycle: CadenceInput['cycle'] = { frequency, nextPayday: frequency === 'irregular' || frequency === 'unknown' ? null : upcoming, confidence };
            const next = nextReadAt({ cycle, lastReadAt: last, now, fixedIntervalMs: fixed, quietIntervalMs: quietDays * D });
            expect(next).toBeGreaterThan(now);
            now = next;
          }
          for (let i = 1; i < reads.length; i++) expect(reads[i]! - reads[i - 1]!).toBeGreaterThanOrEqual(fixed);
          expect(reads.length).toBeLessThanOrEqual(Math.floor((end - start) / fixed) + 1);
        },
      ),
      { numRuns: 300, seed: 363 },
    );
  });
});
