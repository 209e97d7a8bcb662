// POST /v1/payment_results/uploads: every rule of the spec's upload section, the re-sending rules across
// uploads, matching, dry runs, the deprecated camelCase names, rows already recorded, and property tests (valid files round-trip; random bytes never give a 5xx).
import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';

import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { readDate, readReturnCode, readStatus } from '../../../src/modules/payment-results-upload/rules';
import { EXAMPLE_FILE, Report } from '../../../src/modules/payment-results-upload/routes';

const contexts: TestContext[] = [];
// Each close drops a database on PostgreSQL (a psql process each): forty of them outlast a hook's usual time on a busy machine.
afterAll(() => contexts.forEach((c) => c.close()), 300_000);
async function fresh() {
  const c = createTestContext({}, { clockAt: '2026-11-21T12:00:00.000Z' });
  contexts.push(c);
  // Borrowers with no processor key: nothing is collected by the service, so only uploads move them.
  await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('b1'), enrollBorrower('b2'), enrollBorrower('b3')] } });
  return c;
}
const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
async function upload(c: TestContext, csv: string | Uint8Array, opts: { dryRun?: boolean; key?: string } = {}) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'results.csv');
  return c.json('POST', `/v1/payment_results/uploads${opts.dryRun ? '?dry_run=true' : ''}`, { form, ...(opts.key ? { key: opts.key } : {}) });
}
const events = async (c: TestContext, aid: string) =>
  ((await c.json('GET', `/v1/payment_events?authorizer_unique_id=${aid}`)).body.events as { status: string; return_code?: string; source: string; reference: string; occurred_at: string }[]);

describe('row rules: each with a passing and a failing row, and its problems entry', () => {
  const good = 'b1,REF-OK,425.00,settled,2026-11-02,2026-11-04,,';
  const cases: [string, string, { row: number; reason: string; severity: string }[]][] = [
    ['1: amount missing', 'b1,R1A,,settled,2026-11-02,2026-11-04,,', [{ row: 3, reason: 'payment_amount is missing', severity: 'error' }]],
    ['1: amount unreadable', 'b1,R1B,12.345,settled,2026-11-02,2026-11-04,,', [{ row: 3, reason: 'payment_amount is not a positive amount in dollars with at most two decimals, at most $10,000,000,000.00', severity: 'error' }]],
    ['1: amount zero', 'b1,R1C,0,settled,2026-11-02,2026-11-04,,', [{ row: 3, reason: 'payment_amount is not a positive amount in dollars with at most two decimals, at most $10,000,000,000.00', severity: 'error' }]],
    ['1: amount negative', 'b1,R1D,-5,settled,2026-11-02,2026-11-04,,', [{ row: 3, reason: 'payment_amount is not a positive amount in dollars with at most two decimals, at most $10,000,000,000.00', severity: 'error' }]],
    ['1: amount over the maximum', 'b1,R1E,10000000000.01,settled,2026-11-02,2026-11-04,,', [{ row: 3, reason: 'payment_amount is not a positive amount in dollars with at most two decimals, at most $10,000,000,000.00', severity: 'error' }]],
    ['1: status missing', 'b1,R1E,10,,2026-11-02,,,', [{ row: 3, reason: 'payment_status is missing', severity: 'error' }]],
    ['1: submitted_at missing', 'b1,R1F,10,sent,,,,', [{ row: 3, reason: 'submitted_at is missing', severity: 'error' }]],
    ['1: identifier missing', ',,10,sent,2026-11-02,,,', [{ row: 3, reason: 'authorizer_unique_id or reference is required', severity: 'error' }]],
    ['1: settled without settled_at', 'b1,R1G,10,settled,2026-11-02,,,', [{ row: 3, reason: 'settled_at is required on a settled row', severity: 'error' }]],
    ['1: returned without returned_at and code', 'b1,R1H,10,returned,2026-11-02,,,', [
      { row: 3, reason: 'returned_at is required on a returned row', severity: 'error' },
      { row: 3, reason: 'return_code is required on a returned row', severity: 'error' },
    ]],
    ['1: date unreadable', 'b1,R1I,10,sent,2026-13-45,,,', [
      { row: 3, reason: 'submitted_at is not a date (YYYY-MM-DD, MM/DD/YYYY, MM/DD/YY, MM/DD/YYYY HH:MM or ISO 8601)', severity: 'error' },
    ]],
    ['2: settled before submitted', 'b1,R2A,10,settled,2026-11-05,2026-11-04,,', [{ row: 3, reason: 'settled_at is earlier than submitted_at', severity: 'error' }]],
    ['2: returned more than a day ahead', 'b1,R2B,10,returned,2026-11-05,,2026-11-25,R01', [{ row: 3, reason: 'returned_at is more than one day in the future', severity: 'error' }]],
    ['3: late return before its settlement', 'b1,R3A,10,late_return,2026-11-01,2026-11-10,2026-11-05,R01', [{ row: 3, reason: 'returned_at is earlier than settled_at', severity: 'error' }]],
    ['4: settled with a return code', 'b1,R4A,10,settled,2026-11-02,2026-11-04,,R01', [{ row: 3, reason: 'a settled row has no return code', severity: 'error' }]],
    ['5: status not accepted', 'b1,R5A,10,bounced,2026-11-02,,,', [
      { row: 3, reason: 'payment_status is not one of settled, returned, late_return, pending, sent, voided, invalid, refunded, not_attempted (or paid, rejected, reversed)', severity: 'error' },
    ]],
  ];
  for (const [name, bad, expected] of cases) {
    test(`rule ${name}`, async () => {
      const c = await fresh();
      const r = await upload(c, `${HEADER}\n${good}\n${bad}\n`);
      expect(r.status).toBe(200);
      expect(r.body.problems).toEqual(expected);
      expect(r.body.row_count).toBe(1);
      expect(r.body.data_row_count).toBe(2);
      expect(r.body.rows.map((x: { row: number }) => x.row)).toEqual([2]);
    });
  }

  test('rule 6: rows of one reference that disagree are all rejected; identical ones count once', async () => {
    const c = await fresh();
    const r = await upload(
      c,
      `${HEADER}\nb1,DUP,10,settled,2026-11-02,2026-11-04,,\nb1,DUP,11,settled,2026-11-02,2026-11-04,,\nb2,TWICE,12,sent,2026-11-02,,,\nb2,TWICE,12,sent,2026-11-02,,,\n`,
    );
    expect(r.body.problems).toEqual([
      { row: 2, reason: '2 rows for reference DUP, from row 2, disagree; all of them are rejected', severity: 'error' },
      { row: 3, reason: '2 rows for reference DUP, from row 2, disagree; all of them are rejected', severity: 'error' },
      { row: 5, reason: 'identical to row 4 for reference TWICE; counted once', severity: 'warning' },
    ]);
    expect(r.body.row_count).toBe(1);
    expect(r.body.rows).toEqual([{ row: 4, reference: 'TWICE', authorizer_unique_id: 'b2', status: 'sent', amount_cents: 1200, authorizerUniqueId: 'b2', amountCents: 1200 }]);
  });

  test('a header without the required columns: a row-0 error, nothing recorded', async () => {
    const c = await fresh();
    const r = await upload(c, 'authorizer_unique_id,payment_status\nb1,settled\n');
    expect(r.status).toBe(200);
    expect(r.body.problems).toHaveLength(1);
    expect(r.body.problems[0]).toMatchObject({ row: 0, severity: 'error' });
    expect(r.body.problems[0].reason).toContain('an amount column');
    expect(r.body.row_count).toBe(0);
    expect(await events(c, 'b1')).toEqual([]);
  });

  test('blank rows, summary rows and #N/A, N/A, - cells', async () => {
    const c = await fresh();
    const r = await upload(c, `${HEADER}\n\n,,,,,,,\nb1,BLANKS,10,sent,2026-11-02,#N/A,N/A,-\n,,1000.00,,,,,\n`);
    expect(r.body).toMatchObject({ row_count: 1, data_row_count: 1, problems: [] });
  });

  test('a "Total" row a spreadsheet adds is skipped as a summary row, not reported twice', async () => {
    const c = await fresh();
    const r = await upload(c, `${HEADER}\nb1,TOT-1,10,sent,2026-11-02,,,\nTotal,,10.00,,,,,\n,Grand total:,10.00,,,,,\nSUM,,10,,,,,\n`);
    expect(r.body).toMatchObject({ row_count: 1, data_row_count: 1, problems: [] });
    // A row with a status is a payment whatever its identifier says.
    const named = await upload(c, `${HEADER}\nTotal,TOT-2,10,sent,2026-11-02,,,\n`);
    expect(named.body).toMatchObject({ row_count: 1, data_row_count: 1, needs_attention: 1 });
  });

  test('a row naming a borrower who is not enrolled says so', async () => {
    const c = await fresh();
    const r = await upload(c, `${HEADER}\nnobody-7,NB-1,10,sent,2026-11-02,,,\n`);
    expect(r.body.needs_attention).toBe(1);
    expect(r.body.problems).toEqual([
      { row: 2, reason: 'the borrower nobody-7 is not enrolled; stored, it is matched when uploaded again after the borrower is enrolled', severity: 'warning' },
    ]);
  });
});

describe('reading cells', () => {
  test('column aliases and a header with spaces and punctuation', async () => {
    const c = await fresh();
    const r = await upload(c, 'Authorizer ID,Payment Reference,Amount,Outcome,Payment Date,Settlement Date,Return Date,Return Reason,Batch ID\nb1,AL-1,"$1,234.56",PAID,11/02/2026,11/04/2026,,,\n');
    expect(r.body.problems).toEqual([]);
    expect(r.body.rows[0]).toEqual({ row: 2, reference: 'AL-1', authorizer_unique_id: 'b1', status: 'settled', amount_cents: 123456, authorizerUniqueId: 'b1', amountCents: 123456 });
    const r2 = await upload(c, 'authorizer_id,reference,amount,status,submitted,settled_date,returned_date,return_code\nb2,AL-2,5,Rejected,2026-11-02,,2026-11-03,R09\n');
    expect(r2.body.rows[0]).toMatchObject({ authorizer_unique_id: 'b2', status: 'returned' });
  });

  test('statuses and their aliases, case-insensitive', () => {
    expect(['settled', 'PAID', 'Returned', 'rejected', 'late_return', 'Reversed', 'pending', 'sent', 'voided', 'invalid', 'refunded', 'not_attempted'].map(readStatus)).toEqual([
      'settled', 'settled', 'returned', 'returned', 'late_return', 'late_return', 'pending', 'sent', 'voided', 'invalid', 'refunded', 'not_attempted',
    ]);
    expect(readStatus('bounced')).toBeNull();
  });

  test('the five date formats, with and without a time zone', () => {
    const at = (s: string) => new Date(readDate(s)!).toISOString();
    expect(at('2026-11-02')).toBe('2026-11-02T00:00:00.000Z');
    expect(at('11/02/2026')).toBe('2026-11-02T00:00:00.000Z');
    expect(at('11/02/26')).toBe('2026-11-02T00:00:00.000Z');
    expect(at('11/02/2026 14:30')).toBe('2026-11-02T14:30:00.000Z');
    expect(at('2026-11-02T14:30:00')).toBe('2026-11-02T14:30:00.000Z');
    expect(at('2026-11-02T14:30:00Z')).toBe('2026-11-02T14:30:00.000Z');
    expect(at('2026-11-02T14:30:00-05:00')).toBe('2026-11-02T19:30:00.000Z');
    for (const bad of ['2026-02-30', '13/01/2026', '2026/11/02', 'yesterday', '11-02-2026']) expect(readDate(bad)).toBeNull();
  });

  test('return codes', async () => {
    expect(['R01', 'r01', 'R1', 'R01 - Insufficient Funds', 'insufficient funds', 'payment stopped', 'R16'].map(readReturnCode)).toEqual(['R01', 'R01', 'R01', 'R01', 'R01', 'R08', 'R16']);
    for (const bad of ['', '0', 'account closed', 'funds']) expect(readReturnCode(bad)).toBeNull();
    const c = await fresh();
    const r = await upload(c, `${HEADER}\nb1,RC1,10,returned,2026-11-02,,2026-11-03,0\nb1,RC2,10,returned,2026-11-02,,2026-11-03,not sure\nb1,RC3,10,sent,2026-11-02,,,anything\n`);
    expect(r.body.problems).toEqual([
      { row: 2, reason: 'return_code is not an ACH return code (such as R01, or "insufficient funds")', severity: 'error' },
      { row: 3, reason: 'return_code is not an ACH return code (such as R01, or "insufficient funds")', severity: 'error' },
    ]);
    expect(r.body.row_count).toBe(1);
  });
});

describe('recording', () => {
  test('sent → settled → late_return over three uploads; events, ledger and monitor follow; a date filled in later, never changed', async () => {
    const c = await fresh();
    await upload(c, `${HEADER}\nb1,INV-9,425.00,sent,2026-11-02,,,\n`);
    expect((await events(c, 'b1')).map((e) => e.status)).toEqual(['processing']);
    await upload(c, `${HEADER}\nb1,INV-9,425.00,settled,2026-11-02,2026-11-04,,\n`);
    // An identical row changes nothing, and says so; a later undated status does not replace the settled one.
    const again = await upload(c, `${HEADER}\nb1,INV-9,425.00,settled,2026-11-02,2026-11-04,,\nb2,X-1,1.00,sent,2026-11-02,,,\n`);
    expect(again.body.problems).toEqual([
      { row: 2, reason: 'reference INV-9 is already recorded as settled by an earlier upload; this row adds nothing and is not recorded again', severity: 'warning' },
    ]);
    expect(again.body).toMatchObject({ row_count: 2, already_recorded: 1 });
    const undated = await upload(c, `${HEADER}\nb1,INV-9,425.00,sent,2026-11-02,,,\n`);
    expect(undated.body.problems[0].reason).toContain('does not replace the settled outcome');
    await upload(c, `${HEADER}\nb1,INV-9,425.00,late_return,2026-11-02,,2026-11-10,R10\n`);
    const evs = await events(c, 'b1');
    expect(evs.map((e) => `${e.status}${e.return_code ? ':' + e.return_code : ''}`)).toEqual(['processing', 'settled', 'late_returned:R10']);
    expect(evs.every((e) => e.source === 'upload' && e.reference === 'INV-9')).toBe(true);
    const view = (await c.json('GET', '/v1/payment_enrollments/b1')).body;
    expect(view.ledger).toMatchObject({ collected: 42500, reversed: 42500, net: 0 });
    expect(view.state).toBe('stopped');
    // The late return came without settled_at: the settlement date recorded earlier stays.
    const stored = c.sql.query("SELECT settled_at AS s, returned_at AS r FROM uploaded_results WHERE reference = 'INV-9'").get() as { s: number; r: number };
    expect(new Date(stored.s).toISOString()).toBe('2026-11-04T00:00:00.000Z');
    const later = await upload(c, `${HEADER}\nb1,INV-9,425.00,late_return,2026-11-02,2026-11-06,2026-11-10,R10\n`);
    expect(later.body.problems).toEqual([
      { row: 2, reason: 'reference INV-9 is already recorded as late_return by an earlier upload; this row adds nothing and is not recorded again', severity: 'warning' },
    ]);
    expect((c.sql.query("SELECT settled_at AS s FROM uploaded_results WHERE reference = 'INV-9'").get() as { s: number }).s).toBe(stored.s);
  });

  test('an outcome dated before the latest recorded one is ignored with a warning', async () => {
    const c = await fresh();
    await upload(c, `${HEADER}\nb1,OLD,10,returned,2026-11-02,,2026-11-10,R01\n`);
    const r = await upload(c, `${HEADER}\nb1,OLD,10,settled,2026-11-02,2026-11-05,,\n`);
    expect(r.body.problems).toEqual([{ row: 2, reason: 'its outcome date is earlier than the latest outcome recorded for reference OLD; ignored', severity: 'warning' }]);
    expect((await events(c, 'b1')).map((e) => e.status)).toEqual(['returned']);
  });

  test('a row whose outcome cannot be recorded is set aside alone; the rows around it are recorded and counted once', async () => {
    const c = await fresh();
    // A fault the recorder cannot foresee, in the database (the upload worker has its own connection).
    if (c.rt.pg) {
      c.sql.exec(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RAISE EXCEPTION ''injected fault''; END';
                  CREATE TRIGGER poison BEFORE INSERT ON payment_events FOR EACH ROW WHEN (NEW.reference = 'POISON') EXECUTE FUNCTION poison()`);
    } else c.sql.run("CREATE TRIGGER poison BEFORE INSERT ON payment_events WHEN NEW.reference = 'POISON' BEGIN SELECT RAISE(ABORT, 'injected fault'); END");
    const r = await upload(c, `${HEADER}\nb1,FINE-1,10,settled,2026-11-02,2026-11-04,,\nb2,POISON,10,settled,2026-11-02,2026-11-04,,\nb3,FINE-3,10,returned,2026-11-02,,2026-11-05,R01\n`);
    c.sql.exec(c.rt.pg ? 'DROP TRIGGER poison ON payment_events; DROP FUNCTION poison()' : 'DROP TRIGGER poison');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ row_count: 3, matched: 3 });
    expect(r.body.problems).toEqual([{ row: 3, reason: 'the outcome could not be recorded for reference POISON; it was set aside for the operator', severity: 'error' }]);
    expect((await events(c, 'b1')).map((e) => e.status)).toEqual(['settled']);
    expect((await events(c, 'b3')).map((e) => `${e.status}:${e.return_code}`)).toEqual(['returned:R01']);
    expect(await events(c, 'b2')).toEqual([]);
    expect(c.sql.query('SELECT reference, status, source, error FROM payment_observations_set_aside').all()).toEqual([{ reference: 'POISON', status: 'settled', source: 'upload', error: 'injected fault' }]);
    // Nothing of the set-aside row was half written; the others' ledger and monitor moved.
    expect((await c.json('GET', '/v1/payment_enrollments/b2')).body.ledger).toMatchObject({ collected: 0 });
    expect((await c.json('GET', '/v1/payment_enrollments/b1')).body.ledger).toMatchObject({ collected: 1000 });
    const metric = async (name: string) => await c.rt.metrics.registry.getSingleMetricAsString(name);
    expect(await metric('payment_observations_set_aside_total')).toContain('source="upload"} 1');
    expect(await metric('payment_events_total')).toMatch(/status="settled",source="upload"} 1$/m);
    expect(await metric('payment_events_total')).toMatch(/status="returned",source="upload"} 1$/m);
  });

  test('a matched R02 stops monitoring, a matched R01 does not', async () => {
    const c = await fresh();
    await upload(c, `${HEADER}\nb1,R-02,10,returned,2026-11-02,,2026-11-03,R02\nb2,R-01,10,returned,2026-11-02,,2026-11-03,R01\n`);
    expect((await c.json('GET', '/v1/payment_enrollments/b1')).body).toMatchObject({ state: 'stopped', reason: 'R02' });
    expect((await c.json('GET', '/v1/payment_enrollments/b2')).body.state).toBe('monitored');
  });

  test('rows without a reference get UPL-{borrower}-{cents}-{date}; by reference only, DRS- references match one borrower', async () => {
    const c = await fresh();
    const r = await upload(c, `${HEADER}\nb1,,425.00,sent,2026-11-02,,,\n,DRS-b3-INV-5,10.00,sent,2026-11-02,,,\n,SOMETHING,10.00,sent,2026-11-02,,,\n`);
    expect(r.body.rows.map((x: { reference: string; authorizer_unique_id: string | null }) => [x.reference, x.authorizer_unique_id])).toEqual([
      ['UPL-b1-42500-2026-11-02', 'b1'],
      ['DRS-b3-INV-5', 'b3'],
      ['SOMETHING', null],
    ]);
    expect(r.body).toMatchObject({ matched: 2, needs_attention: 1 });
    expect(r.body.problems).toEqual([
      { row: 4, reason: 'no enrolled borrower matches reference SOMETHING; stored, it is matched when uploaded again with authorizer_unique_id', severity: 'warning' },
    ]);
    // Uploaded again with the identifier: matched, and its status recorded for the borrower.
    const again = await upload(c, `${HEADER}\nb2,SOMETHING,10.00,sent,2026-11-02,,,\n`);
    expect(again.body).toMatchObject({ matched: 1, needs_attention: 0 });
    expect((await events(c, 'b2')).map((e) => e.reference)).toEqual(['SOMETHING']);
  });

  test("another lender's borrower never matches", async () => {
    const c = await fresh();
    const other = c.newLender();
    const r = await upload(c, `${HEADER}\nb1,THEIRS,10,sent,2026-11-02,,,\n`, { key: other.key });
    expect(r.body).toMatchObject({ matched: 0, needs_attention: 1 });
    expect(await events(c, 'b1')).toEqual([]);
  });

  test('a dry run leaves the database byte-for-byte unchanged and returns the same report', async () => {
    const c = await fresh();
    const csv = `${HEADER}\nb1,DRY,425.00,settled,2026-11-02,2026-11-04,,\nb2,DRY-2,5.00,returned,2026-11-02,,2026-11-03,R02\n`;
    // The SQLite file after a checkpoint, or on PostgreSQL every row of every table (pg_dump of the data).
    // On PostgreSQL the request gate's token buckets are kept in the database too (shared by replicas): every
    // request spends a token, dry run or not, so that table is left out of the comparison.
    const stored = () => {
      if (c.rt.pg) return Buffer.from(c.storedText().replace(/^COPY public\.rate_buckets [^\n]*\n[\s\S]*?^\\\.\n/m, ''));
      c.sql.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      return readFileSync(c.rt.config.databasePath);
    };
    const before = stored();
    const dry = await upload(c, csv, { dryRun: true });
    expect(Buffer.compare(stored(), before)).toBe(0);
    expect(dry.body.dry_run).toBe(true);
    const real = await upload(c, csv);
    expect({ ...real.body, dry_run: true, dryRun: true }).toEqual(dry.body);
    expect((await events(c, 'b1')).length).toBe(1);
  });

  test('an annotated export from GET /v1/balances/csv, with payment columns added, works as it is', async () => {
    const c = await fresh();
    const sub = await c.json('POST', '/v1/balance_requests', { body: { authorizers: [{ authorizer_unique_id: 'b1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' }] } });
    await processBalances(c.rt);
    const exported = await (await c.request('GET', `/v1/balances/csv?batch_ids=${sub.body.batch_id}`)).text();
    const [header, row] = exported.trim().split('\r\n');
    const csv = `${header},payment_status,payment_amount,payment_date,settled_at,returned_at,return_code\r\n${row},settled,425.00,2026-11-02,2026-11-04,,\r\n`;
    const r = await upload(c, csv);
    expect(r.body).toMatchObject({ format: 'annotated_export', row_count: 1, matched: 1, problems: [] });
    expect(r.body.rows[0]).toMatchObject({ authorizer_unique_id: 'b1', status: 'settled' });
  });
});

describe('the file', () => {
  test('malformed CSV: the row is named, the cell is not quoted, and nothing is recorded', async () => {
    const c = await fresh();
    const r = await upload(c, `${HEADER}\nb1,OK-1,10,sent,2026-11-02,,,\nb2,"SECRET-CELL,10,sent,2026-11-02,,,\n`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ row_count: 0, matched: 0 });
    expect(r.body.problems).toEqual([{ row: 3, reason: 'Malformed CSV at row 3: a quoted cell is never closed; nothing was recorded', severity: 'error' }]);
    expect(JSON.stringify(r.body)).not.toContain('SECRET');
    expect(await events(c, 'b1')).toEqual([]);
  });

  test('the documented example file gives the documented report', async () => {
    const c = createTestContext({}, { clockAt: '2026-11-21T12:00:00.000Z' });
    contexts.push(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('loan-1001'), enrollBorrower('loan-1002')] } });
    const r = await upload(c, EXAMPLE_FILE, { dryRun: true });
    expect(r.status).toBe(200);
    expect({ ...r.body, dry_run: false, dryRun: false }).toEqual((Report as unknown as { examples: unknown[] }).examples[0]);
  });

  test('not UTF-8 → 400 BAD_REQUEST; over 10 MB → 400; a byte-order mark is fine', async () => {
    const c = await fresh();
    const latin1 = new Uint8Array([...new TextEncoder().encode(`${HEADER}\nb1,X,10,sent,2026-11-02,,,Jos`), 0xe9, 0x0a]);
    const r = await upload(c, latin1);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('BAD_REQUEST');
    const big = new Uint8Array(10 * 1024 * 1024 + 1).fill(0x61);
    expect((await upload(c, big)).status).toBe(400);
    const bom = await upload(c, `\uFEFF${HEADER}\nb1,BOM,10,sent,2026-11-02,,,\n`);
    expect(bom.body).toMatchObject({ row_count: 1, problems: [] });
  }, 90_000);

  test('property: a generated valid file round-trips into the report with matching counts', async () => {
    const c = await fresh();
    const arbRow = fc.record({
      aid: fc.constantFrom('b1', 'b2', 'b3', 'nobody'),
      cents: fc.integer({ min: 1, max: 10_000_000 }),
      status: fc.constantFrom('settled', 'sent', 'pending', 'voided'),
      day: fc.integer({ min: 1, max: 9 }),
    });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(arbRow, { minLength: 1, maxLength: 20 }), async (rows) => {
        const lines = rows.map((r) => {
          const ref = `P${++n}`;
          const date = `2026-11-0${r.day}`;
          return `${r.aid},${ref},${(r.cents / 100).toFixed(2)},${r.status},${date},${r.status === 'settled' ? date : ''},,`;
        });
        const res = await upload(c, `${HEADER}\n${lines.join('\n')}\n`, { dryRun: true });
        expect(res.status).toBe(200);
        expect(res.body.problems.filter((p: { severity: string }) => p.severity === 'error')).toEqual([]);
        expect(res.body.row_count).toBe(rows.length);
        expect(res.body.data_row_count).toBe(rows.length);
        expect(res.body.matched).toBe(rows.filter((r) => r.aid !== 'nobody').length);
        expect(res.body.matched + res.body.needs_attention).toBe(res.body.row_count);
        expect(res.body.rows.map((x: { amount_cents: number }) => x.amount_cents)).toEqual(rows.map((r) => r.cents));
      }),
      { numRuns: 40 },
    );
  }, 180_000);

  test('property: over successive uploads of overlapping references, a dry run reports exactly what the upload then does', async () => {
    const c = await fresh();
    const arbRow = fc.record({
      aid: fc.constantFrom('b1', 'b2', 'b3', 'nobody', ''),
      ref: fc.constantFrom('R-1', 'R-2', 'R-3', 'DRS-b2-9', ''),
      cents: fc.constantFrom(1000, 2500),
      status: fc.constantFrom('settled', 'sent', 'pending', 'returned', 'late_return', 'voided'),
      code: fc.constantFrom('R01', 'R02', 'R09'),
      day: fc.integer({ min: 1, max: 8 }),
      settledDay: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(arbRow, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }), async (files) => {
        for (const rows of files) {
          const lines = rows.map((r) => {
            const sub = `2026-11-0${r.day}`;
            const settled = r.status === 'settled' || r.status === 'late_return' ? `2026-11-0${Math.max(r.day, r.settledDay ?? r.day)}` : '';
            const returned = r.status === 'returned' || r.status === 'late_return' ? `2026-11-0${Math.max(r.day, r.settledDay ?? r.day) + 1}` : '';
            const code = returned ? r.code : '';
            return `${r.aid},${r.ref},${(r.cents / 100).toFixed(2)},${r.status},${sub},${settled},${returned},${code}`;
          });
          const csv = `${HEADER}\n${lines.join('\n')}\n`;
          const dry = await upload(c, csv, { dryRun: true });
          const real = await upload(c, csv);
          expect(dry.status).toBe(200);
          expect({ ...real.body, dry_run: true, dryRun: true }).toEqual(dry.body);
        }
      }),
      { numRuns: 60, seed: 20261122 },
    );
  }, 180_000);

  test('property: random bytes never give a 5xx', async () => {
    const c = await fresh();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 400 }), fc.boolean(), async (bytes, withHeader) => {
        const body = withHeader ? new Uint8Array([...new TextEncoder().encode(`${HEADER}\n`), ...bytes]) : bytes;
        const r = await upload(c, body, { dryRun: true });
        expect(r.status).toBeLessThan(500);
      }),
      { numRuns: 200 },
    );
  }, 180_000);
});


describe('the report in snake_case, with its deprecated camelCase names', () => {
  const ALIASES = { rowCount: 'row_count', dataRowCount: 'data_row_count', needsAttention: 'needs_attention', dryRun: 'dry_run' } as const;
  const ROW_ALIASES = { authorizerUniqueId: 'authorizer_unique_id', amountCents: 'amount_cents' } as const;
  const FILE = `${HEADER}\nb1,NM-1,10.00,settled,2026-11-02,2026-11-04,,\nnobody,NM-2,20.00,sent,2026-11-02,,,\n,,5,sent,2026-11-02,,,\n`;

  test('every count and every row field in snake_case, each old name beside it with the same value', async () => {
    const c = await fresh();
    for (const dryRun of [true, false]) {
      const r = await upload(c, FILE, { dryRun });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ row_count: 2, data_row_count: 3, matched: 1, needs_attention: 1, already_recorded: 0, dry_run: dryRun });
      for (const [old, name] of Object.entries(ALIASES)) expect([old, r.body[old]]).toEqual([old, r.body[name]]);
      expect(r.body.rows).toHaveLength(2);
      for (const row of r.body.rows) for (const [old, name] of Object.entries(ROW_ALIASES)) expect([old, row[old]]).toEqual([old, row[name]]);
      expect(r.body.rows[0]).toMatchObject({ authorizer_unique_id: 'b1', amount_cents: 1000 });
      expect(r.body.rows[1]).toMatchObject({ authorizer_unique_id: 'nobody', amount_cents: 2000 });
    }
  });

  test('dry_run=true writes nothing, and so does the deprecated dryRun=true; the two disagreeing is a 400', async () => {
    const c = await fresh();
    const send = (query: string) => {
      const form = new FormData();
      form.append('file', new Blob([FILE], { type: 'text/csv' }), 'results.csv');
      return c.json('POST', `/v1/payment_results/uploads${query}`, { form });
    };
    const history = async () => ((await c.json('GET', '/v1/payment_results/uploads')).body.uploads as unknown[]).length;
    for (const query of ['?dry_run=true', '?dryRun=true', '?dry_run=true&dryRun=true']) {
      const r = await send(query);
      expect([query, r.status, r.body.dry_run, r.body.dryRun]).toEqual([query, 200, true, true]);
      expect(await events(c, 'b1')).toEqual([]);
      expect(await history()).toBe(0);
    }
    const disagree = await send('?dry_run=true&dryRun=false');
    expect(disagree.status).toBe(400);
    expect(JSON.stringify(disagree.body.error)).toContain('dry_run');
    expect(await history()).toBe(0);
    const recorded = await send('?dry_run=false');
    expect(recorded.body).toMatchObject({ dry_run: false, row_count: 2 });
    expect((await events(c, 'b1')).map((e) => e.status)).toEqual(['settled']);
    expect(await history()).toBe(1);
  });
});

describe('rows already recorded', () => {
  const note = (row: number, reference: string, status: string) => ({
    row,
    reason: `reference ${reference} is already recorded as ${status} by an earlier upload; this row adds nothing and is not recorded again`,
    severity: 'warning',
  });
  const ledger = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body.ledger as { collected: number; reversed: number };

  test('the same file sent again: every row already recorded, the ledger and the events not doubled, the history saying so', async () => {
    const c = await fresh();
    const file = `${HEADER}\nb1,AG-1,10.00,settled,2026-11-02,2026-11-04,,\nb2,AG-2,20.00,returned,2026-11-02,,2026-11-05,R01\nnobody,AG-3,5.00,sent,2026-11-02,,,\n`;
    const first = await upload(c, file);
    expect(first.body).toMatchObject({ row_count: 3, matched: 2, already_recorded: 0 });
    expect(first.body.problems.filter((p: { reason: string }) => p.reason.includes('already recorded'))).toEqual([]);
    const before = { b1: await ledger(c, 'b1'), b2: await ledger(c, 'b2'), e1: await events(c, 'b1'), e2: await events(c, 'b2') };
    expect(before.b1.collected).toBe(1000);

    // A dry run of it says the same before anything is sent again.
    const dry = await upload(c, file, { dryRun: true });
    expect(dry.body).toMatchObject({ row_count: 3, already_recorded: 3, dry_run: true });
    c.clock.advance(60_000);
    const again = await upload(c, file);
    expect(again.body).toMatchObject({ row_count: 3, matched: 2, needs_attention: 1, already_recorded: 3 });
    expect(again.body.already_recorded).toBe(again.body.row_count);
    expect(again.body.problems).toEqual([
      note(2, 'AG-1', 'settled'),
      note(3, 'AG-2', 'returned'),
      { row: 4, reason: expect.stringContaining('the borrower nobody is not enrolled'), severity: 'warning' },
      note(4, 'AG-3', 'sent'),
    ]);
    expect({ ...dry.body, dry_run: false, dryRun: false }).toEqual(again.body);
    expect({ b1: await ledger(c, 'b1'), b2: await ledger(c, 'b2'), e1: await events(c, 'b1'), e2: await events(c, 'b2') }).toEqual(before);

    const [latest, earlier] = (await c.json('GET', '/v1/payment_results/uploads')).body.uploads;
    expect(latest).toMatchObject({ row_count: 3, already_recorded: 3 });
    expect(earlier).toMatchObject({ row_count: 3, already_recorded: 0 });
    const detail = await c.json('GET', `/v1/payment_results/uploads/${latest.id}`);
    expect(detail.body.problems).toEqual(again.body.problems);
  });

  test('a file half new, half recorded before: each row said to be what it is, only the new ones recorded', async () => {
    const c = await fresh();
    await upload(c, `${HEADER}\nb1,HN-1,10.00,settled,2026-11-02,2026-11-04,,\nb2,HN-2,20.00,sent,2026-11-02,,,\n`);
    const before = await ledger(c, 'b1');
    const r = await upload(
      c,
      `${HEADER}\n` +
        // Recorded before, the same.
        'b1,HN-1,10.00,settled,2026-11-02,2026-11-04,,\n' +
        // Recorded before as sent: a new status, recorded now.
        'b2,HN-2,20.00,settled,2026-11-02,2026-11-06,,\n' +
        // New references.
        'b3,HN-3,30.00,settled,2026-11-02,2026-11-04,,\n' +
        'b1,HN-4,40.00,settled,2026-11-02,2026-11-04,,\n',
    );
    expect(r.body).toMatchObject({ row_count: 4, matched: 4, already_recorded: 1 });
    expect(r.body.problems).toEqual([note(2, 'HN-1', 'settled')]);
    expect((await ledger(c, 'b1')).collected).toBe(before.collected + 4000);
    expect((await ledger(c, 'b2')).collected).toBe(2000);
    expect((await ledger(c, 'b3')).collected).toBe(3000);
    expect((await events(c, 'b1')).map((e) => `${e.reference}:${e.status}`)).toEqual(['HN-1:settled', 'HN-4:settled']);
    expect((await events(c, 'b2')).map((e) => `${e.reference}:${e.status}`)).toEqual(['HN-2:processing', 'HN-2:settled']);
  });

  test('a row that fills in a date its reference was recorded without, or is matched only now, is not counted as recorded before', async () => {
    const c = await fresh();
    await upload(c, `${HEADER}\nb1,FD-1,10.00,late_return,2026-11-02,,2026-11-10,R10\nnobody,FD-2,5.00,sent,2026-11-02,,,\n`);
    // The settlement date filled in; the row of a borrower enrolled since matched now.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('nobody')] } });
    const r = await upload(c, `${HEADER}\nb1,FD-1,10.00,late_return,2026-11-02,2026-11-04,2026-11-10,R10\nnobody,FD-2,5.00,sent,2026-11-02,,,\n`);
    expect(r.body).toMatchObject({ row_count: 2, matched: 2, already_recorded: 0, problems: [] });
    expect((await events(c, 'nobody')).map((e) => e.reference)).toEqual(['FD-2']);
  });
});
