import { Kind, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { InvalidInput } from '../platform/errors';
import { problemsOf } from '../platform/validation';
import { PayloadTooLarge, UnsupportedMediaType } from './errors';

// Route-level body parsers. Each checks the content type (415) and the declared size (413) before reading,
// and counts the bytes as they arrive, so a route's limit holds for a chunked body too (refused as soon as
// it passes the limit, not after it has all been buffered), whatever Bun's server-wide ceiling is.

export const JSON_LIMIT_BYTES = 2 * 1024 * 1024;
export const UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;
/** Multipart framing around a 10 MB file. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;
/** Server-wide ceiling; per-route limits below it answer with the envelope. */
export const SERVER_MAX_BODY_BYTES = 16 * 1024 * 1024;
/**
 * Nesting of a JSON body, objects and arrays together. The deepest body the API documents has 4 levels;
 * a deeper one is refused before anything walks it recursively (validation, error messages).
 */
export const JSON_MAX_DEPTH = 32;

function checkLength(request: Request, limit: number): void {
  const len = Number(request.headers.get('content-length') ?? '0');
  if (len > limit) throw new PayloadTooLarge(limit);
}

/** The body's bytes, counted as they arrive: past `limit` the read stops and the request is refused. */
async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  checkLength(request, limit);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      reader.cancel().catch(() => {});
      throw new PayloadTooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** Whether a parsed JSON value nests deeper than `max`: an explicit stack, so the check itself cannot overflow. */
export function nestsDeeperThan(root: unknown, max: number): boolean {
  if (typeof root !== 'object' || root === null) return false;
  const values: unknown[] = [root];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as Record<string, unknown> | unknown[];
    const d = depths.pop()!;
    if (d > max) return true;
    if (Array.isArray(v)) {
      for (const x of v) if (typeof x === 'object' && x !== null) (values.push(x), depths.push(d + 1));
    } else {
      for (const k in v) {
        const x = v[k];
        if (typeof x === 'object' && x !== null) (values.push(x), depths.push(d + 1));
      }
    }
  }
  return false;
}

const tooDeep = () =>
  InvalidInput.field('/', `The JSON body nests deeper than ${JSON_MAX_DEPTH} levels`, 'Send a flatter document: no field of the API nests that deep');

/** Marks a parser with the media type it reads, for the OpenAPI document (http/openapi-document.ts). */
const reads = <F extends (...args: never[]) => unknown>(mediaType: string, fn: F): F & { mediaType: string } => Object.assign(fn, { mediaType });

/**
 * A JSON document's bytes as a value: valid UTF-8 JSON within the nesting depth and, with `schema`, fitting
 * it (a 400 listing every problem, with the service's messages). Synchronous and free of the request, so a
 * worker thread runs it on bytes handed to it.
 */
export function readJson(bytes: Uint8Array, schema?: TSchema): unknown {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    // A document too deep for the parser's own stack is the depth rule, not a syntax error.
    if (e instanceof RangeError) throw tooDeep();
    throw new InvalidInput('Request body is not valid JSON', undefined, 'Send a JSON document');
  }
  if (nestsDeeperThan(value, JSON_MAX_DEPTH)) throw tooDeep();
  if (schema) InvalidInput.refuseBody(problemsOf(schema, value));
  return value;
}

/** The content type and the size of a JSON body checked, and its bytes read (415, 413). */
async function jsonBytes(request: Request, limit: number): Promise<Uint8Array> {
  const type = request.headers.get('content-type') ?? '';
  if (!/^application\/(.+\+)?json\b/i.test(type)) throw new UnsupportedMediaType('application/json');
  return readLimited(request, limit);
}

/**
 * A JSON body: content type, size (declared and counted), valid JSON, nesting depth, and, with `schema`,
 * the route's schema, checked here with the service's own messages (path and what was expected, never the
 * value). A route whose body Elysia would validate passes the same schema here, so Elysia's validation
 * error, which builds its message from the value sent and fails on values such as {"toString": 1}, is
 * never reached by a body.
 */
export function jsonBody(opts: { limit?: number; schema?: TSchema } = {}) {
  const limit = opts.limit ?? JSON_LIMIT_BYTES;
  return reads('application/json', async ({ request }: { request: Request }) => readJson(await jsonBytes(request, limit), opts.schema));
}

/**
 * A JSON body checked against its schema: spread into a route's options. The parser checks it with the
 * service's messages; Elysia types the handler's `body` and the OpenAPI document shows the body from the
 * same schema. Elysia's own check of it is made a no-op (the schema's kind is Any at its root, the JSON
 * Schema untouched): the parser has already checked it, and Elysia checking again cost about 20 ms for a
 * 1000-authorizer balance request, three times the rest of accepting it.
 */
export function schemaBody<T extends TSchema>(schema: T, opts: { limit?: number } = {}) {
  return { parse: jsonBody({ ...opts, schema }), body: { ...schema, [Kind]: 'Any' } as T };
}

/** A JSON body's bytes as they came, for a handler that reads them elsewhere (rawJsonBody). */
export class RawJson {
  constructor(readonly bytes: Uint8Array) {}
}

/**
 * A JSON body documented by its schema but read by the handler: content type and size are checked here and
 * the bytes handed over unread, for a service that parses and checks them off the event loop (readJson, in a
 * worker thread) when the body is large.
 */
export function rawJsonBody<T extends TSchema>(schema: T, opts: { limit?: number } = {}) {
  const limit = opts.limit ?? JSON_LIMIT_BYTES;
  return {
    parse: reads('application/json', async ({ request }: { request: Request }) => new RawJson(await jsonBytes(request, limit))),
    body: { ...schema, [Kind]: 'Any' } as unknown as TUnsafe<RawJson>,
  };
}

export function multipartBody(limit = UPLOAD_LIMIT_BYTES + MULTIPART_OVERHEAD_BYTES) {
  return reads('multipart/form-data', async ({ request }: { request: Request }) => {
    const type = request.headers.get('content-type') ?? '';
    if (!/^multipart\/form-data\b/i.test(type)) throw new UnsupportedMediaType('multipart/form-data');
    const bytes = await readLimited(request, limit);
    let form: Awaited<ReturnType<Request['formData']>>;
    try {
      form = await new Response(bytes, { headers: { 'content-type': type } }).formData();
    } catch {
      throw new InvalidInput('Request body is not valid multipart/form-data');
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of form.entries()) out[k] = v;
    return out;
  });
}

/** A multipart body's bytes as they came, with its content type (and boundary), for a handler that parses it elsewhere. */
export class RawMultipart {
  constructor(
    readonly bytes: Uint8Array,
    readonly contentType: string,
  ) {}
}

/**
 * A multipart body read but not parsed: content type and size are checked here, and the bytes handed to a
 * service that parses them off the event loop (the results upload's worker): the body's parts are never
 * built here.
 */
export function rawMultipartBody(limit = UPLOAD_LIMIT_BYTES + MULTIPART_OVERHEAD_BYTES) {
  return reads('multipart/form-data', async ({ request }: { request: Request }) => {
    const type = request.headers.get('content-type') ?? '';
    if (!/^multipart\/form-data\b/i.test(type)) throw new UnsupportedMediaType('multipart/form-data');
    return new RawMultipart(await readLimited(request, limit), type);
  });
}

/**
 * A request body for the OpenAPI document, for a route that documents more than its route schema checks (an
 * enrollment checks each borrower alone) or reads its body in the service. Spread into the route's `detail`;
 * it takes the place of what the generator derives from the route's schema.
 */
export function documentedBody(schema: object, mediaType: 'application/json' | 'multipart/form-data') {
  return { requestBody: { required: true, content: { [mediaType]: { schema: schema as Record<string, unknown> } } } };
}
