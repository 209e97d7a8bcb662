// 12. Hostile CSV files and the rest of the service: each file is sent to a real server (server.ts, its own
// process, a fresh database each) while a third process (probe.ts) asks GET /healthz every 10 ms. For each:
// the longest time between two /healthz answers while the file was in hand, the status, the size of the
// answer and the growth of the server's RSS (sampled every 10 ms from /proc).
//
//   bun run bench stalls          as part of the suite
//   bun scripts/bench/bench-stalls.ts   on its own, printing the table
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Bench, BenchContext } from './common';
import { mb, ms, num, startBenchServer, tempDir, withTimeout } from './common';
import { resultsFile } from './bench-upload';

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
const PROBE_PAUSE_MS = 10;
/** A request not answered by then is reported as such; its server is killed. */
const ANSWER_MS = 180_000;
const MB = 1024 * 1024;

interface Case {
  label: string;
  path: string;
  file: () => string;
}

const lines = (n: number, line: (i: number) => string) => Array.from({ length: n }, (_, i) => line(i)).join('\n') + '\n';
/** Lines of `line(i)` up to `bytes`. */
function upTo(bytes: number, head: string, line: (i: number) => string): string {
  const out = [head];
  let size = head.length + 1;
  for (let i = 0; ; i++) {
    const l = line(i);
    if (size + l.length + 1 > bytes) break;
    out.push(l);
    size += l.length + 1;
  }
  return out.join('\n') + '\n';
}

const UPLOAD = '/v1/payment_results/uploads';
const disagreeing = (i: number) => `b1,ONE-REF,${1 + (i % 9)}.00,sent,2026-11-02,,,`;

export const CASES: Case[] = [
  { label: '20,000 rows of one reference that disagree', path: UPLOAD, file: () => `${HEADER}\n${lines(20_000, disagreeing)}` },
  { label: '10,000 such rows', path: UPLOAD, file: () => `${HEADER}\n${lines(10_000, disagreeing)}` },
  { label: '1 MB of `a` lines (no header)', path: UPLOAD, file: () => 'a\n'.repeat(MB / 2) },
  { label: 'the header, then 1 MB of `a` lines', path: UPLOAD, file: () => `${HEADER}\n${'a\n'.repeat(MB / 2)}` },
  { label: '10 MB of commas, no header', path: UPLOAD, file: () => ','.repeat(10 * MB - 1024) },
  {
    label: '10 MB of unmatched reference-only rows, dry run',
    path: `${UPLOAD}?dryRun=true`,
    file: () => upTo(10 * MB - 1024, HEADER, (i) => `,DRS-nobody-${i}-x,1.00,sent,2026-11-02,,,`),
  },
  {
    label: '10 MB of unmatched reference-only rows of 1 KB references full of dashes, dry run',
    path: `${UPLOAD}?dryRun=true`,
    file: () => upTo(10 * MB - 1024, HEADER, (i) => `,DRS-${'x-'.repeat(500)}${i},1.00,sent,2026-11-02,,,`),
  },
  // For comparison: an ordinary file of the same size, recorded in its one transaction.
  { label: 'a valid 10 MB results file, recorded (no borrower enrolled)', path: UPLOAD, file: () => new TextDecoder().decode(resultsFile()) },
  { label: '5 MB balance CSV of `a` lines', path: '/v1/balance_requests/csv', file: () => 'a\n'.repeat((5 * MB - 1024) / 2) },
];

interface Outcome {
  label: string;
  bytes: number;
  gapMs: number;
  status: string;
  answerBytes: number;
  rssGrowth: number;
  ms: number;
}

const rssOf = (pid: number): number => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
};

async function runCase(c: Case, log: (m: string) => void): Promise<Outcome> {
  const body = c.file();
  const dir = tempDir('stalls');
  const server = await startBenchServer(dir, {}, { maxMs: ANSWER_MS + 60_000 });
  const probe = Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'probe.ts'), `${server.url}/healthz`, '1', String(PROBE_PAUSE_MS), String(ANSWER_MS + 30_000)], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'ignore',
  });
  try {
    await Bun.sleep(500);
    Bun.gc(true);
    const rss0 = rssOf(server.proc.pid);
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(server.proc.pid))), 10);
    const form = new FormData();
    form.append('file', new Blob([body], { type: 'text/csv' }), 'file.csv');
    const t0 = Date.now();
    let status = 'no answer';
    let answerBytes = 0;
    try {
      const res = await withTimeout(
        fetch(`${server.url}${c.path}`, { method: 'POST', body: form, headers: { authorization: `Bearer ${server.apiKey}` } }).then(async (r) => ({ r, text: await r.arrayBuffer() })),
        ANSWER_MS,
        'answer',
      );
      status = String(res.r.status);
      answerBytes = res.text.byteLength;
    } catch (e) {
      status = `no answer in ${ANSWER_MS / 1000} s (${(e as Error).message})`;
    }
    const t1 = Date.now();
    clearInterval(sampler);
    await Bun.sleep(300);
    probe.stdin.write('stop\n');
    await probe.stdin.end();
    const out = await withTimeout(new Response(probe.stdout).text(), 30_000, 'probe stop');
    const { samples } = JSON.parse(out) as { samples: number[] };
    // Answers' end times; the longest time between two of them around the request is its stall.
    const ends: number[] = [];
    for (let i = 0; i < samples.length; i += 2) ends.push(samples[i]! + samples[i + 1]!);
    ends.sort((a, b) => a - b);
    let gap = 0;
    for (let i = 1; i < ends.length; i++) if (ends[i]! >= t0 && ends[i - 1]! <= t1) gap = Math.max(gap, ends[i]! - ends[i - 1]!);
    const o = { label: c.label, bytes: body.length, gapMs: gap, status, answerBytes, rssGrowth: peak - rss0, ms: t1 - t0 };
    log(`${c.label}: gap ${ms(gap, 0)}, ${status}, answer ${num(answerBytes, 0)} B, RSS +${mb(peak - rss0)}, ${ms(t1 - t0, 0)}`);
    return o;
  } finally {
    probe.kill('SIGKILL');
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runAll(ctx: Pick<BenchContext, 'log'>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const c of CASES) out.push(await runCase(c, ctx.log));
  return out;
}

export const stallsBench: Bench = {
  name: 'stalls',
  title: 'Hostile CSV files: the longest /healthz gap, status, answer size and RSS growth of each',
  timeoutMs: CASES.length * (ANSWER_MS + 60_000),
  async run(ctx) {
    const outcomes = await runAll(ctx);
    return {
      metrics: outcomes.map((o) => ({
        label: `${o.label} (${mb(o.bytes)})`,
        value: `gap ${ms(o.gapMs, 0)}; ${o.status}; answer ${mb(o.answerBytes)}; RSS +${mb(o.rssGrowth)}; ${ms(o.ms, 0)} to answer`,
      })),
      notes: [
        `GET /healthz every ${PROBE_PAUSE_MS} ms from its own process; the gap is the longest time between two of its answers while the file was in hand. Each file on a fresh server and database; RSS sampled every 10 ms from /proc.`,
      ],
    };
  },
};

if (import.meta.main) {
  // Optional arguments: only the cases whose label contains one of them.
  const only = process.argv.slice(2);
  const cases = only.length ? CASES.filter((c) => only.some((o) => c.label.includes(o))) : CASES;
  const outcomes: Outcome[] = [];
  for (const c of cases) outcomes.push(await runCase(c, (m) => console.error(m)));
  console.log('| request | size | longest /healthz gap | status | answer | RSS growth | time to answer |');
  console.log('|---|---|---|---|---|---|---|');
  for (const o of outcomes) console.log(`| ${o.label} | ${mb(o.bytes)} | ${ms(o.gapMs, 0)} | ${o.status} | ${mb(o.answerBytes)} | ${mb(o.rssGrowth)} | ${ms(o.ms, 0)} |`);
}
