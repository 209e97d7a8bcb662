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

const ZONES = [null, 'UTC', 'America/New_York', 'America/Chicago', 'America/Denver', 'America/Los_Angeles', 'America/Phoenix', 'Pacific/Honolulu', 'America/Anchorage', 'Europe/London', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Kiritimati'];

/** The calendar day (as its UTC midnight) and the hour and minute of an instant on a zone's wall clock. */
const wallFormats = new Map<string, Intl.DateTimeFormat>();
function wallClock(t: number, timeZone: string | null): { day: number; hour: number; minute: number } {
  const zone = timeZone ?? 'UTC';
  if (!wallFormats.has(zone)) wallFormats.set(zone, new Intl.DateTimeFormat('en-GB', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }));
  const parts = Object.fromEntries(
    wallFormats
      .get(zone)!
      .formatToParts(t)
      .map((p) => [p.type, p.value]),
  );
  return { day: Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day)), hour: Number(parts.hour), minute: Number(parts.minute) };
}

describe('as a property', () => {
  test("the slots are the mornings (08:00 in the lender's zone) of each predicted payday and the day after, and the day before for pay that lands early", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 730 }),
        fc.option(fc.integer({ min: -20, max: 20 }), { nil: null }),
        fc.boolean(),
        fc.constantFrom(...ZONES),
        (offset, altShift, landsEarly, timeZone) => {
          const payday = day('2026-01-01') + offset * D;
          const paydays = [payday, ...(altShift === null ? [] : [payday + altShift * D])];
          const cycle: CadenceInput['cycle'] = {
            frequency: 'biweekly',
            nextPayday: payday,
            confidence: 0.9,
            landsEarly,
            ...(altShift === null ? {} : { alternative: { frequency: 'semimonthly' as const, nextPayday: paydays[1]! } }),
          };
          const slots = paydaySlots(cycle, timeZone);
          const around = landsEarly ? [-1, 0, 1] : [0, 1];
          expect(slots).toHaveLength(around.length * paydays.length);
          for (let i = 1; i < slots.length; i++) expect(slots[i]!).toBeGreaterThanOrEqual(slots[i - 1]!);
          const seen = new Set<number>();
          for (const t of slots) {
            const w = wallClock(t, timeZone);
            expect({ hour: w.hour, minute: w.minute }).toEqual({ hour: 8, minute: 0 });
            expect(paydays.some((p) => around.some((k) => p + k * D === w.day))).toBe(true);
            seen.add(w.day);
          }
          for (const p of paydays) for (const k of around) expect(seen.has(p + k * D)).toBe(true);
        },
      ),
      { numRuns: 400, seed: 364 },
    );
  });


  test('over any stretch, reads are never closer than the fixed interval, so never more than it would make', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...FREQUENCIES),
        fc.integer({ min: 1, max: 72 }),
        fc.integer({ min: 1, max: 7 }),
        fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 6 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.boolean(),
        fc.option(fc.integer({ min: -6, max: 6 }), { nil: null }),
        fc.constantFrom(...ZONES),
        (frequency, fixedHours, quietDays, paydayOffsets, confidence, landsEarly, altShift, timeZone) => {
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
            const known = frequency !== 'irregular' && frequency !== 'unknown' && upcoming !== null;
            const cycle: CadenceInput['cycle'] = {
              frequency,
              nextPayday: known ? upcoming : null,
              confidence,
              landsEarly,
              ...(known && altShift !== null ? { alternative: { frequency: 'semimonthly' as const, nextPayday: upcoming + altShift * D } } : {}),
            };
            const next = nextReadAt({ cycle, lastReadAt: last, now, fixedIntervalMs: fixed, quietIntervalMs: quietDays * D, timeZone });
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
