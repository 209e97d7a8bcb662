// POST /v1/balance_requests/csv: every line ending is read, and the row cap is checked as rows are read.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { useTestContext } from '../../helpers/context';
import { MAX_CSV_ROWS } from '../../../src/modules/balance-requests/csv-input';

const ctx = useTestContext();
const HEAD = 'authorizer_unique_id,ssn,account_number,routing_number';
const row = (aid: string) => `${aid},123456789,0000000100,110000000`;
function send(csv: string | Uint8Array) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'balances.csv');
  return ctx.json('POST', '/v1/balance_requests/csv', { form });
}

describe('line endings', () => {
  test('a CR-only ending inside a CRLF file: every row is an authorizer', async () => {
    const r = await send(`${HEAD}\r\n${row('cr-1')}\r${row('cr-2')}\r\n${row('cr-3')}\r\n`);
    expect(r.status).toBe(201);
    expect(r.body.message).toContain('3 authorizers');
    expect(r.body.failed_authorizers).toEqual([]);
  });

  test('property: random files with random line endings give one authorizer per row written', async () => {
    let n = 0;
    const ending = fc.constantFrom('\r\n', '\n', '\r');
    await fc.assert(
      fc.asyncProperty(ending, fc.array(ending, { minLength: 1, maxLength: 25 }), fc.boolean(), async (headerEnd, ends, lastEnding) => {
        const body = ends.map((end, i) => row(`le-${++n}`) + (i < ends.length - 1 || lastEnding ? end : '')).join('');
        const r = await send(`${HEAD}${headerEnd}${body}`);
        expect(r.status).toBe(201);
        expect(r.body.failed_authorizers).toEqual([]);
        expect(r.body.message).toContain(`${ends.length} authorizer${ends.length === 1 ? '' : 's'}`);
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});

describe('the row cap', () => {
  test(`${MAX_CSV_ROWS + 1} rows followed by megabytes of junk: 400 naming the cap, the junk never read`, async () => {
    const rows = Array.from({ length: MAX_CSV_ROWS + 1 }, (_, i) => row(`cap-${i}`));
    // Read to the end, this junk would be a quoting error, not the row cap.
    const junk = '"never closed,' + 'x,'.repeat(2 * 1024 * 1024);
    const r = await send(`${HEAD}\n${rows.join('\n')}\n${junk}`);
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe(`The CSV has more than ${MAX_CSV_ROWS} data rows; at most ${MAX_CSV_ROWS} are accepted per file`);
  }, 30_000);

  test('a 5 MB file of short lines: 400 naming the cap', async () => {
    const r = await send(`${HEAD}\n${'a\n'.repeat(2_500_000)}`);
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain(`at most ${MAX_CSV_ROWS}`);
  }, 30_000);

  test(`blank rows do not count: ${MAX_CSV_ROWS} rows with blank lines between them are accepted`, async () => {
    const rows = Array.from({ length: MAX_CSV_ROWS }, (_, i) => row(`bl-${i}`) + (i % 2 ? '\n' : ''));
    const r = await send(`${HEAD}\n${rows.join('\n')}\n`);
    expect(r.status).toBe(201);
    expect(r.body.message).toContain(`${MAX_CSV_ROWS} authorizers`);
  }, 30_000);
});
