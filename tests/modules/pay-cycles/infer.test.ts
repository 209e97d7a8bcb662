// Pay-cycle inference on constructed histories: each frequency, deposits moved by weekends and holidays, a
// deposit missing, the cycle changing, biweekly that lands on semimonthly dates, too little history; and as
// properties: any regular schedule is recognised with its next payday within a day, whatever the order.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { depositsFromBalances, incomeDeposits, inferPayCycle, type Deposit } from '../../../src/modules/pay-cycles/infer';
import { isBusinessDay } from '../../../src/platform/business-days';

const D = 86_400_000;
const day = (s: string) => Date.parse(`${s}T00:00:00Z`);
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString().slice(0, 10));
const pay = (days: number[], cents = 150_000): Deposit[] => days.map((at, i) => ({ at: at + 9 * 3_600_000, amountCents: cents + (i % 3) * 2_500 }));
/** Payroll pays on the business day before a weekend or holiday. */
const paidOn = (t: number) => {
  let d = t;
  while (!isBusinessDay(d)) d -= D;
  return d;
};

describe('each frequency', () => {
  test('biweekly on Fridays: the next Friday of the cycle', () => {
    const c = inferPayCycle(pay([6, 5, 4, 3, 2, 1, 0].map((i) => day('2026-11-20') - i * 14 * D)), day('2026-11-25'));
    expect(c).toMatchObject({ frequency: 'biweekly', confidence: 1 });
    expect(iso(c.nextPayday)).toBe('2026-12-04');
  });

  test('weekly, with Thanksgiving week paid as usual and a small transfer in between ignored', () => {
    const credits = [...pay(Array.from({ length: 12 }, (_, i) => day('2026-11-20') - i * 7 * D), 80_000), { at: day('2026-11-18'), amountCents: 2_500 }];
    const c = inferPayCycle(credits, day('2026-11-23'));
    expect(c.frequency).toBe('weekly');
    expect(iso(c.nextPayday)).toBe('2026-11-27');
  });

  test('semimonthly on the 15th and the last day, each moved to the business day before', () => {
    const nominal = [];
    for (const m of [7, 8, 9, 10]) nominal.push(Date.UTC(2026, m, 15), Date.UTC(2026, m + 1, 0));
    const c = inferPayCycle(pay(nominal.map(paidOn)), day('2026-11-20'));
    expect(c.frequency).toBe('semimonthly');
    // 30 November 2026 is a Monday.
    expect(iso(c.nextPayday)).toBe('2026-11-30');
  });

  test('monthly on the 28th: paid Friday the 27th when the 28th is a Saturday', () => {
    const c = inferPayCycle(pay([6, 7, 8, 9].map((m) => paidOn(Date.UTC(2026, m, 28)))), day('2026-11-01'));
    expect(c.frequency).toBe('monthly');
    expect(iso(c.nextPayday)).toBe('2026-11-27');
  });

  test('a holiday moves a payday to the day before: Friday 25 December 2026', () => {
    const fridays = Array.from({ length: 6 }, (_, i) => day('2026-12-11') - i * 14 * D);
    expect(iso(paidOn(day('2026-12-25')))).toBe('2026-12-24');
    const c = inferPayCycle(pay(fridays), day('2026-12-14'));
    expect(c.frequency).toBe('biweekly');
    expect(iso(c.nextPayday)).toBe('2026-12-24');
  });
});

describe('gaps, changes and too little history', () => {
  test('one deposit missing: still biweekly', () => {
    const days = [8, 7, 6, 5, 3, 2, 1, 0].map((i) => day('2026-11-20') - i * 14 * D);
    expect(inferPayCycle(pay(days), day('2026-11-23')).frequency).toBe('biweekly');
  });

  test('two predicted paydays missed since the last deposit: irregular, to be learned again', () => {
    const days = [6, 5, 4, 3, 2].map((i) => day('2026-11-20') - i * 14 * D);
    const before = inferPayCycle(pay(days), day('2026-10-26'));
    expect(before.frequency).toBe('biweekly');
    // The paydays of 6 and 20 November passed without a deposit.
    const after = inferPayCycle(pay(days), day('2026-11-25'));
    expect(after).toMatchObject({ frequency: 'irregular', nextPayday: null });
  });

  test('the second payday missed is seen the day after it, not later', () => {
    const days = [6, 5, 4, 3, 2].map((i) => day('2026-11-20') - i * 14 * D);
    // 6 November missed; 20 November not yet over (its deposit may post on the 21st).
    expect(inferPayCycle(pay(days), day('2026-11-20')).frequency).toBe('biweekly');
    // The morning after it, nothing came: irregular at once.
    expect(inferPayCycle(pay(days), day('2026-11-21'))).toMatchObject({ frequency: 'irregular', nextPayday: null });
  });

  test("the next payday is the first not yet paid: once a payday's deposit has come, the one after", () => {
    const fridays = Array.from({ length: 6 }, (_, i) => day('2026-11-20') - i * 14 * D);
    // On the payday, before its deposit: that day.
    expect(iso(inferPayCycle(pay(fridays.slice(1)), day('2026-11-20')).nextPayday)).toBe('2026-11-20');
    // On the payday, after it: two weeks on.
    expect(iso(inferPayCycle(pay(fridays), day('2026-11-20')).nextPayday)).toBe('2026-12-04');
    // Paid a day early (Thursday 19th) and asked that day: paid, two weeks on.
    expect(iso(inferPayCycle(pay([day('2026-11-19'), ...fridays.slice(1)]), day('2026-11-19')).nextPayday)).toBe('2026-12-04');
  });

  test('pay that has come a day before its payday is noted: the morning before the next is read too', () => {
    const fridays = Array.from({ length: 6 }, (_, i) => day('2026-11-20') - i * 14 * D);
    expect(inferPayCycle(pay(fridays), day('2026-11-23')).landsEarly).toBe(false);
    // Early direct deposit once: the Thursday before the Friday of 6 November.
    const once = fridays.map((t) => (t === day('2026-11-06') ? t - D : t));
    expect(inferPayCycle(pay(once), day('2026-11-23'))).toMatchObject({ frequency: 'biweekly', landsEarly: true });
  });

  test('three monthly paydays, all on time, are a full history: believed well', () => {
    const c = inferPayCycle(pay([7, 8, 9].map((m) => paidOn(Date.UTC(2026, m, 15)))), day('2026-10-20'));
    expect(c).toMatchObject({ frequency: 'monthly', confidence: 1 });
    // Three biweekly paydays are not.
    expect(inferPayCycle(pay([2, 1, 0].map((i) => day('2026-11-20') - i * 14 * D)), day('2026-11-23')).confidence).toBe(0.5);
  });

  test('deposits at no steady interval are irregular; fewer than three are unknown', () => {
    const t = day('2026-11-25');
    expect(inferPayCycle(pay([3, 11, 30, 41, 63, 70].map((x) => t - x * D)), t).frequency).toBe('irregular');
    expect(inferPayCycle(pay([t - D, t - 15 * D]), t)).toMatchObject({ frequency: 'unknown', nextPayday: null, confidence: 0 });
    expect(inferPayCycle([], t).frequency).toBe('unknown');
  });

  test('biweekly Fridays that land on semimonthly dates keep both hypotheses', () => {
    // 1, 15 and 29 May 2026 are Fridays: the 15th and the last day (31 May, a Sunday, paid on the 29th) too.
    const c = inferPayCycle(pay([day('2026-05-01'), day('2026-05-15'), day('2026-05-29')]), day('2026-06-02'));
    expect(c.frequency).toBe('biweekly');
    expect(iso(c.nextPayday)).toBe('2026-06-12');
    expect(c.alternative).toEqual({ frequency: 'semimonthly', nextPayday: day('2026-06-15') });
  });
});

describe('income among credits', () => {
  test('the largest group of similar amounts, one credit per day', () => {
    const t = day('2026-11-02');
    const income = incomeDeposits([
      { at: t, amountCents: 100_000 },
      { at: t + 3_600_000, amountCents: 20_000 }, // the same day: added up
      { at: t + 14 * D, amountCents: 118_000 },
      { at: t + 28 * D, amountCents: 121_000 },
      { at: t + 5 * D, amountCents: 500_000 }, // a one-off
      { at: t + 6 * D, amountCents: 1_000 }, // too small to be pay
    ]);
    expect(income.map((d) => [iso(d.at), d.amountCents])).toEqual([
      ['2026-11-02', 120_000],
      ['2026-11-16', 118_000],
      ['2026-11-30', 121_000],
    ]);
  });

  test('balance rises stand for credits where a source has no transactions', () => {
    const t = day('2026-11-02');
    const reads = [0, 1, 2, 14, 15, 28].map((d, i) => ({ at: t + d * D, balanceCents: [5_000, 160_000, 120_000, 30_000, 180_000, 170_000][i]! }));
    expect(depositsFromBalances(reads).map((d) => [iso(d.at), d.amountCents])).toEqual([
      ['2026-11-03', 155_000],
      ['2026-11-17', 150_000],
    ]);
  });
});

describe('as properties', () => {
  const schedules = {
    weekly: (start: number, n: number) => Array.from({ length: n }, (_, i) => start + i * 7 * D),
    biweekly: (start: number, n: number) => Array.from({ length: n }, (_, i) => start + i * 14 * D),
    semimonthly: (start: number, n: number) => {
      const s = new Date(start);
      const out: number[] = [];
      for (let m = 0; out.length < n; m++) out.push(Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + m, 1), Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + m, 16));
      return out.slice(0, n);
    },
    monthly: (start: number, n: number) => {
      const s = new Date(start);
      return Array.from({ length: n }, (_, i) => Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + i, Math.min(s.getUTCDate(), 28)));
    },
  } as const;
  const counts = { weekly: 12, biweekly: 7, semimonthly: 7, monthly: 4 } as const;

  test('a regular schedule, any start, amounts that vary, one deposit missing or not: recognised, next payday within a day', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('weekly', 'biweekly', 'semimonthly', 'monthly' as const),
        fc.integer({ min: 0, max: 700 }),
        fc.option(fc.nat(), { nil: null }),
        fc.integer({ min: 60_000, max: 400_000 }),
        (frequency, offset, drop, cents) => {
          const f = frequency as keyof typeof schedules;
          const nominal = schedules[f](day('2025-01-01') + offset * D, counts[f] + 1);
          const truth = nominal.map(paidOn);
          const next = truth.pop()!;
          const seen = drop === null || f === 'monthly' ? truth : truth.filter((_, i) => i !== 1 + (drop % (truth.length - 2)));
          const asOf = truth[truth.length - 1]! + D;
          const c = inferPayCycle(
            seen.map((at, i) => ({ at, amountCents: cents + ((i * 7919) % 11) * 500 })),
            asOf,
          );
          expect(c.frequency === f || c.alternative?.frequency === f).toBe(true);
          const predicted = c.frequency === f ? c.nextPayday! : c.alternative!.nextPayday;
          expect(Math.abs(predicted - next)).toBeLessThanOrEqual(D);
        },
      ),
      { numRuns: 400, seed: 361 },
    );
  });

  test('the order of the credits does not matter', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ at: fc.integer({ min: day('2026-07-01'), max: day('2026-11-24') }), amountCents: fc.integer({ min: 0, max: 500_000 }) }), { maxLength: 60 }), fc.nat(), (credits, seed) => {
        const shuffled = [...credits].sort((a, b) => ((a.at * 31 + seed) % 97) - ((b.at * 31 + seed) % 97));
        expect(inferPayCycle(shuffled, day('2026-11-25'))).toEqual(inferPayCycle(credits, day('2026-11-25')));
      }),
      { numRuns: 200, seed: 362 },
    );
  });
});
