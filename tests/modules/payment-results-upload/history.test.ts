// The upload history: GET /v1/payment_results/uploads (newest first, paged) and one upload's counts and
// problems. A recorded upload is in it with its sender; a dry run and a refused file are not; another
// lender's upload is not found.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
async function fresh() {
  const c = createTestContext({}, { clockAt: '2026-11-21T12:00:00.000Z' });
  contexts.push(c);
  await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('b1'), enrollBorrower('b2')] } });
  return c;
}
async function upload(c: TestContext, csv: string, opts: { dryRun?: boolean; key?: string } = {}) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'results.csv');
  return c.json('POST', `/v1/payment_results/uploads${opts.dryRun ? '?dry_run=true' : ''}`, { form, ...(opts.key ? { key: opts.key } : {}) });
}

type Summary = {
  id: string;
  recorded_at: string;
  creator: string | null;
  format: string;
  row_count: number;
  data_row_count: number;
  matched: number;
  needs_attention: number;
  already_recorded: number | null;
  problem_count: number;
  /** Deprecated copies, the same values until 0.4.0. */
  recordedAt: string;
  rowCount: number;
  dataRowCount: number;
  needsAttention: number;
  problemCount: number;
};

describe('the upload history', () => {
  test('a recorded upload is listed with its sender and counts; its problems are kept; a dry run is not listed', async () => {
    const c = await fresh();
    const file = `${HEADER}\nb1,REF-1,10.00,settled,2026-11-02,2026-11-04,,\nb2,REF-2,20.00,sent,2026-11-03,,,\n,,5,sent,2026-11-02,,,\n`;
    const dry = await upload(c, file, { dryRun: true });
    expect(dry.status).toBe(200);
    expect((await c.json('GET', '/v1/payment_results/uploads')).body).toEqual({ uploads: [], has_more: false, next_page_token: null });

    const recorded = await upload(c, file);
    expect(recorded.status).toBe(200);
    const list = await c.json('GET', '/v1/payment_results/uploads');
    expect(list.status).toBe(200);
    const [u] = list.body.uploads as Summary[];
    expect(list.body.uploads).toHaveLength(1);
    expect(u).toEqual({
      id: expect.any(String),
      recorded_at: '2026-11-21T12:00:00.000Z',
      creator: expect.stringMatching(/^API key drs_/),
      format: 'generic',
      row_count: recorded.body.row_count,
      data_row_count: 3,
      matched: recorded.body.matched,
      needs_attention: recorded.body.needs_attention,
      already_recorded: 0,
      problem_count: recorded.body.problems.length,
      // The names the history answered with before, the same values until 0.4.0.
      recordedAt: '2026-11-21T12:00:00.000Z',
      rowCount: recorded.body.row_count,
      dataRowCount: 3,
      needsAttention: recorded.body.needs_attention,
      problemCount: recorded.body.problems.length,
    });
    expect(u!.creator).not.toContain(c.lender.key);
    const one = await c.json('GET', `/v1/payment_results/uploads/${u!.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ ...u, problems: recorded.body.problems });
    expect(one.body.problems).toContainEqual({ row: 4, reason: 'authorizer_unique_id or reference is required', severity: 'error' });
  });

  test('newest first, paged with a token; a limit out of range is 400', async () => {
    const c = await fresh();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      await upload(c, `${HEADER}\nb1,REF-P${i},1${i}.00,sent,2026-11-02,,,\n`);
      ids.push(((await c.json('GET', '/v1/payment_results/uploads?limit=1')).body.uploads as Summary[])[0]!.id);
      c.clock.advance(60_000);
    }
    const seen: string[] = [];
    let token: string | null = null;
    do {
      const r: { status: number; body: any } = await c.json('GET', `/v1/payment_results/uploads?limit=2${token ? `&next_page_token=${encodeURIComponent(token)}` : ''}`);
      expect(r.status).toBe(200);
      expect((r.body.uploads as Summary[]).length).toBeLessThanOrEqual(2);
      seen.push(...(r.body.uploads as Summary[]).map((u) => u.id));
      token = r.body.next_page_token;
      expect(r.body.has_more).toBe(token !== null);
    } while (token);
    expect(seen).toEqual([...ids].reverse());
    expect((await c.json('GET', '/v1/payment_results/uploads?limit=0')).status).toBe(400);
    expect((await c.json('GET', '/v1/payment_results/uploads?limit=101')).status).toBe(400);
  });

  test('a file refused whole (no header) is not recorded and not listed', async () => {
    const c = await fresh();
    const r = await upload(c, 'this,is,not,the,header\n1,2,3,4,5\n');
    expect(r.status).toBe(200);
    expect(r.body.row_count).toBe(0);
    expect((await c.json('GET', '/v1/payment_results/uploads')).body.uploads).toEqual([]);
  });

  test("another lender's upload is not found, and not in its list", async () => {
    const c = await fresh();
    await upload(c, `${HEADER}\nb1,REF-T,10.00,sent,2026-11-02,,,\n`);
    const id = ((await c.json('GET', '/v1/payment_results/uploads')).body.uploads as Summary[])[0]!.id;
    const other = c.newLender('other');
    expect((await c.json('GET', `/v1/payment_results/uploads/${id}`, { key: other.key })).status).toBe(404);
    expect((await c.json('GET', '/v1/payment_results/uploads', { key: other.key })).body.uploads).toEqual([]);
    expect((await c.json('GET', '/v1/payment_results/uploads/unknown-id')).status).toBe(404);
  });
});
