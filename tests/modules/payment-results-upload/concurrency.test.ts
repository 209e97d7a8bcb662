// engine: both
// A recorded upload runs in the upload worker with its own connection, a slice of rows at a time, and the main
// thread's writes wait at the write gate while a slice's transaction holds the lock: requests sent during it
// all succeed and are committed beside every row of the upload, none of them waited on SQLite's busy lock, and
// reads were answered meanwhile. Writes go between two slices: another lender's small writes that wait for
// the upload's transaction are answered after one slice, while it is still recording. A dry run never takes
// the gate. On PostgreSQL, which has no write gate (transactions write side by side), the upload takes none:
// another lender's writes are answered while its transaction is open, and the same traffic during the same
// uploads all succeeds and is all committed beside them; and an upload's transaction that PostgreSQL undoes in
// a deadlock, its first or a later one, is run again, each row recorded once.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { gateOf } from '../../../src/platform/write-gate';
import { holdAfterFirstTransaction, uploadLock, waitingForLocks } from '../../helpers/upload-hold';
import { onPostgres } from '../../helpers/pg';
import { transaction, writeGate, type Tx } from '../../../src/platform/context';
import { writerOf } from '../../../src/platform/sql/pg';
import { sql } from 'drizzle-orm';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

/** Waits for a state (checked every few milliseconds; nothing here waits for a time). */
async function untilAsync(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; !(await check()); i++) {
    if (i > 20_000) throw new Error(`never reached: ${what}`);
    await Bun.sleep(2);
  }
}
const until = (what: string, check: () => boolean) => untilAsync(what, async () => check());

const ROWS = 60_000;
function bigFile(): Uint8Array {
  const lines = ['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code'];
  for (let i = 0; i < ROWS; i++) lines.push(`loan-${i % 5000},REF-${i},${(i % 900) + 1}.25,settled,2026-10-02,2026-10-04,,`);
  return new TextEncoder().encode(lines.join('\n') + '\n');
}

async function upload(c: TestContext, bytes: Uint8Array, dryRun: boolean) {
  const form = new FormData();
  form.append('file', new File([bytes], 'results.csv', { type: 'text/csv' }));
  const res = await c.app.handle(
    new Request(`http://localhost/v1/payment_results/uploads?dry_run=${dryRun}`, { method: 'POST', headers: { authorization: `Bearer ${c.lender.key}` }, body: form }),
  );
  return { status: res.status, body: (await res.json()) as { row_count: number; problems: unknown[] } };
}

/** Sends a small balance request and a read every 15 ms until `done`, noting which were sent while the gate was held (SQLite). */
async function traffic(c: TestContext, done: () => boolean) {
  const gate = c.rt.pg ? { held: false } : gateOf(c.sql);
  const writes: Promise<{ status: number; held: boolean }>[] = [];
  const reads: Promise<number>[] = [];
  let heldSeen = 0;
  for (let i = 0; !done(); i++) {
    const held = gate.held;
    if (held) heldSeen++;
    writes.push(c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer(`during-${i}`)] } }).then((r) => ({ status: r.status, held })));
    reads.push(c.json('GET', '/v1/payment_connections').then((r) => r.status));
    await Bun.sleep(15);
  }
  return { writes: await Promise.all(writes), reads: await Promise.all(reads), heldSeen };
}

describe('an upload and the rest of the service at once', () => {
  test('a recorded upload and concurrent writes: both committed, no write waited on SQLite, reads answered', async () => {
    const c = createTestContext();
    contexts.push(c);
    const bytes = bigFile();
    let finished = false;
    const up = upload(c, bytes, false).finally(() => {
      finished = true;
    });
    const t = await traffic(c, () => finished);
    const report = await up;

    expect(report.status).toBe(200);
    expect(report.body.row_count).toBe(ROWS);
    expect(t.writes.length).toBeGreaterThan(0);
    expect(t.writes.every((w) => w.status === 201)).toBe(true);
    expect(t.reads.every((s) => s === 200)).toBe(true);
    // Everything is there: every row of the upload and every batch.
    const count = async (sql: string) => (await c.rows<{ n: number }>(sql))[0]!.n;
    expect(await count('SELECT COUNT(*) AS n FROM uploaded_results')).toBe(ROWS);
    expect(await count('SELECT COUNT(*) AS n FROM batches')).toBe(t.writes.length);
    if (!c.rt.pg) {
      // Some requests were sent while the worker held the write lock, and waited for it without failing.
      const gate = gateOf(c.sql);
      expect(t.heldSeen).toBeGreaterThan(0);
      expect(t.writes.filter((w) => w.held).length).toBeGreaterThan(0);
      expect(gate.bypassed).toBe(0);
      expect(gate.contended).toBe(false);
      expect(await c.rt.metrics.registry.metrics()).toContain('db_write_gate_bypassed_total 0');
    }
  }, 60_000);

  test('fair writes: another lender’s small writes sent while one lender’s large upload has a transaction open are answered before the upload', async () => {
    const c = createTestContext();
    contexts.push(c);
    const borrowers = Array.from({ length: 50 }, (_, i) => enrollBorrower(`fair-${i}`));
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
    const rows = 30_000;
    const lines = ['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code'];
    for (let i = 0; i < rows; i++) lines.push(`fair-${i % 50},FAIR-${i},${(i % 900) + 1}.25,settled,2026-10-02,2026-10-04,,`);
    const other = c.newLender();
    const gate = writeGate(c.rt);
    const answered: string[] = [];
    const recorded = async () => (await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE 'FAIR-%'"))[0]!.n;
    const writes = () => [
      c.json('PATCH', '/v1/collection_policy', { key: other.key, body: { debit_buffer_cents: 2500 } }).finally(() => answered.push('policy')),
      c.json('POST', '/v1/balance_requests', { key: other.key, body: { authorizers: [bankAuthorizer('fair-other')] } }).finally(() => answered.push('balance')),
    ];
    let up: Promise<Awaited<ReturnType<typeof upload>>>;
    let answers: Awaited<ReturnType<typeof c.json>>[];

    if (!c.rt.pg) {
      // The upload's first transaction waits for this share of the write gate, and the other lender's writes
      // queue behind it: the upload takes the lock with them waiting.
      const first = await gate.share();
      up = upload(c, new TextEncoder().encode(lines.join('\n') + '\n'), false).finally(() => answered.push('upload'));
      await until('the upload asks for the write gate', () => gate.waiting === 1);
      const sent = writes();
      await until('the other lender’s writes wait behind it', () => gate.waiting === 3);
      first();
      answers = await Promise.all(sent);
      // Held now: the upload records nothing more while this share is held (it waits for the share after the
      // slice it has under way).
      const release = await gate.share();
      try {
        expect(answered).not.toContain('upload');
        expect(await recorded()).toBeGreaterThan(0);
        expect(await recorded()).toBeLessThan(rows);
      } finally {
        release();
      }
    } else {
      // The upload's first transaction is open and waits for the lender's upload lock, held here; the other
      // lender's writes are answered meanwhile, or wait at the write gate behind it.
      const lock = uploadLock(c, c.lender.id);
      await lock.taken;
      try {
        up = upload(c, new TextEncoder().encode(lines.join('\n') + '\n'), false).finally(() => answered.push('upload'));
        await untilAsync('the upload’s transaction waits for the lock', async () => (await waitingForLocks(c)) === 1);
        const sent = Promise.all(writes());
        let settled = false;
        void sent.finally(() => (settled = true));
        await until('the other lender’s writes are answered, or wait at the gate', () => settled || gate.waiting > 0);
        expect(gate.waiting).toBe(0);
        answers = await sent;
        expect(answered).not.toContain('upload');
        expect(await recorded()).toBe(0);
      } finally {
        await lock.release();
      }
    }
    const [policy, balance] = answers;
    expect(policy!.status).toBe(200);
    expect(balance!.status).toBe(201);

    const report = await up;
    expect(answered.at(-1)).toBe('upload');
    expect(report.status).toBe(200);
    expect(report.body.row_count).toBe(rows);
    // Every row once, and the other lender's writes beside them.
    expect(await recorded()).toBe(rows);
    expect((await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM uploaded_results WHERE reference LIKE 'FAIR-%'"))[0]!.n).toBe(rows);
    expect((await c.rows<{ n: number }>('SELECT COUNT(*) AS n FROM batches WHERE lender_id = ?', other.id))[0]!.n).toBe(1);
    expect((await c.json('GET', '/v1/collection_policy', { key: other.key })).body.debit_buffer_cents).toBe(2500);
    expect(gate.contended).toBe(false);
  }, 120_000);

  test('a dry run never holds the write gate', async () => {
    const c = createTestContext();
    contexts.push(c);
    const gate = c.rt.pg ? { held: false } : gateOf(c.sql);
    let finished = false;
    let held = false;
    const sampler = setInterval(() => {
      held ||= gate.held;
    }, 2);
    const up = upload(c, bigFile(), true).finally(() => {
      finished = true;
    });
    const t = await traffic(c, () => finished);
    clearInterval(sampler);
    expect((await up).body.row_count).toBe(ROWS);
    expect(held).toBe(false);
    expect(t.writes.every((w) => w.status === 201)).toBe(true);
    expect((await c.rows<{ n: number }>('SELECT COUNT(*) AS n FROM uploaded_results'))[0]!.n).toBe(0);
  }, 60_000);
});

if (onPostgres) {
  describe('an upload PostgreSQL undoes in a deadlock', () => {
    /**
     * A deadlock with the upload's next transaction: a transaction of the test holds the borrower's row
     * against every write that refers to it; once `waitsForRow()` says the upload's transaction waits for it,
     * `closeCycle()` has the holder ask for the lender's upload lock, which that transaction holds. The
     * upload's transaction waited first, so its check finds the cycle and PostgreSQL undoes it (the holder's
     * check is put off past the test). `result` is what `then` reads once the holder has the lock.
     */
    async function deadlockWith<T>(c: TestContext, aid: string, then: (tx: { deps: TestContext['rt']; tx: Tx }) => Promise<T>) {
      const [e] = await c.rows<{ id: string }>('SELECT id FROM enrollments WHERE authorizer_unique_id = ?', aid);
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      let closeCycle!: () => void;
      const closed = new Promise<void>((resolve) => (closeCycle = resolve));
      const result = transaction({ deps: c.rt }, async (tx) => {
        await writerOf(tx).execute(sql`SET LOCAL deadlock_timeout = '10min'`);
        await writerOf(tx).execute(sql`SELECT id FROM enrollments WHERE id = ${e!.id} FOR UPDATE`);
        holding();
        await closed;
        await tx.deps.stores.uploads.serializeUploads(tx, c.lender.id);
        return then(tx);
      });
      await held;
      const waitsForRow = async () =>
        (await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')"))[0]!.n === 1;
      return { waitsForRow, closeCycle, result };
    }

    /** The upload's events counted in payment_events_total: those of the transactions that committed only. */
    const eventsCounted = async (c: TestContext) =>
      (await c.rt.metrics.paymentEvents.get()).values.filter((v) => v.labels.source === 'upload').reduce((n, v) => n + v.value, 0);

    test('its transaction is run again: every row recorded once, listed once, counted once, and the answer 200', async () => {
      const c = createTestContext();
      contexts.push(c);
      expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('locked-1')] } })).status).toBe(207);
      const lines = ['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code'];
      for (let i = 0; i < 5; i++) lines.push(`locked-1,LOCKED-${i},${i + 1}0.00,settled,2026-10-02,2026-10-04,,`);
      lines.push('not-enrolled,LOCKED-X,10.00,settled,2026-10-02,2026-10-04,,');
      const lock = await deadlockWith(c, 'locked-1', async () => 'committed');
      const up = upload(c, new TextEncoder().encode(lines.join('\n') + '\n'), false);
      await untilAsync('the upload’s transaction waits for the borrower’s row', lock.waitsForRow);
      lock.closeCycle();
      // It got the upload lock: the upload's transaction, which held it, was undone.
      expect(await lock.result).toBe('committed');

      const report = await up;
      expect(report.status).toBe(200);
      expect(report.body.row_count).toBe(6);
      const body = report.body as unknown as { matched: number; rows: { reference: string }[]; problems: { row: number; reason: string }[] };
      expect(body.matched).toBe(5);
      expect(body.rows.map((r) => r.reference).sort()).toEqual(['LOCKED-0', 'LOCKED-1', 'LOCKED-2', 'LOCKED-3', 'LOCKED-4', 'LOCKED-X']);
      expect(body.problems.map((p) => p.row)).toEqual([7]);
      expect((await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM uploaded_results WHERE reference LIKE 'LOCKED-%'"))[0]!.n).toBe(6);
      expect((await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE 'LOCKED-%'"))[0]!.n).toBe(5);
      expect(await eventsCounted(c)).toBe(5);
      // One upload in the history, as answered.
      const history = (await c.json('GET', '/v1/payment_results/uploads')).body.uploads as { row_count: number }[];
      expect(history.map((h) => h.row_count)).toEqual([6]);
    }, 120_000);

    test('a later transaction of an upload, after its first is committed: run again from where the first left it, each row once, counted once', async () => {
      const c = createTestContext();
      contexts.push(c);
      expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('locked-2')] } })).status).toBe(207);
      // Two slices and a half (512 rows each on PostgreSQL): a transaction each.
      const rows = 1_200;
      const lines = ['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code'];
      for (let i = 0; i < rows; i++) lines.push(`locked-2,LATER-${i},${(i % 90) + 1}.00,${i % 10 === 0 ? 'returned' : 'settled'},2026-10-02,${i % 10 === 0 ? '' : '2026-10-04'},${i % 10 === 0 ? '2026-10-05' : ''},${i % 10 === 0 ? 'R01' : ''}`);
      lines.push('not-enrolled,LATER-X,10.00,settled,2026-10-02,2026-10-04,,');

      const hold = await holdAfterFirstTransaction(c, c.lender.id);
      const up = upload(c, new TextEncoder().encode(lines.join('\n') + '\n'), false);
      const releaseSecond = await hold.afterFirst();
      const first = (await c.rows<{ done: number }>('SELECT done FROM unfinished_uploads'))[0]!.done;
      expect(first).toBe(512);
      // The borrower's row held, then the upload's second transaction let go: it waits for the row, and the
      // holder asks for the upload lock. Undone, the upload's transaction left nothing past its first.
      const lock = await deadlockWith(c, 'locked-2', async (tx) => (await writerOf(tx).execute(sql`SELECT done FROM unfinished_uploads`)) as unknown as { done: number }[]);
      releaseSecond();
      await untilAsync('the upload’s second transaction waits for the borrower’s row', lock.waitsForRow);
      lock.closeCycle();
      expect((await lock.result).map((r) => Number(r.done))).toEqual([512]);

      const report = await up;
      expect(report.status).toBe(200);
      const body = report.body as unknown as { row_count: number; matched: number; rows: unknown[]; problems: { row: number }[] };
      expect(body.row_count).toBe(rows + 1);
      expect(body.matched).toBe(rows);
      expect(body.rows).toHaveLength(rows + 1);
      expect(body.problems.map((p) => p.row)).toEqual([rows + 2]);
      expect((await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM uploaded_results WHERE reference LIKE 'LATER-%'"))[0]!.n).toBe(rows + 1);
      expect((await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE 'LATER-%'"))[0]!.n).toBe(rows);
      expect(await eventsCounted(c)).toBe(rows);
      expect((await c.rows<{ n: number }>('SELECT COUNT(*) AS n FROM unfinished_uploads'))[0]!.n).toBe(0);
      const history = (await c.json('GET', '/v1/payment_results/uploads')).body.uploads as { row_count: number }[];
      expect(history.map((h) => h.row_count)).toEqual([rows + 1]);
    }, 120_000);
  });
}
