import { Type, type TSchema } from '@sinclair/typebox';
import type { FieldProblem } from './errors';

// Request bodies described as field tables. From one table come both the TypeBox schema that the OpenAPI
// document shows and a reader that checks a submitted object's shape in one pass while it collects its
// values, naming the path and what was expected, never the value. Unknown fields are refused.

export type FieldSpec =
  | { kind: 'string'; max: number; min?: number; pattern?: RegExp; description?: string }
  | { kind: 'int'; min: number; max: number; description?: string }
  | { kind: 'number'; min: number; max: number; description?: string }
  | { kind: 'object'; fields: Record<string, FieldSpec>; required?: string[]; description?: string }
  | { kind: 'boolean'; description?: string }
  | { kind: 'enum'; values: readonly string[]; description?: string }
  | { kind: 'metadata'; description?: string }
  | { kind: 'identifier'; description?: string };

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

/** The TypeBox schema of a field table, for the OpenAPI document (the reader enforces the same). */
export function schemaOf(spec: FieldSpec, optional = false): TSchema {
  const opts = spec.description ? { description: spec.description } : {};
  let s: TSchema;
  switch (spec.kind) {
    case 'string':
      s = Type.String({ maxLength: spec.max, ...(spec.min ? { minLength: spec.min } : {}), ...(spec.pattern ? { pattern: spec.pattern.source } : {}), ...opts });
      break;
    case 'int':
      s = Type.Integer({ minimum: spec.min, maximum: spec.max, ...opts });
      break;
    case 'number':
      s = Type.Number({ minimum: spec.min, maximum: spec.max, ...opts });
      break;
    case 'boolean':
      s = Type.Boolean(opts);
      break;
    case 'enum':
      s = Type.Union(
        spec.values.map((v) => Type.Literal(v)),
        opts,
      );
      break;
    case 'metadata':
      s = Type.Record(
        Type.String({ pattern: METADATA_KEY.source }),
        Type.Union([Type.String({ maxLength: METADATA_VALUE_MAX }), Type.Number(), Type.Boolean()]),
        { maxProperties: METADATA_KEYS_MAX, ...opts },
      );
      break;
    case 'object':
      s = objectSchema(spec.fields, spec.required ?? [], opts);
      break;
    case 'identifier':
      s = identifierSchema(spec.description);
      break;
  }
  return optional ? Type.Optional(s) : s;
}

export function objectSchema(fields: Record<string, FieldSpec>, required: string[], opts: Record<string, unknown> = {}) {
  const props: Record<string, TSchema> = {};
  for (const [name, f] of Object.entries(fields)) props[name] = schemaOf(f, !required.includes(name));
  return Type.Object(props, { additionalProperties: false, ...opts });
}

const describe = (spec: FieldSpec): string => {
  switch (spec.kind) {
    case 'string':
      return spec.min ? `a string of ${spec.min} to ${spec.max} characters` : `a string of at most ${spec.max} characters`;
    case 'int':
      return `an integer from ${spec.min} to ${spec.max}`;
    case 'number':
      return `a number from ${spec.min} to ${spec.max}`;
    case 'object':
      return 'an object';
    case 'boolean':
      return 'true or false';
    case 'enum':
      return `one of ${spec.values.join(', ')}`;
    case 'metadata':
      return `an object of at most ${METADATA_KEYS_MAX} keys with string, number or boolean values`;
    case 'identifier':
      return `a string of 1 to ${IDENTIFIER_MAX} characters`;
  }
};

/**
 * Checks one value against its spec, appending problems (path and what was expected, never the value) and
 * returning the value when it fits. Objects are checked field by field, unknown fields refused. The path is
 * `parent/key`, built only when there is a problem to report (this runs for every field of 1000 authorizers).
 */
export function checkValue(spec: FieldSpec, value: unknown, parent: string, key: string, problems: FieldProblem[]): unknown {
  switch (spec.kind) {
    case 'string':
      if (typeof value !== 'string' || value.length > spec.max || value.length < (spec.min ?? 0)) {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${describe(spec)}` });
        return undefined;
      }
      if (spec.pattern && !spec.pattern.test(value)) {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${spec.description ?? `text matching ${spec.pattern.source}`}` });
        return undefined;
      }
      return value;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value) || value < spec.min || value > spec.max) {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${describe(spec)}` });
        return undefined;
      }
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value) || value < spec.min || value > spec.max) {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${describe(spec)}` });
        return undefined;
      }
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${describe(spec)}` });
        return undefined;
      }
      return value;
    case 'enum':
      if (typeof value !== 'string' || !spec.values.includes(value)) {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${describe(spec)}` });
        return undefined;
      }
      return value;
    case 'metadata': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${describe(spec)}` });
        return undefined;
      }
      let keys = 0;
      for (const k in value) if (++keys > METADATA_KEYS_MAX) break;
      if (keys > METADATA_KEYS_MAX) {
        problems.push({ path: `${parent}/${key}`, message: `Expected at most ${METADATA_KEYS_MAX} metadata keys` });
        return undefined;
      }
      for (const [k, v] of Object.entries(value)) {
        // A key that breaks the rule is not repeated back (it can be any length): the path stops at metadata.
        if (!METADATA_KEY.test(k)) problems.push({ path: `${parent}/${key}`, message: METADATA_KEY_MESSAGE });
        else if (!(typeof v === 'number' ? Number.isFinite(v) : typeof v === 'boolean' || (typeof v === 'string' && v.length <= METADATA_VALUE_MAX))) {
          problems.push({ path: `${parent}/${key}/${k}`, message: `Expected a string of at most ${METADATA_VALUE_MAX} characters, a number or a boolean` });
        }
      }
      return value;
    }
    case 'identifier':
      if (!isIdentifier(value)) {
        problems.push({ path: `${parent}/${key}`, message: typeof value === 'string' && value.length >= 1 && value.length <= IDENTIFIER_MAX ? IDENTIFIER_MESSAGE : `Expected ${describe(spec)}` });
        return undefined;
      }
      return value;
    case 'object':
      return checkObject(spec.fields, spec.required ?? [], value, `${parent}/${key}`, problems);
  }
}

/** An object of known fields: each checked once; unknown and missing required fields are problems. */
export function checkObject(
  fields: Record<string, FieldSpec>,
  required: string[],
  value: unknown,
  path: string,
  problems: FieldProblem[],
): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push({ path, message: 'Expected an object' });
    return undefined;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const spec = fields[key];
    if (!spec) {
      const name = shownKey(key);
      problems.push({ path: `${path}/${name}`, message: `Unknown field ${name}` });
      continue;
    }
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) continue;
    out[key] = checkValue(spec, v, path, key, problems);
  }
  for (const r of required) if (!(r in out)) problems.push({ path: `${path}/${r}`, message: `${r} is required` });
  return out;
}

/** A field name the caller sent, as a path shows it: cut at 64 characters, since an unknown one can be any length. */
export function shownKey(key: string): string {
  return key.length > 64 ? `${key.slice(0, 64)}…` : key;
}
