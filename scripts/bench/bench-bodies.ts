// 18. A burst of large bodies from one key: 60 balance CSVs of 4.6 MB sent at once to a real server (server.ts,
// its own process, a fresh database) while a third process (probe.ts) asks GET /healthz every 10 ms. The
// longest time between two /healthz answers while the burst was in hand, the server's peak RSS (VmHWM, from
// /proc), how many were accepted and how many refused, and how much of a refused body the client had handed to
// its connection when the answer came (the server reads none of it).
//
//   bun run bench bodies          as part of the suite
//   bun scripts/bench/bench-bodies.ts   on its own
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Bench } from './common';
import { mb, median, ms, num, startBenchServer, tempDir, withTimeout } from './common';
import { burst, largeCsvBody, longestGap, peakRss } from '../../tests/helpers/body-burst';

const REQUESTS = 60;
const ROWS = 5000;
const PROBE_PAUSE_MS = 10;
/** The target of the longest /healthz gap: the two admitted files are read and checked off the event loop. */
const GAP_TARGET_MS = 150;
/** The target of the peak: a burst costs the bodies the service admits, not all 60 of them. */
const PEAK_TARGET = 500 * 1024 * 1024;

interface Outcome {
  accepted: number;
  refused: number;
  other: number;
  sentAtRefusal: number;
  gapMs: number;
  answersDuring: number;
  peak: number;
  idlePeak: number;
  ms: number;
}

async function run(log: (m: string) => void): Promise<Outcome> {
  const dir = tempDir('bodies');
  const server = await startBenchServer(dir, {}, { maxMs: 240_000 });
  const probe = Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'probe.ts'), `${server.url}/healthz`, '1', String(PROBE_PAUSE_MS), '200000'], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'ignore',
  });
  try {
    const csv = largeCsvBody(ROWS, 'bench');
    const idlePeak = peakRss(server.proc.pid);
    const t0 = Date.now();
    const answers = await withTimeout(burst(`${server.url}/v1/balance_requests/csv`, server.apiKey, csv.body, csv.contentType, REQUESTS), 180_000, 'burst');
    const t1 = Date.now();
    const peak = peakRss(server.proc.pid);
    probe.stdin.write('stop\n');
    await probe.stdin.end();
    const { samples } = JSON.parse(await withTimeout(new Response(probe.stdout).text(), 30_000, 'probe stop')) as { samples: number[] };
    const ends: number[] = [];
    for (let i = 0; i < samples.length; i += 2) ends.push(samples[i]! + samples[i + 1]!);
    const refused = answers.filter((a) => a.status === 429);
    const o: Outcome = {
      accepted: answers.filter((a) => a.status === 201).length,
      refused: refused.length,
      other: answers.filter((a) => a.status !== 201 && a.status !== 429).length,
      sentAtRefusal: median(refused.map((a) => a.sentAtAnswer)),
      gapMs: longestGap(ends, t0, t1),
      answersDuring: ends.filter((e) => e > t0 && e < t1).length,
      peak,
      idlePeak,
      ms: t1 - t0,
    };
    log(
      `${REQUESTS} × ${mb(csv.body.byteLength)}: ${o.accepted} accepted, ${o.refused} refused, ${o.other} other, in ${ms(o.ms, 0)}; ` +
        `/healthz gap ${ms(o.gapMs, 0)} (${o.answersDuring} answers); peak RSS ${mb(o.peak)} (${mb(o.idlePeak)} before)`,
    );
    return o;
  } finally {
    probe.kill('SIGKILL');
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const bodiesBench: Bench = {
  name: 'bodies',
  title: `${REQUESTS} balance CSVs of 4.6 MB at once from one key: /healthz gap and peak RSS`,
  timeoutMs: 300_000,
  async run(ctx) {
    const o = await run(ctx.log);
    return {
      metrics: [
        { label: 'answers', value: `${o.accepted} accepted (201), ${o.refused} refused (429, Retry-After) unread, ${o.other} other; ${ms(o.ms, 0)} in all` },
        { label: 'longest /healthz gap during the burst', value: `${ms(o.gapMs, 0)} (${num(o.answersDuring, 0)} answers)`, target: `< ${ms(GAP_TARGET_MS, 0)}`, pass: o.gapMs < GAP_TARGET_MS },
        { label: 'peak RSS of the server', value: `${mb(o.peak)} (${mb(o.idlePeak)} before the burst)`, target: `< ${mb(PEAK_TARGET)}`, pass: o.peak < PEAK_TARGET },
        { label: 'a refused body handed to its connection by the client when refused (median)', value: o.refused > 0 ? mb(o.sentAtRefusal) : 'none refused' },
      ],
      notes: [
        `Each body streamed in 64 KB chunks with its length declared; GET /healthz every ${PROBE_PAUSE_MS} ms from its own process. ` +
          'A lender has at most 2 bodies over 1 MB in flight; the others are answered 429 before any of their body is read (what the client had ' +
          'handed to the connection by then sits in socket buffers, unread).',
      ],
    };
  },
};

if (import.meta.main) await run((m) => console.error(m));
