// Every error code the API answers with, once: its HTTP status and what it means (the docs page has a
// section per code, which an error's documentation_url opens). The envelope, the domain-error table and the
// docs all name codes through this, so a code cannot be misspelt or left undocumented.

export const ERROR_CODES = {
  BAD_REQUEST: { status: 400, meaning: 'The request breaks a rule: details.errors lists each problem with its path and what was expected. Correct the request and send it again.' },
  UNAUTHORIZED: { status: 401, meaning: 'No API key, or one that is not valid or was revoked. Send Authorization: Bearer <API_KEY>; keys come from the operator.' },
  FORBIDDEN: { status: 403, meaning: 'The key is valid but may not have this (an export of another lender’s batch, metrics from outside).' },
  HTTPS_REQUIRED: { status: 403, meaning: 'Plain HTTP from a remote address. Call the https:// address of the service.' },
  RESOURCE_NOT_FOUND: { status: 404, meaning: 'No such object for this lender (another lender’s object is not found either), or no such path.' },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'The path exists but not with this method; the Allow header lists the methods it takes.' },
  CONFLICT: { status: 409, meaning: 'The request clashes with what is stored (a name in use, a second default key); the message says with what.' },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'The body is over the route’s limit (details.limit_bytes).' },
  URI_TOO_LONG: { status: 414, meaning: 'The path and query are longer than 8 KB (details.limit_bytes). Send long lists of ids in several requests.' },
  HEADERS_TOO_LARGE: { status: 431, meaning: 'The request headers are larger than 32 KB together (details.limit_bytes).' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'The Content-Type is not the one the route reads (application/json or multipart/form-data).' },
  RATE_LIMITED: { status: 429, meaning: 'Too many requests: wait the seconds in Retry-After, then send again.' },
  INTERNAL_ERROR: { status: 500, meaning: 'A fault of the service. Nothing about it is shown; quote the request id (X-Request-Id) when reporting it.' },
  SERVICE_UNAVAILABLE: { status: 503, meaning: 'Something the service depends on (its database, a payment processor) cannot be reached now. Try again later: after Retry-After seconds when the answer gives it.' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
