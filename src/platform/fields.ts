import { Type } from '@sinclair/typebox';

// Rules of request fields shared by every transport (JSON bodies, CSV rows, query and path parameters):
// metadata's bounds and an identifier's form. The schemas that carry them live with their features; the one
// check of a value against its schema, with the service's messages, is platform/validation.ts.

export const METADATA_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
export const METADATA_KEY_MESSAGE = 'Expected metadata keys of 1 to 64 letters, digits, dots, dashes or underscores';
export const METADATA_KEY_MAX = 64;
export const METADATA_VALUE_MAX = 1000;
/** Keys of one authorizer's metadata: each becomes a column of the CSV export. */
export const METADATA_KEYS_MAX = 50;

/**
 * A caller's identifier (authorizer_unique_id): well-formed Unicode without control characters. A lone UTF-16
 * surrogate cannot be stored as sent (it would come back as U+FFFD, and the borrower could then not be named
 * again), and a control character breaks CSV exports and logs. Written so that it holds with or without a
 * regular expression's `u` flag: a surrogate pair matches as two code units or as one code point.
 */
const IDENTIFIER = /^(?:[^\u0000-\u001f\u007f-\u009f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;
export const IDENTIFIER_PATTERN = IDENTIFIER.source;
export const IDENTIFIER_MAX = 255;
export const IDENTIFIER_MESSAGE = `Expected an identifier of 1 to ${IDENTIFIER_MAX} characters of well-formed Unicode text without control characters`;

/** Whether a value is a well-formed identifier: a string of 1 to 255 characters, well-formed, no control characters. */
export function isIdentifier(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= IDENTIFIER_MAX && IDENTIFIER.test(value);
}

/** The schema of an identifier (body fields, query and path parameters alike). */
export const identifierSchema = (description?: string) =>
  Type.String({ minLength: 1, maxLength: IDENTIFIER_MAX, pattern: IDENTIFIER_PATTERN, ...(description ? { description } : {}) });

/**
 * Free text (a label, a name, a description, a metadata value): the identifier's character rule (well-formed
 * Unicode, no C0 or C1 control character) at the field's own length. Stored as sent, a lone surrogate would
 * come back as U+FFFD, and a control character (NUL, ESC, CR LF) would reach pages, exports and logs. The
 * same class as IDENTIFIER written with \x escapes: a distinct source, so a failure is stated as text.
 */
const TEXT = /^(?:[^\x00-\x1f\x7f-\x9f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;
export const TEXT_PATTERN = TEXT.source;
/** The same for a field that says it may hold several lines (a metadata value): tab, LF and CR allowed. */
const LINES = /^(?:[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;
export const LINES_PATTERN = LINES.source;

/** What the text rule expects, with the field's lengths. */
export const textExpected = (minLength: number | undefined, maxLength: number | undefined, lines = false): string =>
  `text of ${minLength ? `${minLength} to ` : 'at most '}${maxLength} characters of well-formed Unicode without control characters${lines ? ' other than tabs and line breaks' : ''}`;

/** Whether a value is text within `maxLength` (checked first, so a long value costs no more than its length). */
export function isText(value: unknown, maxLength: number, minLength = 0): value is string {
  return typeof value === 'string' && value.length >= minLength && value.length <= maxLength && TEXT.test(value);
}

/** The schema of a free-text field (JSON bodies, forms and CSV rows alike); `lines`: tabs and line breaks allowed. */
export const textSchema = (opts: { maxLength: number; minLength?: number; description?: string; lines?: boolean }) => {
  const { lines, ...rest } = opts;
  return Type.String({ ...rest, pattern: lines ? LINES_PATTERN : TEXT_PATTERN });
};

/**
 * A credential (a processor key, a Plaid secret) is printable ASCII without spaces, as every provider issues
 * them: no control character (NUL, ESC), no format character (a right-to-left override) and no lone surrogate,
 * which would reach the provider's request and come back in a `…_last4`.
 */
export const CREDENTIAL_PATTERN = '^[\\x21-\\x7e]+$';

/** A C0 or C1 control character (NUL, ESC, DEL…), which no identifier, filter or path parameter may hold. */
const CONTROL = /[\x00-\x1f\x7f-\x9f]/;

/** The first parameter (path or query, a value or each of a list) holding a control character, by name; null when none does. */
export function controlCharacterIn(params: Record<string, unknown> | undefined): string | null {
  for (const [name, value] of Object.entries(params ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v === 'string' && CONTROL.test(v))) return shownKey(name);
  }
  return null;
}

/** A field name the caller sent, as a path shows it: cut at 64 characters, since an unknown one can be any length. */
export function shownKey(key: string): string {
  return key.length > 64 ? `${key.slice(0, 64)}…` : key;
}
