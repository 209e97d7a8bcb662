// 5. Export: 100,000 results (100 batches of 1000, with metadata) streamed as CSV from GET /v1/balances/csv,
// consumed to the end in process (app.handle). Rows/s and the peak RSS growth over the RSS just before.
import { createApp } from '../../src/app';
import type { Bench } from './common';
import { benchRuntime, durability, mb, num, setSynchronous } from './common';
import { processAll, submitBatches } from './bench-processing';

const BATCHES = 100;
const SIZE = 1000;
const TARGET_ROWS_PER_S = 100_000;
const TARGET_RSS = 64 * 1024 * 1024;

async function consume(res: Response): Promise<{ bytes: number; lines: number }> {
  const reader = res.body!.getReader();
  let bytes = 0;
  let lines = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    bytes += value.length;
    for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++;
  }
  return { bytes, lines };
}

export const exportBench: Bench = {
  name: 'export',
  title: 'CSV export of 100,000 results',
  timeoutMs: 150_000,
  async run(ctx) {
    const b = await benchRuntime({ SANDBOX_LATENCY_MS: '0' });
    ctx.defer(() => b.close());
    const { rt } = b;
    // Filling the database is setup: real submissions and real processing, without fsync; FULL again before measuring.
    setSynchronous(rt, 'OFF');
    let t = performance.now();
    const ids = await submitBatches(rt, b.lender, BATCHES, SIZE, { prefix: 'exp', metadata: true });
    const submitS = (performance.now() - t) / 1000;
    t = performance.now();
    const processed = await processAll(rt, 90_000);
    const processS = (performance.now() - t) / 1000;
    setSynchronous(rt, 'FULL');
    ctx.log(`setup: submit ${num(submitS)} s, process ${num(processS)} s`);

    const app = createApp(rt);
    const get = (batchIds: string[]) =>
      app.handle(
        new Request(`http://localhost/v1/balances/csv?${batchIds.map((id) => `batch_ids=${id}`).join('&')}`, {
          headers: { authorization: `Bearer ${b.apiKey}` },
        }),
      );
    // Warm-up on one batch (JIT, statement cache), then the whole export.
    await consume(await get(ids.slice(0, 1)));

    Bun.gc(true);
    await Bun.sleep(50);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      const rss = process.memoryUsage().rss;
      if (rss > peak) peak = rss;
    }, 10);
    ctx.defer(() => clearInterval(sampler));
    const t0 = performance.now();
    const res = await get(ids);
    if (res.status !== 200) throw new Error(`export answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    const { bytes, lines } = await consume(res);
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    const rows = lines - 1;
    if (rows !== BATCHES * SIZE) throw new Error(`export has ${rows} rows, expected ${BATCHES * SIZE}`);
    const header = (await (await get(ids.slice(0, 1))).text()).split('\r\n')[0]!;
    const rate = rows / seconds;
    const growth = peak - before;
    return {
      metrics: [
        { label: `rows/s streaming ${num(rows, 0)} rows (${mb(bytes)}, ${BATCHES} batch_ids)`, value: `${num(rate, 0)} rows/s (${num(seconds, 2)} s)`, target: `≥ ${num(TARGET_ROWS_PER_S, 0)}`, pass: rate >= TARGET_ROWS_PER_S },
        { label: 'peak RSS growth during the export (sampled every 10 ms)', value: `${mb(growth)} (from ${mb(before)} to ${mb(peak)})`, target: `< ${mb(TARGET_RSS)}`, pass: growth < TARGET_RSS },
      ],
      notes: [
        `columns: ${header}`,
        `setup (not measured): ${BATCHES} submissions in ${num(submitS, 1)} s, ${processed.recorded} results processed in ${num(processS, 1)} s ` +
          (rt.pg ? `(${await durability(rt)}).` : '(synchronous=OFF during setup only).'),
      ],
    };
  },
};
