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
import { authorizers, mb, ms, num, startBenchServer, tempDir, withTimeout, type BenchServer } from './common';
import { balanceCsv } from './bench-csv';
import { resultsFile } from './bench-upload';
import { sideConnection } from './engine';

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
const PROBE_PAUSE_MS = 10;
/** A request not answered by then is reported as such; its server is killed. */
const ANSWER_MS = 180_000;
const MB = 1024 * 1024;

interface Case {
  label: string;
  path: string;
  file: () => string;
  /** Run on the fresh server before the file is sent (its database: service.sqlite in server.dir, or server.databaseUrl). */
  setup?: (server: BenchServer) => Promise<void>;
  /** Instead of sending the file: this request (the setup prepared what it reads). */
  request?: (server: BenchServer) => Promise<Response>;
  /** Small balance requests sent every 100 ms while the file is in hand: all must succeed. */
  alongside?: boolean;
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
    path: `${UPLOAD}?dry_run=true`,
    file: () => upTo(10 * MB - 1024, HEADER, (i) => `,DRS-nobody-${i}-x,1.00,sent,2026-11-02,,,`),
  },
  {
    label: '10 MB of unmatched reference-only rows of 1 KB references full of dashes, dry run',
    path: `${UPLOAD}?dry_run=true`,
    file: () => upTo(10 * MB - 1024, HEADER, (i) => `,DRS-${'x-'.repeat(500)}${i},1.00,sent,2026-11-02,,,`),
  },
  // For comparison: an ordinary file of the same size, recorded (in slices of 512 rows, in transactions that let other writes through).
  { label: 'a valid 10 MB results file, recorded (no borrower enrolled)', path: UPLOAD, file: () => new TextDecoder().decode(resultsFile()) },
  { label: '5 MB balance CSV of `a` lines', path: '/v1/balance_requests/csv', file: () => 'a\n'.repeat((5 * MB - 1024) / 2) },
  { label: 'a 5,000-row balance CSV', path: '/v1/balance_requests/csv', file: () => balanceCsv(5000, 'stall') },
  {
    label: 'a valid 10 MB results file for 1,000 enrolled borrowers, recorded, with a small balance request every 100 ms',
    path: UPLOAD,
    file: () => new TextDecoder().decode(resultsFile()),
    setup: enrollUploadBorrowers,
    alongside: true,
  },
  {
    label: 'a 100,000-row export (100 batches with metadata)',
    path: '/v1/balances/csv',
    file: () => '',
    setup: seedExport,
    request: (server) =>
      fetch(`${server.url}/v1/balances/csv?${exportBatches.map((id) => `batch_ids=${id}`).join('&')}`, { headers: { authorization: `Bearer ${server.apiKey}` } }),
  },
];

const exportBatches: string[] = [];
/**
 * 100,000 results written straight into the database beside the running server (a connection of its own), as
 * completed batches no job touches.
 */
async function seedExport(server: BenchServer): Promise<void> {
  const db = sideConnection(server);
  const pg = server.databaseUrl !== null;
  try {
    const [lender] = await db.all<{ id: string }>('SELECT id FROM lenders LIMIT 1');
    const now = Date.now();
    exportBatches.length = 0;
    await db.transaction(async (run) => {
      for (let b = 0; b < 100; b++) {
        const id = crypto.randomUUID();
        exportBatches.push(id);
        await run(
          `INSERT INTO batches (id, lender_id, source, status, submitted_at, completed_at, total_authorizers, total_processed)
           VALUES (?, ?, 'api', 'completed', ?, ?, 1000, 1000)`,
          id,
          lender!.id,
          now,
          now,
        );
        await run(
          pg
            ? `INSERT INTO batch_items (batch_id, lender_id, seq, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, state)
               SELECT ?, ?, i, 'exp-' || ?::int || '-' || i, 'ACCOUNT_NUMBER', '110000000', '+12025550143', '02139',
                      json_build_object('branch', 'north', 'n', i, 'region', 'r' || (i % 7), 'flag', true)::text, 'done'
               FROM generate_series(0, 999) AS i`
            : `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
               INSERT INTO batch_items (batch_id, lender_id, seq, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, state)
               SELECT ?, ?, i, 'exp-' || ? || '-' || i, 'ACCOUNT_NUMBER', '110000000', '+12025550143', '02139',
                      json_object('branch', 'north', 'n', i, 'region', 'r' || (i % 7), 'flag', json('true')), 'done' FROM n`,
          id,
          lender!.id,
          b,
        );
        await run(
          `INSERT INTO balance_results (item_id, batch_id, lender_id, authorizer_unique_id, balance_cents, status_code, export_status, institution, recorded_at)
           SELECT id, batch_id, lender_id, authorizer_unique_id, 1234567, 0, 'SUCCESS', 'Sandbox Bank', ? FROM batch_items WHERE batch_id = ?`,
          now,
          id,
        );
      }
    });
  } finally {
    await db.close();
  }
}

/** The 1,000 borrowers the results file names (bench-upload.ts), enrolled with no processor key: nothing is collected. */
export async function enrollUploadBorrowers(server: BenchServer): Promise<void> {
  const borrowers = authorizers('upl-', 1000).map((a, i) => ({
    ...a,
    authorizer_unique_id: `upl-${String(i).padStart(6, '0')}`,
    date_of_birth: { day: 10, month: 12, year: 1985 },
    collectable_amount: 42500,
    days_past_due: 35,
  }));
  const res = await fetch(`${server.url}/v1/payment_enrollments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ borrowers }),
  });
  if (res.status >= 300) throw new Error(`enrolling the bench borrowers answered ${res.status}`);
}

/** A one-authorizer balance request every 100 ms until `done`: how many, how many failed, the slowest. */
async function smallRequests(server: BenchServer, done: () => boolean) {
  const sent: Promise<{ status: number; ms: number }>[] = [];
  for (let i = 0; !done(); i++) {
    const t = performance.now();
    sent.push(
      fetch(`${server.url}/v1/balance_requests`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ authorizers: authorizers(`along-${i}`, 1) }),
      }).then(
        async (r) => (await r.arrayBuffer(), { status: r.status, ms: performance.now() - t }),
        () => ({ status: 0, ms: performance.now() - t }),
      ),
    );
    await Bun.sleep(100);
  }
  const all = await Promise.all(sent);
  return { sent: all.length, failed: all.filter((r) => r.status < 200 || r.status >= 300).length, slowest: Math.max(0, ...all.map((r) => r.ms)) };
}

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
    await c.setup?.(server);
    await Bun.sleep(500);
    Bun.gc(true);
    const rss0 = rssOf(server.proc.pid);
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(server.proc.pid))), 10);
    const form = new FormData();
    form.append('file', new Blob([body], { type: 'text/csv' }), 'file.csv');
    const t0 = Date.now();
    let answered = false;
    const along = c.alongside ? smallRequests(server, () => answered) : null;
    let status = 'no answer';
    let answerBytes = 0;
    try {
      const res = await withTimeout(
        (c.request ? c.request(server) : fetch(`${server.url}${c.path}`, { method: 'POST', body: form, headers: { authorization: `Bearer ${server.apiKey}` } })).then(async (r) => ({
          r,
          text: await r.arrayBuffer(),
        })),
        ANSWER_MS,
        'answer',
      );
      status = String(res.r.status);
      answerBytes = res.text.byteLength;
    } catch (e) {
      status = `no answer in ${ANSWER_MS / 1000} s (${(e as Error).message})`;
    }
    const t1 = Date.now();
    answered = true;
    const small = along ? await along : null;
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
    const alongside = small ? `; ${small.sent} small requests alongside, ${small.failed} failed, slowest ${ms(small.slowest, 0)}` : '';
    const o = { label: c.label, bytes: body.length, gapMs: gap, status: status + alongside, answerBytes, rssGrowth: peak - rss0, ms: t1 - t0 };
    log(`${c.label}: gap ${ms(gap, 0)}, ${status}, answer ${num(answerBytes, 0)} B, RSS +${mb(peak - rss0)}, ${ms(t1 - t0, 0)}${alongside}`);
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
