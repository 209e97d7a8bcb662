import { and, desc, eq, sql } from 'drizzle-orm';
import { apiKeys, lenders, paymentResultUploads, payments, unfinishedUploads } from '../../../db/schema-pg';
import { olderThan } from '../../platform/pagination';
import type { PgDb } from '../../platform/pg';
import { lockFor, readerOf, writerOf, rows, listOf, probeByIndex } from '../../platform/sql/pg';
import type { UploadedWrite, UploadStore } from './store';

// The upload on PostgreSQL. A file's rows are read and written a slice at a time (hundreds of references per
// statement): the look-ups take the slice's references as one array parameter (`= ANY`), the writes pass one
// array per column to `unnest`, one statement for the slice's new references and one for its changed ones,
// never a statement per row. Two uploads of one lender run one after the other (serializeUploads), so a
// reference's stored row is never decided on by two of them at once.


type Add = Extract<UploadedWrite, { kind: 'add' }>;
type Change = Extract<UploadedWrite, { kind: 'change' }>;

/** The slice's new references, inserted in the order given (their row ids follow it). */
async function insertUploaded(db: PgDb, adds: Add[]): Promise<void> {
  await db.execute(sql`
    INSERT INTO uploaded_results (lender_id, reference, authorizer_unique_id, enrollment_id, status, amount_cents, submitted_at,
      settled_at, returned_at, return_code, batch_id, matched, updated_at)
    SELECT lender_id, reference, aid, enrollment_id, status, amount_cents, submitted_at, settled_at, returned_at, return_code, batch_id, matched, updated_at
      FROM unnest(${listOf(adds.map((a) => a.lenderId))}::text[], ${listOf(adds.map((a) => a.reference))}::text[], ${listOf(adds.map((a) => a.aid))}::text[],
                  ${listOf(adds.map((a) => a.enrollmentId))}::text[], ${listOf(adds.map((a) => a.status))}::text[], ${listOf(adds.map((a) => a.amountCents))}::bigint[],
                  ${listOf(adds.map((a) => a.submittedAt))}::bigint[], ${listOf(adds.map((a) => a.settledAt))}::bigint[], ${listOf(adds.map((a) => a.returnedAt))}::bigint[],
                  ${listOf(adds.map((a) => a.returnCode))}::text[], ${listOf(adds.map((a) => a.batchId))}::text[], ${listOf(adds.map((a) => (a.matched ? 1 : 0)))}::int[],
                  ${listOf(adds.map((a) => a.now))}::bigint[])
           WITH ORDINALITY AS t(lender_id, reference, aid, enrollment_id, status, amount_cents, submitted_at, settled_at, returned_at, return_code, batch_id, matched, updated_at, n)
     ORDER BY n`);
}

/**
 * Later rows of stored references: `outcome` replaces the status, amount and return code (a new status), or
 * is null for the same status again, which keeps them; recorded dates are kept either way, missing ones filled.
 */
async function updateUploaded(db: PgDb, changes: Change[]): Promise<void> {
  await db.execute(sql`
    UPDATE uploaded_results u SET
      status = CASE WHEN t.replaces = 1 THEN t.status ELSE u.status END,
      amount_cents = CASE WHEN t.replaces = 1 THEN t.amount_cents ELSE u.amount_cents END,
      return_code = CASE WHEN t.replaces = 1 THEN t.return_code ELSE u.return_code END,
      settled_at = COALESCE(u.settled_at, t.settled_at), returned_at = COALESCE(u.returned_at, t.returned_at),
      authorizer_unique_id = t.aid, enrollment_id = t.enrollment_id, batch_id = t.batch_id, matched = t.matched, updated_at = t.updated_at
    FROM unnest(${listOf(changes.map((w) => w.id))}::bigint[], ${listOf(changes.map((w) => (w.outcome ? 1 : 0)))}::int[],
                ${listOf(changes.map((w) => w.outcome?.status ?? null))}::text[], ${listOf(changes.map((w) => w.outcome?.amountCents ?? null))}::bigint[],
                ${listOf(changes.map((w) => w.outcome?.returnCode ?? null))}::text[], ${listOf(changes.map((w) => w.settledAt))}::bigint[],
                ${listOf(changes.map((w) => w.returnedAt))}::bigint[], ${listOf(changes.map((w) => w.aid))}::text[], ${listOf(changes.map((w) => w.enrollmentId))}::text[],
                ${listOf(changes.map((w) => w.batchId))}::text[], ${listOf(changes.map((w) => (w.matched ? 1 : 0)))}::int[], ${listOf(changes.map((w) => w.now))}::bigint[])
         AS t(id, replaces, status, amount_cents, return_code, settled_at, returned_at, aid, enrollment_id, batch_id, matched, updated_at)
    WHERE u.id = t.id`);
}

export const pgUploadStore: UploadStore = {
  sliceRows: 512,
  async serializeUploads(c, lenderId) {
    await lockFor(c, 'payment-results-upload', lenderId);
    // Taken first in the upload's transaction: its probes stay index probes while it fills the tables.
    await probeByIndex(c);
  },
  async paymentsAmong(c, lenderId, references) {
    return readerOf(c)
      .select({ id: payments.id, reference: payments.reference, enrollmentId: payments.enrollmentId, aid: payments.authorizerUniqueId, amount: payments.amountCents })
      .from(payments)
      .where(and(eq(payments.lenderId, lenderId), sql`${payments.reference} = ANY(${listOf(references)}::text[])`));
  },
  async uploadedAmong(c, lenderId, references) {
    if (references.length === 0) return [];
    // One probe of the unique index (lender_id, reference) per reference asked, never a scan of the lender's
    // rows: the rows an upload adds are not in the table's statistics until it commits, so a plain `= ANY`
    // was planned as a read of every row of the lender filtered by reference, and each slice of a large
    // first upload read all the rows the slices before it had added (120,000 rows took past the time limit).
    // The LIMIT keeps the subquery a probe per reference (a subquery with a LIMIT is not flattened into a join).
    // Each reference asked once: a stored row is answered once however often it is asked, as SQLite's IN does.
    const asked = [...new Set(references)];
    const found = await rows<{ id: string; reference: string; status: string; settledAt: string | null; returnedAt: string | null; matched: number }>(
      readerOf(c),
      sql`SELECT u.id, u.reference, u.status, u.settled_at AS "settledAt", u.returned_at AS "returnedAt", u.matched
            FROM unnest(${listOf(asked)}::text[]) AS r(reference)
            CROSS JOIN LATERAL (SELECT id, reference, status, settled_at, returned_at, matched FROM uploaded_results
                                 WHERE lender_id = ${lenderId} AND reference = r.reference LIMIT 1) u`,
    );
    return found.map((u) => ({
      id: Number(u.id),
      reference: u.reference,
      status: u.status,
      settledAt: u.settledAt === null ? null : Number(u.settledAt),
      returnedAt: u.returnedAt === null ? null : Number(u.returnedAt),
      // 0 or 1, as SQLite reads it.
      matched: Number(u.matched),
    }));
  },
  async saveUploaded(c, writes) {
    const db = writerOf(c);
    const adds: Add[] = [];
    const changes: Change[] = [];
    // A slice names each reference once: its new references and its changed ones are distinct rows.
    for (const w of writes) {
      if (w.kind === 'add') adds.push(w);
      else changes.push(w);
    }
    if (adds.length > 0) await insertUploaded(db, adds);
    if (changes.length > 0) await updateUploaded(db, changes);
  },
  async creditsSince(c, since) {
    if (since.length === 0) return [];
    // Every entry of each borrower, whatever the position asked (store.ts says why): a scan of the index on
    // (enrollment_id, id) each.
    const found = await rows<{ enrollmentId: string; credited: string; last: string }>(
      writerOf(c),
      sql`SELECT b.id AS "enrollmentId", COALESCE(SUM(l.amount_cents) FILTER (WHERE l.kind = 'credit'), 0)::text AS credited, COALESCE(MAX(l.id), 0) AS last
            FROM unnest(${listOf(since.map((b) => b.enrollmentId))}::text[]) AS b(id)
            LEFT JOIN ledger_entries l ON l.enrollment_id = b.id
           GROUP BY b.id`,
    );
    return found.map((f) => ({ enrollmentId: f.enrollmentId, from: 0, credited: Number(f.credited), last: Number(f.last) }));
  },
  async recordUpload(c, u) {
    await writerOf(c)
      .insert(paymentResultUploads)
      .values({
        id: u.id,
        lenderId: u.lenderId,
        recordedAt: u.recordedAt,
        creator: u.creator,
        format: u.report.format,
        rowCount: u.report.rowCount,
        dataRowCount: u.report.dataRowCount,
        matched: u.report.matched,
        needsAttention: u.report.needsAttention,
        alreadyRecorded: u.report.alreadyRecorded,
        problemCount: u.report.problems.length,
        problems: JSON.stringify(u.report.problems),
      });
  },
  async beginUnfinished(c, u) {
    await writerOf(c).insert(unfinishedUploads).values(u);
  },
  async unfinishedDone(c, id) {
    const [u] = await writerOf(c).select({ done: unfinishedUploads.done }).from(unfinishedUploads).where(eq(unfinishedUploads.id, id)).for('update');
    return u?.done ?? null;
  },
  async advanceUnfinished(c, id, { done, matched, alreadyRecorded }) {
    await writerOf(c).update(unfinishedUploads).set({ done, matched, alreadyRecorded }).where(eq(unfinishedUploads.id, id));
  },
  async endUnfinished(c, id) {
    await writerOf(c).delete(unfinishedUploads).where(eq(unfinishedUploads.id, id));
  },
  async unfinishedIds(c, take) {
    return (await readerOf(c).select({ id: unfinishedUploads.id }).from(unfinishedUploads).orderBy(unfinishedUploads.id).limit(take)).map((u) => u.id);
  },
  async unfinishedOf(c, id) {
    const [found] = await readerOf(c)
      .select({ upload: unfinishedUploads, lender: { id: lenders.id, name: lenders.name, debitCardApproved: lenders.debitCardApproved } })
      .from(unfinishedUploads)
      .innerJoin(lenders, eq(lenders.id, unfinishedUploads.lenderId))
      .where(eq(unfinishedUploads.id, id));
    return found;
  },
  async uploadsBefore(c, lenderId, before, take) {
    return readerOf(c)
      .select()
      .from(paymentResultUploads)
      .where(and(eq(paymentResultUploads.lenderId, lenderId), olderThan(paymentResultUploads.recordedAt, paymentResultUploads.id, before.t, before.i)))
      .orderBy(desc(paymentResultUploads.recordedAt), desc(paymentResultUploads.id))
      .limit(take);
  },
  async uploadOf(c, lenderId, id) {
    const [row] = await readerOf(c)
      .select()
      .from(paymentResultUploads)
      .where(and(eq(paymentResultUploads.id, id), eq(paymentResultUploads.lenderId, lenderId)));
    return row;
  },
  async apiKeyPrefix(c, keyId) {
    const [k] = await readerOf(c).select({ prefix: apiKeys.prefix }).from(apiKeys).where(eq(apiKeys.id, keyId));
    return k?.prefix ?? null;
  },
};
