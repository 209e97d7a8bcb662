import { ValidationError } from 'elysia';
import { InvalidInput } from '../platform/errors';
import { schemaProblems } from '../platform/validation';
import { ApiError, fromDomainError, MethodNotAllowed } from './errors';

// Elysia's own errors (validation, parse, no route) in the service's terms. Anything not mapped here is
// an internal error, answered by the app with a request id and nothing else.

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
    return new ApiError('RESOURCE_NOT_FOUND', `No route for ${request.method} ${path}`);
  }
  return null;
}
