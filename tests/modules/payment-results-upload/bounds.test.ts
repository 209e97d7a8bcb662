// POST /v1/payment_results/uploads on files that are large, odd or hostile: every line ending is read, no row
// is dropped without a problem naming it, and the report stays bounded whatever the file holds.
import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';

import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';

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
  return c.json('POST', `/v1/payment_results/uploads${opts.dryRun ? '?dryRun=true' : ''}`, { form });
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
    expect(r.body).toMatchObject({ dataRowCount: 3, rowCount: 3, matched: 3, problems: [] });
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
          expect(res.body.dataRowCount).toBe(rows.length);
          expect(res.body.rowCount).toBe(rows.filter((r) => r.ok).length);
          const errorRows = new Set(res.body.problems.filter((p: { severity: string }) => p.severity === 'error').map((p: { row: number }) => p.row));
          expect(errorRows.size).toBe(rows.filter((r) => !r.ok).length);
          expect(res.body.rows.map((x: { row: number }) => x.row)).toEqual(rows.flatMap((r, i) => (r.ok ? [i + 2] : [])));
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);
});
