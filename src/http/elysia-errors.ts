import { ValidationError } from 'elysia';
import { ApiError, BadRequest, MethodNotAllowed, NotFound } from './errors';

// Elysia's own errors (validation, parse, no route) in the service's terms. Anything not mapped here is
// an internal error, answered by the app with a request id and nothing else.

function validationError(v: ValidationError, url: URL): BadRequest {
  let errors: { path: string; message: string }[];
  try {
    errors = v.all.map((e) => ({
      path: (e as { path?: string }).path || '/',
      message: (e as { summary?: string; message: string }).summary ?? e.message,
    }));
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
  return new BadRequest(`Invalid request ${where}: ${first?.path ?? ''} ${first?.message ?? ''}`.trim(), { errors });
}

export function fromElysiaError(
  code: unknown,
  error: unknown,
  request: Request,
  allowedMethods: (path: string) => string[],
): ApiError | null {
  if (error instanceof ApiError) return error;
  // Errors thrown by a route's body parser (415, 413, malformed JSON) arrive wrapped in a ParseError.
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (code === 'PARSE' && cause instanceof ApiError) return cause;
  if (error instanceof ValidationError || code === 'VALIDATION') return validationError(error as ValidationError, new URL(request.url));
  if (code === 'PARSE') return new BadRequest('Request body could not be parsed');
  if (code === 'NOT_FOUND') {
    const path = new URL(request.url).pathname;
    const allow = allowedMethods(path);
    if (allow.length > 0) return new MethodNotAllowed(allow);
    return new NotFound(`No route for ${request.method} ${path}`);
  }
  return null;
}
