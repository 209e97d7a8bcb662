import { Type, type IntegerOptions, type TUnsafe } from '@sinclair/typebox';

/**
 * A plain integer schema for JSON bodies and responses. Elysia's `t.Integer` also coerces numeric strings,
 * which makes every request body go through a decode pass (costly on a 1000-authorizer body) and quietly
 * accepts "12" for 12. Query parameters, which arrive as text, keep `t.Integer`.
 */
export const Int = (options?: IntegerOptions) => Type.Integer(options);

/**
 * A string schema that takes exactly these values, from an `as const` list. A union of literals, not
 * `t.UnionEnum`: Elysia fills a missing optional UnionEnum query parameter with its first value.
 */
export const OneOf = <const T extends readonly [string, ...string[]]>(values: T, options?: { description?: string }) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  ) as unknown as TUnsafe<T[number]>;
