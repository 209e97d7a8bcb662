// Replicas: one service process against two on one PostgreSQL database, on this machine. Balance processing:
// a batch of authorizers read from the sandbox provider (50 ms a read), from the request's answer to the
// batch completed. Collection: borrowers enrolled (requests spread over the replicas, as a load balancer
// would) until each one's payment is answered by the sandbox processor (50 ms an answer), from the first
// enrollment request to the last answer. Items per second, the ratio of two replicas to one, and what each
// replica did (its balance_reads_total and payments_sent_total), so a replica idling while another holds all
// the due work would show. The replicas share the machine's cores with the database server and the benchmark.
import { loadavg } from 'node:os';
import type { Bench, BenchContext, Metric } from './common';
import { authorizers, num } from './common';
import { sideConnection } from './engine';
import { ServiceHarness, waitFor, type ServiceProcess } from '../../tests/helpers/server';

const READS = 2000;
const BORROWERS = 200;
const LATENCY_MS = 50;

/** A counter's total on one replica's /metrics (every label set added up). */
async function counter(p: ServiceProcess, name: string): Promise<number> {
  const text = await (await fetch(`${p.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && (line[name.length] === '{' || line[name.length] === ' ')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

interface Run {
  replicas: number;
  seconds: number;
  perReplica: number[];
  /** Where the time went, for collection: seconds to every enrollment answered, every payment created, every one answered. */
  phases?: { enrolled: number; created: number; answered: number };
}

async function startReplicas(ctx: BenchContext, env: Record<string, string>, replicas: number, tag: string) {
  const h = new ServiceHarness({ LOG_LEVEL: 'error', ...env });
  ctx.defer(() => h.cleanup());
  const procs = await Promise.all(Array.from({ length: replicas }, (_, i) => h.start({ replicaId: `${tag}-${i}` })));
  const side = sideConnection({ dir: h.dir, databaseUrl: h.pg!.url });
  ctx.defer(() => side.close());
  return { h, procs, side };
}

async function balance(ctx: BenchContext, replicas: number): Promise<Run> {
  const { procs, side } = await startReplicas(ctx, { SANDBOX_LATENCY_MS: String(LATENCY_MS) }, replicas, 'bal');
  // One request of 1000 at a time (the most a request takes), the batches spread over the replicas.
  const t0 = performance.now();
  const ids: string[] = [];
  for (let b = 0; b < READS / 1000; b++) {
    const r = await procs[b % replicas]!.call('POST', '/v1/balance_requests', { authorizers: authorizers(`rep${replicas}b${b}`, 1000) });
    if (r.status !== 201) throw new Error(`balance request answered ${r.status}`);
    ids.push(r.body.batch_id);
  }
  await waitFor('the batches to complete', async () => (await side.count(`SELECT COUNT(*) AS n FROM batches WHERE status <> 'completed'`)) === 0, 180_000);
  const seconds = (performance.now() - t0) / 1000;
  const perReplica = await Promise.all(procs.map((p) => counter(p, 'balance_reads_total')));
  ctx.log(`balance, ${replicas} replica(s): ${READS} reads in ${num(seconds)} s; per replica ${perReplica.join(', ')}`);
  return { replicas, seconds, perReplica };
}

async function collection(ctx: BenchContext, replicas: number): Promise<Run> {
  const { procs, side } = await startReplicas(ctx, { SANDBOX_PROCESSOR_LATENCY_MS: String(LATENCY_MS), SANDBOX_SETTLEMENT_MS: '600000' }, replicas, 'col');
  const key = await procs[0]!.call('POST', '/v1/payment_connections', { api_key: `sbx_bench_replicas_${replicas}_000001`, rail_scope: 'both', is_default: true });
  if (key.status !== 201) throw new Error(`payment connection answered ${key.status}`);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: BORROWERS / 100 }, async (_, part) => {
      const borrowers = authorizers(`rep${replicas}c${part}`, 100).map((a) => ({
        ...a,
        first_name: 'Ada',
        last_name: 'Lovelace',
        account_number: '0009000000',
        date_of_birth: { day: 10, month: 12, year: 1985 },
        address: { zip_code: '02139' },
        phone_number: '2025550143',
        collectable_amount: 42500,
        days_past_due: 35,
      }));
      const r = await procs[part % replicas]!.call('POST', '/v1/payment_enrollments', { borrowers });
      if (r.status !== 207 || r.body.enrolled !== borrowers.length) throw new Error(`enrollment answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
    }),
  );
  const enrolled = (performance.now() - t0) / 1000;
  // Created: the borrower's read recorded and the decision made (monitoring reads job, then balance processing).
  await waitFor('every payment to be created', async () => (await side.count('SELECT COUNT(*) AS n FROM payments')) >= BORROWERS, 240_000);
  const created = (performance.now() - t0) / 1000;
  await waitFor('every payment to be answered', async () => (await side.count(`SELECT COUNT(*) AS n FROM payments WHERE status <> 'initiating'`)) >= BORROWERS, 240_000);
  const seconds = (performance.now() - t0) / 1000;
  const perReplica = await Promise.all(procs.map((p) => counter(p, 'payments_sent_total')));
  const twice = await side.count('SELECT COUNT(*) AS n FROM (SELECT idempotency_key FROM sandbox_payments GROUP BY idempotency_key HAVING COUNT(*) > 1) d');
  if (twice > 0) throw new Error(`${twice} payments created twice at the processor`);
  ctx.log(`collection, ${replicas} replica(s): ${BORROWERS} payments in ${num(seconds)} s (enrolled at ${num(enrolled)} s, created by ${num(created)} s); sent per replica ${perReplica.join(', ')}`);
  return { replicas, seconds, perReplica, phases: { enrolled, created, answered: seconds } };
}

function figures(what: string, unit: string, n: number, one: Run, two: Run): Metric[] {
  const rate = (r: Run) => n / r.seconds;
  const shares = (r: Run) => r.perReplica.map((x, i) => `replica ${i + 1}: ${num(x, 0)}`).join(', ');
  const phases = (r: Run) => (r.phases ? `; every enrollment answered at ${num(r.phases.enrolled)} s, every payment created by ${num(r.phases.created)} s, answered by ${num(r.phases.answered)} s` : '');
  return [
    { label: `${what}, 1 replica`, value: `${num(rate(one), 0)} ${unit}/s (${num(one.seconds)} s; ${shares(one)}${phases(one)})` },
    { label: `${what}, 2 replicas`, value: `${num(rate(two), 0)} ${unit}/s (${num(two.seconds)} s; ${shares(two)}${phases(two)})` },
    { label: `${what}, 2 replicas / 1`, value: `${num(rate(two) / rate(one), 2)}×` },
  ];
}

export const replicasBench: Bench = {
  name: 'replicas',
  title: `1 replica vs 2 on one PostgreSQL database: ${num(READS, 0)} balance reads and ${num(BORROWERS, 0)} collections (${LATENCY_MS} ms provider and processor)`,
  timeoutMs: 600_000,
  notOnSqlite: 'replicas share one PostgreSQL database; on SQLite one process serves a database file (run it with DATABASE_URL=postgres://…)',
  async run(ctx) {
    const loadBefore = loadavg()[0]!;
    const bal1 = await balance(ctx, 1);
    const bal2 = await balance(ctx, 2);
    const col1 = await collection(ctx, 1);
    const col2 = await collection(ctx, 2);
    return {
      metrics: [...figures(`balance reads (${num(READS, 0)} in ${READS / 1000} batches)`, 'reads', READS, bal1, bal2), ...figures(`collection (${num(BORROWERS, 0)} borrowers enrolled to payment answered)`, 'payments', BORROWERS, col1, col2)],
      notes: [
        `Each replica is a service process (src/index.ts) with its jobs; all share this machine's cores with the database server and the benchmark. Balance reads: ${LATENCY_MS} ms each at the sandbox provider, BALANCE_CONCURRENCY at its default per replica; collection: ${LATENCY_MS} ms per sandbox processor answer, from the first enrollment request (spread over the replicas) to the last answer recorded.`,
        `Load average (1 min) of this machine at the start and at the end: ${num(loadBefore, 1)} and ${num(loadavg()[0]!, 1)} — other processes on the machine take their share of its cores, and the figures move with them.`,
        'Per replica: its balance_reads_total and payments_sent_total (from its /metrics), so a replica idling while another holds all the due work shows as a count near 0.',
        'Collection runs at the pace of the jobs a borrower goes through, not of the work: an enrolled borrower waits for the monitoring job (every 1 s) to queue its first read, then for balance processing (every 250 ms) to read it and decide, then for dispatch (every 250 ms) to send; the processor time itself is 200 × 50 ms over 16 sends at once, about 0.6 s. Its phases (enrolled, created, answered) show where the seconds go; a second replica shortens none of those waits.',
      ],
    };
  },
};
