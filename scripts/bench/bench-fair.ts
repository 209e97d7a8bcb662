// 19. Two lenders on one service: lender A uploads valid 10 MB results files back to back (every row matched
// to one of its 1,000 borrowers) while lender B sends a small write every 100 ms: a collection policy PATCH,
// then a one-authorizer balance request, and so on, each sent on time whether or not the one before was
// answered. B's write latency with A idle and while A uploads, beside A's upload rate (and A's with B idle). A real server
// (server.ts, its own process, a fresh database).
//
//   bun run bench fair            as part of the suite
//   bun scripts/bench/bench-fair.ts   on its own
import { rmSync } from 'node:fs';
import type { Bench, BenchContext, BenchResult } from './common';
import { authorizers, ms, num, percentile, startBenchServer, tempDir, type BenchServer } from './common';
import { resultsFile } from './bench-upload';
import { enrollUploadBorrowers } from './bench-stalls';
import { ENGINE_NAME } from './engine';

const FILES = 3;
const IDLE_WRITES = 50;
/** B sends a write this often, answered or not. */
const EVERY_MS = 100;
/** What one lender's upload may make another lender's small write wait. */
const TARGET_P99_MS = 500;
const UPLOAD_LIMIT_MS = 600_000;

/**
 * The same run on the code before uploads were recorded in slices (the whole file in one transaction, holding
 * the write gate throughout), on a shared 2-core machine: B's p50 / p99 / max, and A's rate while B writes.
 */
const BEFORE: Record<'SQLite' | 'PostgreSQL', string> = {
  SQLite: '3,025 ms / 8,697 ms / 8,896 ms; 14,210 rows/s',
  PostgreSQL: '28,719 ms / 57,885 ms / 59,283 ms; 2,026 rows/s',
};

async function send(server: BenchServer, key: string, method: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}`);
}

/**
 * B's writes, one every EVERY_MS (a PATCH of its collection policy and a one-authorizer balance request in
 * turn) until `done` says stop or `max` were sent: each one's time from its sending to its answer.
 */
async function writesOfB(server: BenchServer, key: string, done: () => boolean, max = Infinity): Promise<number[]> {
  const took: number[] = [];
  const sent: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; !done() && i < max; i++) {
    const wait = t0 + i * EVERY_MS - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    const start = performance.now();
    const write =
      i % 2 === 0
        ? send(server, key, 'PATCH', '/v1/collection_policy', { debit_buffer_cents: 1000 + (i % 500) })
        : send(server, key, 'POST', '/v1/balance_requests', { authorizers: authorizers(`fair-${i}`, 1) });
    sent.push(write.then(() => void took.push(performance.now() - start)));
  }
  await Promise.all(sent);
  return took;
}

async function uploadOfA(server: BenchServer, bytes: Uint8Array): Promise<number> {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'text/csv' }), 'results.csv');
  const res = await fetch(`${server.url}/v1/payment_results/uploads`, { method: 'POST', body: form, headers: { authorization: `Bearer ${server.apiKey}` } });
  const report = (await res.json()) as { row_count: number; problems: { severity: string; reason: string }[] };
  if (res.status !== 200) throw new Error(`the upload answered ${res.status}`);
  const error = report.problems.find((p) => p.severity === 'error');
  if (error) throw new Error(`the upload was refused: ${error.reason}`);
  return report.row_count;
}

const figures = (xs: number[]) => `${ms(percentile(xs, 50), 0)} / ${ms(percentile(xs, 99), 0)} / ${ms(Math.max(...xs), 0)}`;

async function measure(ctx: Pick<BenchContext, 'log'>): Promise<BenchResult> {
  const files = Array.from({ length: FILES }, (_, i) => resultsFile(`FAIR-${i}`));
  const dir = tempDir('fair');
  const server = await startBenchServer(dir, { UPLOAD_TIME_LIMIT_MS: String(UPLOAD_LIMIT_MS) }, { maxMs: 1_200_000 });
  try {
    await enrollUploadBorrowers(server);
    const b = (await (await fetch(`${server.url}/bench/lender`, { method: 'POST' })).json()) as { apiKey: string };
    const idle = await writesOfB(server, b.apiKey, () => false, IDLE_WRITES);
    ctx.log(`B alone: p50 / p99 / max ${figures(idle)}`);
    const t1 = performance.now();
    const alone = (await uploadOfA(server, resultsFile('FAIR-ALONE'))) / ((performance.now() - t1) / 1000);
    ctx.log(`A alone: ${num(alone, 0)} rows/s`);

    let uploading = true;
    const t0 = performance.now();
    const during = writesOfB(server, b.apiKey, () => !uploading);
    let rows = 0;
    try {
      for (const [i, f] of files.entries()) {
        const t = performance.now();
        rows += await uploadOfA(server, f);
        ctx.log(`A's upload ${i + 1}: ${ms(performance.now() - t, 0)}`);
      }
    } finally {
      uploading = false;
    }
    const seconds = (performance.now() - t0) / 1000;
    const took = await during;
    const p99 = percentile(took, 99);
    ctx.log(`B during A's uploads: ${took.length} writes, p50 / p99 / max ${figures(took)}; A ${num(rows / seconds, 0)} rows/s`);
    return {
      metrics: [
        { label: `B's small writes, A idle (${IDLE_WRITES}): p50 / p99 / max`, value: figures(idle) },
        { label: `B's small writes while A uploads (${num(took.length, 0)}): p50 / p99 / max`, value: figures(took) },
        { label: "B's small writes while A uploads: p99", value: ms(p99, 0), target: `< ${ms(TARGET_P99_MS, 0)}`, pass: p99 < TARGET_P99_MS },
        { label: `A's upload rate, ${FILES} files of ${num(rows / FILES, 0)} matched rows back to back while B writes`, value: `${num(rows / seconds, 0)} rows/s (${ms(seconds * 1000, 0)} in all)` },
        { label: "A's upload rate, one such file with B idle", value: `${num(alone, 0)} rows/s` },
      ],
      notes: [
        `B sends a collection policy PATCH and a one-authorizer balance request in turn, one every ${EVERY_MS} ms whether or not the one before was answered; a write's time runs from its sending to its answer. A's files name different references, so each records every row.`,
        `Before uploads were recorded in slices (the whole file one transaction, holding the write gate throughout), the same run on ${ENGINE_NAME}, B's p50 / p99 / max and A's rate: ${BEFORE[ENGINE_NAME]}.`,
      ],
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const fairBench: Bench = {
  name: 'fair',
  title: "One lender's 10 MB uploads back to back and another lender's small writes",
  timeoutMs: 1_200_000,
  run: (ctx) => measure(ctx),
};

if (import.meta.main) {
  const r = await measure({ log: (m) => console.error(m) });
  for (const m of r.metrics) console.log(`${m.label}: ${m.value}${m.target ? ` (target ${m.target})` : ''}`);
}
