import { sql } from 'drizzle-orm';
import { index, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { ident, ms } from './columns';
import { enrollments } from './enrollments';
import { RIGHTS_NOTICE_CHANNELS } from './enums';
import { lenders } from './lenders';

// The consumer-rights notices a lender owes under the CFPB payday rule (12 CFR 1041.9(c)): one when a covered
// borrower's second consecutive attempt fails for funds, due within three business days of the service learning
// of it, and when and how the lender says it sent it. One per failed payment (its reference): recording the same
// failure again makes no second notice.
export const rightsNotices = sqliteTable(
  'rights_notices',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    enrollmentId: ident('enrollment_id')
      .notNull()
      .references(() => enrollments.id),
    // The reference of the second consecutive failed payment.
    reference: ident('reference').notNull(),
    // When the service recorded that second failure, and the end (UTC) of the third business day after it.
    learnedAt: ms('learned_at').notNull(),
    dueBy: ms('due_by').notNull(),
    // The lender's word that it sent the notice: when, how, and its own reference of the proof. Null until then.
    sentAt: ms('sent_at'),
    channel: text('channel', { enum: RIGHTS_NOTICE_CHANNELS }),
    evidenceRef: text('evidence_ref'),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('rights_notices_reference_uq').on(t.lenderId, t.reference),
    // A borrower's notices: the oldest one not sent, the latest one.
    index('rights_notices_enrollment_idx').on(t.enrollmentId, t.learnedAt, t.id),
    // The lender's listing by due_by: all of them, those not sent (and among them the overdue), those sent.
    index('rights_notices_lender_idx').on(t.lenderId, t.dueBy, t.id),
    index('rights_notices_open_idx').on(t.lenderId, t.dueBy, t.id).where(sql`${t.sentAt} IS NULL`),
    index('rights_notices_sent_idx').on(t.lenderId, t.dueBy, t.id).where(sql`${t.sentAt} IS NOT NULL`),
  ],
);

// Every new authorization a lender recorded under the payday rule (12 CFR 1041.8(c)), kept for good: the
// enrollment holds the latest (collection reads it), and a later one never overwrites the record of an earlier
// one. `record` is the whole of it as JSON (its transfers' dates, maximum amounts and channels, how it was
// obtained, the lender's evidence).
export const paymentAuthorizations = sqliteTable(
  'payment_authorizations',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    enrollmentId: ident('enrollment_id')
      .notNull()
      .references(() => enrollments.id),
    obtainedAt: ms('obtained_at').notNull(),
    record: text('record').notNull(),
    recordedAt: ms('recorded_at').notNull(),
  },
  (t) => [index('payment_authorizations_enrollment_idx').on(t.enrollmentId, t.recordedAt, t.id)],
);
