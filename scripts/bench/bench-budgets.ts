// Providers' budgets kept, at a scaled time (PROVIDER_TIME_SCALE): the service's provider timeouts, Plaid's rate
// window, the Stripe request spacing and the waits are multiplied by SCALE, and so are the fakes' latencies,
// windows and pending times, so a run takes seconds where the real times would take hours.
//
// budgets-plaid: 1,000 Plaid-linked borrowers, each Item limited to 5 balance calls per (scaled) minute and holding
// 5 calls made elsewhere when the service first asks, answering in 0–25 (scaled) seconds. Every read must end in a balance, none fail
// for a timeout or a rate limit, and no Item is refused more than once.
// budgets-stripe: 1,000 Stripe-linked borrowers whose refreshes stay pending 30 (scaled) seconds, the fake Stripe
// refusing any request past 25 in a (scaled) second per key: at most 10 retrieves per account, none refused.
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
const PLAID_SCALE = 0.02;
const PLAID_MAX_LATENCY_MS = 25_000;
const STRIPE_SCALE = 0.25;
const REFRESH_PENDING_MS = 30_000;

const codes = async (rt: Runtime) =>
  (await queryRows<{ code: number; export_status: string; n: number | string }>(rt, 'SELECT status_code AS code, export_status, COUNT(*) AS n FROM balance_results GROUP BY status_code, export_status')).map((r) => ({
    code: Number(r.code),
    status: r.export_status,
    n: Number(r.n),
  }));

async function drain(rt: Runtime, deadlineMs: number): Promise<{ seconds: number; ticks: number }> {
  const t0 = performance.now();
  let ticks = 0;
  while ((await openBatches(rt)) > 0) {
    if (performance.now() - t0 > deadlineMs) throw new Error(`batches still open after ${Math.round(deadlineMs / 1000)} s`);
    ticks++;
    const { recorded } = await processBalances(rt);
    if (recorded === 0) await Bun.sleep(20);
  }
  return { seconds: (performance.now() - t0) / 1000, ticks };
}

export const budgetsPlaidBench: Bench = {
  name: 'budgets-plaid',
  title: `Plaid budgets: ${N} Items at 5 balance calls a minute, answers in 0–${PLAID_MAX_LATENCY_MS / 1000} s (time × ${PLAID_SCALE})`,
  timeoutMs: 300_000,
  async run(ctx) {
    const child = Bun.spawn(
      [process.execPath, 'run', join(import.meta.dir, 'fake-plaid-budget-process.ts'), String(N), String(PLAID_MAX_LATENCY_MS * PLAID_SCALE), String(60_000 * PLAID_SCALE)],
      { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' },
    );
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
    const b = await benchRuntime({ PLAID_API_URL: url, PROVIDER_TIME_SCALE: String(PLAID_SCALE), BANK_LINK_CONCURRENCY: '16' });
    ctx.defer(() => b.close());
    const { rt } = b;
    await createBankDataConnection({ ctx: { lender: b.lender, deps: rt }, input: { body: { provider: 'plaid', client_id: 'bench_client', secret: 'bench-secret', environment: 'sandbox' } } });
    const list = authorizers('plaidb', N).map((a, i) => ({ ...a, bank_link: { provider: 'plaid' as const, access_token: `access-sandbox-budget${i}`, account_id: 'acc_bench' } }));
    const res = await submitBalanceRequest({ ctx: { lender: b.lender, deps: rt }, input: { body: { authorizers: list } } });
    if (res.body.failed_authorizers.length > 0) throw new Error(`${res.body.failed_authorizers.length} authorizers failed validation`);
    ctx.log(`submitted ${N}; every Item's minute spent elsewhere when first asked`);
    const r = await drain(rt, 240_000);
    child.stdin.write('stats\n');
    await child.stdin.flush();
    const seen = JSON.parse(await nextLine()) as { reads: number; ok: number; refusedItems: number; afterFirst: number; max: number };
    const all = await codes(rt);
    const ok = all.filter((c) => c.code === 0).reduce((s, c) => s + c.n, 0);
    const failed = all.filter((c) => c.code !== 0);
    const attempts = await queryRows<{ n: number | string }>(rt, 'SELECT COUNT(*) AS n FROM batch_items WHERE attempts > 0');
    return {
      metrics: [
        { label: `wall time, ${N} reads (scaled ${PLAID_SCALE})`, value: `${num(r.seconds)} s` },
        { label: 'reads ending in a balance', value: String(ok), target: String(N), pass: ok === N },
        { label: 'failed (timeout, rate limit or other)', value: failed.length === 0 ? '0' : failed.map((c) => `${c.n} × ${c.code} ${c.status}`).join(', '), target: '0', pass: failed.length === 0 },
        { label: 'Items refused for rate once (their minute spent elsewhere)', value: String(seen.refusedItems), target: `≤ ${N}` },
        { label: 'calls refused for rate after the first per Item', value: String(seen.afterFirst), target: '0', pass: seen.afterFirst === 0 },
        { label: 'read attempts spent', value: String(Number(attempts[0]?.n ?? 0)), target: '0', pass: Number(attempts[0]?.n ?? 0) === 0 },
        { label: 'balance calls at Plaid (answered 200)', value: `${seen.reads} (${seen.ok})` },
      ],
      notes: [
        `PROVIDER_TIME_SCALE=${PLAID_SCALE}: answers in 0–${PLAID_MAX_LATENCY_MS * PLAID_SCALE} ms real time against a balance timeout of ${40_000 * PLAID_SCALE} ms (40 s scaled), Plaid's minute ${60_000 * PLAID_SCALE} ms; BANK_LINK_CONCURRENCY=16; ${r.ticks} processBalances calls; at most ${seen.max} in flight at Plaid.`,
      ],
    };
  },
};

export const budgetsStripeBench: Bench = {
  name: 'budgets-stripe',
  title: `Stripe budgets: ${N} accounts, refreshes pending ${REFRESH_PENDING_MS / 1000} s, 25 requests a second (time × ${STRIPE_SCALE})`,
  timeoutMs: 300_000,
  async run(ctx) {
    const stripe = startFakeStripe();
    ctx.defer(() => stripe.stop());
    const b = await benchRuntime({ STRIPE_API_URL: stripe.url, PROVIDER_TIME_SCALE: String(STRIPE_SCALE) });
    ctx.defer(() => b.close());
    const { rt } = b;
    const key = 'rk_test_benchbudgets00000000000001';
    await createBankDataConnection({ ctx: { lender: b.lender, deps: rt }, input: { body: { provider: 'stripe', api_key: key } } });
    const list = authorizers('fcb', N).map((a, i) => {
      const id = `fca_1Budget${String(i).padStart(6, '0')}`;
      stripe.control.addFcAccount(key, { id, available: 100_00 + i, current: 200_00 + i });
      return { ...a, bank_link: { provider: 'stripe' as const, account: id } };
    });
    stripe.control.setRefreshDelay(REFRESH_PENDING_MS * STRIPE_SCALE);
    // Stripe's 25 a second per key, refused past it (429), in scaled time.
    stripe.control.setRateLimit(25, 1_000 * STRIPE_SCALE);
    const res = await submitBalanceRequest({ ctx: { lender: b.lender, deps: rt }, input: { body: { authorizers: list } } });
    if (res.body.failed_authorizers.length > 0) throw new Error(`${res.body.failed_authorizers.length} authorizers failed validation`);
    const before = stripe.requests.length;
    const r = await drain(rt, 280_000);
    const all = await codes(rt);
    const ok = all.filter((c) => c.code === 0).reduce((s, c) => s + c.n, 0);
    const failed = all.filter((c) => c.code !== 0).reduce((s, c) => s + c.n, 0);
    const retrieves = list.map((a) => stripe.control.retrieves(a.bank_link.account));
    const maxRetrieves = Math.max(...retrieves);
    const meanRetrieves = retrieves.reduce((s, n) => s + n, 0) / N;
    const refreshes = list.reduce((s, a) => s + stripe.control.refreshes(a.bank_link.account), 0);
    const requests = stripe.requests.length - before;
    return {
      metrics: [
        { label: `wall time, ${N} reads (scaled ${STRIPE_SCALE})`, value: `${num(r.seconds)} s (${num(r.seconds / STRIPE_SCALE, 0)} s unscaled)` },
        { label: 'balances read', value: String(ok), target: String(N), pass: ok === N },
        { label: 'failed', value: String(failed), target: '0', pass: failed === 0 },
        { label: 'retrieves per account, most / mean', value: `${maxRetrieves} / ${num(meanRetrieves, 1)}`, target: '≤ 10', pass: maxRetrieves <= 10 },
        { label: 'refreshes asked for', value: String(refreshes), target: String(N), pass: refreshes === N },
        { label: 'requests refused for rate (over 25 in a second)', value: String(stripe.control.rateLimited(key)), target: '0', pass: stripe.control.rateLimited(key) === 0 },
        { label: 'requests per (scaled) second, mean', value: num((requests / r.seconds) * STRIPE_SCALE, 1), target: '≤ 25' },
      ],
      notes: [`PROVIDER_TIME_SCALE=${STRIPE_SCALE}: refreshes pending ${REFRESH_PENDING_MS * STRIPE_SCALE} ms real time, the fake refusing past 25 requests in ${1_000 * STRIPE_SCALE} ms; ${requests} requests; ${r.ticks} processBalances calls.`],
    };
  },
};
