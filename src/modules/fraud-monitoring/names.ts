// The name match the fraud rules use (shared_account: borrowers on one account with different names), written
// once and property-tested (tests/modules/fraud-monitoring/names.test.ts). Two names match when, once each is
// normalized (Unicode compatibility form, diacritics, case and punctuation dropped, generational suffixes left
// out), every word of the one with fewer words is found among the other's (of each, when they have as many),
// an initial matching any word that starts with its letter: "Ada Lovelace" matches "LOVELACE, Ada", "Ada K.
// Lovelace" and "A Lovelace"; it does not match "Ada Byron" or "Charles Babbage". A name with no word at all
// matches nothing: absence is not evidence either way. Linear in the names' length (each is at most MAX_NAME_CHARS long, at most MAX_WORDS words).

/** At most this many characters of a name are read, and this many of its words. */
export const MAX_NAME_CHARS = 200;
export const MAX_WORDS = 12;

/** Words that say nothing of who holds an account. */
const SUFFIXES: ReadonlySet<string> = new Set(['jr', 'sr', 'ii', 'iii', 'iv', 'mr', 'mrs', 'ms', 'dr']);

/** A name's words: compatibility form, no diacritics, lower case, letters and digits only, suffixes out. */
export function nameWords(name: string | null | undefined): string[] {
  if (!name) return [];
  return name
    .slice(0, MAX_NAME_CHARS)
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .split(' ')
    .filter((w) => w.length > 0 && !SUFFIXES.has(w))
    .slice(0, MAX_WORDS);
}

const wordMatches = (w: string, other: readonly string[]): boolean =>
  w.length === 1 ? other.some((o) => o.startsWith(w)) : other.some((o) => o === w || (o.length === 1 && w.startsWith(o)));

/** Whether two names are the same person's by the rule above. */
export function namesMatch(a: string | null | undefined, b: string | null | undefined): boolean {
  const wa = nameWords(a);
  const wb = nameWords(b);
  if (wa.length === 0 || wb.length === 0) return false;
  // With as many words on each side, each side's words are found among the other's: the match stays the same
  // whichever name comes first ("H H" does not match "0 H", in either order).
  if (wa.length === wb.length) return wa.every((w) => wordMatches(w, wb)) && wb.every((w) => wordMatches(w, wa));
  const [few, many] = wa.length < wb.length ? [wa, wb] : [wb, wa];
  return few.every((w) => wordMatches(w, many));
}

/** A borrower's full name as the rules compare it. */
export const fullName = (first: string | null | undefined, last: string | null | undefined): string => [first, last].filter(Boolean).join(' ');
