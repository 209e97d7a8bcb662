import { Type, type TSchema } from '@sinclair/typebox';
import type { FieldProblem } from '../../platform/errors';

// The authorizer's fields, as one table. From it come both the TypeBox schema that the OpenAPI document
// shows and the one-pass reader (read.ts) that checks a submitted authorizer's shape while it collects its
// values. Balance requests, schedules and enrollments all read authorizers through it.

export type FieldSpec =
  | { kind: 'string'; max: number; min?: number; pattern?: RegExp; description?: string }
  | { kind: 'int'; min: number; max: number; description?: string }
  | { kind: 'number'; min: number; max: number; description?: string }
  | { kind: 'object'; fields: Record<string, FieldSpec>; required?: string[]; description?: string }
  | { kind: 'metadata'; description?: string };

export const METADATA_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
export const METADATA_VALUE_MAX = 1000;

export const DATE_OF_BIRTH: FieldSpec = {
  kind: 'object',
  required: ['day', 'month', 'year'],
  fields: {
    day: { kind: 'int', min: 1, max: 31 },
    month: { kind: 'int', min: 1, max: 12 },
    year: { kind: 'int', min: 1900, max: 2100 },
  },
};

export const ADDRESS: FieldSpec = {
  kind: 'object',
  fields: {
    street_address_line1: { kind: 'string', max: 255 },
    street_address_line2: { kind: 'string', max: 255 },
    city: { kind: 'string', max: 255 },
    state: { kind: 'string', max: 255 },
    zip_code: { kind: 'string', max: 10, description: '5 digits, or ZIP+4; leading zeros significant' },
    country: { kind: 'string', max: 255 },
  },
};

/** The identity and payment-information fields every authorizer may carry. */
export const AUTHORIZER_FIELDS: Record<string, FieldSpec> = {
  authorizer_unique_id: { kind: 'string', min: 1, max: 255, description: "Caller's own stable identifier of the borrower" },
  first_name: { kind: 'string', max: 255 },
  last_name: { kind: 'string', max: 255 },
  phone_number: { kind: 'string', max: 32, description: 'US phone number; exported as E.164' },
  date_of_birth: DATE_OF_BIRTH,
  address: ADDRESS,
  zip_code: { kind: 'string', max: 10, description: 'Accepted at the top level too (CSV shape)' },
  ssn: { kind: 'string', max: 11, description: '9 digits, dashes allowed; leading zeros significant' },
  ein: { kind: 'string', max: 11, description: '9 digits (10 accepted), dash allowed' },
  account_number: { kind: 'string', max: 34, description: 'Bank account number; not validated for length or format' },
  routing_number: { kind: 'string', max: 9, description: 'ABA routing number, 9 digits; leading zeros significant' },
  debit_card_number: { kind: 'string', max: 23, description: 'Debit card number (approved lenders only)' },
  cvv: { kind: 'string', max: 4 },
  expiration_month: { kind: 'int', min: 1, max: 12 },
  expiration_year: { kind: 'int', min: 2000, max: 2100 },
  metadata: { kind: 'metadata', description: 'Caller data kept with the result; each key becomes a meta_<key> column of the CSV export' },
};

export const THRESHOLD_FIELD: FieldSpec = {
  kind: 'number',
  min: 0,
  max: 1e12,
  description: 'Dollars (at most two decimals); a balance that meets or exceeds it sends an alert',
};

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
    case 'metadata':
      s = Type.Record(
        Type.String({ pattern: METADATA_KEY.source }),
        Type.Union([Type.String({ maxLength: METADATA_VALUE_MAX }), Type.Number(), Type.Boolean()]),
        opts,
      );
      break;
    case 'object':
      s = objectSchema(spec.fields, spec.required ?? [], opts);
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
    case 'metadata':
      return 'an object of string, number or boolean values';
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
    case 'metadata': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        problems.push({ path: `${parent}/${key}`, message: `Expected ${describe(spec)}` });
        return undefined;
      }
      for (const [k, v] of Object.entries(value)) {
        if (!METADATA_KEY.test(k)) problems.push({ path: `${parent}/${key}/${k}`, message: 'Metadata keys are 1 to 64 letters, digits, dots, dashes or underscores' });
        else if (!(typeof v === 'number' ? Number.isFinite(v) : typeof v === 'boolean' || (typeof v === 'string' && v.length <= METADATA_VALUE_MAX))) {
          problems.push({ path: `${parent}/${key}/${k}`, message: `Expected a string of at most ${METADATA_VALUE_MAX} characters, a number or a boolean` });
        }
      }
      return value;
    }
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
      problems.push({ path: `${path}/${key}`, message: `Unknown field ${key}` });
      continue;
    }
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) continue;
    out[key] = checkValue(spec, v, path, key, problems);
  }
  for (const r of required) if (!(r in out)) problems.push({ path: `${path}/${r}`, message: `${r} is required` });
  return out;
}
