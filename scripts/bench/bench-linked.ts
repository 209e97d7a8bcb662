// 14–15. Linked accounts: 1,000 Plaid-linked authorizers against the fake Plaid server at 50 ms a read, at the
// per-lender limit of reads in flight (BANK_LINK_CONCURRENCY); and 1,000 Stripe-linked authorizers whose
// balance refreshes stay pending 2 s at the fake Stripe server. Both fakes are the tests' own, on loopback.
import { join } from 'node:path';
import type { Bench } from './common';
import { authorizers, benchRuntime, num, openBatches } from './common';
import { queryRows } from './engine';
import { startFakeStripe } from '../../tests/fakes/stripe-server';
import { submitBalanceRequest } from '../../src/modules/balance-requests/service';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { createBankDataConnection } from '../../src/modules/bank-data-connections/service';
import type { Runtime } from '../../src/runtime';

const N = 1000;
const PLAID_LATENCY_MS = 50;
const PLAID_TARGET = 1.2;
const REFRESH_PENDING_MS = 2000;

const codes = async (rt: Runtime) =>
  (await queryRows<{ code: number; n: number | string }>(rt, 'SELECT status_code AS code, COUNT(*) AS n FROM balance_results GROUP BY status_code')).map((r) => ({ code: Number(r.code), n: Number(r.n) }));

/** The pipeline's ticks until every batch is completed; a tick with nothing due waits as the job's interval would. */
async function drain(rt: Runtime, deadlineMs: number): Promise<{ seconds: number; ticks: number }> {
  const t0 = performance.now();
  let ticks = 0;
  while ((await openBatches(rt)) > 0) {
    if (performance.now() - t0 > deadlineMs) throw new Error(`batches still open after ${Math.round(deadlineMs / 1000)} s`);
    ticks++;
    const { recorded } = await processBalances(rt);
    if (recorded === 0) await Bun.sleep(50);
  }
  return { seconds: (performance.now() - t0) / 1000, ticks };
}

export const linkedPlaidBench: Bench = {
  name: 'linked-plaid',
  title: `Plaid-linked balances: ${N} authorizers, ${PLAID_LATENCY_MS} ms reads`,
  timeoutMs: 120_000,
  async run(ctx) {
    // Plaid out of the service's process: its answers cost the service nothing but the network.
    const child = Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'fake-plaid-process.ts'), String(N), String(PLAID_LATENCY_MS)], {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'inherit',
    });
    ctx.defer(() => child.kill());
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = '';
    const nextLine = async (): Promise<string> => {
      for (;;) {
        const at = buffered.indexOf('\n');
        if (at >= 0) {
          const line = buffered.slice(0, at);
          buffered = buffered.slice(at + 1);
          return line;
        }
        const { value, done } = await lines.read();
        if (done) throw new Error('the fake Plaid process ended');
        buffered += value;
      }
    };
    const url = (await nextLine()).trim();
    const b = await benchRuntime({ PLAID_API_URL: url });
    ctx.defer(() => b.close());
    const { rt } = b;
    await createBankDataConnection({ ctx: { lender: b.lender, deps: rt }, input: { body: { provider: 'plaid', client_id: 'bench_client', secret: 'bench-secret', environment: 'sandbox' } } });
    const list = authorizers('plaid', N).map((a, i) => ({ ...a, bank_link: { provider: 'plaid' as const, access_token: `access-sandbox-bench${i}`, account_id: 'acc_bench' } }));
    const res = await submitBalanceRequest({ ctx: { lender: b.lender, deps: rt }, input: { body: { authorizers: list } } });
    if (res.body.failed_authorizers.length > 0) throw new Error(`${res.body.failed_authorizers.length} authorizers failed validation`);
    const limit = rt.config.bankLinkConcurrency;
    const ideal = (N * PLAID_LATENCY_MS) / limit / 1000;
    ctx.log(`submitted ${N}; ideal ${ideal} s`);
    const r = await drain(rt, ideal * 4 * 1000);
    child.stdin.write('stats\n');
    await child.stdin.flush();
    const seen = JSON.parse(await nextLine()) as { reads: number; distinct: number; max: number };
    const ok = (await codes(rt)).find((c) => c.code === 0)?.n ?? 0;
    const ratio = r.seconds / ideal;
    return {
      metrics: [
        { label: `wall time, ${N} reads, ${limit} in flight per lender`, value: `${num(r.seconds)} s (${num(N / r.seconds, 0)} reads/s)` },
        { label: `ideal ${N} × ${PLAID_LATENCY_MS} ms / ${limit}`, value: `${num(ideal)} s` },
        { label: 'wall / ideal', value: `${num(ratio, 2)}×`, target: `≤ ${PLAID_TARGET}×`, pass: ratio <= PLAID_TARGET },
        { label: 'reads at Plaid (each Item once)', value: `${seen.reads} requests, ${seen.distinct} Items`, target: `${N}, ${N}`, pass: seen.reads === N && seen.distinct === N },
        { label: 'most reads in flight at once', value: String(seen.max), target: `≤ ${limit}`, pass: seen.max <= limit },
      ],
      notes: [`${ok} of ${N} balances read; ${r.ticks} processBalances call(s); the fake Plaid server ran in a process of its own.`],
    };
  },
};

export const linkedStripeBench: Bench = {
  name: 'linked-stripe',
  title: `Stripe-linked balances: ${N} authorizers, refreshes pending ${REFRESH_PENDING_MS / 1000} s`,
  timeoutMs: 400_000,
  async run(ctx) {
    const stripe = startFakeStripe();
    ctx.defer(() => stripe.stop());
    const b = await benchRuntime({ STRIPE_API_URL: stripe.url });
    ctx.defer(() => b.close());
    const { rt } = b;
    const key = 'rk_test_benchlinked00000000000001';
    await createBankDataConnection({ ctx: { lender: b.lender, deps: rt }, input: { body: { provider: 'stripe', api_key: key } } });
    const list = authorizers('fc', N).map((a, i) => {
      const id = `fca_1Bench${String(i).padStart(6, '0')}`;
      stripe.control.addFcAccount(key, { id, available: 100_00 + i, current: 200_00 + i });
      return { ...a, bank_link: { provider: 'stripe' as const, account: id } };
    });
    stripe.control.setRefreshDelay(REFRESH_PENDING_MS);
    const res = await submitBalanceRequest({ ctx: { lender: b.lender, deps: rt }, input: { body: { authorizers: list } } });
    if (res.body.failed_authorizers.length > 0) throw new Error(`${res.body.failed_authorizers.length} authorizers failed validation`);
    const r = await drain(rt, 380_000);
    const all = await codes(rt);
    const ok = all.find((c) => c.code === 0)?.n ?? 0;
    const failed = all.filter((c) => c.code !== 0).reduce((s, c) => s + c.n, 0);
    const refreshes = list.reduce((s, a) => s + stripe.control.refreshes(a.bank_link.account), 0);
    return {
      metrics: [
        { label: `wall time, ${N} reads with ${REFRESH_PENDING_MS / 1000} s refreshes`, value: `${num(r.seconds)} s` },
        { label: 'balances read', value: String(ok), target: String(N), pass: ok === N },
        { label: 'failed', value: String(failed), target: '0', pass: failed === 0 },
        { label: 'refreshes asked for (one per account)', value: String(refreshes), target: String(N), pass: refreshes === N },
      ],
      notes: [`${r.ticks} processBalances call(s); ${stripe.requests.length} requests at the fake Stripe, ${num(stripe.requests.length / r.seconds, 1)} a second (one key: its requests leave at 22.5 a second at most).`],
    };
  },
};
