import { SERVER_MAX_BODY_BYTES } from './body';
import { ApiError, HeadersTooLarge, PayloadTooLarge, UriTooLong } from './errors';

// The sizes of a request's head and the server-wide body ceiling, refused at the gate with the envelope and
// a request id. Bun refuses past its own limits with a bare status and no body, so its limits are set
// above these (SERVER_HEADER_CEILING_BYTES in index.ts, SERVER_BODY_CEILING_BYTES in app.ts): everything
// between the two answers in the service's terms.

/** Path and query together. */
export const MAX_URL_BYTES = 8 * 1024;
/** Every header's name and value together. */
export const MAX_HEADER_BYTES = 32 * 1024;
/** Bun's limit on the request line and headers (node:http maxHeaderSize; its default is 16 KB). */
export const SERVER_HEADER_CEILING_BYTES = 128 * 1024;
/** Bun's limit on a body: a little above the service's ceiling, which the gate checks. */
export const SERVER_BODY_CEILING_BYTES = SERVER_MAX_BODY_BYTES + 1024 * 1024;

/** The refusal for a request whose URL, headers or declared body are too large; null when it fits. */
export function oversized(request: Request, url: URL): ApiError | null {
  if (url.pathname.length + url.search.length > MAX_URL_BYTES) return new UriTooLong(MAX_URL_BYTES);
  let headerBytes = 0;
  request.headers.forEach((value, name) => {
    headerBytes += name.length + value.length + 4;
  });
  if (headerBytes > MAX_HEADER_BYTES) return new HeadersTooLarge(MAX_HEADER_BYTES);
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > SERVER_MAX_BODY_BYTES) return new PayloadTooLarge(SERVER_MAX_BODY_BYTES);
  return null;
}
