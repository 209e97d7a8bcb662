// What a shared rate limit costs a request on PostgreSQL: the takes of the API key's bucket (one statement
// each) and the failed-authentication wait the gate reads first, against the in-memory buckets of SQLite.
//
//   DATABASE_URL=postgres://user@host:port/db bun scripts/bench/rate-buckets-pg.ts [TAKES]
//
// The URL names the server: the script measures on a database of its own, cloned from the migrated template,
// and drops it. Prints one line per measurement: median and p99 of one call, and calls a second.
import { RateLimiter } from '../../src/http/rate-limit';
import { openPg } from '../../src/platform/pg';
import { PgRateBuckets } from '../../src/platform/rate-buckets';
import { freshBenchDatabase, onPostgres } from './engine';

if (!onPostgres) {
  console.error('DATABASE_URL must name a PostgreSQL server (postgres://…)');
  process.exit(2);
}
const TAKES = Number(process.argv[2] ?? 2000);
const database = freshBenchDatabase();
const pg = openPg(database.url, { max: 10 });

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1)]!;
function report(label: string, one: number[], wallMs: number): void {
  const sorted = [...one].sort((a, b) => a - b);
  const f = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  console.log(`${label.padEnd(52)} median ${f(quantile(sorted, 0.5)).padStart(8)}  p99 ${f(quantile(sorted, 0.99)).padStart(8)}  ${Math.round((one.length / wallMs) * 1000)}/s`);
}

async function sequential(label: string, call: (i: number) => unknown): Promise<void> {
  const times: number[] = [];
  const start = performance.now();
  for (let i = 0; i < TAKES; i++) {
    const t = performance.now();
    await call(i);
    times.push(performance.now() - t);
  }
  report(label, times, performance.now() - start);
}

async function concurrent(label: string, width: number, call: (i: number) => Promise<unknown>): Promise<void> {
  const times: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < TAKES) {
        const i = next++;
        const t = performance.now();
        await call(i);
        times.push(performance.now() - t);
      }
    }),
  );
  report(label, times, performance.now() - start);
}

try {
  const now = Date.now();
  const memory = new RateLimiter(1_000_000, 10_000_000);
  const shared = new PgRateBuckets(pg, 'api-key', 1_000_000, 10_000_000);
  const failures = new PgRateBuckets(pg, 'auth-failures', 1, 20);
  // Warm the pool and the plans.
  for (let i = 0; i < 50; i++) await shared.take('warm', now);

  await sequential('in memory (SQLite): take, one key', () => memory.take('key-1', now));
  await sequential('PostgreSQL: take, one key, one at a time', () => shared.take('key-1', now));
  await sequential('PostgreSQL: take, a new key each time', (i) => shared.take(`key-new-${i}`, now));
  await concurrent('PostgreSQL: take, one key, 10 at once', 10, () => shared.take('key-hot', now));
  await concurrent('PostgreSQL: take, 100 keys, 10 at once', 10, (i) => shared.take(`key-${i % 100}`, now));
  await sequential('PostgreSQL: failed-auth wait (no row: the usual case)', () => failures.wait('address-hash', now));
  // Refusals: a bucket of 1 a second emptied first, then every take is refused.
  const tight = new PgRateBuckets(pg, 'tight', 1, 1);
  await tight.take('key-empty', now);
  await sequential('PostgreSQL: take refused (empty bucket)', () => tight.take('key-empty', now));
} finally {
  await pg.close();
  database.drop();
}
