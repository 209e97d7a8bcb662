// 4. Processing: 10 batches of 1000 authorizers against the sandbox provider with 50 ms latency per read, at
// the default concurrency, by calling processBalances until every batch is completed. Ideal wall time is
// N × latency / concurrency.
import type { Bench } from './common';
import { authorizers, benchRuntime, num, openBatches } from './common';
import { countRows } from './engine';
import { submitBalanceRequest } from '../../src/modules/balance-requests/service';
import { processBalances } from '../../src/modules/balance-requests/processing';
import type { Runtime } from '../../src/runtime';
import type { AuthedLender } from '../../src/http/auth';

const LATENCY_MS = 50;
const TARGET = 1.3;

export async function submitBatches(rt: Runtime, lender: AuthedLender, batches: number, size: number, opts: { prefix: string; metadata?: boolean }): Promise<string[]> {
  const ids: string[] = [];
  for (let b = 0; b < batches; b++) {
    const list = authorizers(`${opts.prefix}${b}`, size, { metadata: opts.metadata });
    const res = await submitBalanceRequest({ ctx: { lender, deps: rt }, input: { body: { authorizers: list } } });
    if (res.body.failed_authorizers.length > 0) throw new Error(`${res.body.failed_authorizers.length} authorizers failed validation`);
    ids.push(res.body.batch_id);
  }
  return ids;
}

/** Calls processBalances until no batch is open; returns the wall time and the number of calls. */
export async function processAll(rt: Runtime, deadlineMs: number): Promise<{ seconds: number; calls: number; recorded: number }> {
  const t0 = performance.now();
  let calls = 0;
  let recorded = 0;
  while ((await openBatches(rt)) > 0) {
    if (performance.now() - t0 > deadlineMs) throw new Error(`batches still open after ${Math.round(deadlineMs / 1000)} s`);
    calls++;
    recorded += (await processBalances(rt)).recorded;
  }
  return { seconds: (performance.now() - t0) / 1000, calls, recorded };
}

export const processingBench: Bench = {
  name: 'processing',
  title: 'Processing 10 × 1000 authorizers (50 ms reads)',
  timeoutMs: 120_000,
  async run(ctx) {
    const b = await benchRuntime({ SANDBOX_LATENCY_MS: String(LATENCY_MS) });
    ctx.defer(() => b.close());
    const { rt } = b;
    const concurrency = rt.config.balanceConcurrency;
    const batches = 10;
    const size = 1000;
    await submitBatches(rt, b.lender, batches, size, { prefix: 'proc' });
    const n = batches * size;
    const ideal = (n * LATENCY_MS) / concurrency / 1000;
    ctx.log(`submitted ${n}; ideal ${ideal} s`);
    const r = await processAll(rt, ideal * 3 * 1000);
    const results = await countRows(rt, 'SELECT COUNT(*) AS n FROM balance_results');
    if (results !== n) throw new Error(`${results} results recorded, expected ${n}`);
    const ratio = r.seconds / ideal;
    return {
      metrics: [
        { label: `wall time of processBalances, ${batches} × ${size}, concurrency ${concurrency}`, value: `${num(r.seconds)} s (${num(n / r.seconds, 0)} reads/s)` },
        { label: `ideal ${n} × ${LATENCY_MS} ms / ${concurrency}`, value: `${num(ideal)} s` },
        { label: 'wall / ideal', value: `${num(ratio, 2)}×`, target: `≤ ${TARGET}×`, pass: ratio <= TARGET },
      ],
      notes: [`${r.calls} processBalances call(s); ${r.recorded} results recorded, all ${batches} batches completed.`],
    };
  },
};
