import { t } from 'elysia';
import { Int } from '../platform/schema';
import { ERROR_CODES, type ErrorCode } from './error-codes';
import {
  Conflict,
  DomainError,
  Forbidden,
  InvalidInput,
  NotFound,
  RateLimited,
  Unauthenticated,
  Unavailable,
} from '../platform/errors';

// The HTTP edge of errors: a status and a code for every domain error (one table), the errors only HTTP
// has (HTTPS, 405, 413, 415), and the one envelope every error body is built from.

export class ApiError extends Error {
  /** The HTTP status, from the code's entry in ERROR_CODES. */
  readonly status: number;
  constructor(
    readonly errorCode: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly suggestion?: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = ERROR_CODES[errorCode].status;
    this.name = 'ApiError';
  }
}

export class HttpsRequired extends ApiError {
  constructor() {
    super('HTTPS_REQUIRED', 'Requests must use HTTPS', undefined, 'Call the https:// address of the service');
  }
}
export class MethodNotAllowed extends ApiError {
  constructor(allow: string[]) {
    super('METHOD_NOT_ALLOWED', `Method not allowed; this path accepts ${allow.join(', ')}`, undefined, undefined, {
      Allow: allow.join(', '),
    });
  }
}
export class PayloadTooLarge extends ApiError {
  constructor(limitBytes: number) {
    super('PAYLOAD_TOO_LARGE', `Request body is larger than ${limitBytes} bytes`, { limit_bytes: limitBytes });
  }
}
export class UriTooLong extends ApiError {
  constructor(limitBytes: number) {
    super('URI_TOO_LONG', `The request's path and query are longer than ${limitBytes} bytes`, { limit_bytes: limitBytes }, 'Send long lists in fewer values per request');
  }
}
export class HeadersTooLarge extends ApiError {
  constructor(limitBytes: number) {
    super('HEADERS_TOO_LARGE', `The request's headers are larger than ${limitBytes} bytes`, { limit_bytes: limitBytes });
  }
}
export class UnsupportedMediaType extends ApiError {
  constructor(expected: string) {
    super('UNSUPPORTED_MEDIA_TYPE', `Content-Type must be ${expected}`);
  }
}

type DomainClass = abstract new (...args: never[]) => DomainError;

/** Each domain error's code (its status comes with the code). Order matters only for subclasses (none today). */
const DOMAIN_ERRORS: [DomainClass, ErrorCode][] = [
  [InvalidInput, 'BAD_REQUEST'],
  [Unauthenticated, 'UNAUTHORIZED'],
  [Forbidden, 'FORBIDDEN'],
  [NotFound, 'RESOURCE_NOT_FOUND'],
  [Conflict, 'CONFLICT'],
  [RateLimited, 'RATE_LIMITED'],
  [Unavailable, 'SERVICE_UNAVAILABLE'],
];

/** A domain error as the API answers it; null for an error that is not one (an internal error). */
export function fromDomainError(e: unknown): ApiError | null {
  if (!(e instanceof DomainError)) return null;
  for (const [cls, code] of DOMAIN_ERRORS) {
    if (e instanceof cls) {
      const headers = e instanceof RateLimited ? { 'Retry-After': String(e.retryAfterSeconds) } : undefined;
      return new ApiError(code, e.message, e.details, e.suggestion, headers);
    }
  }
  return null;
}

export interface Envelope {
  status: 'error';
  status_code: number;
  error: {
    code: string;
    message: string;
    details?: Record<string, unknown>;
    timestamp: string;
    suggestion?: string;
  };
  documentation_url: string;
}

export function envelope(
  status: number,
  code: string,
  message: string,
  docsBase: string,
  now: number,
  details?: Record<string, unknown>,
  suggestion?: string,
): Envelope {
  const error: Envelope['error'] = { code, message, timestamp: new Date(now).toISOString() };
  if (details !== undefined) error.details = details;
  if (suggestion !== undefined) error.suggestion = suggestion;
  return {
    status: 'error',
    status_code: status,
    error,
    documentation_url: `${docsBase}/docs#${code.toLowerCase().replace(/_/g, '-')}`,
  };
}

/** The shared OpenAPI schema of every error body. */
export const ErrorEnvelope = t.Object(
  {
    status: t.Literal('error'),
    status_code: Int(),
    error: t.Object({
      code: t.String({ examples: ['BAD_REQUEST'] }),
      message: t.String(),
      details: t.Optional(t.Record(t.String(), t.Unknown())),
      timestamp: t.String({ format: 'date-time' }),
      suggestion: t.Optional(t.String()),
    }),
    documentation_url: t.String({ format: 'uri' }),
  },
  {
    title: 'ErrorEnvelope',
    examples: [
      {
        status: 'error',
        status_code: 404,
        error: { code: 'RESOURCE_NOT_FOUND', message: 'Batch not found', timestamp: '2026-11-21T10:00:00.000Z' },
        documentation_url: 'http://localhost:3000/docs#resource-not-found',
      },
    ],
  },
);

/**
 * Response map entries for documented error statuses, for a route's `response` option. They refer to the
 * shared `ErrorEnvelope` model, so the document has one schema for all errors.
 */
export function errors<S extends number>(...statuses: S[]): Record<S, 'ErrorEnvelope'> {
  const out = {} as Record<S, 'ErrorEnvelope'>;
  for (const s of statuses) out[s] = 'ErrorEnvelope';
  return out;
}

/** Error statuses written straight into an OpenAPI `responses` object, for routes that return a raw Response. */
export function errorResponses(described: Record<number, string>): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const [status, description] of Object.entries(described)) {
    out[Number(status)] = { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } } };
  }
  return out;
}
