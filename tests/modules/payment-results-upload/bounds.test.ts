// POST /v1/payment_results/uploads on files that are large, odd or hostile: every line ending is read, no row
// is dropped without a problem naming it, and the report stays bounded whatever the file holds.
import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';

import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { MAX_COLUMNS, PROBLEMS_LISTED } from '../../../src/modules/payment-results-upload/read';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
async function fresh(borrowers = ['b1', 'b2', 'b3']) {
  const c = createTestContext({}, { clockAt: '2026-11-21T12:00:00.000Z' });
  contexts.push(c);
  await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: borrowers.map((b) => enrollBorrower(b)) } });
  return c;
}
const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
async function upload(c: TestContext, csv: string | Uint8Array, opts: { dryRun?: boolean } = {}) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'results.csv');
  return c.json('POST', `/v1/payment_results/uploads${opts.dryRun ? '?dry_run=true' : ''}`, { form });
}

describe('line endings', () => {
  test('a CR-only ending inside a CRLF file: all three rows are read and recorded, and the R02 stops the borrower', async () => {
    const c = await fresh(['loan-1']);
    const csv =
      `${HEADER}\r\n` +
      'loan-1,INV-e1,1.00,pending,2026-11-02,,,\rloan-1,INV-e2,2.00,returned,2026-11-02,,2026-11-03,R02\r\n' +
      'loan-1,INV-e3,3.00,settled,2026-11-02,2026-11-03,,\r\n';
    const r = await upload(c, csv);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ data_row_count: 3, row_count: 3, matched: 3, problems: [] });
    expect(r.body.rows.map((x: { row: number; reference: string }) => [x.row, x.reference])).toEqual([
      [2, 'INV-e1'],
      [3, 'INV-e2'],
      [4, 'INV-e3'],
    ]);
    expect((await c.json('GET', '/v1/payment_enrollments/loan-1')).body).toMatchObject({ state: 'stopped', reason: 'R02' });
  });

  test('property: random files with random line endings give one data row per row written', async () => {
    const c = await fresh();
    let n = 0;
    const ending = fc.constantFrom('\r\n', '\n', '\r');
    await fc.assert(
      fc.asyncProperty(
        ending,
        fc.array(fc.record({ aid: fc.constantFrom('b1', 'b2', 'nobody', ''), ok: fc.boolean(), end: ending }), { minLength: 1, maxLength: 30 }),
        fc.boolean(),
        async (headerEnd, rows, lastEnding) => {
          const body = rows
            .map((r, i) => {
              const ref = `LE${++n}`;
              // A row that breaks a rule still counts as a data row, with its problem named.
              const line = r.ok ? `${r.aid},${ref},1.00,sent,2026-11-02,,,` : `${r.aid},${ref},,sent,2026-11-02,,,`;
              return line + (i < rows.length - 1 || lastEnding ? r.end : '');
            })
            .join('');
          const res = await upload(c, `${HEADER}${headerEnd}${body}`, { dryRun: true });
          expect(res.status).toBe(200);
          expect(res.body.data_row_count).toBe(rows.length);
          expect(res.body.row_count).toBe(rows.filter((r) => r.ok).length);
          const errorRows = new Set(res.body.problems.filter((p: { severity: string }) => p.severity === 'error').map((p: { row: number }) => p.row));
          expect(errorRows.size).toBe(rows.filter((r) => !r.ok).length);
          expect(res.body.rows.map((x: { row: number }) => x.row)).toEqual(rows.flatMap((r, i) => (r.ok ? [i + 2] : [])));
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);
});

describe('bounded reports', () => {
  test('20,000 rows of one reference that disagree: 200, every row rejected, the first problems listed and the rest counted', async () => {
    const c = await fresh();
    const rows = Array.from({ length: 20_000 }, (_, i) => `b1,SAME,${1 + (i % 7)}.00,sent,2026-11-02,,,`);
    const r = await upload(c, `${HEADER}\n${rows.join('\n')}\n`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ data_row_count: 20_000, row_count: 0, matched: 0, rows: [] });
    expect(r.body.problems).toHaveLength(PROBLEMS_LISTED + 1);
    expect(r.body.problems[0]).toEqual({ row: 0, reason: `10000 more problems are not listed: only the first ${PROBLEMS_LISTED}, in row order, are; the counts are exact`, severity: 'warning' });
    expect(r.body.problems[1]).toEqual({ row: 2, reason: '20000 rows for reference SAME, from row 2, disagree; all of them are rejected', severity: 'error' });
    expect(r.body.problems.at(-1).row).toBe(PROBLEMS_LISTED + 1);
    // A message names the first row and the count, never the group: the report grows with the file, no faster.
    expect(JSON.stringify(r.body).length).toBeLessThan(2_000_000);
  }, 30_000);

  test('the overflow note does not refuse the file: the accepted rows are recorded', async () => {
    const c = await fresh();
    const bad = Array.from({ length: 4_000 }, () => 'a');
    const r = await upload(c, `${HEADER}\nb1,KEPT,1.00,sent,2026-11-02,,,\n${bad.join('\n')}\n`);
    expect(r.body).toMatchObject({ data_row_count: 4_001, row_count: 1, matched: 1 });
    // Three problems a row: the first 10,000 listed, the other 2,000 counted.
    expect(r.body.problems).toHaveLength(PROBLEMS_LISTED + 1);
    expect(r.body.problems[0].reason).toStartWith('2000 more problems are not listed');
    expect((await c.json('GET', '/v1/payment_events?authorizer_unique_id=b1')).body.events).toHaveLength(1);
  }, 30_000);

  test('a file of `a` lines and a file of commas: one row-0 problem each, nothing read past the header', async () => {
    const c = await fresh();
    const cases: [string, string][] = [
      ['a\n'.repeat(500_000), 'The header lacks an amount column'],
      [','.repeat(1_000_000), `The header has more than ${MAX_COLUMNS} columns`],
    ];
    for (const [file, reason] of cases) {
      const r = await upload(c, file);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ data_row_count: 0, row_count: 0, rows: [] });
      expect(r.body.problems).toHaveLength(1);
      expect(r.body.problems[0]).toMatchObject({ row: 0, severity: 'error' });
      expect(r.body.problems[0].reason).toStartWith(reason);
    }
  }, 30_000);

  test('a data row of a million commas is one row, read like any other', async () => {
    const c = await fresh();
    const r = await upload(c, `${HEADER}\nb1,WIDE,1.00,sent,2026-11-02,,,${','.repeat(1_000_000)}\nb2,NEXT,2.00,sent,2026-11-02,,,\n`);
    expect(r.body).toMatchObject({ data_row_count: 2, row_count: 2, matched: 2, problems: [] });
  }, 30_000);

  test('unmatched reference-only rows in a dry run: every row answered, each with its warning, within the cap', async () => {
    const c = await fresh();
    const rows = Array.from({ length: 12_000 }, (_, i) => `,DRS-x${i}-${i}-${'-'.repeat(i % 3)}9,1.00,sent,2026-11-02,,,`);
    rows.push(',DRS-b2-77,1.00,sent,2026-11-02,,,');
    const r = await upload(c, `${HEADER}\n${rows.join('\n')}\n`, { dryRun: true });
    expect(r.body).toMatchObject({ data_row_count: 12_001, row_count: 12_001, matched: 1, needs_attention: 12_000 });
    expect(r.body.rows.at(-1)).toMatchObject({ reference: 'DRS-b2-77', authorizer_unique_id: 'b2' });
    expect(r.body.problems).toHaveLength(PROBLEMS_LISTED + 1);
    expect(r.body.problems[0].reason).toStartWith('2000 more problems are not listed');
  }, 30_000);
});

describe('identifiers in the file', () => {
  test('an authorizer id, reference or batch id breaking the identifier rule is a row error, never stored nor quoted back', async () => {
    const c = await fresh(['b1']);
    const huge = 'R'.repeat(9 * 1024 * 1024);
    const long = 'x'.repeat(100_000);
    const lines = [
      'b1,OK-1,1.00,settled,2026-11-02,2026-11-03,,', // 2: recorded
      'b\u00001,NUL-1,1.00,settled,2026-11-02,2026-11-03,,', // 3
      'b\u001b1,ESC-1,1.00,settled,2026-11-02,2026-11-03,,', // 4
      'b\u202e1,RLO-1,1.00,settled,2026-11-02,2026-11-03,,', // 5: a format character, allowed like elsewhere
      `${long},LONG-1,1.00,settled,2026-11-02,2026-11-03,,`, // 6
      `b1,${'r'.repeat(256)},1.00,settled,2026-11-02,2026-11-03,,`, // 7
      `b1,${'r'.repeat(255)},1.00,settled,2026-11-02,2026-11-03,,`, // 8: recorded
      'b1,TAB\tREF,1.00,settled,2026-11-02,2026-11-03,,', // 9
      `b1,${huge},1.00,settled,2026-11-02,2026-11-03,,`, // 10
    ];
    const r = await upload(c, `${HEADER},batch_id\n${lines.join(',\n')},\nb1,BATCH-1,1.00,settled,2026-11-02,2026-11-03,,,b\u00071\n`);
    expect(r.status).toBe(200);
    const text = JSON.stringify(r.body);
    expect(text.length).toBeLessThan(20_000);
    for (const bad of ['\u0000', '\u001b', '\u0007', long, 'TAB\tREF', 'r'.repeat(256)]) expect(text.includes(bad)).toBe(false);
    const errors = r.body.problems.filter((p: { severity: string }) => p.severity === 'error');
    expect(errors.map((p: { row: number }) => p.row)).toEqual([3, 4, 6, 7, 9, 10, 11]);
    expect(errors.map((p: { reason: string }) => p.reason.split(' ')[0])).toEqual([
      'authorizer_unique_id',
      'authorizer_unique_id',
      'authorizer_unique_id',
      'reference',
      'reference',
      'reference',
      'batch_id',
    ]);
    for (const e of errors) expect(e.reason).toContain('1 to 255 characters of well-formed Unicode text without control characters');
    // Row 5's id is well-formed (a format character is not a control character): stored unmatched, like any unknown id.
    expect(r.body.rows.map((x: { row: number }) => x.row)).toEqual([2, 5, 8]);
    expect((await c.json('GET', '/v1/payment_events?authorizer_unique_id=b1')).body.events).toHaveLength(2);
  }, 60_000);
});
