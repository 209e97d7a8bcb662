import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { enrollments } from './enrollments';
import { lenders } from './lenders';

// What the payment-results uploads said about each reference: the latest accepted row, kept so that a later
// upload applies the re-sending rules against it, and so that an unmatched row (stored, needing attention)
// is matched when it is uploaded again with the borrower's identifier. No personal data: identifiers,
// amounts, dates and codes only.
export const uploadedResults = sqliteTable(
  'uploaded_results',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    lenderId: text('lender_id')
      .notNull()
      .references(() => lenders.id),
    reference: text('reference').notNull(),
    authorizerUniqueId: text('authorizer_unique_id'),
    enrollmentId: text('enrollment_id').references(() => enrollments.id),
    status: text('status').notNull(), // the upload's status vocabulary (settled, late_return, sent, ...)
    amountCents: integer('amount_cents').notNull(),
    submittedAt: integer('submitted_at').notNull(),
    settledAt: integer('settled_at'),
    returnedAt: integer('returned_at'),
    returnCode: text('return_code'),
    batchId: text('batch_id'),
    matched: integer('matched', { mode: 'boolean' }).notNull(),
    updatedAt: integer('updated_at').notNull(),
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
    id: text('id').primaryKey(),
    lenderId: text('lender_id')
      .notNull()
      .references(() => lenders.id),
    recordedAt: integer('recorded_at').notNull(),
    /** Who sent it: the portal user's name, or the API key's prefix. */
    creator: text('creator'),
    format: text('format', { enum: ['generic', 'annotated_export', 'notifications_of_change'] }).notNull(),
    rowCount: integer('row_count').notNull(),
    dataRowCount: integer('data_row_count').notNull(),
    matched: integer('matched').notNull(),
    needsAttention: integer('needs_attention').notNull(),
    /**
     * Accepted rows whose outcome an earlier upload had recorded already, which added nothing; null for an
     * upload recorded before they were counted.
     */
    alreadyRecorded: integer('already_recorded'),
    /** Entries of `problems` as the report listed them (its row-0 note included). */
    problemCount: integer('problem_count').notNull(),
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
  id: text('id').primaryKey(),
  lenderId: text('lender_id')
    .notNull()
    .references(() => lenders.id),
  creator: text('creator'),
  fileSealed: text('file_sealed').notNull(),
  /** The time the file's rows were checked against. */
  checkedAt: integer('checked_at').notNull(),
  /**
   * Accepted rows recorded so far, in file order, how many of them matched a borrower, and how many an earlier
   * upload had recorded already.
   */
  done: integer('done').notNull(),
  matched: integer('matched').notNull(),
  alreadyRecorded: integer('already_recorded').notNull().default(0),
});
