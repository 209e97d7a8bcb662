import { InvalidInput } from '../platform/errors';
import { PayloadTooLarge, UnsupportedMediaType } from './errors';

// Route-level body parsers. Each checks the content type (415) and the size (413) before reading, so a
// route's limit holds whatever Bun's server-wide ceiling is.

export const JSON_LIMIT_BYTES = 2 * 1024 * 1024;
export const UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;
/** Multipart framing around a 10 MB file. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;
/** Server-wide ceiling; per-route limits below it answer with the envelope. */
export const SERVER_MAX_BODY_BYTES = 16 * 1024 * 1024;

const rawBodyHashes = new WeakMap<Request, string>();

/** SHA-256 of the raw JSON body, recorded by `jsonBody({ hash: true })` (the idempotency cache key). */
export const rawBodyHash = (request: Request): string | undefined => rawBodyHashes.get(request);

function checkLength(request: Request, limit: number): void {
  const len = Number(request.headers.get('content-length') ?? '0');
  if (len > limit) throw new PayloadTooLarge(limit);
}

/** Marks a parser with the media type it reads, for the OpenAPI document (http/openapi-document.ts). */
const reads = <F extends (...args: never[]) => unknown>(mediaType: string, fn: F): F & { mediaType: string } => Object.assign(fn, { mediaType });

export function jsonBody(opts: { limit?: number; hash?: boolean } = {}) {
  const limit = opts.limit ?? JSON_LIMIT_BYTES;
  return reads('application/json', async ({ request }: { request: Request }) => {
    const type = request.headers.get('content-type') ?? '';
    if (!/^application\/(.+\+)?json\b/i.test(type)) throw new UnsupportedMediaType('application/json');
    checkLength(request, limit);
    const text = await request.text();
    if (text.length > limit) throw new PayloadTooLarge(limit);
    if (opts.hash) rawBodyHashes.set(request, new Bun.CryptoHasher('sha256').update(text).digest('hex'));
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new InvalidInput('Request body is not valid JSON', undefined, 'Send a JSON document');
    }
  });
}

export function multipartBody(limit = UPLOAD_LIMIT_BYTES + MULTIPART_OVERHEAD_BYTES) {
  return reads('multipart/form-data', async ({ request }: { request: Request }) => {
    const type = request.headers.get('content-type') ?? '';
    if (!/^multipart\/form-data\b/i.test(type)) throw new UnsupportedMediaType('multipart/form-data');
    checkLength(request, limit);
    let form: Awaited<ReturnType<Request['formData']>>;
    try {
      form = await request.formData();
    } catch {
      throw new InvalidInput('Request body is not valid multipart/form-data');
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of form.entries()) out[k] = v;
    return out;
  });
}

/**
 * A request body for the OpenAPI document, for routes whose body is read by the service rather than by a
 * route schema (the document generator leaves such bodies empty). Spread into the route's `detail`.
 */
export function documentedBody(schema: object, mediaType: 'application/json' | 'multipart/form-data') {
  return { requestBody: { required: true, content: { [mediaType]: { schema: schema as Record<string, unknown> } } } };
}
