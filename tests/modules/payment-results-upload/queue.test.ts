// Uploads and the one upload worker: each lender has at most UPLOAD_WAITING_PER_LENDER uploads waiting (429
// with Retry-After past it, before the refused one's body is read), the worker takes the next upload from the
// lender served longest ago, a file has a budget of rows and of time (a row-0 error past it, nothing
// recorded), and an upload whose request ended is dropped from the queue or stopped before it records anything;
// once its first slice is recorded, it is recorded to its end.
//
// The worker is kept on its first upload by holding a share of the write gate, as a request that writes does:
// the upload has read its file and waits for the write lock, so the others queue behind it, and every
// ordering below is decided by the queue, not by how fast anything runs.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { rawConnect } from '../../helpers/raw-http';
import { gateOf } from '../../../src/platform/write-gate';
import { writeGate } from '../../../src/platform/context';
import { uploadWorkerOf, type UploadWorker } from '../../../src/modules/payment-results-upload/offload';
import { holdAfterFirstTransaction } from '../../helpers/upload-hold';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';

async function fresh(env: Record<string, string> = {}) {
  const c = createTestContext(env, { clockAt: '2026-11-21T12:00:00.000Z' });
  contexts.push(c);
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('b1')] } });
  expect(r.status).toBe(207);
  return c;
}

/** A results file of `rows` settled debits of b1, references `${prefix}-0`, `${prefix}-1`, … */
const fileOf = (prefix: string, rows: number) =>
  `${HEADER}\n${Array.from({ length: rows }, (_, i) => `b1,${prefix}-${i},${(i % 90) + 1}.00,settled,2026-11-02,2026-11-04,,`).join('\n')}\n`;

function formOf(csv: string): FormData {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'results.csv');
  return form;
}

async function post(c: TestContext, key: string, csv: string, signal?: AbortSignal) {
  const res = await c.app.handle(
    new Request('http://localhost/v1/payment_results/uploads', { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: formOf(csv), signal }),
  );
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any };
}

/** Waits for a state of the worker's queue (checked every few milliseconds; nothing here waits for a time). */
async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 4000) throw new Error(`never reached: ${what}`);
    await Bun.sleep(5);
  }
}

const count = (c: TestContext, sql: string, ...args: string[]) => (c.sql.query(sql).get(...args) as { n: number }).n;
/** The uploads recorded, in the order they were recorded, by the prefix of their references. */
const recordedOrder = (c: TestContext) => {
  const refs = (c.sql.query('SELECT reference FROM uploaded_results ORDER BY id').all() as { reference: string }[]).map((r) => r.reference.split('-')[0]!);
  return refs.filter((p, i) => i === 0 || refs[i - 1] !== p);
};

/** Holds the worker on a first upload of `key` (it waits for the write lock) until `release` is called. */
async function holdWorker(c: TestContext, worker: UploadWorker, key: string, prefix = 'A1', signal?: AbortSignal) {
  const release = await gateOf(c.sql).share();
  const first = post(c, key, fileOf(prefix, 3), signal);
  await until('the worker takes the first upload', () => worker.busy);
  return { release, first };
}

describe('uploads waiting for the worker', () => {
  test('a lender has at most UPLOAD_WAITING_PER_LENDER uploads waiting: the next is 429 with Retry-After; another lender is not refused', async () => {
    const c = await fresh({ UPLOAD_WAITING_PER_LENDER: '2' });
    const worker = uploadWorkerOf(c.rt)!;
    const { release, first } = await holdWorker(c, worker, c.lender.key);
    const waiting = [post(c, c.lender.key, fileOf('A2', 2)), post(c, c.lender.key, fileOf('A3', 2))];
    await until('two uploads of the lender wait', () => worker.waitingOf(c.lender.id) === 2);

    const refused = await post(c, c.lender.key, fileOf('A4', 2));
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('10');
    expect(refused.body.error.code).toBe('RATE_LIMITED');
    expect(refused.body.error.message).toContain('2 of your uploads are already waiting');
    expect(worker.waitingOf(c.lender.id)).toBe(2);

    const other = c.newLender();
    const others = post(c, other.key, `${HEADER}\nnobody,B1-0,1.00,sent,2026-11-02,,,\n`);
    await until('the other lender’s upload waits', () => worker.waitingOf(other.id) === 1);

    release();
    for (const r of [await first, ...(await Promise.all(waiting)), await others]) expect(r.status).toBe(200);
    expect(count(c, "SELECT COUNT(*) AS n FROM uploaded_results WHERE reference LIKE 'A4-%'")).toBe(0);
    expect(count(c, 'SELECT COUNT(*) AS n FROM uploaded_results')).toBe(3 + 2 + 2 + 1);
    expect(count(c, 'SELECT COUNT(*) AS n FROM payment_result_uploads')).toBe(4);
  }, 60_000);

  test('over a real connection: an upload past the lender’s share of waiting ones is refused before its body is read', async () => {
    const c = await fresh({ UPLOAD_WAITING_PER_LENDER: '1' });
    const worker = uploadWorkerOf(c.rt)!;
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => c.app.handle(req) });
    try {
      const { release, first } = await holdWorker(c, worker, c.lender.key);
      const waiting = post(c, c.lender.key, fileOf('A2', 2));
      await until('one upload of the lender waits', () => worker.waitingOf(c.lender.id) === 1);
      const conn = await rawConnect(server.port!);
      await conn.write(
        `POST /v1/payment_results/uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${c.lender.key}\r\n` +
          `Content-Type: multipart/form-data; boundary=b\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n--b\r\n`,
      );
      // The rest of the body never comes: any answer is one given without it (the wait only ends a hung test).
      const refused = await conn.response(30_000);
      conn.close();
      expect(refused?.status).toBe(429);
      expect(refused?.headers['retry-after']).toBe('10');
      expect(JSON.parse(refused!.body).error.message).toContain('1 of your uploads are already waiting');
      release();
      expect((await first).status).toBe(200);
      expect((await waiting).status).toBe(200);
    } finally {
      server.stop(true);
    }
  }, 60_000);

  test('round-robin across lenders: lender B’s upload is recorded before lender A’s waiting ones, which keep their order', async () => {
    const c = await fresh({ UPLOAD_WAITING_PER_LENDER: '3' });
    const worker = uploadWorkerOf(c.rt)!;
    const b = c.newLender();
    const { release, first } = await holdWorker(c, worker, c.lender.key);
    const a = [post(c, c.lender.key, fileOf('A2', 50)), post(c, c.lender.key, fileOf('A3', 50))];
    await until('A’s two uploads wait', () => worker.waitingOf(c.lender.id) === 2);
    const fromB = post(c, b.key, `${HEADER}\n,B1-0,1.00,sent,2026-11-02,,,\n`);
    await until('B’s upload waits behind them', () => worker.waitingOf(b.id) === 1);

    release();
    const answered: string[] = [];
    await Promise.all([first.then(() => answered.push('A1')), a[0]!.then(() => answered.push('A2')), a[1]!.then(() => answered.push('A3')), fromB.then(() => answered.push('B1'))]);
    expect(recordedOrder(c)).toEqual(['A1', 'B1', 'A2', 'A3']);
    expect(answered).toEqual(['A1', 'B1', 'A2', 'A3']);
  }, 60_000);
});

describe('the budget of a file', () => {
  test('more rows than UPLOAD_MAX_ROWS: one row-0 error saying so, nothing recorded; a file at the limit is recorded', async () => {
    const c = await fresh({ UPLOAD_MAX_ROWS: '50' });
    // The header and 50 data rows: 51 rows.
    const over = await post(c, c.lender.key, fileOf('OVER', 50));
    expect(over.status).toBe(200);
    expect(over.body).toMatchObject({ row_count: 0, matched: 0, rows: [] });
    expect(over.body.problems).toEqual([
      { row: 0, severity: 'error', reason: 'The file has more than 50 rows, the most one upload takes; nothing was recorded. Split it into files of fewer rows' },
    ]);
    expect(count(c, 'SELECT COUNT(*) AS n FROM uploaded_results')).toBe(0);
    expect(count(c, 'SELECT COUNT(*) AS n FROM payment_result_uploads')).toBe(0);

    const at = await post(c, c.lender.key, fileOf('AT', 49));
    expect(at.body).toMatchObject({ row_count: 49, matched: 49, problems: [] });
    expect(count(c, 'SELECT COUNT(*) AS n FROM uploaded_results')).toBe(49);
  }, 60_000);

  test('longer than UPLOAD_TIME_LIMIT_MS: one row-0 error saying so, nothing recorded (a dry run alike)', async () => {
    const c = await fresh({ UPLOAD_TIME_LIMIT_MS: '1' });
    for (const dry of [false, true]) {
      const form = formOf(fileOf('SLOW', 20_000));
      const res = await c.app.handle(
        new Request(`http://localhost/v1/payment_results/uploads?dry_run=${dry}`, { method: 'POST', headers: { authorization: `Bearer ${c.lender.key}` }, body: form }),
      );
      const body = (await res.json()) as any;
      expect(res.status).toBe(200);
      expect(body).toMatchObject({ row_count: 0, dry_run: dry, rows: [] });
      expect(body.problems).toEqual([
        {
          row: 0,
          severity: 'error',
          reason: 'The file took longer than 0.001 s to read and check, the most one upload may take before it is recorded; nothing was recorded. Split it into smaller files',
        },
      ]);
    }
    expect(count(c, 'SELECT COUNT(*) AS n FROM uploaded_results')).toBe(0);
    expect(count(c, 'SELECT COUNT(*) AS n FROM payment_result_uploads')).toBe(0);
  }, 60_000);
});

describe('an upload whose request ended', () => {
  test('waiting: it leaves the queue at once and never runs', async () => {
    const c = await fresh();
    const worker = uploadWorkerOf(c.rt)!;
    const { release, first } = await holdWorker(c, worker, c.lender.key);
    const abort = new AbortController();
    const gone = post(c, c.lender.key, fileOf('GONE', 5), abort.signal).catch(() => null);
    await until('it waits', () => worker.waitingOf(c.lender.id) === 1);
    abort.abort();
    await until('it has left the queue', () => worker.waitingOf(c.lender.id) === 0);
    release();
    expect((await first).status).toBe(200);
    await gone;
    // The worker took the next upload as usual.
    expect((await post(c, c.lender.key, fileOf('NEXT', 2))).status).toBe(200);
    expect(recordedOrder(c)).toEqual(['A1', 'NEXT']);
    expect(count(c, 'SELECT COUNT(*) AS n FROM payment_result_uploads')).toBe(2);
  }, 60_000);

  test('running: the worker stops it before its first slice, nothing of it is recorded, and the next upload runs', async () => {
    const c = await fresh();
    const worker = uploadWorkerOf(c.rt)!;
    const abort = new AbortController();
    const { release, first } = await holdWorker(c, worker, c.lender.key, 'STOPPED', abort.signal);
    const next = post(c, c.lender.key, fileOf('NEXT', 2));
    await until('the next one waits', () => worker.waitingOf(c.lender.id) === 1);
    abort.abort();
    release();
    await first.catch(() => null);
    expect((await next).status).toBe(200);
    expect(recordedOrder(c)).toEqual(['NEXT']);
    expect(count(c, "SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE 'STOPPED-%'")).toBe(0);
    expect(count(c, 'SELECT COUNT(*) AS n FROM payment_result_uploads')).toBe(1);
    expect(gateOf(c.sql).contended).toBe(false);
  }, 60_000);

  test('recording: once its first transaction is committed, it is recorded to its end and is in the history', async () => {
    const c = await fresh();
    const worker = uploadWorkerOf(c.rt)!;
    const abort = new AbortController();
    // Ten slices or more (the store's sliceRows).
    const rows = 5_000;
    // Read through the runtime's own connections, every few milliseconds, until `check` holds.
    const n = async (sql: string) => Number(Object.values((await c.rows<Record<string, number>>(sql))[0]!)[0]);
    const reach = async (what: string, check: () => Promise<boolean>) => {
      for (let i = 0; !(await check()); i++) {
        if (i > 6000) throw new Error(`never reached: ${what}`);
        await Bun.sleep(5);
      }
    };
    const hold = await holdAfterFirstTransaction(c, c.lender.id);
    const gone = post(c, c.lender.key, fileOf('LATE', rows), abort.signal).catch(() => null);
    // Its first transaction, of one slice, is committed and its next one waits; the caller hangs up meanwhile.
    const release = await hold.afterFirst();
    expect(await n('SELECT COUNT(*) AS n FROM unfinished_uploads')).toBe(1);
    expect(await n('SELECT done AS n FROM unfinished_uploads')).toBe(c.rt.stores.uploads.sliceRows);
    abort.abort();
    release();
    await gone;
    await reach('it is finished', async () => !worker.busy && (await n('SELECT COUNT(*) AS n FROM unfinished_uploads')) === 0);
    expect(await n("SELECT COUNT(*) AS n FROM uploaded_results WHERE reference LIKE 'LATE-%'")).toBe(rows);
    expect(await n("SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE 'LATE-%'")).toBe(rows);
    expect(await n(`SELECT COUNT(*) AS n FROM payment_result_uploads WHERE row_count = ${rows}`)).toBe(1);
    expect(writeGate(c.rt).contended).toBe(false);
  }, 120_000);

  test('over a real connection: a client that hangs up takes its waiting upload out of the queue', async () => {
    const c = await fresh();
    const worker = uploadWorkerOf(c.rt)!;
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => c.app.handle(req) });
    try {
      const { release, first } = await holdWorker(c, worker, c.lender.key);
      const body = new Uint8Array(await new Response(formOf(fileOf('HUNGUP', 5))).arrayBuffer());
      // The body's boundary, read from it: its first line is "--<boundary>".
      const own = new TextDecoder().decode(body.subarray(0, body.indexOf(13))).slice(2);
      expect(own.length).toBeGreaterThan(0);
      const conn = await rawConnect(server.port!);
      await conn.write(
        `POST /v1/payment_results/uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${c.lender.key}\r\n` +
          `Content-Type: multipart/form-data; boundary=${own}\r\nContent-Length: ${body.byteLength}\r\n\r\n`,
      );
      await conn.write(body);
      await until('it waits', () => worker.waitingOf(c.lender.id) === 1);
      conn.close();
      await until('it has left the queue', () => worker.waitingOf(c.lender.id) === 0);
      release();
      expect((await first).status).toBe(200);
      expect(recordedOrder(c)).toEqual(['A1']);
    } finally {
      server.stop(true);
    }
  }, 60_000);
});
