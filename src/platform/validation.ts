import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { InvalidInput, type FieldProblem } from './errors';
import { IDENTIFIER_MESSAGE, IDENTIFIER_PATTERN, METADATA_KEY, METADATA_KEY_MESSAGE, shownKey, LINES_PATTERN, TEXT_PATTERN, textExpected } from './fields';

// A TypeBox schema as the one check of a request's shape: compiled once, and its failures stated in the
// service's words (the path and what was expected, never the value sent; a value may be personal data).

type Schema = {
  type?: string | string[];
  anyOf?: Schema[];
  const?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  format?: string;
  pattern?: string;
  patternProperties?: Record<string, unknown>;
  description?: string;
};

/**
 * What a schema expects, in words a caller can act on: "one of ACTIVE, COMPLETED, DISABLED", "an integer from
 * 1 to 100", "a string of at most 255 characters". Built from the schema alone: a message never carries the
 * value that was sent.
 */
export function expected(s: Schema | undefined): string {
  if (!s) return 'a valid value';
  if (s.anyOf) {
    const literals = s.anyOf.filter((b) => b.const !== undefined).map((b) => String(b.const));
    if (literals.length === s.anyOf.length) return `one of ${literals.join(', ')}`;
    const integer = s.anyOf.find((b) => b.type === 'integer' || b.type === 'number');
    if (integer && s.anyOf.every((b) => b.type === 'integer' || b.type === 'number' || b.type === 'string')) {
      // A query parameter's numeric-string branch beside its integer.
      if (s.anyOf.some((b) => b.type === 'string' && (b.format === 'integer' || b.format === 'numeric'))) {
        return expected({ ...integer, minimum: integer.minimum ?? s.minimum, maximum: integer.maximum ?? s.maximum });
      }
    }
    return s.anyOf.map((b) => expected(b)).filter((x, i, all) => all.indexOf(x) === i).join(' or ');
  }
  if (s.enum) return `one of ${s.enum.map(String).join(', ')}`;
  if (s.const !== undefined) return `exactly ${String(s.const)}`;
  const type = Array.isArray(s.type) ? s.type.filter((t) => t !== 'null')[0] : s.type;
  const range = (unit: string, min?: number, max?: number) =>
    min !== undefined && max !== undefined ? ` of ${min} to ${max} ${unit}` : max !== undefined ? ` of at most ${max} ${unit}` : min !== undefined ? ` of at least ${min} ${unit}` : '';
  switch (type) {
    case 'integer':
    case 'number': {
      const what = type === 'integer' ? 'an integer' : 'a number';
      if (s.minimum !== undefined && s.maximum !== undefined) return `${what} from ${s.minimum} to ${s.maximum}`;
      if (s.minimum !== undefined) return `${what} of at least ${s.minimum}`;
      if (s.maximum !== undefined) return `${what} of at most ${s.maximum}`;
      return what;
    }
    case 'string':
      if (s.format === 'binary') return 'a file';
      if (s.pattern === TEXT_PATTERN || s.pattern === LINES_PATTERN) return textExpected(s.minLength, s.maxLength, s.pattern === LINES_PATTERN);
      return `a string${range('characters', s.minLength, s.maxLength)}${s.format ? ` (${s.format})` : s.pattern ? ' in the documented format' : ''}`;
    case 'array':
      return `an array${range('items', s.minItems, s.maxItems)}`;
    case 'object':
      return 'an object';
    case 'boolean':
      return 'true or false';
    default:
      return 'a valid value';
  }
}

/** At most this many problems are listed for one request. */
const MAX_PROBLEMS = 50;

const parentOf = (path: string) => path.slice(0, path.lastIndexOf('/')) || '/';

/** One schema failure in words, and where: unknown fields and metadata keys are named without their text in full. */
function problemOf(err: { type?: number; path?: string; schema?: Schema; message?: string }): FieldProblem {
  const path = err.path || '/';
  const s = err.schema;
  // An identifier's length and form are one rule, stated once.
  if (s?.pattern === IDENTIFIER_PATTERN) return { path, message: IDENTIFIER_MESSAGE };
  // Free text: its lengths and its characters are one rule too.
  if ((s?.pattern === TEXT_PATTERN || s?.pattern === LINES_PATTERN) && err.type !== ValueErrorType.ObjectRequiredProperty) return { path, message: `Expected ${textExpected(s.minLength, s.maxLength, s.pattern === LINES_PATTERN)}` };
  switch (err.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return { path, message: `${path.split('/').pop()} is required` };
    case ValueErrorType.ObjectAdditionalProperties: {
      // A metadata key that breaks the rule is not repeated back (it can be any length): the path stops at metadata.
      if (s?.patternProperties) {
        const metadata = Object.keys(s.patternProperties)[0] === METADATA_KEY.source;
        return { path: parentOf(path), message: metadata ? METADATA_KEY_MESSAGE : 'Expected keys in the documented format' };
      }
      const name = shownKey(path.slice(path.lastIndexOf('/') + 1).replaceAll('~1', '/').replaceAll('~0', '~'));
      return { path: `${parentOf(path) === '/' ? '' : parentOf(path)}/${name}`, message: `Unknown field ${name}` };
    }
    case ValueErrorType.ObjectMaxProperties: {
      const metadata = s?.patternProperties && Object.keys(s.patternProperties)[0] === METADATA_KEY.source;
      return { path, message: `Expected at most ${s?.maxProperties} ${metadata ? 'metadata keys' : 'fields'}` };
    }
    case ValueErrorType.StringPattern:
      return { path, message: s?.description ? `Expected ${s.description}` : `Expected ${expected(s)}` };
    case ValueErrorType.Array:
    case ValueErrorType.ArrayMinItems:
    case ValueErrorType.ArrayMaxItems: {
      // "an array of 1 to 1000 borrowers": the list named by its field.
      const name = path.slice(path.lastIndexOf('/') + 1);
      const what = expected(s);
      return { path, message: `Expected ${/^[a-z_]+s$/.test(name) ? what.replace(/ items$/, ` ${name}`) : what}` };
    }
    case ValueErrorType.Never:
      return { path, message: s?.description ?? 'This field is not accepted' };
    default:
      return { path, message: `Expected ${expected(s)}` };
  }
}

/** TypeBox's errors as the service states them; a missing field is reported once, not also for its type. */
export function schemaProblems(found: Iterable<unknown>): FieldProblem[] {
  const out: FieldProblem[] = [];
  const missing = new Set<string>();
  for (const e of found) {
    const err = e as { type?: number; path?: string; schema?: Schema; message?: string };
    const p = problemOf(err);
    if (missing.has(p.path)) continue;
    if (err.type === ValueErrorType.ObjectRequiredProperty) missing.add(p.path);
    if (!out.some((x) => x.path === p.path && x.message === p.message)) out.push(p);
    if (out.length >= MAX_PROBLEMS) break;
  }
  return out.length > 0 ? out : [{ path: '/', message: 'Invalid request' }];
}

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checkerOf<T extends TSchema>(schema: T): TypeCheck<T> {
  let c = compiled.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  return c as TypeCheck<T>;
}

/** The problems of a value against a schema (empty when it fits), paths under `prefix`. */
export function problemsOf(schema: TSchema, value: unknown, prefix = ''): FieldProblem[] {
  const check = checkerOf(schema);
  if (check.Check(value)) return [];
  const problems = schemaProblems(check.Errors(value));
  return prefix ? problems.map((p) => ({ ...p, path: p.path === '/' ? prefix : prefix + p.path })) : problems;
}

/** Whether a value fits a schema, as a type guard. */
export function fits<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return checkerOf(schema).Check(value);
}

/** The value as its schema's type, or a 400 listing every problem found (path and what was expected). */
export function validated<T extends TSchema>(schema: T, value: unknown): Static<T> {
  if (!fits(schema, value)) InvalidInput.refuseBody(problemsOf(schema, value));
  return value as Static<T>;
}
