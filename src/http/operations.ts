import { Elysia, t } from 'elysia';
import type { PlatformDeps } from '../platform/context';
import { migrationStatus } from '../platform/db';
import { Forbidden } from '../platform/errors';
import type { JobRunner } from '../platform/jobs';
import { errorResponses } from './errors';
import { isLoopback } from './https';

/** /healthz, /readyz and /metrics: for the operator and the container, not the lender. */
export function operationsRoutes(deps: PlatformDeps, jobs: Pick<JobRunner, 'running'> | undefined) {
  return new Elysia({ name: 'operations' })
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
        const jobsRunning = jobs ? jobs.running : true;
        const ready = database && migrations && jobsRunning;
        if (!ready) set.status = 503;
        return { status: ready ? 'ready' : 'not_ready', database, migrations, jobs: jobsRunning } as const;
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
        if (!local && !tokenOk) throw new Forbidden('Metrics are served to loopback or with METRICS_TOKEN');
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
}
