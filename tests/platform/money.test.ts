import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import {
  centsToDollars,
  dollarsToCents,
  dollarsToCentsRounded,
  formatCents,
  parseDollarText,
} from '../../src/platform/money';

const NOT_DECIMAL = [null, undefined, true, {}, [], NaN, Infinity, '', '12,50', '$5', '1e3', '.5', '5.', 1e21, '99999999999999999.99'];

describe('dollarsToCents (exact, for amounts a caller sends)', () => {
  test('any whole number of cents survives the trip through a JSON dollar amount and its text', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e13, max: 1e13 }), (cents) => {
        const dollars = JSON.parse(JSON.stringify(centsToDollars(cents)));
        return dollarsToCents(dollars) === cents && dollarsToCents(formatCents(cents)) === cents;
      }),
    );
  });

  test('decimal text of any length agrees with exact BigInt arithmetic (or is refused past the safe range)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[1-9]\d{0,16}$/), fc.stringMatching(/^\d{0,3}$/), fc.boolean(), (whole, fraction, negative) => {
        const text = `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
        const exact = BigInt(whole) * 100n + BigInt((fraction + '00').slice(0, 2));
        const up = fraction.length > 2 && fraction[2]! >= '5' ? 1n : 0n;
        const sign = negative ? -1 : 1;
        const expected = (c: bigint) => (c > BigInt(Number.MAX_SAFE_INTEGER) ? null : sign * Number(c));
        expect(dollarsToCents(text)).toBe(fraction.replace(/0+$/, '').length > 2 ? null : expected(exact));
        expect(dollarsToCentsRounded(text)).toBe(expected(exact + up));
      }),
      { numRuns: 2000 },
    );
  });

  test('more than two decimals is refused, never rounded', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 1, max: 9 }), (cents, extra) => {
        return dollarsToCents(`${formatCents(cents)}${extra}`) === null;
      }),
    );
    expect(dollarsToCents(1.005)).toBeNull();
    expect(dollarsToCents('2.499')).toBeNull();
    // Trailing zeros are not more precision.
    expect(dollarsToCents('2.500')).toBe(250);
  });

  test('anything that is not a decimal amount is refused', () => {
    for (const v of NOT_DECIMAL) expect(dollarsToCents(v)).toBeNull();
  });
});

describe('dollarsToCentsRounded (for amounts read from another system)', () => {
  test('agrees with the exact conversion wherever that one answers', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e13, max: 1e13 }), (cents) => dollarsToCentsRounded(centsToDollars(cents)) === cents),
    );
  });

  test('digits past the cent round half away from zero', () => {
    expect(dollarsToCentsRounded(1.005)).toBe(101);
    expect(dollarsToCentsRounded(1.004)).toBe(100);
    expect(dollarsToCentsRounded(-1.005)).toBe(-101);
    expect(dollarsToCentsRounded('2.499')).toBe(250);
    expect(dollarsToCentsRounded(1e-7)).toBe(0);
    expect(dollarsToCentsRounded(-0)).toBe(0);
    expect(Object.is(dollarsToCentsRounded('-0.001'), 0)).toBe(true);
  });

  test('anything that is not a decimal amount is refused', () => {
    for (const v of NOT_DECIMAL) expect(dollarsToCentsRounded(v)).toBeNull();
  });
});

describe('formatCents and parseDollarText', () => {
  test('formatting then reading gives the same cents, with or without $ and thousands separators', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e12, max: 1e12 }), (cents) => {
        const plain = formatCents(cents);
        const grouped = plain.replace(/^(-?)(\d+)/, (_, s: string, d: string) => s + '$' + d.replace(/\B(?=(\d{3})+(?!\d))/g, ','));
        return parseDollarText(plain) === cents && parseDollarText(grouped) === cents;
      }),
    );
  });

  test('spreadsheet spellings', () => {
    expect(parseDollarText('425')).toBe(42500);
    expect(parseDollarText('425.00')).toBe(42500);
    expect(parseDollarText('$1,234.56')).toBe(123456);
    expect(parseDollarText('1234.5')).toBe(123450);
    expect(parseDollarText(' $ 12 ')).toBe(1200);
    for (const bad of ['1,23.00', '12.345', 'abc', '$', '', '1.2.3', '1,2345']) expect(parseDollarText(bad)).toBeNull();
  });
});
