import { ValidationError } from 'elysia';
import { InvalidInput } from '../platform/errors';
import { ApiError, fromDomainError, MethodNotAllowed } from './errors';

// Elysia's own errors (validation, parse, no route) in the service's terms. Anything not mapped here is
// an internal error, answered by the app with a request id and nothing else.

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
  format?: string;
  pattern?: string;
  description?: string;
};

/**
 * What a schema expects, in words a caller can act on: "one of ACTIVE, COMPLETED, DISABLED", "an integer from
 * 1 to 100", "a string of at most 255 characters". Built from the schema alone: a message never carries the
 * value that was sent (it may be personal data).
 */
export function expected(s: Schema | undefined): string {
  if (!s) return 'a valid value';
  if (s.anyOf) {
    const literals = s.anyOf.filter((b) => b.const !== undefined).map((b) => String(b.const));
    if (literals.length === s.anyOf.length) return `one of ${literals.join(', ')}`;
    const integer = s.anyOf.find((b) => b.type === 'integer' || b.type === 'number');
    if (integer) return expected({ ...integer, minimum: integer.minimum ?? s.minimum, maximum: integer.maximum ?? s.maximum });
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

/**
 * TypeBox's errors as the service states them: the path and what the schema expects, never the value.
 * TypeBox's own messages are used only to tell a missing property, and carry no value.
 */
export function schemaProblems(found: Iterable<unknown>): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const e of found) {
    const err = e as { path?: string; schema?: Schema; message?: string };
    const path = err.path || '/';
    const missing = typeof err.message === 'string' && /^Expected required property/.test(err.message);
    const message = missing ? `${path.split('/').pop()} is required` : `Expected ${expected(err.schema)}`;
    if (!out.some((p) => p.path === path && p.message === message)) out.push({ path, message });
    if (out.length >= MAX_PROBLEMS) break;
  }
  return out.length > 0 ? out : [{ path: '/', message: 'Invalid request' }];
}

function validationError(v: ValidationError, url: URL): ApiError {
  let errors: { path: string; message: string }[];
  try {
    errors = schemaProblems(v.all);
  } catch {
    errors = [{ path: '/', message: 'Invalid request' }];
  }
  // Query values are coerced one by one ('property'); the error does not name the parameter, so find it by
  // the value that failed.
  if (v.type === 'property') {
    const found = String((v as { value?: unknown }).value);
    const name = [...url.searchParams].find(([, val]) => val === found)?.[0];
    if (name) errors = errors.map((e) => ({ ...e, path: `/${name}` }));
  }
  const where =
    v.type === 'query' || v.type === 'property' ? 'query' : v.type === 'params' ? 'path' : v.type === 'headers' ? 'header' : 'body';
  const first = errors[0];
  return fromDomainError(new InvalidInput(`Invalid request ${where}: ${first?.path ?? ''} ${first?.message ?? ''}`.trim(), { errors }))!;
}

export function fromElysiaError(
  code: unknown,
  error: unknown,
  request: Request,
  allowedMethods: (path: string) => string[],
): ApiError | null {
  if (error instanceof ApiError) return error;
  const domain = fromDomainError(error);
  if (domain) return domain;
  // Errors thrown by a route's body parser (415, 413, malformed JSON) arrive wrapped in a ParseError.
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (code === 'PARSE' && cause instanceof ApiError) return cause;
  if (code === 'PARSE' && fromDomainError(cause)) return fromDomainError(cause);
  if (error instanceof ValidationError || code === 'VALIDATION') return validationError(error as ValidationError, new URL(request.url));
  if (code === 'PARSE') return fromDomainError(new InvalidInput('Request body could not be parsed'));
  if (code === 'NOT_FOUND') {
    const path = new URL(request.url).pathname;
    const allow = allowedMethods(path);
    if (allow.length > 0) return new MethodNotAllowed(allow);
    return new ApiError(404, 'RESOURCE_NOT_FOUND', `No route for ${request.method} ${path}`);
  }
  return null;
}
