import { sql } from 'drizzle-orm';
import { index, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { cents, count, ident, ms } from './columns';
import { enrollments } from './enrollments';

// Transaction history of a borrower's account, for its pay cycle (pay-cycles/history.ts). One row per enrollment
// says whether a reading is wanted and when it is due (set at enrollment, a re-send and a new bank link; null
// once done or given up), how many attempts failed in a row, and what the last reading covered.
export const payHistory = sqliteTable(
  'pay_history',
  {
    enrollmentId: ident('enrollment_id')
      .primaryKey()
      .references(() => enrollments.id),
    lenderId: ident('lender_id').notNull(),
    // When the reading was asked for (the bound on waiting for a provider that stays pending).
    wantedAt: ms('wanted_at'),
    dueAt: ms('due_at'),
    attempts: count('attempts').notNull().default(0),
    // The last reading that gave credits: when, and the last day it covered.
    fetchedAt: ms('fetched_at'),
    coveredTo: ms('covered_to'),
    // How the last reading ended: `credits`, or why there was none (`no_transactions`, `relink_required`, `gave_up`).
    outcome: text('outcome'),
  },
  (t) => [index('pay_history_due_idx').on(t.dueAt).where(sql`${t.dueAt} IS NOT NULL`)],
);

// The income deposits the last reading found, one per day (only what inference needs: the day and the amount),
// at most a reading's window of days per enrollment. Erased with the borrower's personal data.
export const payHistoryDeposits = sqliteTable(
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
