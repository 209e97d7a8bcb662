import { Type, type IntegerOptions } from '@sinclair/typebox';

/**
 * A plain integer schema for JSON bodies and responses. Elysia's `t.Integer` also coerces numeric strings,
 * which makes every request body go through a decode pass (costly on a 1000-authorizer body) and quietly
 * accepts "12" for 12. Query parameters, which arrive as text, keep `t.Integer`.
 */
export const Int = (options?: IntegerOptions) => Type.Integer(options);
