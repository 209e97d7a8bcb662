import { index, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { cents, count, flag, ident, ms, rowId } from './columns';
import { enrollments } from './enrollments';
import { lenders } from './lenders';
import { RESULT_FILE_FORMATS } from './enums';

// What the payment-results uploads said about each reference: the latest accepted row, kept so that a later
// upload applies the re-sending rules against it, and so that an unmatched row (stored, needing attention)
// is matched when it is uploaded again with the borrower's identifier. No personal data: identifiers,
// amounts, dates and codes only.
export const uploadedResults = sqliteTable(
  'uploaded_results',
  {
    id: rowId('id'),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    reference: ident('reference').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id'),
    enrollmentId: ident('enrollment_id').references(() => enrollments.id),
    status: text('status').notNull(), // the upload's status vocabulary (settled, late_return, sent, ...)
    amountCents: cents('amount_cents').notNull(),
    submittedAt: ms('submitted_at').notNull(),
    settledAt: ms('settled_at'),
    returnedAt: ms('returned_at'),
    returnCode: text('return_code'),
    batchId: ident('batch_id'),
    matched: flag('matched').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('uploaded_results_reference_uq').on(t.lenderId, t.reference),
    // Return rates: uploaded debits by submission, uploaded returns by their date.
    index('uploaded_results_submitted_idx').on(t.lenderId, t.submittedAt),
    index('uploaded_results_returned_idx').on(t.lenderId, t.returnedAt),
  ],
);

// Each recorded upload: who sent it and when, the report's counts, and its problems as the report listed
// them (at most 10,000 and the row-0 note), for the upload history. Written in the upload's last transaction,
// so an upload is in the history exactly when all its rows are recorded. Problems name rows and rules, never a
// cell's personal data.
export const paymentResultUploads = sqliteTable(
  'payment_result_uploads',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    recordedAt: ms('recorded_at').notNull(),
    /** Who sent it: the portal user's name, or the API key's prefix. */
    creator: text('creator'),
    format: text('format', { enum: RESULT_FILE_FORMATS }).notNull(),
    rowCount: count('row_count').notNull(),
    dataRowCount: count('data_row_count').notNull(),
    matched: count('matched').notNull(),
    needsAttention: count('needs_attention').notNull(),
    /**
     * Accepted rows whose outcome an earlier upload had recorded already, which added nothing; null for an
     * upload recorded before they were counted.
     */
    alreadyRecorded: count('already_recorded'),
    /** Entries of `problems` as the report listed them (its row-0 note included). */
    problemCount: count('problem_count').notNull(),
    problems: text('problems').notNull(),
  },
  (t) => [index('payment_result_uploads_lender_idx').on(t.lenderId, t.recordedAt, t.id)],
);

// An upload whose recording has begun and not ended. An upload is recorded in slices of rows, in transactions
// that end as soon as another write waits; the first transaction stores here what finishing it takes, each
// one moves `done` on, and the last one writes the upload's history record and deletes the row. A start (or the upload
// worker, once idle) finds here an upload that a crash or a stop cut off and finishes it from `done`, reading
// the file again against the same time. The file is compressed and sealed by the vault: it is borrowers'
// payment data.
export const unfinishedUploads = sqliteTable('unfinished_uploads', {
  /** The upload's id: its history record's once it is finished. */
  id: ident('id').primaryKey(),
  lenderId: ident('lender_id')
    .notNull()
    .references(() => lenders.id),
  creator: text('creator'),
  fileSealed: text('file_sealed').notNull(),
  /** The time the file's rows were checked against. */
  checkedAt: ms('checked_at').notNull(),
  /**
   * Accepted rows recorded so far, in file order, how many of them matched a borrower, and how many an earlier
   * upload had recorded already.
   */
  done: count('done').notNull(),
  matched: count('matched').notNull(),
  alreadyRecorded: count('already_recorded').notNull().default(0),
});
