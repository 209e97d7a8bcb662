import { Elysia, t } from 'elysia';
import { openapi } from '@elysiajs/openapi';
import { join } from 'node:path';
import type { Deps } from './platform/deps';
import { baseUrl } from './platform/deps';
import { ApiError, envelope, ErrorEnvelope, errorResponses, HttpsRequired, NotFound } from './platform/errors';
import { fromElysiaError } from './platform/error-mapping';
import { httpsAllowed, isLoopback } from './platform/https';
import { newId } from './platform/ids';
import { migrationStatus } from './platform/db';
import { SERVER_MAX_BODY_BYTES } from './platform/http';
import type { JobRunner } from './platform/jobs';
import { authPlugin, createAuthenticator, type AuthedLender } from './platform/auth';
import { featureRoutes } from './modules';

export const API_VERSION = '0.3.0-alpha';

const SWAGGER_DIR = join(import.meta.dir, '../node_modules/swagger-ui-dist');
const DOC_ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
};

const DESCRIPTION = `Self-hosted debit recovery and balance monitoring.

A lender (the caller) checks its borrowers' (authorizers') bank balances in batches, monitors balances on
schedules with webhooks, and receives signed webhook notifications.

**Authentication**: every \`/v1\` path needs \`Authorization: Bearer <API_KEY>\`. Keys are issued by the operator
CLI (\`bun run cli key create LENDER\`).

**Errors** use one envelope (schema \`ErrorEnvelope\`): \`status\`, \`status_code\`, \`error {code, message, details,
timestamp, suggestion}\`, \`documentation_url\`. Codes: BAD_REQUEST 400 (validation; \`details.errors\` lists
\`{path, message}\`), UNAUTHORIZED 401, FORBIDDEN 403, HTTPS_REQUIRED 403, RESOURCE_NOT_FOUND 404,
METHOD_NOT_ALLOWED 405, CONFLICT 409, PAYLOAD_TOO_LARGE 413, UNSUPPORTED_MEDIA_TYPE 415, RATE_LIMITED 429
(with \`Retry-After\`), INTERNAL_ERROR 500 (with the request id), SERVICE_UNAVAILABLE 503. Every response
carries \`X-Request-Id\`.`;

interface RequestMeta {
  id: string;
  start: number;
  /** Set when the response is built by the error handler, which Elysia's `set.status` does not see. */
  status?: number;
}

/** The Elysia app without listen: `index.ts` serves it, tests call `app.handle`. */
export function createApp(deps: Deps, opts: { jobs?: JobRunner } = {}) {
  const docsBase = baseUrl(deps.config);
  const meta = new WeakMap<Request, RequestMeta>();
  const authenticate = createAuthenticator(deps);
  const authenticated = new WeakMap<Request, AuthedLender>();
  const auth = authPlugin(authenticate, authenticated);
  let routePatterns: { method: string; re: RegExp }[] | null = null;

  const toResponse = (request: Request, err: ApiError) => {
    const m = meta.get(request);
    const status = err.status;
    const body = envelope(status, err.errorCode, err.message, docsBase, deps.clock.now(), err.details, err.suggestion);
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(err.headers ?? {}) };
    if (m) {
      headers['x-request-id'] = m.id;
      m.status = status;
    }
    return new Response(JSON.stringify(body), { status, headers });
  };

  const record = (request: Request, m: RequestMeta, status: number, routeLabel: string) => {
    const duration = performance.now() - m.start;
    deps.metrics.httpRequests.inc({ method: request.method, route: routeLabel, status: String(status) });
    deps.metrics.httpDuration.observe({ method: request.method, route: routeLabel }, duration / 1000);
    deps.logger.info(
      { reqId: m.id, method: request.method, route: routeLabel, status, duration_ms: Math.round(duration * 100) / 100 },
      'request',
    );
  };

  /** A response from onRequest, which Elysia's after-response hook never sees: logged and counted here. */
  const early = (request: Request, err: ApiError) => {
    const res = toResponse(request, err);
    const m = meta.get(request);
    if (m) record(request, m, err.status, 'unmatched');
    return res;
  };

  const allowedMethods = (path: string, all: { method: string; path: string }[]): string[] => {
    routePatterns ??= all
      .filter((r) => r.method !== 'ALL')
      .map((r) => ({ method: r.method, re: new RegExp('^' + r.path.replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*') + '/?$') }));
    return [...new Set(routePatterns.filter((r) => r.re.test(path)).map((r) => r.method))];
  };

  // normalize off: unknown fields are refused (400), never silently dropped.
  const app = new Elysia({ normalize: false, serve: { maxRequestBodySize: SERVER_MAX_BODY_BYTES } })
    .use(
      openapi({
        path: '/docs',
        specPath: '/docs/json',
        provider: 'swagger-ui',
        swagger: {
          cdn: '/docs/assets/swagger-ui-bundle.js',
          theme: '/docs/assets/swagger-ui.css',
          autoDarkMode: false,
          // Absolute, so the page works at /docs/ too (a relative URL would resolve to /docs/docs/json).
          url: '/docs/json',
        } as never,
        exclude: { paths: ['/docs/assets/*'] },
        documentation: {
          openapi: '3.1.0',
          info: { title: 'Debit Recovery and Balance Monitoring Service', version: API_VERSION, description: DESCRIPTION },
          servers: [{ url: docsBase }],
          tags: [
            { name: 'Balance checks', description: 'On-demand balance checks in batches (JSON or CSV), results and export' },
            { name: 'Monitoring', description: 'Scheduled balance monitoring and authorizer history' },
            { name: 'Webhooks', description: 'Signing secret and delivery log of the webhooks the service sends' },
            { name: 'Operations', description: 'Health, readiness and metrics' },
          ],
          components: {
            securitySchemes: {
              bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key: drs_live_ followed by 32 characters' },
            },
          },
        },
      }),
    )
    .model({ ErrorEnvelope })
    .onRequest(({ request, set, server }) => {
      const m = { id: newId(), start: performance.now() };
      meta.set(request, m);
      set.headers['x-request-id'] = m.id;
      const path = new URL(request.url).pathname;
      if (path === '/healthz') return;
      const remote = server?.requestIP(request)?.address ?? null;
      if (!httpsAllowed(deps.config, request, remote)) return early(request, new HttpsRequired());
      // Authenticate before any body is read or validated: without a valid key nothing about a /v1 route,
      // not even whether it exists or what its body looks like, is told.
      if (path === '/v1' || path.startsWith('/v1/')) {
        try {
          authenticated.set(request, authenticate(request.headers.get('authorization') ?? undefined));
        } catch (e) {
          if (e instanceof ApiError) return early(request, e);
          throw e;
        }
      }
    })
    .onError(({ code, error, request }) => {
      const known = fromElysiaError(code, error, request, (path) => allowedMethods(path, app.routes));
      if (known) return toResponse(request, known);
      const m = meta.get(request);
      deps.logger.error({ reqId: m?.id, err: error }, 'unhandled error');
      return toResponse(
        request,
        new ApiError(500, 'INTERNAL_ERROR', `Internal error; quote request id ${m?.id ?? 'unknown'} when reporting it`, {
          request_id: m?.id ?? null,
        }),
      );
    })
    .onAfterResponse(({ request, route, set }) => {
      const m = meta.get(request);
      if (!m) return;
      record(request, m, m.status ?? (typeof set.status === 'number' ? set.status : 200), route || 'unmatched');
    })
    .get('/docs/assets/:file', ({ params }) => {
      const type = DOC_ASSETS[params.file];
      if (!type) throw new NotFound('No such documentation asset');
      return new Response(Bun.file(join(SWAGGER_DIR, params.file)), {
        headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' },
      });
    }, { detail: { hide: true } })
    .get('/healthz', () => ({ status: 'ok' as const }), {
      response: { 200: t.Object({ status: t.Literal('ok') }, { examples: [{ status: 'ok' }] }) },
      detail: { tags: ['Operations'], summary: 'Liveness', description: 'Answers while the process is up.', security: [] },
    })
    .get(
      '/readyz',
      ({ set }) => {
        let database = false;
        let migrations = false;
        try {
          deps.sqlite.query('SELECT 1').get();
          database = true;
          migrations = migrationStatus(deps.sqlite).upToDate;
        } catch {
          /* reported below */
        }
        const jobs = opts.jobs ? opts.jobs.running : true;
        const ready = database && migrations && jobs;
        if (!ready) set.status = 503;
        return { status: ready ? 'ready' : 'not_ready', database, migrations, jobs } as const;
      },
      {
        response: {
          200: t.Object(
            { status: t.Literal('ready'), database: t.Boolean(), migrations: t.Boolean(), jobs: t.Boolean() },
            { examples: [{ status: 'ready', database: true, migrations: true, jobs: true }] },
          ),
          503: t.Object(
            { status: t.Literal('not_ready'), database: t.Boolean(), migrations: t.Boolean(), jobs: t.Boolean() },
            { examples: [{ status: 'not_ready', database: true, migrations: true, jobs: false }] },
          ),
        },
        detail: {
          tags: ['Operations'],
          summary: 'Readiness',
          description: 'The database answers, every migration is applied and the jobs are running.',
          security: [],
        },
      },
    )
    .get(
      '/metrics',
      async ({ request, server }) => {
        const remote = server?.requestIP(request)?.address ?? null;
        const token = deps.config.metricsToken;
        const header = request.headers.get('authorization');
        const local = remote === null || isLoopback(remote);
        const tokenOk = token !== null && header === `Bearer ${token}`;
        if (!local && !tokenOk) throw new ApiError(403, 'FORBIDDEN', 'Metrics are served to loopback or with METRICS_TOKEN');
        return new Response(await deps.metrics.registry.metrics(), {
          headers: { 'content-type': deps.metrics.registry.contentType },
        });
      },
      {
        detail: {
          tags: ['Operations'],
          summary: 'Prometheus metrics',
          description: 'Answered to loopback, or to `Authorization: Bearer $METRICS_TOKEN`.',
          security: [],
          responses: {
            200: {
              description: 'Prometheus text format',
              content: { 'text/plain': { schema: { type: 'string' }, example: 'http_requests_total{method="GET",route="/healthz",status="200"} 3\n' } },
            },
            ...errorResponses({ 403: 'Not loopback and no valid METRICS_TOKEN' }),
          },
        },
      },
    );

  for (const routes of featureRoutes(deps, auth)) app.use(routes);
  return app;
}

export type App = ReturnType<typeof createApp>;
