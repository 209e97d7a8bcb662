// The portal shows amounts the API gives in dollars (a schedule's threshold, a balance) through the money
// helper: each comes back as the cents it was stored as.
import { describe, expect, test } from 'bun:test';
import { centsToDollars, MAX_AMOUNT_CENTS } from '../../../src/platform/money';
import { dollarAmount, dollars } from '../../../src/modules/portal/ui/format';

describe('dollarAmount', () => {
  test('every amount of cents given as API dollars is shown as those cents', () => {
    const cents = [0, 1, 5, 10, 29, 57, 99, 100, 101, 1005, 12_345, 100_000_000, MAX_AMOUNT_CENTS - 1, MAX_AMOUNT_CENTS];
    for (let c = 0; c < 20_000; c += 7) cents.push(c);
    for (const c of cents) expect([c, dollarAmount(centsToDollars(c))]).toEqual([c, dollars(c)]);
  });

  test('separators and cents as people read them', () => {
    expect(dollarAmount(1234.56)).toBe('$1,234.56');
    expect(dollarAmount(0.3)).toBe('$0.30');
    expect(dollarAmount(10_000_000_000)).toBe('$10,000,000,000.00');
  });
});
