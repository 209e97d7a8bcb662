// An upload is recorded in slices, in transactions that end as soon as another write waits, and exactly once
// whatever stops it: the first transaction stores the upload in unfinished_uploads (its file compressed and
// sealed by the vault), each one moves its count on, and an upload cut off between two transactions (here: its
// runtime closed while the upload's next transaction waits) is finished by the upload-resume
// job of the next runtime on the same database, from its count: every row recorded once, and one history
// record saying it was resumed, listing the problems of the part it recorded and not those of the part before.
// A count behind what was recorded (slices recorded again) changes nothing. On PostgreSQL an upload whose lease
// another replica holds is left to it.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { holdAfterFirstTransaction } from '../../helpers/upload-hold';
import { releaseLease, takeLease } from '../../../src/platform/leases';
import { uploadResumeJob } from '../../../src/modules/payment-results-upload/jobs';

const contexts: TestContext[] = [];
// Each close drops a database on PostgreSQL (a psql process each).
afterAll(() => contexts.forEach((c) => c.close()), 120_000);

const AT = '2026-11-21T12:00:00.000Z';
const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
/** Data rows (rows 2 to ROWS + 1): eight slices or more (the store's sliceRows). Rows 3 and ROWS are refused (an amount of 0). */
const ROWS = 4000;
const ACCEPTED = ROWS - 2;
const BORROWERS = 20;

const file = () =>
  `${HEADER}\n${Array.from({ length: ROWS }, (_, i) => `b${i % BORROWERS},RES-${i},${i === 1 || i === ROWS - 2 ? '0' : `${(i % 90) + 1}.00`},settled,2026-11-02,2026-11-04,,`).join('\n')}\n`;

async function fresh(env: Record<string, string> = {}) {
  // One replica, restarted under the same id: on PostgreSQL it takes back at once the lease of the upload it
  // was recording (with another id it would wait for the lease to run out).
  const c = createTestContext({ REPLICA_ID: 'replica-1', ...env }, { clockAt: AT });
  contexts.push(c);
  return c;
}

function post(c: TestContext, csv: string, key = c.lender.key) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'results.csv');
  return c.app
    .handle(new Request('http://localhost/v1/payment_results/uploads', { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form }))
    .then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
}

const one = async (c: TestContext, sql: string) => Number(Object.values((await c.rows<Record<string, number>>(sql))[0]!)[0]);

/**
 * An upload of `file()` cut off between two transactions: held after its first transaction, of one slice
 * (tests/helpers/upload-hold.ts), and the runtime closed meanwhile (its worker ended). The next runtime on
 * the database.
 */
async function interrupted() {
  const c = await fresh();
  const borrowers = Array.from({ length: BORROWERS }, (_, i) => enrollBorrower(`b${i}`));
  expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
  const hold = await holdAfterFirstTransaction(c, c.lender.id);
  const answer = post(c, file());
  const release = await hold.afterFirst();
  expect(await one(c, 'SELECT COUNT(*) AS n FROM unfinished_uploads')).toBe(1);
  const stored = (await c.rows<{ done: number; matched: number; sealed: string; creator: string | null }>('SELECT done, matched, file_sealed AS sealed, creator FROM unfinished_uploads'))[0]!;
  c.rt.handle.close();
  release();
  const cut = await answer;
  const next = await fresh({ ...c.sameDatabase(), VAULT_KEY_FILE: c.rt.config.vaultKeyFile });
  return { c: next, stored: { ...stored, done: Number(stored.done), matched: Number(stored.matched) }, cut, lender: c.lender };
}

/** Every accepted row of the file recorded once: its reference, its event, its credit. */
async function expectWhole(c: TestContext) {
  expect(await one(c, "SELECT COUNT(*) AS n FROM uploaded_results WHERE reference LIKE 'RES-%'")).toBe(ACCEPTED);
  expect(await one(c, "SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE 'RES-%'")).toBe(ACCEPTED);
  expect(await one(c, "SELECT COUNT(DISTINCT reference) AS n FROM payment_events WHERE reference LIKE 'RES-%'")).toBe(ACCEPTED);
  expect(await one(c, "SELECT COUNT(*) AS n FROM ledger_entries WHERE reference LIKE 'RES-%'")).toBe(ACCEPTED);
  expect(await one(c, "SELECT COUNT(DISTINCT reference) AS n FROM ledger_entries WHERE reference LIKE 'RES-%'")).toBe(ACCEPTED);
  expect(await one(c, 'SELECT COUNT(*) AS n FROM unfinished_uploads')).toBe(0);
}

const history = async (c: TestContext) =>
  c.rows<{ id: string; lender: string; rows: number; matched: number; attention: number; creator: string | null; problems: string }>(
    'SELECT id, lender_id AS lender, row_count AS rows, matched, needs_attention AS attention, creator, problems FROM payment_result_uploads',
  );

describe('an upload cut off between two transactions', () => {
  test('is finished from its count by the next runtime: every row once, and one history record saying it was resumed', async () => {
    const { c, stored, cut, lender } = await interrupted();
    // Cut after its first transaction, of one slice: the caller is told the rest is recorded without it.
    expect(stored.done).toBe(c.rt.stores.uploads.sliceRows);
    expect(stored.matched).toBe(stored.done);
    expect(stored.sealed.startsWith('v1.')).toBe(true);
    expect(stored.creator).toMatch(/^API key /);
    expect(cut.status).toBe(503);
    expect(cut.body.error.message).toContain('need not be sent again');
    expect(await one(c, "SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE 'RES-%'")).toBe(stored.done);
    expect(await history(c)).toEqual([]);

    if (c.rt.pg) {
      // Another replica's lease on it (the one of the runtime cut off, this replica's own, run out): this one
      // leaves it to that one.
      const [id] = (await c.rows<{ id: string }>('SELECT id FROM unfinished_uploads')).map((u) => u.id);
      await releaseLease(c.rt, `upload:${id}`, 'replica-1');
      expect(await takeLease(c.rt, `upload:${id}`, 'another-replica', 60_000)).toBe(true);
      expect(await uploadResumeJob.tick(c.rt, new AbortController().signal)).toBe(0);
      expect(await one(c, 'SELECT COUNT(*) AS n FROM unfinished_uploads')).toBe(1);
      await releaseLease(c.rt, `upload:${id}`, 'another-replica');
    }
    expect(await uploadResumeJob.tick(c.rt, new AbortController().signal)).toBe(1);
    await expectWhole(c);
    const [u] = await history(c);
    expect(u).toMatchObject({ lender: lender.id, rows: ACCEPTED, matched: ACCEPTED, attention: 0, creator: stored.creator });
    const problems = JSON.parse(u!.problems) as { row: number; reason: string; severity: string }[];
    // The problem of row 3 (recorded before the interruption) was the first answer's; that of row ROWS is listed.
    const firstNotDone = stored.done + 3;
    expect(problems[0]).toEqual({
      row: 0,
      severity: 'warning',
      reason: `This upload was interrupted after ${stored.done.toLocaleString('en-US')} of its ${ACCEPTED.toLocaleString('en-US')} accepted rows were recorded, and the service finished it; the problems of the rows before row ${firstNotDone} were listed in the answer to the upload and are not listed again`,
    });
    expect(problems.map((p) => p.row)).toEqual([0, ROWS]);
    // Nothing left: the job finds nothing more to do, and the lender uploading the file again records nothing new.
    expect(await uploadResumeJob.tick(c.rt, new AbortController().signal)).toBe(0);
    const again = await post(c, file(), lender.key);
    expect(again.status).toBe(200);
    await expectWhole(c);
    expect(await history(c)).toHaveLength(2);
  }, 120_000);

  test('a count behind what was recorded: the slices recorded again change nothing', async () => {
    const { c, stored } = await interrupted();
    c.sql.exec('UPDATE unfinished_uploads SET done = 0, matched = 0');
    expect(await uploadResumeJob.tick(c.rt, new AbortController().signal)).toBe(1);
    await expectWhole(c);
    const [u] = await history(c);
    expect(u).toMatchObject({ rows: ACCEPTED, matched: ACCEPTED });
    expect(stored.done).toBeGreaterThan(0);
  }, 120_000);
});
