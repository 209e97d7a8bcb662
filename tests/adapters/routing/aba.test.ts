import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { abaCheckDigit, isValidAbaChecksum, routingNumberProblem } from '../../../src/adapters/routing/aba';

const digits = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''));
const validRouting = digits(8).map((first8) => first8 + abaCheckDigit(first8));
const inRangePrefix = fc
  .oneof(
    fc.constant(0),
    fc.integer({ min: 1, max: 12 }),
    fc.integer({ min: 21, max: 32 }),
    fc.integer({ min: 61, max: 72 }),
    fc.constant(80),
  )
  .map((p) => String(p).padStart(2, '0'));
const validInRange = fc
  .tuple(inRangePrefix, digits(6))
  .map(([prefix, rest]) => prefix + rest + abaCheckDigit(prefix + rest));

describe('ABA checksum', () => {
  test('known real routing numbers pass', () => {
    for (const r of ['011000015', '021000021', '026009593', '111000025', '322271627', '110000000']) {
      expect(isValidAbaChecksum(r)).toBe(true);
      expect(routingNumberProblem(r)).toBeNull();
    }
  });

  test('every number built with its check digit stays valid', () => {
    fc.assert(fc.property(validRouting, (r) => isValidAbaChecksum(r)));
  });

  test('changing any single digit breaks the checksum', () => {
    fc.assert(
      fc.property(validRouting, fc.integer({ min: 0, max: 8 }), fc.integer({ min: 1, max: 9 }), (r, pos, delta) => {
        const changed = (Number(r[pos]) + delta) % 10;
        const mutated = r.slice(0, pos) + changed + r.slice(pos + 1);
        return !isValidAbaChecksum(mutated);
      }),
    );
  });

  test('checksum-valid numbers with an assigned prefix pass the full check', () => {
    fc.assert(fc.property(validInRange, (r) => routingNumberProblem(r) === null));
  });

  test('anything that is not nine digits fails the checksum', () => {
    for (const s of ['', '11000000', '1100000000', '11000000a', ' 110000000', '110-00-000']) {
      expect(isValidAbaChecksum(s)).toBe(false);
    }
  });
});

describe('routingNumberProblem', () => {
  test('an 8-digit value is reported as a lost leading zero', () => {
    // 011000015 written as a number loses its first digit.
    const message = routingNumberProblem('11000015');
    expect(message).toContain('9');
    expect(message).toContain('leading zero');
  });

  test('leading zeros are significant', () => {
    expect(routingNumberProblem('011000015')).toBeNull();
    expect(routingNumberProblem('000000000')).toBeNull();
  });

  test('wrong lengths and non-digits', () => {
    expect(routingNumberProblem('')).toContain('required');
    expect(routingNumberProblem('1234567')).toContain('exactly 9 digits');
    expect(routingNumberProblem('0110000150')).toContain('exactly 9 digits');
    expect(routingNumberProblem('011 000 015')).toContain('digits only');
    expect(routingNumberProblem('01100001O')).toContain('digits only');
  });

  test('prefixes outside the assigned ranges are refused even with a valid checksum', () => {
    for (const prefix of ['13', '20', '33', '50', '60', '73', '79', '81', '99']) {
      const first8 = prefix + '000000';
      const r = first8 + abaCheckDigit(first8);
      expect(isValidAbaChecksum(r)).toBe(true);
      expect(routingNumberProblem(r)).toContain(`starts with ${prefix}`);
    }
  });

  test('prefix range edges are accepted', () => {
    for (const prefix of ['00', '01', '12', '21', '32', '61', '72', '80']) {
      const first8 = prefix + '000000';
      expect(routingNumberProblem(first8 + abaCheckDigit(first8))).toBeNull();
    }
  });

  test('a mistyped digit is a checksum failure', () => {
    expect(routingNumberProblem('021000022')).toContain('checksum');
  });

  test('messages never echo the full number', () => {
    fc.assert(
      fc.property(digits(9), (r) => {
        const message = routingNumberProblem(r);
        return message === null || !message.includes(r);
      }),
    );
  });
});
