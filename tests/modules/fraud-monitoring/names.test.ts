// engine: once
// The name match of the fraud rules (fraud-monitoring/names.ts) on examples, and as properties over any names
// fast-check makes: reflexive and symmetric; blind to case, diacritics, punctuation, word order and
// generational suffixes; an initial stands for a word it begins; a word the other name lacks is a mismatch; an
// empty name matches nothing; and it never throws, whatever the text.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { MAX_WORDS, nameWords, namesMatch } from '../../../src/modules/fraud-monitoring/names';

const word = fc.stringMatching(/^[a-z]{2,10}$/).filter((w) => !['jr', 'sr', 'ii', 'iv', 'mr', 'ms', 'dr'].includes(w));
const name = fc.array(word, { minLength: 1, maxLength: 4 });

describe('examples', () => {
  test.each([
    ['Ada Lovelace', 'LOVELACE, Ada', true],
    ['Ada Lovelace', 'Ada K. Lovelace', true],
    ['Ada Lovelace', 'A Lovelace', true],
    ['José Núñez', 'jose nunez', true],
    ['Mary-Jane O’Neil', 'mary jane o neil', true],
    ['John Smith Jr.', 'John Smith', true],
    ['Ada Lovelace', 'Ada Byron', false],
    ['Ada Lovelace', 'Charles Babbage', false],
    ['Ada Lovelace', 'B Lovelace', false],
    ['', 'Ada Lovelace', false],
    ['...', '...', false],
    // As many words on each side: each side's words among the other's, whichever comes first.
    ['h h', '0 H', false],
    ['Ada Ada', 'Ada Lovelace', false],
  ])('%p against %p: %p', (a, b, want) => {
    expect(namesMatch(a, b)).toBe(want);
    expect(namesMatch(b, a)).toBe(want);
  });
});

describe('properties', () => {
  test('reflexive and symmetric', () => {
    fc.assert(fc.property(fc.string(), fc.string(), (a, b) => namesMatch(a, b) === namesMatch(b, a) && (nameWords(a).length === 0 || namesMatch(a, a))));
  });

  test('case, diacritics, punctuation, order and suffixes change nothing', () => {
    const accents: Record<string, string> = { a: 'á', e: 'é', i: 'ï', o: 'ö', u: 'ú', n: 'ñ', c: 'ç' };
    fc.assert(
      fc.property(name, fc.nat(), fc.constantFrom(', ', ' - ', '. ', '  '), (words, seed, sep) => {
        const shown = words.map((w, i) => (i % 2 === seed % 2 ? w.toUpperCase() : [...w].map((ch) => accents[ch] ?? ch).join('')));
        const rotated = [...shown.slice(seed % shown.length), ...shown.slice(0, seed % shown.length)];
        return namesMatch(words.join(' '), `${rotated.join(sep)} Jr.`);
      }),
    );
  });

  test('an initial stands for a word it begins, a whole word must be there', () => {
    fc.assert(
      fc.property(name, word, (words, extra) => {
        const initials = words.map((w, i) => (i === 0 ? w[0]! : w)).join(' ');
        const withExtra = namesMatch(words.join(' '), `${words.join(' ')} ${extra}`);
        const missing = words.includes(extra) || words.some((w) => w.length === 1) ? true : !namesMatch(extra, words.join(' '));
        return namesMatch(initials, words.join(' ')) && withExtra && missing;
      }),
    );
  });

  test('never throws, and reads a bounded number of words', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 2000 }), fc.string({ maxLength: 2000 }), (a, b) => {
        namesMatch(a, b);
        return nameWords(a).length <= MAX_WORDS;
      }),
    );
  });
});
