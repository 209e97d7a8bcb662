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
