// engine: postgres
// The upload's store on PostgreSQL: a slice's references read with one array parameter and written with one
// unnest statement each for the new and the changed ones, read back as SQLite reads them; and the lender's
// uploads recorded one after the other, so that twenty uploads of the same results at once add each reference
// once and decide every later row on what the one before stored.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import type { Ctx } from '../../../src/deps';
import { transaction } from '../../../src/platform/context';
import { rows } from '../../../src/platform/sql/pg';
import { type UploadedWrite } from '../../../src/modules/payment-results-upload/store';
import { onPostgres } from '../../helpers/pg';
import { pgServiceDeps, type PgServiceDeps } from '../../helpers/pg-service-deps';

const CALLERS = 20;
/** Many transactions at once on a shared machine: seconds, not milliseconds. */
const SLOW = 120_000;

if (!onPostgres) {
  test('not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const envs: PgServiceDeps[] = [];
  const env = () => {
    const e = pgServiceDeps({ max: 10 });
    envs.push(e);
    return e;
  };
  afterAll(async () => {
    for (const e of envs) await e.close();
  }, SLOW);

  const DAY = 86_400_000;
  const T0 = Date.UTC(2026, 9, 1);

  const add = (lenderId: string, reference: string, over: Partial<Extract<UploadedWrite, { kind: 'add' }>> = {}): UploadedWrite => ({
    kind: 'add',
    lenderId,
    reference,
    status: 'sent',
    amountCents: 1234,
    submittedAt: T0,
    settledAt: null,
    returnedAt: null,
    returnCode: null,
    aid: null,
    enrollmentId: null,
    batchId: null,
    matched: false,
    now: T0 + DAY,
    ...over,
  });

  /**
   * One upload of `references` as the service records it, on the store alone: its turn taken first, then each
   * slice's stored rows read, a row added for a reference not stored and a later row for one that is (the new
   * status `settled`), written as one slice. Answers how many it added.
   */
  async function uploadOnce(ctx: Ctx, references: string[], slice = 128): Promise<number> {
    return transaction(ctx, async (tx) => {
      await tx.deps.stores.uploads.serializeUploads(tx, ctx.lender.id);
      let added = 0;
      for (let i = 0; i < references.length; i += slice) {
        const refs = references.slice(i, i + slice);
        const priors = new Map((await tx.deps.stores.uploads.uploadedAmong(tx, ctx.lender.id, refs)).map((u) => [u.reference, u]));
        // The window in which another upload would decide on the same stored rows, were it not waiting.
        await Bun.sleep(1);
        const writes: UploadedWrite[] = refs.map((r) => {
          const prior = priors.get(r);
          if (!prior) {
            added++;
            return add(ctx.lender.id, r);
          }
          return {
            kind: 'change',
            id: prior.id,
            outcome: prior.status === 'settled' ? null : { status: 'settled', amountCents: 1234, returnCode: null },
            settledAt: T0 + 2 * DAY,
            returnedAt: null,
            aid: null,
            enrollmentId: null,
            batchId: null,
            matched: false,
            now: T0 + 3 * DAY,
          };
        });
        await tx.deps.stores.uploads.saveUploaded(tx, writes);
      }
      return added;
    });
  }

  describe('the upload store on PostgreSQL', () => {
    test('20 uploads of the same 300 results at once: each reference added once, the others decided on it', async () => {
      const e = env();
      const ctx = await e.newLender();
      const references = Array.from({ length: 300 }, (_, i) => `REF-${String(i).padStart(4, '0')}`);
      const settled = await Promise.allSettled(Array.from({ length: CALLERS }, () => uploadOnce(ctx, references)));
      expect(settled.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason))).toEqual([]);
      const added = settled.map((s) => (s as PromiseFulfilledResult<number>).value);
      // One upload added all 300 (the first to take its turn); every later one changed what it stored.
      expect(added.reduce((a, b) => a + b, 0)).toBe(references.length);
      expect(added.filter((n) => n === references.length).length).toBe(1);
      const stored = await rows<{ n: number; refs: number; settled: number }>(
        e.pg.db,
        sql`SELECT count(*)::int AS n, count(DISTINCT reference)::int AS refs, count(*) FILTER (WHERE status = 'settled')::int AS settled FROM uploaded_results WHERE lender_id = ${ctx.lender.id}`,
      );
      expect(stored[0]).toEqual({ n: 300, refs: 300, settled: 300 });
    }, SLOW);

    test('a slice written and read back: the shapes, the order of ids, and what a later row keeps', async () => {
      const e = env();
      const ctx = await e.newLender();
      const other = await e.newLender();
      const refs = Array.from({ length: 1000 }, (_, i) => `R-${i}`);
      // Odd values on purpose: quotes, commas, braces and NULL-looking text go through the arrays unchanged.
      const odd = [`a'b`, 'c,d', '{e}', 'NULL', '"f"', 'é ü'];
      await transaction(ctx, (tx) =>
        tx.deps.stores.uploads.saveUploaded(tx, [
          ...refs.map((r, i) => add(ctx.lender.id, r, { amountCents: 9_007_199_254_740_991 - i, matched: i % 2 === 0, aid: i % 3 === 0 ? `aid-${i}` : null })),
          ...odd.map((r) => add(ctx.lender.id, r, { status: 'returned', returnedAt: T0 + 5 * DAY, returnCode: 'R01', batchId: r })),
        ]),
      );
      await transaction(other, (tx) => tx.deps.stores.uploads.saveUploaded(tx, [add(other.lender.id, 'R-1')]));
      const back = await ctx.deps.stores.uploads.uploadedAmong(ctx, ctx.lender.id, [...refs, ...odd, 'absent']);
      expect(back.length).toBe(refs.length + odd.length);
      const byRef = new Map(back.map((u) => [u.reference, u]));
      // Ids follow the order the slice gave.
      const ids = refs.map((r) => byRef.get(r)!.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(byRef.get('R-0')).toEqual({ id: expect.any(Number), reference: 'R-0', status: 'sent', settledAt: null, returnedAt: null, matched: 1 });
      expect(byRef.get('R-1')!.matched).toBe(0);
      for (const r of odd) expect(byRef.get(r)).toMatchObject({ reference: r, status: 'returned', returnedAt: T0 + 5 * DAY });
      const amounts = await rows<{ amount: string; aid: string | null; batch: string | null }>(
        e.pg.db,
        sql`SELECT amount_cents::text AS amount, authorizer_unique_id AS aid, batch_id AS batch FROM uploaded_results WHERE lender_id = ${ctx.lender.id} AND reference IN ('R-0', 'R-1', ${odd[0]!})`,
      );
      expect(amounts.map((a) => a.amount).sort()).toEqual(['1234', '9007199254740990', '9007199254740991']);

      // Later rows: a new status replaces status, amount and code; the same status keeps them; dates recorded stay.
      const r0 = byRef.get('R-0')!;
      const rOdd = byRef.get(odd[0]!)!;
      await transaction(ctx, (tx) =>
        tx.deps.stores.uploads.saveUploaded(tx, [
          { kind: 'change', id: r0.id, outcome: { status: 'settled', amountCents: 55, returnCode: null }, settledAt: T0 + 2 * DAY, returnedAt: null, aid: 'x', enrollmentId: null, batchId: 'b', matched: false, now: T0 + 9 * DAY },
          { kind: 'change', id: rOdd.id, outcome: null, settledAt: null, returnedAt: T0 + 7 * DAY, aid: null, enrollmentId: null, batchId: null, matched: true, now: T0 + 9 * DAY },
        ]),
      );
      const after = new Map((await ctx.deps.stores.uploads.uploadedAmong(ctx, ctx.lender.id, ['R-0', odd[0]!])).map((u) => [u.reference, u]));
      expect(after.get('R-0')).toEqual({ id: r0.id, reference: 'R-0', status: 'settled', settledAt: T0 + 2 * DAY, returnedAt: null, matched: 0 });
      expect(after.get(odd[0]!)).toEqual({ id: rOdd.id, reference: odd[0]!, status: 'returned', settledAt: null, returnedAt: T0 + 5 * DAY, matched: 1 });
      const changed = await rows<{ amount: number; code: string | null; aid: string | null; batch: string | null; updated: string }>(
        e.pg.db,
        sql`SELECT amount_cents::int AS amount, return_code AS code, authorizer_unique_id AS aid, batch_id AS batch, updated_at::text AS updated FROM uploaded_results WHERE id = ${r0.id}`,
      );
      expect(changed[0]).toEqual({ amount: 55, code: null, aid: 'x', batch: 'b', updated: String(T0 + 9 * DAY) });
      const kept = await rows<{ code: string | null }>(e.pg.db, sql`SELECT return_code AS code FROM uploaded_results WHERE id = ${rOdd.id}`);
      expect(kept[0]!.code).toBe('R01');
      // Nothing to write: no statement.
      await transaction(ctx, (tx) => tx.deps.stores.uploads.saveUploaded(tx, []));
      expect(await ctx.deps.stores.uploads.uploadedAmong(ctx, ctx.lender.id, [])).toEqual([]);
    }, SLOW);

    test('the lender’s payments among references; borrowers’ credits, past 2^53 cents; the history, newest first, a page at a time', async () => {
      const e = env();
      const ctx = await e.newLender();
      const id = ctx.lender.id;
      await e.pg.db.execute(sql`
        INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, collectable_amount_cents, days_past_due, rail, enrolled_at, updated_at)
        VALUES (${`${id}-e1`}, ${id}, 'loan-1', 'monitoring', 100, 3, 'ach', ${T0}, ${T0}), (${`${id}-e2`}, ${id}, 'loan-2', 'monitoring', 100, 3, 'ach', ${T0}, ${T0})`);
      await e.pg.db.execute(sql`
        INSERT INTO payment_connections (id, lender_id, processor, label, rail_scope, created_at, updated_at) VALUES (${`${id}-k`}, ${id}, 'sandbox', 'k', 'both', ${T0}, ${T0})`);
      await e.pg.db.execute(sql`
        INSERT INTO payments (id, lender_id, enrollment_id, authorizer_unique_id, connection_id, rail, amount_cents, reference, status, created_at, updated_at)
        VALUES (${`${id}-p1`}, ${id}, ${`${id}-e1`}, 'loan-1', ${`${id}-k`}, 'ach', 9007199254740000, 'DRS-1', 'settled', ${T0}, ${T0})`);
      expect(await ctx.deps.stores.uploads.paymentsAmong(ctx, id, ['DRS-1', 'DRS-2'])).toEqual([{ id: `${id}-p1`, reference: 'DRS-1', enrollmentId: `${id}-e1`, aid: 'loan-1', amount: 9007199254740000 }]);
      expect(await ctx.deps.stores.uploads.paymentsAmong(ctx, 'another', ['DRS-1'])).toEqual([]);

      /** A settled event and the credit it made in the borrower's ledger. */
      const credit = async (n: number, enrollment: string, cents: number) => {
        await e.pg.db.execute(sql`
          INSERT INTO payment_events (id, lender_id, reference, status, amount_cents, source, source_event_id, occurred_at, recorded_at)
          VALUES (${`${id}-ev${n}`}, ${id}, ${`DRS-${n}`}, 'settled', ${cents}, 'upload', ${`s${n}`}, ${T0}, ${T0})`);
        await e.pg.db.execute(sql`
          INSERT INTO ledger_entries (lender_id, enrollment_id, reference, kind, amount_cents, event_id, at)
          VALUES (${id}, ${enrollment}, ${`DRS-${n}`}, 'credit', ${cents}, ${`${id}-ev${n}`}, ${T0})`);
      };
      await credit(1, `${id}-e1`, 9007199254740000);
      await credit(2, `${id}-e2`, 5000);
      const since = [
        { enrollmentId: `${id}-e1`, after: 0 },
        { enrollmentId: `${id}-e2`, after: 0 },
        { enrollmentId: `${id}-none`, after: 0 },
      ];
      const credits = async () => new Map((await transaction(ctx, (tx) => tx.deps.stores.uploads.creditsSince(tx, since))).map((c) => [c.enrollmentId, c]));
      const first = await credits();
      expect(first.get(`${id}-e1`)).toMatchObject({ from: 0, credited: 9007199254740000 });
      expect(first.get(`${id}-e2`)).toMatchObject({ from: 0, credited: 5000 });
      expect(first.get(`${id}-none`)).toEqual({ enrollmentId: `${id}-none`, from: 0, credited: 0, last: 0 });
      // Every entry is summed whatever the position asked (ids are handed out before commit), and the latest
      // entry is the one written last: 9007199254740000 + 5000 cents is past 2^53 - 1.
      await credit(3, `${id}-e1`, 5000);
      since[0]!.after = first.get(`${id}-e1`)!.last;
      const second = await credits();
      expect(second.get(`${id}-e1`)).toMatchObject({ from: 0, credited: 9007199254745000 });
      expect(second.get(`${id}-e1`)!.last).toBeGreaterThan(first.get(`${id}-e1`)!.last);
      expect(second.get(`${id}-e1`)!.credited).toBeGreaterThan(Number.MAX_SAFE_INTEGER);

      const report = { format: 'generic' as const, rowCount: 3, dataRowCount: 4, matched: 2, needsAttention: 1, alreadyRecorded: 1, problems: [{ row: 2, reason: 'x', severity: 'warning' }] };
      await transaction(ctx, async (tx) => {
        await tx.deps.stores.uploads.recordUpload(tx, { id: 'u1', lenderId: id, recordedAt: T0, creator: 'ana', report });
        await tx.deps.stores.uploads.recordUpload(tx, { id: 'u3', lenderId: id, recordedAt: T0 + 1, creator: null, report });
        await tx.deps.stores.uploads.recordUpload(tx, { id: 'u2', lenderId: id, recordedAt: T0 + 1, creator: null, report });
      });
      const page = await ctx.deps.stores.uploads.uploadsBefore(ctx, id, { t: Number.MAX_SAFE_INTEGER, i: '' }, 2);
      expect(page.map((u) => u.id)).toEqual(['u3', 'u2']);
      expect(page[0]).toMatchObject({ lenderId: id, recordedAt: T0 + 1, creator: null, format: 'generic', rowCount: 3, dataRowCount: 4, matched: 2, needsAttention: 1, alreadyRecorded: 1, problemCount: 1 });
      expect((await ctx.deps.stores.uploads.uploadsBefore(ctx, id, { t: T0 + 1, i: 'u2' }, 2)).map((u) => u.id)).toEqual(['u1']);
      expect(JSON.parse((await ctx.deps.stores.uploads.uploadOf(ctx, id, 'u1'))!.problems)).toEqual(report.problems);
      expect(await ctx.deps.stores.uploads.uploadOf(ctx, 'another', 'u1')).toBeUndefined();
      expect(await ctx.deps.stores.uploads.apiKeyPrefix(ctx, 'no-such-key')).toBeNull();
    }, SLOW);
  });
}
