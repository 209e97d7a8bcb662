// Money is exact: the ledger's totals are summed by the database in integers, never as floating point; the largest
// amount any route accepts is named ($10,000,000,000.00) and refused above.
import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { MAX_AMOUNT_CENTS, exactCents, formatCents } from '../../../src/platform/money';
import { signedIn } from '../../helpers/portal';
import { dollars } from '../../../src/modules/portal/ui/format';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';

async function upload(c: TestContext, rows: string[]) {
  const form = new FormData();
  form.append('file', new File([[HEADER, ...rows].join('\n') + '\n'], 'results.csv', { type: 'text/csv' }));
  const res = await c.app.handle(
    new Request('http://localhost/v1/payment_results/uploads', { method: 'POST', headers: { authorization: `Bearer ${c.lender.key}` }, body: form }),
  );
  return { status: res.status, body: (await res.json()) as { row_count: number; matched: number; problems: { row: number; reason: string; severity: string }[] } };
}

describe('exact money', () => {
  test('an amount above $10,000,000,000.00 is a row problem; amounts up to it sum exactly past 2^53 cents', async () => {
    const c = createTestContext();
    contexts.push(c);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('rich')] } })).status).toBe(207);
    const over = await upload(c, ['rich,INV-x,"$90,071,992,547,409.91",settled,2026-11-02,2026-11-03,,']);
    expect(over.body.row_count).toBe(0);
    expect(over.body.problems[0]!.reason).toContain('$10,000,000,000.00');
    // 9,007 rows at the cap and two of one cent: 9,007,000,000,000,002 cents, just under 2^53, given in full.
    const rows = Array.from({ length: 9007 }, (_, i) => `rich,INV-${i},"$10,000,000,000.00",settled,2026-11-02,2026-11-03,,`);
    rows.push('rich,INV-a,0.01,settled,2026-11-02,2026-11-03,,', 'rich,INV-b,0.01,settled,2026-11-02,2026-11-03,,');
    const ok = await upload(c, rows);
    expect(ok.body.problems).toEqual([]);
    const ledger = (await c.json('GET', '/v1/payment_enrollments/rich')).body.ledger;
    expect(BigInt(ledger.collected)).toBe(9007n * BigInt(MAX_AMOUNT_CENTS) + 2n);
    expect(ledger.net).toBe(ledger.collected);
    // One more row at the cap would take the total past 2^53 cents, where no exact number can be given: the
    // slice holding it is refused, and the upload stops there; here it is the first, so nothing is recorded.
    const history = async () => (await c.json('GET', '/v1/payment_results/uploads')).body.uploads as { row_count: number; problem_count: number }[];
    const before = (await history()).length;
    const past = await upload(c, ['rich,INV-past,"$10,000,000,000.00",settled,2026-11-02,2026-11-03,,']);
    expect(past.status).toBe(200);
    expect(past.body.row_count).toBe(0);
    expect(past.body.problems).toEqual([
      { row: 0, severity: 'error', reason: 'The ledger of borrower rich would pass $90,071,992,547,409.91, the most a total can be given exactly; nothing was recorded' },
    ]);
    expect((await c.json('GET', '/v1/payment_enrollments/rich')).body.ledger.collected).toBe(ledger.collected);
    expect(await history()).toHaveLength(before);

    // A file whose slice after its first 512 rows would take it past (slices of 128 or 512 rows): the slices
    // before it stand, and the upload stops at its first row, in the history with that error.
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('modest')] } })).status).toBe(207);
    const modest = Array.from({ length: 512 }, (_, i) => `modest,M-${i},1.00,settled,2026-11-02,2026-11-03,,`);
    const stopped = await upload(c, [...modest, 'rich,INV-past,"$10,000,000,000.00",settled,2026-11-02,2026-11-03,,']);
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ row_count: 512, matched: 512 });
    expect(stopped.body.problems).toEqual([
      {
        row: 0,
        severity: 'error',
        reason: 'The ledger of borrower rich would pass $90,071,992,547,409.91, the most a total can be given exactly; the rows from row 514 on were not recorded, those before it were',
      },
    ]);
    expect((await c.json('GET', '/v1/payment_enrollments/modest')).body.ledger.collected).toBe(51200);
    expect((await c.json('GET', '/v1/payment_enrollments/rich')).body.ledger.collected).toBe(ledger.collected);
    expect((await history())[0]).toMatchObject({ row_count: 512, problem_count: 1 });
    expect(await history()).toHaveLength(before + 1);
  }, 60_000);

  test('the ledger’s SQL sums equal BigInt sums of the same random amounts', async () => {
    const c = createTestContext();
    contexts.push(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('prop')] } });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: MAX_AMOUNT_CENTS }), { minLength: 1, maxLength: 20 }), async (amounts) => {
        const before = BigInt((await c.json('GET', '/v1/payment_enrollments/prop')).body.ledger.collected);
        const rows = amounts.map((a) => `prop,P-${n++},${formatCents(a)},settled,2026-11-02,2026-11-03,,`);
        expect((await upload(c, rows)).body.problems).toEqual([]);
        const after = BigInt((await c.json('GET', '/v1/payment_enrollments/prop')).body.ledger.collected);
        expect(after - before).toBe(amounts.reduce((s, a) => s + BigInt(a), 0n));
      }),
      { numRuns: 25, seed: 20261124 },
    );
  }, 60_000);

  test('two borrowers each just under 2^53 cents: the overview gives the lender’s totals exactly, past 2^53, and the API each ledger', async () => {
    const c = createTestContext({}, { clockAt: '2026-11-10T12:00:00Z' });
    contexts.push(c);
    const p = await signedIn(c);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('big-1'), enrollBorrower('big-2')] } })).status).toBe(207);
    // Each borrower: 9,007 rows at the cap and one of 99 cents, 9,007,000,000,000,099 cents, under 2^53;
    // together 18,014,000,000,000,198 cents, past 2^53 (and 2^53 + 2^53 would be past it too).
    const each = 9007n * BigInt(MAX_AMOUNT_CENTS) + 99n;
    for (const b of ['big-1', 'big-2']) {
      const rows = Array.from({ length: 9007 }, (_, i) => `${b},${b}-${i},"$10,000,000,000.00",settled,2026-11-02,2026-11-03,,`);
      rows.push(`${b},${b}-x,0.99,settled,2026-11-02,2026-11-03,,`);
      const r = await upload(c, rows);
      expect(r.status).toBe(200);
      expect(r.body.problems).toEqual([]);
      expect(BigInt((await c.json('GET', `/v1/payment_enrollments/${b}`)).body.ledger.collected)).toBe(each);
    }
    expect(2n * each).toBeGreaterThan(BigInt(Number.MAX_SAFE_INTEGER));
    for (let visit = 0; visit < 2; visit++) {
      const page = await p.get('/portal');
      expect(page.status).toBe(200);
      // Collected, last 30 days and all time, to the cent: $180,140,000,000,001.98.
      expect(dollars(2n * each)).toBe('$180,140,000,000,001.98');
      const m = /<h3 id="fig-collected">[^<]*<\/h3><p>([^<]*)<\/p><small>last 30 days · ([^<]*) all time<\/small>/.exec(page.text)!;
      expect([m[1], m[2]]).toEqual(['$180,140,000,000,001.98', '$180,140,000,000,001.98']);
      // The day's figure in the chart's table, and its words.
      expect(page.text).toContain('<td>$180,140,000,000,001.98</td>');
      expect(page.text).toContain('Collected $180,140,000,000,001.98 and reversed $0.00');
    }
  }, 120_000);

  test('exactCents refuses a sum it cannot give exactly', () => {
    expect(exactCents(BigInt(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => exactCents(BigInt(Number.MAX_SAFE_INTEGER) + 1n)).toThrow(RangeError);
  });

  test('a balance threshold above the maximum is refused naming the field', async () => {
    const c = createTestContext();
    contexts.push(c);
    const r = await c.json('POST', '/v1/balance_requests', {
      body: { authorizers: [{ authorizer_unique_id: 'a1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000', threshold_amount: 10_000_000_000.01 }] },
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('threshold_amount');
  });
});
