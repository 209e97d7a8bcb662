import type { Database } from 'bun:sqlite';

// The upload's raw prepared statements: matching and the re-sending rules run once per row of a file of up
// to 10 MB (bun run bench upload: about 100,000 rows), where the query builder's per-call cost was most of
// the time. bun:sqlite caches each statement.

export interface UploadedRow {
  id: number;
  status: string;
  settledAt: number | null;
  returnedAt: number | null;
  matched: number;
}

export const enrollmentOf = (sqlite: Database, lenderId: string, aid: string) =>
  sqlite.query<{ id: string }, [string, string]>('SELECT id FROM enrollments WHERE lender_id = ? AND authorizer_unique_id = ?').get(lenderId, aid);

export const paymentByReference = (sqlite: Database, lenderId: string, reference: string) =>
  sqlite
    .query<{ id: string; enrollmentId: string; aid: string }, [string, string]>(
      'SELECT id, enrollment_id AS enrollmentId, authorizer_unique_id AS aid FROM payments WHERE lender_id = ? AND reference = ?',
    )
    .get(lenderId, reference);

/** What is stored for some references at once (a file's rows are looked up in slices, not one by one). */
export const uploadedAmong = (sqlite: Database, lenderId: string, references: string[]) =>
  sqlite
    .query<UploadedRow & { reference: string }, [string, string]>(
      `SELECT id, reference, status, settled_at AS settledAt, returned_at AS returnedAt, matched FROM uploaded_results
        WHERE lender_id = ? AND reference IN (SELECT value FROM json_each(?))`,
    )
    .all(lenderId, JSON.stringify(references));

export const insertUploaded = (
  sqlite: Database,
  v: {
    lenderId: string;
    reference: string;
    aid: string | null;
    enrollmentId: string | null;
    status: string;
    amountCents: number;
    submittedAt: number;
    settledAt: number | null;
    returnedAt: number | null;
    returnCode: string | null;
    batchId: string | null;
    matched: boolean;
    now: number;
  },
) =>
  sqlite
    .query(
      `INSERT INTO uploaded_results (lender_id, reference, authorizer_unique_id, enrollment_id, status, amount_cents, submitted_at,
         settled_at, returned_at, return_code, batch_id, matched, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(v.lenderId, v.reference, v.aid, v.enrollmentId, v.status, v.amountCents, v.submittedAt, v.settledAt, v.returnedAt, v.returnCode, v.batchId, v.matched ? 1 : 0, v.now);

/** A new status (status, amount and code replaced) or the same one again (dates filled in only). */
export const updateUploaded = (
  sqlite: Database,
  v: {
    id: number;
    status: string;
    amountCents: number | null;
    returnCode: string | null | undefined;
    settledAt: number | null;
    returnedAt: number | null;
    aid: string | null;
    enrollmentId: string | null;
    batchId: string | null;
    matched: boolean;
    now: number;
  },
) =>
  sqlite
    .query(
      `UPDATE uploaded_results SET status = ?, amount_cents = COALESCE(?, amount_cents), return_code = CASE WHEN ? THEN ? ELSE return_code END,
         settled_at = COALESCE(settled_at, ?), returned_at = COALESCE(returned_at, ?), authorizer_unique_id = ?, enrollment_id = ?,
         batch_id = ?, matched = ?, updated_at = ? WHERE id = ?`,
    )
    .run(
      v.status,
      v.amountCents,
      v.returnCode !== undefined ? 1 : 0,
      v.returnCode ?? null,
      v.settledAt,
      v.returnedAt,
      v.aid,
      v.enrollmentId,
      v.batchId,
      v.matched ? 1 : 0,
      v.now,
      v.id,
    );
