import { expect, test } from 'bun:test';
import { contract, inTurns } from './contract';
import { enrollBorrower } from '../helpers/fixtures';
import { cycle } from '../helpers/collection';
import type { UploadedWrite } from '../../src/modules/payment-results-upload/store';

const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
const day = (d: string) => Date.parse(`${d}T00:00:00.000Z`);
const START = { t: Number.MAX_SAFE_INTEGER, i: '' };

/** A reference first uploaded as sent, for saveUploaded. */
type Add = Extract<UploadedWrite, { kind: 'add' }>;
const added = (lenderId: string, reference: string, now: number, over: Partial<Add> = {}): UploadedWrite => ({
  kind: 'add',
  lenderId,
  reference,
  status: 'sent',
  amountCents: 1000,
  submittedAt: day('2026-11-02'),
  settledAt: null,
  returnedAt: null,
  returnCode: null,
  aid: null,
  enrollmentId: null,
  batchId: null,
  matched: false,
  now,
  ...over,
});

contract('uploads', (t) => {
  const { ctx, store, storeCtx } = t;

  async function upload(key: string, rows: string[]) {
    const form = new FormData();
    form.append('file', new Blob([[HEADER, ...rows].join('\n') + '\n'], { type: 'text/csv' }), 'results.csv');
    const r = await ctx.json('POST', '/v1/payment_results/uploads', { form, key });
    expect(r.status).toBe(200);
    return r.body;
  }
  async function enrolled(lender: { id: string; key: string }, aids: string[]) {
    const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: aids.map((a) => enrollBorrower(a)) } });
    expect(r.status).toBeLessThan(300);
    const rows = await ctx.rows<{ id: string; aid: string }>('SELECT id, authorizer_unique_id AS aid FROM enrollments WHERE lender_id = ?', lender.id);
    return new Map(rows.map((r) => [r.aid, r.id]));
  }
  const credits = async (enrollmentId: string, after: number) => {
    const [r] = await ctx.rows<{ n: number }>(
      "SELECT COALESCE(SUM(amount_cents), 0) AS n FROM ledger_entries WHERE enrollment_id = ? AND kind = 'credit' AND id > ?",
      enrollmentId,
      after,
    );
    return Number(r!.n);
  };

  test('recorded uploads: the history newest first, ties by id, a page before a position, one upload; another lender sees none', async () => {
    const lender = ctx.newLender();
    await upload(lender.key, ['b1,H-1,10.00,settled,2026-11-02,2026-11-04,,']);
    // Two at the same time: the id orders them.
    ctx.clock.advance(60_000);
    await upload(lender.key, ['b1,H-2,10.00,sent,2026-11-02,,,', 'b1,H-3,0,sent,2026-11-02,,,']);
    await upload(lender.key, ['b1,H-4,10.00,sent,2026-11-02,,,']);
    const all = await store.uploadsBefore(storeCtx, lender.id, START, 10);
    expect(all).toHaveLength(3);
    expect(all[2]!.recordedAt).toBe(ctx.clock.now() - 60_000);
    expect(all[0]!.recordedAt).toBe(ctx.clock.now());
    expect(all[1]!.recordedAt).toBe(ctx.clock.now());
    expect(all[0]!.id > all[1]!.id).toBe(true);
    // The API's history is the store's page.
    const listed = await ctx.json('GET', '/v1/payment_results/uploads', { key: lender.key });
    expect(listed.body.uploads.map((u: { id: string }) => u.id)).toEqual(all.map((u) => u.id));
    // A page at a time, each before the last row of the one before.
    const first = await store.uploadsBefore(storeCtx, lender.id, START, 1);
    expect(first.map((u) => u.id)).toEqual([all[0]!.id]);
    const rest = await store.uploadsBefore(storeCtx, lender.id, { t: first[0]!.recordedAt, i: first[0]!.id }, 5);
    expect(rest.map((u) => u.id)).toEqual([all[1]!.id, all[2]!.id]);
    expect(await store.uploadsBefore(storeCtx, lender.id, { t: all[2]!.recordedAt, i: all[2]!.id }, 5)).toEqual([]);

    // The second file: one row accepted (of a borrower not enrolled), one refused; counts are numbers, problems
    // the report's list as JSON.
    const second = all.find((u) => u.dataRowCount === 2)!;
    const one = await store.uploadOf(storeCtx, lender.id, second.id);
    expect(one).toMatchObject({
      id: second.id,
      lenderId: lender.id,
      format: 'generic',
      rowCount: 1,
      dataRowCount: 2,
      matched: 0,
      needsAttention: 1,
      alreadyRecorded: 0,
      problemCount: 2,
    });
    expect(JSON.parse(one!.problems)).toEqual([
      { row: 2, reason: expect.stringContaining('not enrolled'), severity: 'warning' },
      { row: 3, reason: expect.stringContaining('payment_amount'), severity: 'error' },
    ]);
    const [key] = await ctx.rows<{ id: string; prefix: string }>('SELECT id, prefix FROM api_keys WHERE lender_id = ?', lender.id);
    expect(await store.apiKeyPrefix(storeCtx, key!.id)).toBe(key!.prefix);
    expect(await store.apiKeyPrefix(storeCtx, 'no-such-key')).toBeNull();
    expect(one!.creator).toBe(`API key ${key!.prefix}…`);
    const read = await ctx.json('GET', `/v1/payment_results/uploads/${second.id}`, { key: lender.key });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: second.id, row_count: 1, already_recorded: 0, problem_count: 2 });

    const other = ctx.newLender();
    expect(await store.uploadOf(storeCtx, other.id, second.id)).toBeUndefined();
    expect(await store.uploadsBefore(storeCtx, other.id, START, 10)).toEqual([]);
    expect((await ctx.json('GET', `/v1/payment_results/uploads/${second.id}`, { key: other.key })).status).toBe(404);
  });

  // An upload through the API is recorded by the upload worker, whose store calls are its own: the history
  // record is written here directly too.
  test('recordUpload: read back whole, not there when rolled back, an id recorded once', async () => {
    const lender = ctx.newLender();
    const problems = [{ row: 0, reason: 'a note on the file', severity: 'warning' }];
    const record = (id: string, recordedAt: number) => ({
      id,
      lenderId: lender.id,
      recordedAt,
      creator: null,
      report: { format: 'annotated_export' as const, rowCount: 7, dataRowCount: 9, matched: 5, needsAttention: 2, alreadyRecorded: 3, problems },
    });
    await expect(
      t.inTx(async (tx) => {
        await store.recordUpload(tx, record('rec-rolled-back', 1_000));
        expect(await store.uploadOf(tx, lender.id, 'rec-rolled-back')).toBeDefined();
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.uploadOf(storeCtx, lender.id, 'rec-rolled-back')).toBeUndefined();
    await t.inTx((tx) => store.recordUpload(tx, record('rec-1', 2_000)));
    expect(await store.uploadOf(storeCtx, lender.id, 'rec-1')).toEqual({
      id: 'rec-1',
      lenderId: lender.id,
      recordedAt: 2_000,
      creator: null,
      format: 'annotated_export',
      rowCount: 7,
      dataRowCount: 9,
      matched: 5,
      needsAttention: 2,
      alreadyRecorded: 3,
      problemCount: 1,
      problems: JSON.stringify(problems),
    });
    await expect(t.inTx((tx) => store.recordUpload(tx, record('rec-1', 3_000)))).rejects.toThrow();
    expect((await store.uploadsBefore(storeCtx, lender.id, START, 10)).map((u) => [u.id, u.recordedAt])).toEqual([['rec-1', 2_000]]);
  });

  test('an upload recorded before rows already recorded were counted reads back with none counted (null)', async () => {
    const lender = ctx.newLender();
    // As a version before the column wrote it.
    await t.inTx(async (tx) => {
      await store.recordUpload(tx, {
        id: 'rec-before',
        lenderId: lender.id,
        recordedAt: 1_000,
        creator: null,
        report: { format: 'generic', rowCount: 1, dataRowCount: 1, matched: 1, needsAttention: 0, alreadyRecorded: 0, problems: [] },
      });
    });
    ctx.sql.query('UPDATE payment_result_uploads SET already_recorded = NULL WHERE id = ?').run('rec-before');
    expect(await store.uploadOf(storeCtx, lender.id, 'rec-before')).toMatchObject({ id: 'rec-before', rowCount: 1, alreadyRecorded: null });
    expect((await store.uploadsBefore(storeCtx, lender.id, START, 10)).map((u) => u.alreadyRecorded)).toEqual([null]);
    const read = await ctx.json('GET', '/v1/payment_results/uploads/rec-before', { key: lender.key });
    expect(read.body).toMatchObject({ row_count: 1, already_recorded: null });
  });

  test('the same file uploaded again: every row already recorded, in the report and its history record; the ledger not doubled', async () => {
    const lender = ctx.newLender();
    const ids = await enrolled(lender, ['r1', 'r2']);
    const rows = ['r1,AR-1,10.00,settled,2026-11-02,2026-11-04,,', 'r2,AR-2,20.00,settled,2026-11-02,2026-11-04,,', 'nobody,AR-3,5.00,sent,2026-11-02,,,'];
    const first = await upload(lender.key, rows);
    expect(first).toMatchObject({ row_count: 3, matched: 2, already_recorded: 0 });
    const ledger = async () => (await credits(ids.get('r1')!, 0)) + (await credits(ids.get('r2')!, 0));
    expect(await ledger()).toBe(3000);
    ctx.clock.advance(1_000);
    const again = await upload(lender.key, rows);
    expect(again).toMatchObject({ row_count: 3, matched: 2, already_recorded: 3 });
    expect(await ledger()).toBe(3000);
    const [latest, earlier] = await store.uploadsBefore(storeCtx, lender.id, START, 10);
    expect([latest!.alreadyRecorded, earlier!.alreadyRecorded]).toEqual([3, 0]);
  });

  test('uploaded references read back as stored: dates and matched as numbers, absent ones left out, per lender', async () => {
    const lender = ctx.newLender();
    await enrolled(lender, ['m1']);
    const report = await upload(lender.key, ['m1,U-1,12.50,settled,2026-11-02,2026-11-04,,', 'nobody,U-2,20.00,returned,2026-11-02,,2026-11-05,R01']);
    expect(report).toMatchObject({ row_count: 2, matched: 1 });
    const found = await store.uploadedAmong(storeCtx, lender.id, ['U-2', 'U-1', 'U-missing']);
    expect([...found].sort((a, b) => a.reference.localeCompare(b.reference))).toEqual([
      { id: expect.any(Number), reference: 'U-1', status: 'settled', settledAt: day('2026-11-04'), returnedAt: null, matched: 1 },
      { id: expect.any(Number), reference: 'U-2', status: 'returned', settledAt: null, returnedAt: day('2026-11-05'), matched: 0 },
    ]);
    expect(await store.uploadedAmong(storeCtx, lender.id, [])).toEqual([]);
    // A reference asked twice is still one stored row.
    expect((await store.uploadedAmong(storeCtx, lender.id, ['U-1', 'U-1'])).map((u) => u.reference)).toEqual(['U-1']);
    expect(await store.uploadedAmong(storeCtx, ctx.lender.id, ['U-1', 'U-2'])).toEqual([]);
  });

  test('paymentsAmong: the lender’s own payments by reference, amounts as numbers', async () => {
    const lender = ctx.newLender();
    const body = { api_key: 'sbx_uploads_contract_0001', rail_scope: 'both', is_default: true };
    const key = await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body });
    expect(key.status).toBe(201);
    const ids = await enrolled(lender, ['paid']);
    await cycle(ctx);
    const [p] = await ctx.rows<{ id: string; reference: string }>('SELECT id, reference FROM payments WHERE lender_id = ?', lender.id);
    expect(await store.paymentsAmong(storeCtx, lender.id, [p!.reference, 'DRS-nobody'])).toEqual([
      { id: p!.id, reference: p!.reference, enrollmentId: ids.get('paid')!, aid: 'paid', amount: 42500 },
    ]);
    expect(await store.paymentsAmong(storeCtx, ctx.lender.id, [p!.reference])).toEqual([]);
    expect(await store.paymentsAmong(storeCtx, lender.id, [])).toEqual([]);
    expect((await store.paymentsAmong(storeCtx, lender.id, [p!.reference, p!.reference])).map((x) => x.id)).toEqual([p!.id]);
    // An upload of the service's own reference is matched to its payment.
    const report = await upload(lender.key, [`,${p!.reference},425.00,settled,2026-11-20,2026-11-21,,`]);
    expect(report).toMatchObject({ row_count: 1, matched: 1 });
  });

  test('saveUploaded: adds in the order given; a change replaces the outcome or keeps it, and fills only missing dates', async () => {
    const lender = ctx.newLender();
    const now = ctx.clock.now();
    const add = (reference: string, over: Partial<Add> = {}): UploadedWrite => added(lender.id, reference, now, over);
    const change = (id: number): Extract<UploadedWrite, { kind: 'change' }> => ({
      kind: 'change',
      id,
      outcome: null,
      settledAt: null,
      returnedAt: null,
      aid: null,
      enrollmentId: null,
      batchId: null,
      matched: false,
      now,
    });
    const stored = async () =>
      (
        await ctx.rows<{
          reference: string;
          status: string;
          amount: number;
          code: string | null;
          settledAt: number | null;
          returnedAt: number | null;
          aid: string | null;
          matched: number;
        }>(
          `SELECT reference, status, amount_cents AS amount, return_code AS code, settled_at AS "settledAt", returned_at AS "returnedAt",
                  authorizer_unique_id AS aid, matched FROM uploaded_results WHERE lender_id = ? ORDER BY id`,
          lender.id,
        )
      ).map((r) => ({ ...r, amount: Number(r.amount), settledAt: r.settledAt === null ? null : Number(r.settledAt), matched: Number(r.matched) }));

    // Rolled back: nothing stored.
    await expect(
      t.inTx(async (tx) => {
        await store.serializeUploads(tx, lender.id);
        await store.saveUploaded(tx, [add('S-1')]);
        expect(await store.uploadedAmong(tx, lender.id, ['S-1'])).toHaveLength(1);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.uploadedAmong(storeCtx, lender.id, ['S-1'])).toEqual([]);

    await t.inTx(async (tx) => {
      await store.serializeUploads(tx, lender.id);
      await store.saveUploaded(tx, [add('S-2'), add('S-1', { status: 'settled', settledAt: day('2026-11-04') }), add('S-3')]);
    });
    expect((await stored()).map((r) => r.reference)).toEqual(['S-2', 'S-1', 'S-3']);
    const ids = new Map((await store.uploadedAmong(storeCtx, lender.id, ['S-1', 'S-2', 'S-3'])).map((u) => [u.reference, u.id]));

    await t.inTx(async (tx) => {
      await store.serializeUploads(tx, lender.id);
      await store.saveUploaded(tx, [
        // The same status again: the outcome kept, a missing date filled, the recorded one kept; now matched.
        { ...change(ids.get('S-1')!), outcome: null, settledAt: day('2026-11-09'), returnedAt: day('2026-11-10'), aid: 'who', matched: true },
        // A new status: status, amount and code replaced.
        { ...change(ids.get('S-2')!), outcome: { status: 'returned', amountCents: 1500, returnCode: 'R01' }, returnedAt: day('2026-11-06') },
        add('S-4'),
      ]);
    });
    expect(await stored()).toEqual([
      { reference: 'S-2', status: 'returned', amount: 1500, code: 'R01', settledAt: null, returnedAt: day('2026-11-06'), aid: null, matched: 0 },
      { reference: 'S-1', status: 'settled', amount: 1000, code: null, settledAt: day('2026-11-04'), returnedAt: day('2026-11-10'), aid: 'who', matched: 1 },
      { reference: 'S-3', status: 'sent', amount: 1000, code: null, settledAt: null, returnedAt: null, aid: null, matched: 0 },
      { reference: 'S-4', status: 'sent', amount: 1000, code: null, settledAt: null, returnedAt: null, aid: null, matched: 0 },
    ]);
    // One reference is stored once per lender.
    await expect(t.inTx((tx) => store.saveUploaded(tx, [add('S-3')]))).rejects.toThrow();
    expect(await stored()).toHaveLength(4);
  });

  test('creditsSince: each borrower’s credits above the position it was counted from, and its latest entry', async () => {
    const lender = ctx.newLender();
    const ids = await enrolled(lender, ['c1', 'c2']);
    await upload(lender.key, ['c1,C-1,10.00,settled,2026-11-02,2026-11-04,,', 'c1,C-2,2.50,settled,2026-11-03,2026-11-05,,']);
    const c1 = ids.get('c1')!;
    const c2 = ids.get('c2')!;
    const [top] = await ctx.rows<{ last: number }>('SELECT MAX(id) AS last FROM ledger_entries WHERE enrollment_id = ?', c1);
    const last = Number(top!.last);
    const whole = await t.inTx((tx) => store.creditsSince(tx, [{ enrollmentId: c1, after: 0 }, { enrollmentId: c2, after: 0 }]));
    expect([...whole].sort((a, b) => (a.enrollmentId === c1 ? -1 : b.enrollmentId === c1 ? 1 : 0))).toEqual([
      { enrollmentId: c1, from: 0, credited: 1250, last },
      { enrollmentId: c2, from: 0, credited: 0, last: 0 },
    ]);
    // From the latest entry: whichever position an engine counts from, what it counted is the credits above it.
    const [again] = await t.inTx((tx) => store.creditsSince(tx, [{ enrollmentId: c1, after: last }]));
    expect(again!.enrollmentId).toBe(c1);
    expect(again!.from === 0 || again!.from === last).toBe(true);
    expect(again!.credited).toBe(await credits(c1, again!.from));
    expect(again!.last).toBe(last);
    expect(typeof again!.credited).toBe('number');
    expect(await t.inTx((tx) => store.creditsSince(tx, []))).toEqual([]);
  });

  test('an unfinished upload: begun, read with its lender, advanced, ended; none begun in a rolled-back transaction', async () => {
    const lender = ctx.newLender();
    // Sealed as the service stores a file, so a resume that found it could open it.
    const file = ctx.rt.vault.sealBytes(Bun.zstdCompressSync(new TextEncoder().encode(`${HEADER}\n`)));
    const checkedAt = ctx.clock.now();
    const unfinished = (id: string) => ({ id, lenderId: lender.id, creator: 'API key test…', fileSealed: file, checkedAt, done: 0, matched: 0, alreadyRecorded: 0 });
    await expect(
      t.inTx(async (tx) => {
        await store.beginUnfinished(tx, unfinished('uf-rolled-back'));
        expect(await store.unfinishedDone(tx, 'uf-rolled-back')).toBe(0);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.unfinishedIds(storeCtx, 100)).not.toContain('uf-rolled-back');

    await t.inTx(async (tx) => {
      await store.beginUnfinished(tx, unfinished('uf-b'));
      await store.beginUnfinished(tx, unfinished('uf-a'));
    });
    try {
      // By id, at most `take`.
      expect(await store.unfinishedIds(storeCtx, 100)).toEqual(['uf-a', 'uf-b']);
      expect(await store.unfinishedIds(storeCtx, 1)).toEqual(['uf-a']);
      const found = await store.unfinishedOf(storeCtx, 'uf-a');
      expect(found).toEqual({ upload: unfinished('uf-a'), lender: { id: lender.id, name: expect.any(String), debitCardApproved: expect.any(Boolean) } });
      expect(await store.unfinishedOf(storeCtx, 'uf-none')).toBeUndefined();
      await t.inTx(async (tx) => {
        expect(await store.unfinishedDone(tx, 'uf-a')).toBe(0);
        await store.advanceUnfinished(tx, 'uf-a', { done: 512, matched: 300, alreadyRecorded: 40 });
      });
      expect((await store.unfinishedOf(storeCtx, 'uf-a'))!.upload).toMatchObject({ done: 512, matched: 300, alreadyRecorded: 40 });
      expect((await store.unfinishedOf(storeCtx, 'uf-b'))!.upload).toMatchObject({ done: 0, matched: 0, alreadyRecorded: 0 });
      expect(await t.inTx((tx) => store.unfinishedDone(tx, 'uf-a'))).toBe(512);
    } finally {
      await t.inTx(async (tx) => {
        await store.endUnfinished(tx, 'uf-a');
        await store.endUnfinished(tx, 'uf-b');
      });
    }
    expect(await t.inTx((tx) => store.unfinishedDone(tx, 'uf-a'))).toBeNull();
    expect(await store.unfinishedOf(storeCtx, 'uf-a')).toBeUndefined();
    expect(await store.unfinishedIds(storeCtx, 100)).toEqual([]);
  });

  test('serializeUploads: a second upload of the lender waits for the first, then finds the reference it stored', async () => {
    const lender = ctx.newLender();
    const now = ctx.clock.now();
    const seen = await inTurns(
      t,
      (tx) => store.serializeUploads(tx, lender.id),
      (tx) =>
        store.saveUploaded(tx, [added(lender.id, 'T-1', now, { amountCents: 100, submittedAt: now })]),
      (tx) => store.uploadedAmong(tx, lender.id, ['T-1']),
    );
    expect(seen.map((u) => [u.reference, u.status])).toEqual([['T-1', 'sent']]);
  });
});
