import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { enrollments } from './enrollments';
import { RIGHTS_NOTICE_CHANNELS } from '../schema/enums';
import { lenders } from './lenders';
import { ident, ms } from './columns';

// Consumer-rights notices (db/schema/rights-notices.ts says what each column holds).
export const rightsNotices = pgTable(
  'rights_notices',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    enrollmentId: ident('enrollment_id')
      .notNull()
      .references(() => enrollments.id),
    reference: ident('reference').notNull(),
    learnedAt: ms('learned_at').notNull(),
    dueBy: ms('due_by').notNull(),
    sentAt: ms('sent_at'),
    channel: text('channel', { enum: RIGHTS_NOTICE_CHANNELS }),
    evidenceRef: text('evidence_ref'),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('rights_notices_reference_uq').on(t.lenderId, t.reference),
    index('rights_notices_enrollment_idx').on(t.enrollmentId, t.learnedAt, t.id),
    index('rights_notices_lender_idx').on(t.lenderId, t.dueBy, t.id),
    index('rights_notices_open_idx').on(t.lenderId, t.dueBy, t.id).where(sql`${t.sentAt} IS NULL`),
    index('rights_notices_sent_idx').on(t.lenderId, t.dueBy, t.id).where(sql`${t.sentAt} IS NOT NULL`),
  ],
);

// New authorizations under the payday rule (db/schema/rights-notices.ts says what each column holds).
export const paymentAuthorizations = pgTable(
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
