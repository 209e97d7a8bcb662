// Numbers read back from a raw statement, the same on both engines. PostgreSQL's driver gives int8 (times,
// amounts, row ids) as text, SQLite gives numbers, or bigints when a statement reads with safeIntegers: each
// becomes a number, exact below 2^53, which every time and every single amount the service stores is.

/** A value of a NOT NULL integer column, as a number. */
export const num = (v: unknown): number => Number(v);

/** A value of a nullable integer column, as a number or null. */
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
