// 2. Cost of synchronous=FULL: the same writes on a real file (WAL, the service's pragmas from openDatabase),
// once with synchronous=FULL (the service's setting) and once with NORMAL.
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { openDatabase, immediate, type DbHandle } from '../../src/platform/db';
import type { Bench } from './common';
import { mean, median, ms, num, percentile, tempDir } from './common';

const SINGLE_TX = 2000;
const BULK_ROWS = 1000;
const BULK_RUNS = 10;
const PAYLOAD = 'x'.repeat(200);

type Mode = 'FULL' | 'NORMAL';

function open(dir: string, mode: Mode): DbHandle {
  const h = openDatabase(join(dir, `${mode.toLowerCase()}.sqlite`));
  h.sqlite.exec(`PRAGMA synchronous = ${mode}`);
  const got = h.sqlite.query<{ synchronous: number }, []>('PRAGMA synchronous').get()!.synchronous;
  if (got !== (mode === 'FULL' ? 2 : 1)) throw new Error(`synchronous is ${got}, wanted ${mode}`);
  h.sqlite.exec('CREATE TABLE bench_writes (id INTEGER PRIMARY KEY, lender_id TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL)');
  return h;
}

function singleRowTx(h: DbHandle, n: number): number[] {
  const insert = h.sqlite.query<unknown, [string, string, number]>('INSERT INTO bench_writes (lender_id, body, created_at) VALUES (?, ?, ?)');
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    immediate(h.sqlite, () => insert.run('lender', PAYLOAD, i));
    out.push(performance.now() - t0);
  }
  return out;
}

function bulkTx(h: DbHandle, rows: number): number {
  const insert = h.sqlite.query<unknown, [string, string, number]>('INSERT INTO bench_writes (lender_id, body, created_at) VALUES (?, ?, ?)');
  const t0 = performance.now();
  immediate(h.sqlite, () => {
    for (let i = 0; i < rows; i++) insert.run('lender', PAYLOAD, i);
  });
  return performance.now() - t0;
}

export const syncBench: Bench = {
  name: 'sync',
  title: 'synchronous=FULL vs NORMAL (WAL, real file)',
  timeoutMs: 120_000,
  async run(ctx) {
    const dir = tempDir('sync');
    ctx.defer(() => rmSync(dir, { recursive: true, force: true }));
    const dbs = { FULL: open(dir, 'FULL'), NORMAL: open(dir, 'NORMAL') };
    ctx.defer(() => {
      dbs.FULL.close();
      dbs.NORMAL.close();
    });
    const single: Record<Mode, number[]> = { FULL: [], NORMAL: [] };
    const bulk: Record<Mode, number[]> = { FULL: [], NORMAL: [] };
    for (const m of ['FULL', 'NORMAL'] as const) {
      singleRowTx(dbs[m], 50);
      bulkTx(dbs[m], BULK_ROWS);
    }
    // Interleaved in rounds so drift in the disk's behaviour hits both modes alike.
    const rounds = 4;
    for (let r = 0; r < rounds; r++) {
      for (const m of ['FULL', 'NORMAL'] as const) {
        single[m].push(...singleRowTx(dbs[m], SINGLE_TX / rounds));
        for (let i = 0; i < BULK_RUNS / rounds; i++) bulk[m].push(bulkTx(dbs[m], BULK_ROWS));
      }
    }
    ctx.log(`single FULL mean ${num(mean(single.FULL))} ms, NORMAL ${num(mean(single.NORMAL))} ms`);
    const sm = { FULL: mean(single.FULL), NORMAL: mean(single.NORMAL) };
    const bm = { FULL: median(bulk.FULL), NORMAL: median(bulk.NORMAL) };
    const desc = (xs: number[]) => `mean ${ms(mean(xs))}, p50 ${ms(median(xs))}, p99 ${ms(percentile(xs, 99))}`;
    return {
      metrics: [
        { label: `${SINGLE_TX} single-row transactions, FULL, per tx`, value: desc(single.FULL) },
        { label: `${SINGLE_TX} single-row transactions, NORMAL, per tx`, value: desc(single.NORMAL) },
        { label: 'single-row tx: FULL / NORMAL (mean)', value: `${num(sm.FULL / sm.NORMAL, 1)}×  (${num(1000 / sm.FULL, 0)} vs ${num(1000 / sm.NORMAL, 0)} tx/s)` },
        { label: `one ${BULK_ROWS}-row transaction, FULL (median of ${BULK_RUNS})`, value: ms(bm.FULL) },
        { label: `one ${BULK_ROWS}-row transaction, NORMAL (median of ${BULK_RUNS})`, value: ms(bm.NORMAL) },
        { label: `${BULK_ROWS}-row tx: FULL / NORMAL`, value: `${num(bm.FULL / bm.NORMAL, 2)}×` },
      ],
      notes: [
        `FULL costs ≈ ${ms(sm.FULL - sm.NORMAL)} per commit (the WAL fsync); it is paid per transaction, not per row, ` +
          `so batching writes into fewer transactions is what keeps FULL affordable.`,
      ],
    };
  },
};
