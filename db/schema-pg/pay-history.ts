import { sql } from 'drizzle-orm';
import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { enrollments } from './enrollments';
import { cents, count, ident, ms } from './columns';

// Transaction history of a borrower's account, for its pay cycle (pay-cycles/history.ts). One row per enrollment
// says whether a reading is wanted and when it is due, how many attempts failed in a row, and what the last
// reading covered.
export const payHistory = pgTable(
  'pay_history',
  {
    enrollmentId: ident('enrollment_id')
      .primaryKey()
      .references(() => enrollments.id),
    lenderId: ident('lender_id').notNull(),
    wantedAt: ms('wanted_at'),
    dueAt: ms('due_at'),
    attempts: count('attempts').notNull().default(0),
    fetchedAt: ms('fetched_at'),
    coveredTo: ms('covered_to'),
    outcome: text('outcome'),
  },
  (t) => [index('pay_history_due_idx').on(t.dueAt).where(sql`${t.dueAt} IS NOT NULL`)],
);

// The income deposits the last reading found, one per day.
export const payHistoryDeposits = pgTable(
  'pay_history_deposits',
  {
    enrollmentId: ident('enrollment_id')
      .notNull()
      .references(() => enrollments.id),
    day: ms('day').notNull(),
    amountCents: cents('amount_cents').notNull(),
  },
  (t) => [primaryKey({ columns: [t.enrollmentId, t.day] })],
);
