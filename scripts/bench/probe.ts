// A latency probe in its own process: `workers` loops of GET `url`, each pausing `pauseMs` between requests,
// until a line (or end of input) arrives on stdin or `maxMs` passes. Then prints one JSON object:
// { samples: [startEpochMs, latencyMs, ...], errors }.
//
//   bun run scripts/bench/probe.ts URL [workers=2] [pauseMs=2] [maxMs=60000]
export {};
const [url, workersArg, pauseArg, maxArg] = process.argv.slice(2);
if (!url) {
  console.error('usage: bun run scripts/bench/probe.ts URL [workers] [pauseMs] [maxMs]');
  process.exit(2);
}
const workers = Number(workersArg ?? 2);
const pauseMs = Number(pauseArg ?? 2);
const maxMs = Number(maxArg ?? 60_000);
const headers: Record<string, string> = process.env.PROBE_AUTH ? { authorization: process.env.PROBE_AUTH } : {};

let stop = false;
const samples: number[] = [];
let errors = 0;
const t0 = performance.now();

const worker = async () => {
  while (!stop && performance.now() - t0 < maxMs) {
    const at = Date.now();
    const s = performance.now();
    try {
      const res = await fetch(url, { headers });
      await res.arrayBuffer();
      if (res.status === 200) samples.push(at, performance.now() - s);
      else errors++;
    } catch {
      errors++;
    }
    if (pauseMs > 0) await Bun.sleep(pauseMs);
  }
};

void (async () => {
  const reader = Bun.stdin.stream().getReader();
  await reader.read();
  stop = true;
})();

console.error('probe running');
await Promise.all(Array.from({ length: workers }, worker));
// Written in full before exiting: a long run's samples are more than a pipe holds, and exit would cut them.
await Bun.write(Bun.stdout, JSON.stringify({ samples, errors }) + '\n');
process.exit(0);
