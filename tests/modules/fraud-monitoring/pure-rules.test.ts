// engine: once
// The fraud rules' pure parts, as properties over any input fast-check makes: the median is an order statistic
// whatever the order; amount_outlier compares with the borrower's median when it has enough history, else the
// lender's, and fires exactly above factor times it; account_changed's window holds its bounds; and the policy
// document keeps every value within its rule's bounds or refuses it naming the field, a stored document read
// back as it was saved.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { amountOutlier, changedWithin, median, RULES, RULE_IDS } from '../../../src/modules/fraud-monitoring/rules';
import { defaultRules, rulesFrom, storedRules } from '../../../src/modules/fraud-monitoring/policy';
import { InvalidInput } from '../../../src/platform/errors';

const amounts = fc.array(fc.integer({ min: 1, max: 10_000_000 }), { maxLength: 60 });
const DAY = 86_400_000;

describe('rules', () => {
  test('the median: at least half the values at or below it and at or above it, whatever their order', () => {
    fc.assert(
      fc.property(amounts, fc.nat(), (xs, seed) => {
        const m = median(xs);
        if (xs.length === 0) return m === null;
        const shuffled = [...xs].sort((a, b) => ((a * 7919 + seed) % 101) - ((b * 7919 + seed) % 101));
        expect(median(shuffled)).toBe(m);
        return xs.filter((x) => x <= m!).length * 2 >= xs.length && xs.filter((x) => x >= m!).length * 2 >= xs.length;
      }),
    );
  });

  test('amount_outlier: the borrower’s median with enough history, else the lender’s, else none; a hit exactly above factor times it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50_000_000 }), amounts, amounts, fc.integer({ min: 2, max: 50 }), fc.integer({ min: 1, max: 20 }), (amountCents, borrower, lender, factor, minHistory) => {
        const o = amountOutlier({ amountCents, borrowerAmounts: borrower, lenderAmounts: lender, factor, minHistory });
        const source = borrower.length >= minHistory ? 'borrower' : lender.length >= minHistory ? 'lender' : null;
        expect(o.source).toBe(source);
        const base = source === 'borrower' ? median(borrower) : source === 'lender' ? median(lender) : null;
        expect(o.baseline).toBe(base);
        expect(o.hit).toBe(base !== null && amountCents > factor * base);
      }),
    );
  });

  test('account_changed: a change within the window before the debit, its ends included; none, a later one or an older one is no hit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 * DAY }), fc.integer({ min: 1, max: 180 }), (ago, days) => {
        const now = 1_800_000_000_000;
        expect(changedWithin(now - ago, now, days)).toBe(ago <= days * DAY);
        expect(changedWithin(now + 1, now, days)).toBe(false);
        expect(changedWithin(null, now, days)).toBe(false);
      }),
    );
  });
});

describe('the policy document', () => {
  const settingArb = fc.constantFrom(...RULE_IDS.flatMap((r) => Object.keys(RULES[r].settings).map((s) => [r, s] as const)));

  test('a setting within its bounds is kept, one outside refused naming its field; nothing else of the rule changes', () => {
    fc.assert(
      fc.property(settingArb, fc.integer({ min: -5, max: 300 }), ([rule, setting], value) => {
        const spec = RULES[rule].settings[setting]!;
        const input = { [rule]: { settings: { [setting]: value } } };
        if (value < spec.minimum || value > spec.maximum) {
          try {
            rulesFrom(input);
            return false;
          } catch (e) {
            return e instanceof InvalidInput && JSON.stringify(e).includes(`/rules/${rule}/settings/${setting}`);
          }
        }
        const out = rulesFrom(input);
        expect(out[rule].settings[setting]).toBe(value);
        expect(out[rule].action).toBe(RULES[rule].defaultAction);
        for (const other of RULE_IDS.filter((r) => r !== rule)) expect(out[other]).toEqual(defaultRules()[other]);
        // Saved and read back, the same document.
        expect(storedRules(JSON.stringify(out))).toEqual(out);
        return true;
      }),
    );
  });

  test('a stored document missing a rule or a setting reads it at its default', () => {
    const d = defaultRules();
    expect(storedRules('{}')).toEqual(d);
    expect(storedRules(JSON.stringify({ velocity: { enabled: false, action: 'hold', settings: {} } })).velocity).toEqual({ enabled: false, action: 'hold', settings: d.velocity.settings });
  });
});
