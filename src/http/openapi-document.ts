// The OpenAPI document as clients read it. The generator (@elysiajs/openapi) gives the shape; this pass makes
// it a valid, complete 3.1 document for tools nobody here wrote (swagger-parser, Redocly, Spectral, ajv,
// openapi-typescript): every request body in it whatever parser its route uses, 3.1 type arrays instead of
// 3.0's `nullable`, no fragment `$id`s in inlined schemas, integer query parameters as integers, the response
// headers the service sends, and 405. It runs once per document and is cached by the caller.

type Json = Record<string, unknown>;
type Route = { method: string; path: string; hooks: unknown };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** A parser marks the media type it reads, so the document can name it. */
export type MediaParser = ((...args: never[]) => unknown) & { mediaType?: string };

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

const HEADERS: Record<string, Json> = {
  'X-Request-Id': { description: 'The request id; quote it when reporting a problem', schema: { type: 'string', format: 'uuid' } },
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods this path accepts', schema: { type: 'string', examples: ['GET, PATCH'] } },
  'Idempotent-Replayed': { description: '`true` when the answer is the stored answer to an identical earlier request', schema: { type: 'string', enum: ['true'] } },
  'Content-Disposition': { description: 'attachment; filename=batch-export-<timestamp>.csv', schema: { type: 'string' } },
};

/** Schema clean-up, in place: keywords that are 3.0-only, generator artifacts, fragment ids. */
function cleanSchema(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) cleanSchema(n);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const o = node as Json;
  delete o.nullable; // the type arrays are already there
  // A nullable enum: null is one of its values too, or a validator refuses every null the route answers.
  if (Array.isArray(o.type) && o.type.includes('null') && Array.isArray(o.enum) && !o.enum.includes(null)) o.enum = [...o.enum, null];
  if (typeof o.$id === 'string' && o.$id.startsWith('#')) delete o.$id;
  if (o.format === 'binary' && o.default === 'File') delete o.default;
  for (const v of Object.values(o)) cleanSchema(v);
}

/** `?limit=` as the generator writes it (a string branch with default 0 beside the integer) → the integer. */
function cleanParameter(p: Json): void {
  const s = p.schema as Json | undefined;
  if (!s || !Array.isArray(s.anyOf)) return;
  const integer = (s.anyOf as Json[]).find((b) => b.type === 'integer');
  const numericString = (s.anyOf as Json[]).find((b) => b.type === 'string' && (b.format === 'integer' || b.format === 'numeric'));
  if (integer && numericString) {
    const { anyOf: _drop, ...outer } = s;
    p.schema = { ...outer, ...integer };
  }
}

/**
 * A query parameter's description and deprecation, from the route's schema: the generator drops the options of
 * a union of literals (`true`/`false`). A deprecated parameter is marked on the parameter, where clients look.
 */
function queryAnnotations(op: Json, properties: Record<string, Json>): void {
  for (const p of (op.parameters as Json[] | undefined) ?? []) {
    const declared = p.in === 'query' ? properties[p.name as string] : undefined;
    const schema = p.schema as Json | undefined;
    if (!declared || !schema) continue;
    if (typeof declared.description === 'string' && schema.description === undefined) schema.description = declared.description;
    if (declared.deprecated === true) {
      schema.deprecated = true;
      p.deprecated = true;
    }
  }
}

export function polishDocument(raw: Json, routes: Route[], webhooks: Json = {}): Json {
  const doc = structuredClone(raw) as Json;
  // What the service sends (3.1's webhooks object), from the features.
  if (Object.keys(webhooks).length > 0) doc.webhooks = webhooks;
  const components = (doc.components ??= {}) as Json;
  components.headers = { ...(components.headers as Json | undefined), ...HEADERS };
  const paths = doc.paths as Record<string, Record<string, Json>>;

  for (const route of routes) {
    const method = route.method.toLowerCase() as (typeof METHODS)[number];
    const op = paths[route.path.replace(/:([^/]+)/g, '{$1}')]?.[method];
    if (!op) continue;
    const hooks = route.hooks as {
      body?: unknown;
      query?: { properties?: Record<string, Json> };
      parse?: { fn: MediaParser }[];
      response?: unknown;
      detail?: { requestBody?: Json; responses?: Record<string, Json> };
    };
    queryAnnotations(op, hooks.query?.properties ?? {});
    // A route with response schemas that answers in another media type too (the ACH report's CSV) names it in
    // its detail's responses, which the generator drops beside the schemas: its description is taken, and its
    // media types and headers are added after the generated answer's own, which are kept as they are.
    if (hooks.response && hooks.detail?.responses) {
      const responses = (op.responses ??= {}) as Record<string, Json>;
      for (const [status, declared] of Object.entries(hooks.detail.responses)) {
        const res = (responses[status] ??= {});
        if (declared.description) res.description = declared.description;
        res.content = { ...(res.content as Json | undefined), ...(structuredClone(declared.content) as Json | undefined), ...(res.content as Json | undefined) };
        if (declared.headers) res.headers = { ...(res.headers as Json | undefined), ...(structuredClone(declared.headers) as Json), ...(res.headers as Json | undefined) };
      }
    }
    // A route that checks less than it documents (each enrollment borrower is checked alone) names its body itself.
    if (hooks.detail?.requestBody) {
      op.requestBody = structuredClone(hooks.detail.requestBody);
      continue;
    }
    const content = ((op.requestBody as Json | undefined)?.content ?? {}) as Json;
    // A body validated by the route's schema but read by a custom parser: the generator leaves it empty.
    if (hooks.body && Object.keys(content).length === 0) {
      const mediaType = hooks.parse?.find((p) => typeof p.fn === 'function' && p.fn.mediaType)?.fn.mediaType ?? 'application/json';
      op.requestBody = { required: true, content: { [mediaType]: { schema: JSON.parse(JSON.stringify(hooks.body)) } } };
    }
  }

  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      for (const p of (op.parameters as Json[] | undefined) ?? []) cleanParameter(p);
      const responses = (op.responses ??= {}) as Record<string, Json>;
      for (const [status, res] of Object.entries(responses)) {
        // A body-less answer (204) has no content; the generator writes its void schema as media types.
        if (status === '204') delete res.content;
        res.headers = { ...(res.headers as Json | undefined), 'X-Request-Id': ref('X-Request-Id') };
        if (status === '429' || status === '503') (res.headers as Json)['Retry-After'] = ref('Retry-After');
      }
      responses['405'] ??= {
        description: 'Another method than this path accepts (the Allow header lists them)',
        headers: { Allow: ref('Allow'), 'X-Request-Id': ref('X-Request-Id') },
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
      };
      // Every API route reads the database (the request gate's rate buckets on PostgreSQL, the lender's key): out
      // of reach, it is a 503 to send again, never a 500.
      if (path.startsWith('/v1/')) {
        responses['503'] ??= {
          description: 'The database (or a processor the route calls) cannot be reached just now: send the request again after Retry-After seconds',
          headers: { 'Retry-After': ref('Retry-After'), 'X-Request-Id': ref('X-Request-Id') },
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
        };
      }
      if ((path === '/v1/balance_requests' || path === '/v1/balance_requests/csv') && method === 'post' && responses['201']) {
        (responses['201'].headers as Json)['Idempotent-Replayed'] = ref('Idempotent-Replayed');
      }
      if (path === '/v1/balances/csv') {
        if (responses['200']) (responses['200'].headers as Json)['Content-Disposition'] = ref('Content-Disposition');
        // Required, and repeated once per batch (the route refuses a request without it).
        for (const p of (op.parameters as Json[] | undefined) ?? []) {
          if (p.name !== 'batch_ids') continue;
          Object.assign(p, { required: true, style: 'form', explode: true, schema: { type: 'array', minItems: 1, items: { type: 'string', format: 'uuid' } } });
        }
      }
    }
  }
  cleanSchema(doc.paths);
  cleanSchema(components.schemas);
  return doc;
}
