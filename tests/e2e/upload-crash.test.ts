// engine: both
// A results upload is recorded exactly once, whenever the process ends: the real service, killed with SIGKILL
// at random moments while an upload's slices are recorded (its first slice is recorded once unfinished_uploads
// holds it), finishes the upload after a restart, from where it stopped: every row of the file is in
// uploaded_results once, every row's outcome is one event and one entry in its borrower's ledger (a credit for
// each settled row), and the upload is in the history once, saying it was resumed. The same file uploaded again records
// nothing new. SIGTERM during the recording ends the process within SHUTDOWN_GRACE_MS, and the next start
// finishes the upload the same way.
import { afterAll, describe, expect, test } from 'bun:test';
import { enrollBorrower } from '../helpers/fixtures';
import { ServiceHarness, TEST_API_KEY, waitFor, type ServiceProcess } from '../helpers/server';
import { onPostgres } from '../helpers/pg';

/**
 * A slice of the upload is 128 rows on SQLite, in transactions of up to a second; on PostgreSQL 512 rows, a
 * transaction each, recorded about four times slower. 30,000 rows on SQLite and 12,000 on PostgreSQL are 235
 * and 24 slices, each some seconds of recording: a kill at most 1.2 s after the first commit comes mid-way.
 */
const ROWS = onPostgres ? 12_000 : 30_000;
const BORROWERS = 200;
const SETTLED = Math.floor(ROWS * 0.9);
const GRACE_MS = 500;
// The upload's own time budget (UPLOAD_TIME_LIMIT_MS, 30 s) is not what is tested here, and a machine running
// other suites beside this one can read the file for longer than that: the upload is then refused with the
// budget's row-0 error, recording nothing, which says nothing of the crash. The budget is raised.
const ENV = { LOG_LEVEL: 'error', UPLOAD_TIME_LIMIT_MS: '600000' };

/** The results file `name`: ROWS debits over the enrolled borrowers, one in ten returned (never credited). */
function fileOf(name: string): Uint8Array {
  const lines = ['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code'];
  for (let i = 0; i < ROWS; i++) {
    const returned = i % 10 === 9;
    lines.push(`loan-${i % BORROWERS},${name}-${i},${(i % 900) + 1}.50,${returned ? 'returned' : 'settled'},2026-10-02,${returned ? '' : '2026-10-05'},${returned ? '2026-10-06' : ''},${returned ? 'R01' : ''}`);
  }
  return new TextEncoder().encode(lines.join('\n') + '\n');
}

const harnesses: ServiceHarness[] = [];
// Each cleanup drops a database (on PostgreSQL) and a folder: past the 5 s a hook is given by default on a busy machine.
afterAll(async () => {
  for (const h of harnesses) await h.cleanup();
}, 60_000);

async function enroll(service: ServiceProcess): Promise<void> {
  const borrowers = Array.from({ length: BORROWERS }, (_, i) => enrollBorrower(`loan-${i}`));
  const r = await service.call('POST', '/v1/payment_enrollments', { borrowers });
  expect(r.status).toBe(207);
}

function send(service: ServiceProcess, file: Uint8Array): Promise<number> {
  const form = new FormData();
  form.append('file', new File([file], 'results.csv', { type: 'text/csv' }));
  return fetch(`${service.url}/v1/payment_results/uploads`, { method: 'POST', headers: { authorization: `Bearer ${TEST_API_KEY}` }, body: form }).then(
    (r) => r.status,
    () => -1,
  );
}

const count = (h: ServiceHarness, sql: string): number => {
  const db = h.database();
  try {
    return Number((db.query(sql).get() as { n: number | string }).n);
  } finally {
    db.close();
  }
};

/** What the database holds of the file `name`, each figure with its distinct count beside it. */
function recorded(h: ServiceHarness, name: string) {
  return {
    rows: count(h, `SELECT COUNT(*) AS n FROM uploaded_results WHERE reference LIKE '${name}-%'`),
    events: count(h, `SELECT COUNT(*) AS n FROM payment_events WHERE reference LIKE '${name}-%'`),
    eventReferences: count(h, `SELECT COUNT(DISTINCT reference) AS n FROM payment_events WHERE reference LIKE '${name}-%'`),
    ledger: count(h, `SELECT COUNT(*) AS n FROM ledger_entries WHERE reference LIKE '${name}-%'`),
    ledgerReferences: count(h, `SELECT COUNT(DISTINCT reference) AS n FROM ledger_entries WHERE reference LIKE '${name}-%'`),
    credits: count(h, `SELECT COUNT(*) AS n FROM ledger_entries WHERE reference LIKE '${name}-%' AND kind = 'credit'`),
  };
}

/** Each row's outcome once: one entry in its borrower's ledger each (a credit for each settled row). */
const whole = { rows: ROWS, events: ROWS, eventReferences: ROWS, ledger: ROWS, ledgerReferences: ROWS, credits: SETTLED };

/** Waits until the upload's first slice is recorded: unfinished_uploads holds it (or it has finished already). */
async function untilRecording(h: ServiceHarness, before: number): Promise<void> {
  await waitFor(
    'the upload’s first slice to be recorded',
    async () => count(h, 'SELECT COUNT(*) AS n FROM unfinished_uploads') > 0 || count(h, 'SELECT COUNT(*) AS n FROM payment_result_uploads') > before,
    300_000,
  );
}

/** Waits until no upload is unfinished and the history holds `uploads`. */
async function untilFinished(h: ServiceHarness, uploads: number): Promise<void> {
  await waitFor(
    'the unfinished upload to be finished',
    async () => count(h, 'SELECT COUNT(*) AS n FROM unfinished_uploads') === 0 && count(h, 'SELECT COUNT(*) AS n FROM payment_result_uploads') === uploads,
    180_000,
  );
}

describe('an upload cut off while its slices are recorded', () => {
  test('SIGKILL at random moments of the recording: after a restart each upload is recorded whole and exactly once, and in the history; the same file again records nothing new', async () => {
    const h = new ServiceHarness(ENV);
    harnesses.push(h);
    let service = await h.start();
    await enroll(service);
    const names = ['CRASHA', 'CRASHB', 'CRASHC'];
    let resumed = 0;
    for (const [trial, name] of names.entries()) {
      const answer = send(service, fileOf(name));
      await untilRecording(h, trial);
      // Somewhere in the recording: at once, or up to about a second in (its first transaction is committed).
      await Bun.sleep(Math.floor(Math.random() * [50, 400, 1200][trial]!));
      await service.kill('SIGKILL');
      const status = await answer;
      // Killed before it answered: the caller saw the connection drop.
      expect([200, -1]).toContain(status);
      if (count(h, 'SELECT COUNT(*) AS n FROM unfinished_uploads') > 0) resumed++;
      service = await h.start();
      await untilFinished(h, trial + 1);
      expect(recorded(h, name)).toEqual(whole);
    }
    // The history has each upload once with its counts; one cut off says it was resumed.
    const db = h.database();
    const history = db.query('SELECT row_count AS rows, matched, problems FROM payment_result_uploads').all() as { rows: number; matched: number; problems: string }[];
    db.close();
    expect(history).toHaveLength(names.length);
    for (const u of history) expect([Number(u.rows), Number(u.matched)]).toEqual([ROWS, ROWS]);
    expect(history.filter((u) => u.problems.includes('was interrupted after'))).toHaveLength(resumed);
    // The first kill came a few tens of milliseconds after the upload's first transaction, about a second of its
    // rows, was committed: that one at least was cut off.
    expect(resumed).toBeGreaterThan(0);

    expect(await send(service, fileOf('CRASHA'))).toBe(200);
    for (const name of names) expect(recorded(h, name)).toEqual(whole);
    expect(count(h, 'SELECT COUNT(*) AS n FROM payment_result_uploads')).toBe(names.length + 1);
    await service.kill('SIGTERM');
  }, 600_000);

  test(`SIGTERM during the recording ends the process within SHUTDOWN_GRACE_MS (${GRACE_MS} ms); the next start finishes the upload, exactly once`, async () => {
    const h = new ServiceHarness({ ...ENV, SHUTDOWN_GRACE_MS: String(GRACE_MS) });
    harnesses.push(h);
    let service = await h.start();
    await enroll(service);
    const answer = send(service, fileOf('TERM'));
    await untilRecording(h, 0);
    service.proc.kill('SIGTERM');
    expect(await service.proc.exited).toBe(0);
    // Cut during the recording, the stop not waiting for it: the caller was told (503) or saw the connection
    // close, and the next start finished it.
    const status = await answer;
    expect([503, -1]).toContain(status);
    expect(count(h, 'SELECT COUNT(*) AS n FROM unfinished_uploads')).toBe(1);
    service = await h.start();
    await untilFinished(h, 1);
    expect(recorded(h, 'TERM')).toEqual(whole);
    expect(count(h, "SELECT COUNT(*) AS n FROM payment_result_uploads WHERE problems LIKE '%was interrupted after%'")).toBe(1);
    await service.kill('SIGTERM');
  }, 300_000);
});
