// The windows of the payment notices (collection/notices.ts), as properties over any clock, time zone, class,
// channel and lead: a debit planned with a notice has a window that is not empty, that the lender can still meet
// (it ends now or later), and any notice sent inside it meets every rule that asked for it, counted the way the
// rules count (business days for the payday rule, calendar days for Regulation E, in the lender's calendar).
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { businessDaysBefore, businessDaysBetween, isBusinessDay } from '../../../src/platform/business-days';
import { DAY_MS } from '../../../src/platform/clock';
import { localDayOf } from '../../../src/platform/zone';
import {
  CFPB_WINDOWS,
  classify,
  dayOfString,
  dayString,
  insideWindow,
  leadBounds,
  noticeNeeds,
  regENeedsNotice,
  REG_E_NOTICE_DAYS,
  scheduleDebit,
  type NoticeNeed,
} from '../../../src/modules/collection/notices';

const ZONES = [null, 'America/Chicago', 'America/New_York', 'America/Los_Angeles', 'Pacific/Honolulu', 'Asia/Tokyo'];
const CLASSES = ['first', 'unusual', 'reinitiation'] as const;

const caseArb = fc.record({
  now: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2028, 11, 31) }),
  timeZone: fc.constantFrom(...ZONES),
  klass: fc.constantFrom(...CLASSES),
  channel: fc.constantFrom('electronic' as const, 'mail' as const),
  cfpb: fc.boolean(),
  regE: fc.boolean(),
  leadDays: fc.integer({ min: 0, max: 10 }),
});

describe('payment notice windows (pure)', () => {
  test('a planned debit’s window is not empty, ends no earlier than now, and a notice anywhere inside it meets every rule that asked', () => {
    fc.assert(
      fc.property(caseArb, fc.double({ min: 0, max: 1, noNaN: true }), (c, where) => {
        const needs: NoticeNeed[] = [...(c.cfpb ? (['cfpb'] as const) : []), ...(c.regE ? (['reg_e'] as const) : [])];
        if (needs.length === 0) return;
        const w = CFPB_WINDOWS[c.klass][c.channel];
        const s = scheduleDebit({ now: c.now, timeZone: c.timeZone, needs, cfpb: w, leadDays: c.leadDays });
        expect(s).not.toBeNull();
        const { debitOn, dueFrom, dueBy } = s!;
        expect(isBusinessDay(debitOn)).toBe(true);
        expect(dueFrom!).toBeGreaterThanOrEqual(c.now);
        expect(dueFrom!).toBeLessThanOrEqual(dueBy!);
        expect(dueBy!).toBeGreaterThanOrEqual(c.now);
        // A notice sent at any instant of the window, on the lender's calendar.
        const sentAt = Math.floor(dueFrom! + where * (dueBy! - dueFrom!));
        expect(insideWindow(sentAt, dueFrom, dueBy)).toBe(true);
        const sentDay = localDayOf(sentAt, c.timeZone);
        const before = businessDaysBetween(sentDay, debitOn);
        if (c.cfpb) {
          expect(before).toBeGreaterThanOrEqual(w.latest);
          if (w.earliest !== null) expect(before).toBeLessThanOrEqual(w.earliest);
        }
        if (c.regE) expect((debitOn - sentDay) / DAY_MS).toBeGreaterThanOrEqual(REG_E_NOTICE_DAYS);
        // The lead is kept: never before the day it names.
        let first = localDayOf(c.now, c.timeZone);
        for (let left = c.leadDays; left > 0; ) {
          first += DAY_MS;
          if (isBusinessDay(first)) left--;
        }
        expect(debitOn).toBeGreaterThanOrEqual(first);
      }),
      { numRuns: 5_000 },
    );
  });

  test('under an authorization’s dates: only one of them, and none whose window has passed', () => {
    fc.assert(
      fc.property(caseArb, fc.uniqueArray(fc.integer({ min: -5, max: 40 }), { minLength: 1, maxLength: 6 }), (c, offsets) => {
        const today = localDayOf(c.now, c.timeZone);
        const dates = offsets.map((o) => today + o * DAY_MS).sort((a, b) => a - b);
        const needs: NoticeNeed[] = c.cfpb ? ['cfpb'] : [];
        const w = CFPB_WINDOWS[c.klass][c.channel];
        const s = scheduleDebit({ now: c.now, timeZone: c.timeZone, needs, cfpb: w, leadDays: 0, dates });
        if (s === null) {
          // None fits: every date is past, or too near for the notice.
          for (const d of dates) if (d >= today && needs.length === 0) throw new Error('a date that fits was skipped');
          return;
        }
        expect(dates).toContain(s.debitOn);
        expect(s.debitOn).toBeGreaterThanOrEqual(today);
        if (needs.length > 0) {
          expect(s.dueBy!).toBeGreaterThanOrEqual(c.now);
          // The last day to send is the third (sixth) business day before the date, a weekend date included.
          expect(localDayOf(s.dueBy!, c.timeZone)).toBeLessThanOrEqual(businessDaysBefore(s.debitOn, w.latest));
        }
      }),
      { numRuns: 3_000 },
    );
  });

  test('no notice and no lead: today, whatever the day', () => {
    const saturday = Date.UTC(2026, 10, 28, 15);
    expect(scheduleDebit({ now: saturday, timeZone: null, needs: [], cfpb: null, leadDays: 0 })).toEqual({ debitOn: Date.UTC(2026, 10, 28), dueFrom: null, dueBy: null });
  });

  test('an example: an electronic unusual-withdrawal notice, Chicago, over Thanksgiving', () => {
    // Monday 23 November 2026, 10:00 in Chicago. The default lead is 4 business days (Thursday 26 is Thanksgiving): Monday 30.
    const now = Date.UTC(2026, 10, 23, 16);
    const s = scheduleDebit({ now, timeZone: 'America/Chicago', needs: ['cfpb'], cfpb: CFPB_WINDOWS.unusual.electronic, leadDays: 0 })!;
    expect(dayString(s.debitOn)).toBe('2026-11-30');
    // No earlier than 7 business days before (Wednesday 18: already past, so now), no later than 3 (Tuesday 24), to the end of that day in Chicago.
    expect(s.dueFrom).toBe(now);
    expect(new Date(s.dueBy!).toISOString()).toBe('2026-11-25T05:59:59.999Z');
  });

  test('classes, needs and the Regulation E elections', () => {
    expect(classify({ consumerInitiated: true, reinitiationOf: 'p', firstEver: true, onSchedule: true })).toBe('consumer_initiated');
    expect(classify({ consumerInitiated: false, reinitiationOf: 'p', firstEver: true, onSchedule: true })).toBe('reinitiation');
    expect(classify({ consumerInitiated: false, reinitiationOf: null, firstEver: true, onSchedule: true })).toBe('first');
    expect(classify({ consumerInitiated: false, reinitiationOf: null, firstEver: false, onSchedule: true })).toBe('regular');
    expect(classify({ consumerInitiated: false, reinitiationOf: null, firstEver: false, onSchedule: false })).toBe('unusual');
    expect(noticeNeeds({ klass: 'regular', covered: true, regE: false })).toEqual([]);
    expect(noticeNeeds({ klass: 'unusual', covered: true, regE: true })).toEqual(['cfpb', 'reg_e']);
    expect(noticeNeeds({ klass: 'consumer_initiated', covered: true, regE: true })).toEqual([]);
    expect(noticeNeeds({ klass: 'first', covered: false, regE: false })).toEqual([]);
    expect(regENeedsNotice({ type: 'none' }, 100, 50)).toBe(false);
    expect(regENeedsNotice({ type: 'always' }, 100, 100)).toBe(false);
    expect(regENeedsNotice({ type: 'always' }, 100, 99)).toBe(true);
    expect(regENeedsNotice({ type: 'always' }, 100, null)).toBe(true);
    expect(regENeedsNotice({ type: 'outside_range', min_cents: 50, max_cents: 150 }, 150, null)).toBe(false);
    expect(regENeedsNotice({ type: 'outside_range', min_cents: 50, max_cents: 150 }, 151, 151)).toBe(true);
    expect(regENeedsNotice({ type: 'difference_over', amount_cents: 20 }, 120, 100)).toBe(false);
    expect(regENeedsNotice({ type: 'difference_over', amount_cents: 20 }, 121, 100)).toBe(true);
    expect(leadBounds('electronic')).toEqual({ min: 3, max: 7 });
    expect(leadBounds('mail')).toEqual({ min: 6, max: 10 });
    expect(dayOfString('2026-02-30')).toBeNull();
    expect(dayOfString('2026-12-07')).toBe(Date.UTC(2026, 11, 7));
  });
});
