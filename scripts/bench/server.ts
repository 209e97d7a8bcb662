// The real app, listening on 127.0.0.1, for benchmarks that need a server in its own process.
// Started by startBenchServer (common.ts); configuration comes from the environment like the service's.
//
//   BENCH_JOBS=webhook   also runs the webhook delivery job (JobRunner), as index.ts does; default no jobs
//   BENCH_JOBS=monitoring  also runs the monitoring due-read job
//   BENCH_JOBS=all       every job the service runs (featureJobs), as index.ts starts them
//   BENCH_MAX_MS         exits after this long whatever happens (default 180 s)
//
// Extra routes, bench only: POST /bench/parse-only (parses a balance request body and counts authorizers),
// POST /bench/enqueue {n, url} (n webhook deliveries in one transaction), GET /bench/pending, GET /bench/lag
// (event-loop stalls since the last call), POST /bench/lender (another lender and its API key).
// Prints one JSON line {port, apiKey} when listening; exits when stdin closes or on SIGTERM.
// On PostgreSQL (DATABASE_URL, the database startBenchServer made for this server) the migrations are applied
// first, as index.ts does; there is no WAL to checkpoint.
import pino from 'pino';
import { loadConfig, requireSharedVaultKey } from '../../src/config';
import { createRuntime } from '../../src/runtime';
import { createApp } from '../../src/app';
import { JobRunner, type Job } from '../../src/platform/jobs';
import type { Deps } from '../../src/deps';
import { startCheckpointer } from '../../src/platform/checkpointer';
import { applyPgMigrations } from '../../src/platform/pg';
import { transaction } from '../../src/platform/context';
import { createLender } from '../../src/modules/lenders/service';
import { countPending, enqueueWebhook } from '../../src/modules/webhooks/service';
import { webhookDeliveryJob } from '../../src/modules/webhooks/jobs';
import { monitoringReadsJob } from '../../src/modules/enrollments/monitoring';
import { featureJobs, releaseStaleClaims } from '../../src/modules';

const config = loadConfig();
requireSharedVaultKey(config);
if (config.databaseUrl) await applyPgMigrations(config.databaseUrl);
// Request logs are written as in production (info, synchronous writes), to /dev/null instead of stdout.
const rt = createRuntime(config, { logDestination: pino.destination({ dest: '/dev/null', sync: true }) });
const { lender, apiKey } = await createLender(rt, 'bench', rt.clock.now());
await releaseStaleClaims(rt);

const benchJobs: Record<string, Job<Deps>[]> = { webhook: [webhookDeliveryJob], monitoring: [monitoringReadsJob], all: featureJobs(rt) };
const jobs = new JobRunner(rt, benchJobs[process.env.BENCH_JOBS ?? ''] ?? []);
const app = createApp(rt, { jobs })
  .post('/bench/parse-only', ({ body }) => ({ n: (body as { authorizers: unknown[] }).authorizers.length }))
  .post('/bench/enqueue', async ({ body }) => {
    const { n, url } = body as { n: number; url: string };
    const lenderId = lender.id;
    const startedAt = Date.now();
    await transaction({ deps: rt }, async (ctx) => {
      for (let i = 0; i < n; i++) {
        await enqueueWebhook({ ctx, input: {
          lenderId,
          type: 'BALANCE_BATCH_COMPLETED',
          url,
          payload: { event_uuid: crypto.randomUUID(), type: 'BALANCE_BATCH_COMPLETED', batch_id: crypto.randomUUID() },
        } });
      }
    });
    return { n, startedAt, committedAt: Date.now() };
  })
  .get('/bench/pending', async () => ({ pending: await countPending(rt) }))
  .post('/bench/lender', async () => {
    const other = await createLender(rt, `bench-${crypto.randomUUID().slice(0, 8)}`, rt.clock.now());
    return { id: other.lender.id, apiKey: other.apiKey };
  })
  // Event-loop stalls seen since the last call (a 5 ms timer's lateness), then reset.
  .get('/bench/lag', () => {
    const sorted = [...lags].sort((a, b) => a - b);
    const out = { samples: sorted.length, p99: sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] ?? 0, max: sorted[sorted.length - 1] ?? 0 };
    lags.length = 0;
    return out;
  });

const lags: number[] = [];
let expected = performance.now() + 5;
setInterval(() => {
  const now = performance.now();
  lags.push(Math.max(0, now - expected));
  expected = now + 5;
}, 5).unref();

app.listen({ port: config.port, hostname: config.host });
jobs.start();
// As index.ts does: WAL checkpoints run in a worker thread, not inside request commits (SQLite only).
const checkpointer = rt.pg ? null : startCheckpointer(rt.sqlite, config.databasePath, rt.logger);

let stopping = false;
async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    try {
      await app.server?.stop(true);
      await jobs.stop();
      await checkpointer?.stop();
      rt.handle.close();
    } catch {
      /* exiting anyway */
    }
  }
  process.exit(code);
}

process.on('SIGTERM', () => void shutdown(0));
process.on('SIGINT', () => void shutdown(0));
setTimeout(() => void shutdown(3), Number(process.env.BENCH_MAX_MS ?? 180_000)).unref();
// The parent holds our stdin: when it goes away (normally or not), so do we.
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    /* nothing is sent */
  }
  await shutdown(0);
})();

console.log(JSON.stringify({ port: app.server!.port, apiKey }));
