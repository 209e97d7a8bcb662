// The identifier rule, as a property: a string is an identifier exactly when it is 1 to 255 characters of
// well-formed Unicode with no control character, and the schema's pattern says the same with or without a
// regular expression's `u` flag (TypeBox compiles it without, ajv and generated clients with).
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { IDENTIFIER_MAX, IDENTIFIER_PATTERN, isIdentifier } from '../../src/platform/fields';
import { fits } from '../../src/platform/validation';
import { AuthorizerId } from '../../src/modules/authorizers/fields';

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const expected = (s: string) => s.length >= 1 && s.length <= IDENTIFIER_MAX && s.isWellFormed() && !CONTROL.test(s);
const withU = new RegExp(IDENTIFIER_PATTERN, 'u');

// Code units from every range that matters: ASCII, C0 and C1 controls, BMP letters, both surrogate halves.
const unit = fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }),
  fc.integer({ min: 0x00, max: 0x1f }),
  fc.integer({ min: 0x7f, max: 0x9f }),
  fc.integer({ min: 0xa0, max: 0xd7ff }),
  fc.integer({ min: 0xd800, max: 0xdbff }),
  fc.integer({ min: 0xdc00, max: 0xdfff }),
  fc.integer({ min: 0xe000, max: 0xffff }),
);
const text = fc.array(unit, { maxLength: 40 }).map((units) => String.fromCharCode(...units));
const pairs = fc.array(fc.integer({ min: 0x10000, max: 0x10ffff }), { minLength: 1, maxLength: 10 }).map((cps) => String.fromCodePoint(...cps));

describe('an identifier', () => {
  test('is exactly 1 to 255 characters of well-formed Unicode without control characters', () => {
    fc.assert(
      fc.property(fc.oneof(text, pairs), (s) => {
        expect(isIdentifier(s)).toBe(expected(s));
        expect(fits(AuthorizerId, s)).toBe(expected(s));
        // With the `u` flag a lone surrogate is one code point: still refused, pairs still taken.
        if (s.length >= 1 && s.length <= IDENTIFIER_MAX) expect(withU.test(s)).toBe(expected(s));
      }),
      { numRuns: 2000 },
    );
  });

  test('the cases that matter, by name', () => {
    expect(isIdentifier('sur\ud800-1')).toBe(false);
    expect(isIdentifier('sur\udc00-1')).toBe(false);
    expect(isIdentifier('\udc00\ud800')).toBe(false);
    expect(isIdentifier('tab\there')).toBe(false);
    expect(isIdentifier('nul\u0000')).toBe(false);
    expect(isIdentifier('c1\u0085')).toBe(false);
    expect(isIdentifier('')).toBe(false);
    expect(isIdentifier('x'.repeat(256))).toBe(false);
    expect(isIdentifier('x'.repeat(255))).toBe(true);
    expect(isIdentifier('loan-1001')).toBe(true);
    expect(isIdentifier('emoji-\u{1F600}')).toBe(true);
    expect(isIdentifier('Zoë Ωμέγα 東京')).toBe(true);
    expect(isIdentifier(42)).toBe(false);
  });
});
