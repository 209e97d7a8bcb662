// 7. Webhook delivery: a real server (app.listen + JobRunner with the webhook delivery job, as index.ts runs
// it) in its own process delivers 2000 deliveries queued in one transaction to a local receiver (Bun.serve
// in this process). Deliveries/s and the delay from enqueue (commit) to receipt; then the p99 of a cheap GET
// measured from a third process (probe.ts), once idle and once while a burst is being delivered.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Bench } from './common';
import { median, ms, num, percentile, startBenchServer, tempDir, waitFor, withTimeout } from './common';
import { WEBHOOK_CONCURRENCY } from '../../src/modules/webhooks/jobs';

const DELIVERIES = 2000;
const PROBE_WORKERS = 2;
const PROBE_PAUSE_MS = 2;
const IDLE_PROBE_MS = 4000;
const LOADED_BURSTS = 6;

interface Probe {
  stop(): Promise<{ samples: [number, number][]; errors: number }>;
}

function startProbe(url: string, auth?: string): Probe {
  const proc = Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'probe.ts'), url, String(PROBE_WORKERS), String(PROBE_PAUSE_MS), '60000'], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'ignore',
    env: { ...process.env, PROBE_AUTH: auth ?? '' },
  });
  return {
    async stop() {
      proc.stdin.write('stop\n');
      await proc.stdin.end();
      const text = await withTimeout(new Response(proc.stdout).text(), 10_000, 'probe stop');
      await proc.exited;
      const { samples, errors } = JSON.parse(text) as { samples: number[]; errors: number };
      const pairs: [number, number][] = [];
      for (let i = 0; i < samples.length; i += 2) pairs.push([samples[i]!, samples[i + 1]!]);
      return { samples: pairs, errors };
    },
  };
}

export const webhooksBench: Bench = {
  name: 'webhooks',
  title: 'Webhook delivery throughput and API latency during a burst',
  timeoutMs: 150_000,
  async run(ctx) {
    const received = new Map<string, number>();
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(req) {
        const id = req.headers.get('webhook-id');
        if (id && !received.has(id)) received.set(id, Date.now());
        return new Response('ok');
      },
    });
    ctx.defer(() => receiver.stop(true));
    const hookUrl = `http://127.0.0.1:${receiver.port}/hook`;

    const dir = tempDir('webhooks');
    ctx.defer(() => rmSync(dir, { recursive: true, force: true }));
    const server = await startBenchServer(dir, { BENCH_JOBS: 'webhook', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    ctx.defer(() => server.stop());

    const lag = async () => (await (await fetch(`${server.url}/bench/lag`)).json()) as { samples: number; p99: number; max: number };
    // Event-loop stalls while deliveries are sent: the enqueue request itself (the harness) is left out.
    const deliveryLags: { p99: number; max: number }[] = [];
    const enqueueMs: number[] = [];
    const burst = async (n: number) => {
      received.clear();
      const res = await fetch(`${server.url}/bench/enqueue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n, url: hookUrl }) });
      if (res.status !== 200) throw new Error(`enqueue answered ${res.status}`);
      const { startedAt, committedAt } = (await res.json()) as { startedAt: number; committedAt: number };
      enqueueMs.push(committedAt - startedAt);
      await lag();
      await waitFor(() => received.size >= n, 60_000, `${n} deliveries received`, 5);
      deliveryLags.push(await lag());
      const delays = [...received.values()].map((at) => at - committedAt);
      const last = Math.max(...received.values());
      return { committedAt, last, delays, perSecond: n / ((last - committedAt) / 1000) };
    };
    const pending = async () => ((await (await fetch(`${server.url}/bench/pending`)).json()) as { pending: number }).pending;

    await burst(100); // warm-up: connections, JIT
    const main = await burst(DELIVERIES);
    ctx.log(`${DELIVERIES} delivered at ${num(main.perSecond, 0)}/s; p99 delay ${num(percentile(main.delays, 99), 0)} ms`);
    await waitFor(async () => (await pending()) === 0, 10_000, 'no delivery pending');

    // GET /healthz: cheap, no database. Idle first, then during bursts (only samples started inside a burst count).
    const healthz = `${server.url}/healthz`;
    let probe = startProbe(healthz);
    await lag();
    await Bun.sleep(IDLE_PROBE_MS);
    const idle = await probe.stop();
    const idleLag = await lag();
    probe = startProbe(healthz);
    await Bun.sleep(300);
    const windows: [number, number][] = [];
    for (let i = 0; i < LOADED_BURSTS; i++) {
      const r = await burst(DELIVERIES);
      windows.push([r.committedAt, r.last]);
      await Bun.sleep(300);
    }
    const loaded = await probe.stop();
    const burstLags = deliveryLags.slice(-LOADED_BURSTS);
    const during = loaded.samples.filter(([at]) => windows.some(([a, z]) => at >= a && at <= z)).map(([, l]) => l);
    const idleLat = idle.samples.map(([, l]) => l);
    ctx.log(`GET p99 idle ${num(percentile(idleLat, 99))} ms, during bursts ${num(percentile(during, 99))} ms (${during.length} samples)`);
    const left = await pending();

    return {
      metrics: [
        {
          label: `${DELIVERIES} queued deliveries → local receiver, concurrency ${WEBHOOK_CONCURRENCY}`,
          value: `${num(main.perSecond, 0)} deliveries/s (${num((main.last - main.committedAt) / 1000, 2)} s)`,
        },
        { label: 'delay enqueue (commit) → receipt', value: `p50 ${ms(median(main.delays), 0)} · p99 ${ms(percentile(main.delays, 99), 0)}` },
        { label: `GET /healthz p99, idle (${idleLat.length} samples)`, value: `${ms(percentile(idleLat, 99))} (p50 ${ms(median(idleLat))})` },
        { label: `GET /healthz p99, during ${LOADED_BURSTS} bursts of ${DELIVERIES} (${during.length} samples)`, value: `${ms(percentile(during, 99))} (p50 ${ms(median(during))})` },
      ],
      notes: [
        `server: the app with JobRunner([webhookDeliveryJob]) (250 ms tick), LOG_LEVEL=info to /dev/null; probe: ${PROBE_WORKERS} fetch loops with ${PROBE_PAUSE_MS} ms pauses from a separate process; ` +
          `probe errors idle ${idle.errors}, loaded ${loaded.errors}; pending after the run: ${left}.`,
        `server event-loop stalls (lateness of a 5 ms timer): idle p99 ${ms(idleLag.p99)}, max ${ms(idleLag.max)}; ` +
          `while the loaded bursts were delivered, worst p99 ${ms(Math.max(...burstLags.map((l) => l.p99)))}, max ${ms(Math.max(...burstLags.map((l) => l.max)))}.`,
        `harness: each enqueue of ${DELIVERIES} (enqueueWebhook × ${DELIVERIES} in one transaction, in the server) took median ${ms(median(enqueueMs), 0)}; ` +
          `probe samples started before a burst's commit are not counted.`,
      ],
    };
  },
};
