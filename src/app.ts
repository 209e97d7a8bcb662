import { Elysia } from 'elysia';
import { baseUrl } from './config';
import type { Deps } from './deps';
import { ApiError, ErrorEnvelope } from './http/errors';
import { fromElysiaError } from './http/elysia-errors';
import { SERVER_BODY_CEILING_BYTES } from './http/limits';
import { authPlugin, createAuthenticator, type AuthedLender } from './http/auth';
import { docsAssetRoutes, docsPlugin, GENERATED_SPEC_PATH } from './http/docs';
import { polishDocument } from './http/openapi-document';
import { requestGate } from './http/gate';
import { bodyAdmission } from './http/admission';
import { operationsRoutes } from './http/operations';
import { RequestTracker } from './http/requests';
import type { JobRunner } from './platform/jobs';
import { FEATURE_ADMISSIONS, featureErrorPage, featureRoutes, featureWebhooks, TAKE_THE_GATE_THEMSELVES } from './modules';
import { writeGate } from './platform/context';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from './platform/db-unavailable';
import { InvalidInput } from './platform/errors';
import { controlCharacterIn } from './platform/fields';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export { API_VERSION } from './http/docs';

/**
 * The Elysia app without listen: `index.ts` serves it, tests call `app.handle`. It puts together the HTTP
 * edge (src/http: docs, the request gate, errors, operations routes) and every feature's routes.
 */
export function createApp(deps: Deps, opts: { jobs?: JobRunner<Deps> } = {}) {
  const tracker = new RequestTracker(deps, baseUrl(deps.config), (request, err, headers) => featureErrorPage(deps, request, err, headers));
  const authenticate = createAuthenticator(deps);
  const authenticated = new WeakMap<Request, AuthedLender>();
  const auth = authPlugin(authenticated);
  let routePatterns: { method: string; re: RegExp }[] | null = null;

  const allowedMethods = (path: string, all: { method: string; path: string }[]): string[] => {
    routePatterns ??= all
      .filter((r) => r.method !== 'ALL')
      .map((r) => ({ method: r.method, re: new RegExp('^' + r.path.replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*') + '/?$') }));
    return [...new Set(routePatterns.filter((r) => r.re.test(path)).map((r) => r.method))];
  };

  // normalize off: unknown fields are refused (400), never silently dropped.
  // Bun's own body limit sits just above the service's ceiling, so a body between the two is refused by the
  // gate with the envelope rather than by Bun with a bare 413.
  // The write gate (platform/write-gate.ts): a request that may write holds a share from its handler's start
  // (its body read and checked) to its answer, so a worker's write transaction waits for it, and it waits,
  // without blocking, while one runs. Reads hold none; the uploads take the gate themselves, for their transaction.
  const gate = writeGate(deps);
  const shares = new WeakMap<Request, () => void>();
  // Each admitted body's place in its lender's budget of bytes in flight (http/admission.ts), given back once
  // the request is answered.
  const bodies = new WeakMap<Request, () => void>();
  const app = new Elysia({ normalize: false, serve: { maxRequestBodySize: SERVER_BODY_CEILING_BYTES } })
    .wrap(
      (handle) =>
        async (...args: unknown[]) => {
          try {
            return await (handle as (...a: unknown[]) => unknown)(...args);
          } finally {
            shares.get(args[0] as Request)?.();
            bodies.get(args[0] as Request)?.();
          }
        },
    )
    // One identifier rule on every route and page, whatever the engine: a path or query parameter holding a
    // control character (NUL, ESC, DEL, C1) names nothing that can be stored, and PostgreSQL refuses a NUL
    // outright (a 500 where SQLite found nothing). Routes whose parameters have a pattern say so themselves,
    // in their own words, before this runs.
    .onBeforeHandle({ as: 'global' }, ({ params, query }) => {
      const bad = controlCharacterIn(params as Record<string, unknown> | undefined) ?? controlCharacterIn(query as Record<string, unknown> | undefined);
      if (bad !== null) throw InvalidInput.field(`/${bad}`, 'The parameter holds a control character', 'Send identifiers and filters as printable text');
    })
    .onBeforeHandle({ as: 'global' }, async ({ request, path }) => {
      if (!READ_METHODS.has(request.method) && !TAKE_THE_GATE_THEMSELVES.has(path)) shares.set(request, await gate.share());
    })
    .use(docsPlugin(baseUrl(deps.config)))
    .model({ ErrorEnvelope })
    .onRequest(requestGate(deps, tracker, authenticate, authenticated))
    // Before any body is read: what the lender already has under way (a feature's bound, bodies in flight).
    .onRequest(bodyAdmission(deps, tracker, authenticated, FEATURE_ADMISSIONS, bodies))
    .onError(({ code, error, request, route }) => {
      const known = fromElysiaError(code, error, request, (path) => allowedMethods(path, app.routes));
      // A page's error is a page with the envelope's message; the request's metadata is the API's either way.
      const answer = (err: ApiError) => tracker.answer(request, err);
      if (known) return answer(known);
      const id = tracker.requestId(request);
      // The database out of reach is not a fault of the request: said so, with when to try again.
      if (isDatabaseUnavailable(error)) {
        opts.jobs?.noteOutage();
        deps.logger.warn({ reqId: id, method: request.method, route: route || 'unmatched', err: error instanceof Error ? error.message : 'error' }, 'database unavailable');
        return answer(
          new ApiError('SERVICE_UNAVAILABLE', 'The database cannot be reached just now', { request_id: id ?? null }, `Send the request again after ${DATABASE_RETRY_AFTER_SECONDS} seconds`, {
            'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS),
          }),
        );
      }
      // The real error with its stack, never the request's body; something thrown that is not an Error is
      // named by its kind only, since it may be a piece of the request.
      const err = error instanceof Error ? error : new Error(`a non-Error value was thrown (${error === null ? 'null' : typeof error})`);
      deps.logger.error({ reqId: id, method: request.method, route: route || 'unmatched', err }, 'unhandled error');
      return answer(new ApiError('INTERNAL_ERROR', `Internal error; quote request id ${id ?? 'unknown'} when reporting it`, { request_id: id ?? null }));
    })
    .onAfterResponse(({ request, route, set }) => {
      tracker.finish(request, typeof set.status === 'number' ? set.status : 200, route || 'unmatched');
    })
    .use(docsAssetRoutes())
    .use(operationsRoutes(deps, opts.jobs));

  for (const routes of featureRoutes(deps, auth)) app.use(routes);
  let document: Record<string, unknown> | null = null;
  app.get(
    '/docs/json',
    async () => {
      if (!document) {
        const generated = (await (await app.handle(new Request(`http://localhost${GENERATED_SPEC_PATH}`))).json()) as Record<string, unknown>;
        document = polishDocument(generated, app.routes, featureWebhooks());
      }
      return document;
    },
    { detail: { hide: true } },
  );
  return app;
}

export type App = ReturnType<typeof createApp>;
