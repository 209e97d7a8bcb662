import { Elysia, t } from 'elysia';
import type { PlatformDeps } from '../platform/context';
import { Forbidden } from '../platform/errors';
import type { JobRunner } from '../platform/jobs';
import { Int } from '../platform/schema';
import { errorResponses } from './errors';
import { timingSafeEqual } from 'node:crypto';
import { isLocalClient } from './https';

const Engine = t.Union([t.Literal('sqlite'), t.Literal('postgres')], { description: 'The database the service runs on' });
const QueueDepth = t.Nullable(Int({ minimum: 0, description: 'Authorizers accepted and not yet checked, all lenders' }));

/** /healthz, /readyz and /metrics: for the operator and the container, not the lender. */
export function operationsRoutes(deps: PlatformDeps, jobs: Pick<JobRunner, 'running'> | undefined) {
  return new Elysia({ name: 'operations' })
    .get('/healthz', () => ({ status: 'ok' as const }), {
      response: { 200: t.Object({ status: t.Literal('ok') }, { examples: [{ status: 'ok' }] }) },
      detail: { tags: ['Operations'], summary: 'Liveness', description: 'Answers while the process is up.', security: [] },
    })
    .get(
      '/readyz',
      async ({ set }) => {
        const engine = deps.engine.name;
        const { database, migrations } = await deps.engine.ready();
        let queueDepth: number | null = null;
        try {
          queueDepth = await deps.metrics.currentQueueDepth();
        } catch {
          /* the database is reported above */
        }
        const jobsRunning = jobs ? jobs.running : true;
        const ready = database && migrations && jobsRunning;
        if (!ready) set.status = 503;
        return { status: ready ? 'ready' : 'not_ready', engine, database, migrations, jobs: jobsRunning, queue_depth: queueDepth } as const;
      },
      {
        response: {
          200: t.Object(
            { status: t.Literal('ready'), engine: Engine, database: t.Boolean(), migrations: t.Boolean(), jobs: t.Boolean(), queue_depth: QueueDepth },
            { examples: [{ status: 'ready', engine: 'sqlite', database: true, migrations: true, jobs: true, queue_depth: 1200 }] },
          ),
          503: t.Object(
            { status: t.Literal('not_ready'), engine: Engine, database: t.Boolean(), migrations: t.Boolean(), jobs: t.Boolean(), queue_depth: QueueDepth },
            { examples: [{ status: 'not_ready', engine: 'postgres', database: true, migrations: true, jobs: false, queue_depth: 0 }] },
          ),
        },
        detail: {
          tags: ['Operations'],
          summary: 'Readiness',
          description:
            'The database answers, every migration is applied and the jobs are running. engine: the database the service runs on (sqlite, the default, or postgres when DATABASE_URL is set). queue_depth: authorizers accepted and ' +
            'not yet checked, all lenders together (null when the database does not answer); it does not affect readiness.',
          security: [],
        },
      },
    )
    .get(
      '/metrics',
      async ({ request, server }) => {
        const remote = server?.requestIP(request)?.address ?? null;
        const token = deps.config.metricsToken;
        // Behind a trusted proxy on this host the peer is loopback for every client: the forwarded address decides.
        const local = isLocalClient(deps.config, request, remote);
        const presented = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization')?.trim() ?? '')?.[1];
        const tokenOk = token !== null && presented !== undefined && sameSecret(presented, token);
        if (!local && !tokenOk) throw new Forbidden('Metrics are served to loopback or with METRICS_TOKEN');
        return new Response(await deps.metrics.registry.metrics(), {
          headers: { 'content-type': deps.metrics.registry.contentType },
        });
      },
      {
        detail: {
          tags: ['Operations'],
          summary: 'Prometheus metrics',
          description:
            'Answered to loopback clients, or to `Authorization: Bearer $METRICS_TOKEN`. Behind a proxy listed in TRUST_PROXY the ' +
            'client is the address in its X-Forwarded-For (none: remote), so a proxy on the same host does not open this to the world.',
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
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
