import { and, desc, eq } from 'drizzle-orm';
import { apiKeys, lenders, paymentResultUploads, unfinishedUploads } from '../../../db/schema';
import type { Db, Orm } from '../../platform/db';
import { olderThan } from '../../platform/pagination';
import { listOf, lockFor, probeByIndex, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { UploadedRow, UploadedWrite, UploadStore } from './store';

// The upload's raw prepared statements: matching and the re-sending rules run once per row of a file of up
// to 10 MB (bun run bench upload: about 100,000 rows), where the query builder's per-call cost was most of
// the time. bun:sqlite caches each statement.

/** The lender's payments among some references (the unique index on lender and reference). */
const paymentsAmong = (db: Db, lenderId: string, references: string[]) =>
  db.$client
    .query<{ id: string; reference: string; enrollmentId: string; aid: string; amount: number }, [string, string]>(
      `SELECT id, reference, enrollment_id AS enrollmentId, authorizer_unique_id AS aid, amount_cents AS amount FROM payments
        WHERE lender_id = ? AND reference IN (SELECT value FROM json_each(?))`,
    )
    .all(lenderId, listOf(references));

/** What is stored for some references at once (a file's rows are looked up in slices, not one by one). */
const uploadedAmong = (db: Db, lenderId: string, references: string[]) =>
  db.$client
    .query<UploadedRow & { reference: string }, [string, string]>(
      `SELECT id, reference, status, settled_at AS settledAt, returned_at AS returnedAt, matched FROM uploaded_results
        WHERE lender_id = ? AND reference IN (SELECT value FROM json_each(?))`,
    )
    .all(lenderId, listOf(references));

const insertUploaded = (tx: Orm, v: Extract<UploadedWrite, { kind: 'add' }>) =>
  tx.$client
    .query(
      `INSERT INTO uploaded_results (lender_id, reference, authorizer_unique_id, enrollment_id, status, amount_cents, submitted_at,
         settled_at, returned_at, return_code, batch_id, matched, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(v.lenderId, v.reference, v.aid, v.enrollmentId, v.status, v.amountCents, v.submittedAt, v.settledAt, v.returnedAt, v.returnCode, v.batchId, v.matched ? 1 : 0, v.now);

/**
 * A later row of a stored reference: `outcome` replaces its status, amount and return code (a new status), or
 * is null for the same status again, which keeps them; recorded dates are kept either way, missing ones filled.
 */
const updateUploaded = (tx: Orm, v: Extract<UploadedWrite, { kind: 'change' }>) =>
  tx.$client
    .query(
      `UPDATE uploaded_results SET
         status = CASE WHEN ?1 THEN ?2 ELSE status END, amount_cents = CASE WHEN ?1 THEN ?3 ELSE amount_cents END,
         return_code = CASE WHEN ?1 THEN ?4 ELSE return_code END,
         settled_at = COALESCE(settled_at, ?5), returned_at = COALESCE(returned_at, ?6), authorizer_unique_id = ?7,
         enrollment_id = ?8, batch_id = ?9, matched = ?10, updated_at = ?11 WHERE id = ?12`,
    )
    .run(
      v.outcome ? 1 : 0,
      v.outcome?.status ?? null,
      v.outcome?.amountCents ?? null,
      v.outcome?.returnCode ?? null,
      v.settledAt,
      v.returnedAt,
      v.aid,
      v.enrollmentId,
      v.batchId,
      v.matched ? 1 : 0,
      v.now,
      v.id,
    );

/**
 * Each borrower's credits after a position of its ledger, and its latest entry: one seek of the index on
 * (enrollment_id, id) each, reading only the entries after the position.
 */
const creditsSince = (tx: Orm, since: { enrollmentId: string; after: number }[]) =>
  tx.$client
    .query<{ enrollmentId: string; from: number; credited: number; last: number }, [string]>(
      `SELECT s.value ->> 0 AS enrollmentId, s.value ->> 1 AS "from",
              COALESCE(SUM(CASE WHEN l.kind = 'credit' THEN l.amount_cents END), 0) AS credited, COALESCE(MAX(l.id), s.value ->> 1) AS last
         FROM json_each(?) s LEFT JOIN ledger_entries l ON l.enrollment_id = s.value ->> 0 AND l.id > s.value ->> 1
        GROUP BY s.key`,
    )
    .all(listOf(since.map((b) => [b.enrollmentId, b.after])));

export const sqliteUploadStore: UploadStore = {
  sliceRows: 128,
  // One writer at a time: an upload's transaction is never interleaved with another's.
  async serializeUploads(c, lenderId) {
    await lockFor(c, 'payment-results-upload', lenderId);
    await probeByIndex(c);
  },
  async paymentsAmong(c, lenderId, references) {
    return paymentsAmong(readerOf(c), lenderId, references);
  },
  async uploadedAmong(c, lenderId, references) {
    return uploadedAmong(readerOf(c), lenderId, references);
  },
  async saveUploaded(c, writes) {
    const tx = writerOf(c);
    for (const w of writes) {
      if (w.kind === 'add') insertUploaded(tx, w);
      else updateUploaded(tx, w);
    }
  },
  async creditsSince(c, since) {
    return since.length === 0 ? [] : creditsSince(writerOf(c), since);
  },
  async recordUpload(c, u) {
    writerOf(c)
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
      })
      .run();
  },
  async beginUnfinished(c, u) {
    writerOf(c).insert(unfinishedUploads).values(u).run();
  },
  async unfinishedDone(c, id) {
    return writerOf(c).select({ done: unfinishedUploads.done }).from(unfinishedUploads).where(eq(unfinishedUploads.id, id)).get()?.done ?? null;
  },
  async advanceUnfinished(c, id, { done, matched, alreadyRecorded }) {
    writerOf(c).update(unfinishedUploads).set({ done, matched, alreadyRecorded }).where(eq(unfinishedUploads.id, id)).run();
  },
  async endUnfinished(c, id) {
    writerOf(c).delete(unfinishedUploads).where(eq(unfinishedUploads.id, id)).run();
  },
  async unfinishedIds(c, take) {
    return readerOf(c).select({ id: unfinishedUploads.id }).from(unfinishedUploads).orderBy(unfinishedUploads.id).limit(take).all().map((u) => u.id);
  },
  async unfinishedOf(c, id) {
    const found = readerOf(c)
      .select({ upload: unfinishedUploads, lender: { id: lenders.id, name: lenders.name, debitCardApproved: lenders.debitCardApproved } })
      .from(unfinishedUploads)
      .innerJoin(lenders, eq(lenders.id, unfinishedUploads.lenderId))
      .where(eq(unfinishedUploads.id, id))
      .get();
    return found ?? undefined;
  },
  async uploadsBefore(c, lenderId, before, take) {
    return readerOf(c)
      .select()
      .from(paymentResultUploads)
      .where(and(eq(paymentResultUploads.lenderId, lenderId), olderThan(paymentResultUploads.recordedAt, paymentResultUploads.id, before.t, before.i)))
      .orderBy(desc(paymentResultUploads.recordedAt), desc(paymentResultUploads.id))
      .limit(take)
      .all();
  },
  async uploadOf(c, lenderId, id) {
    return readerOf(c)
      .select()
      .from(paymentResultUploads)
      .where(and(eq(paymentResultUploads.id, id), eq(paymentResultUploads.lenderId, lenderId)))
      .get();
  },
  async apiKeyPrefix(c, keyId) {
    const k = readerOf(c).select({ prefix: apiKeys.prefix }).from(apiKeys).where(eq(apiKeys.id, keyId)).get();
    return k?.prefix ?? null;
  },
};
