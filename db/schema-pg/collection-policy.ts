// Generated from db/schema/collection-policy.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { pgTable, text } from 'drizzle-orm/pg-core';
import { cents, count, flag, ident, ms, off, on } from './columns';
import { CHANGE_APPLICATIONS, NOTICE_CHANNELS, RATE_STATUSES, READ_CADENCES, REINITIATION_AMOUNTS } from '../schema/enums';
import { lenders } from './lenders';

// A lender's collection policy: the rules beyond the spec's defaults that bound its automatic debits. No row
// means every default (the spec's behaviour).
export const collectionPolicies = pgTable('collection_policies', {
  lenderId: ident('lender_id')
    .primaryKey()
    .references(() => lenders.id),
  // The lender's loans are covered by the CFPB payday rule (12 CFR 1041): two failures for funds stop collection.
  cfpbCovered: flag('cfpb_covered').notNull().default(off),
  // Reinitiations after an R01/R09 return, at most (Nacha allows two).
  maxReinitiations: count('max_reinitiations').notNull().default(2),
  reinitiationAmount: text('reinitiation_amount', { enum: REINITIATION_AMOUNTS }).notNull().default('current'),
  // Business days of notice before a debit (the payday rule's notice); 0: debit as soon as the balance covers.
  noticeDays: count('notice_days').notNull().default(0),
  // No new ACH payment while a return-rate class is at or above its threshold.
  returnRatePause: flag('return_rate_pause').notNull().default(off),
  // When monitored borrowers are read: around predicted paydays (a learned cycle), or every read interval.
  readCadence: text('read_cadence', { enum: READ_CADENCES }).notNull().default('payday'),
  // A debit waits until the balance covers the amount plus this much.
  debitBufferCents: cents('debit_buffer_cents').notNull().default(0),
  // The lender's IANA time zone: payday reads are in its morning (null: UTC).
  timeZone: text('time_zone'),
  // Business days after a settlement during which a late return may still come: the debt's chain stays open.
  lateReturnWindowDays: count('late_return_window_days').notNull().default(5),
  // Which balance a debit may follow: a linked account's available balance only, or its current (ledger) one
  // too, with a buffer of its own; and how old the provider's figure may be.
  allowCurrentBalance: flag('allow_current_balance').notNull().default(off),
  currentBalanceBufferCents: cents('current_balance_buffer_cents').notNull().default(0),
  maxBalanceAgeMinutes: count('max_balance_age_minutes').notNull().default(60),
  // A Notification of Change is applied to every borrower on the account at once, or held for the lender's word.
  applyNotificationsOfChange: text('apply_notifications_of_change', { enum: CHANGE_APPLICATIONS }).notNull().default('automatic'),
  // No first debit to an account without validation evidence (Nacha's WEB rule). A lender without a row gets
  // true; the lenders there were before it have a row saying false (the migration that added it).
  requireAccountValidation: flag('require_account_validation').notNull().default(on),
  // The lender's stricter actions of return codes on the account (JSON: code → state); null: Nacha's table only.
  accountReturnStates: text('account_return_states'),
  // How the lender sends the payday rule's payment notices (electronic or mail): their windows (12 CFR
  // 1041.9(b)(2)) follow it, and a covered borrower's debit that needs one waits for it. Null: the service holds
  // no debit for them (the lender sends them outside it).
  noticeChannel: text('notice_channel', { enum: NOTICE_CHANNELS }),
  // The Regulation E election a borrower without its own gets (JSON); null: no varying-amount notice.
  regEElection: text('reg_e_election'),
  updatedAt: ms('updated_at'),
});

/**
 * Each class's return-rate status over the last 60 days as last evaluated: an alert is sent when one changes,
 * and the pause on breach reads it.
 */
export const returnRateWatch = pgTable('return_rate_watch', {
  lenderId: ident('lender_id')
    .primaryKey()
    .references(() => lenders.id),
  unauthorized: text('unauthorized', { enum: RATE_STATUSES }).notNull(),
  administrative: text('administrative', { enum: RATE_STATUSES }).notNull(),
  overall: text('overall', { enum: RATE_STATUSES }).notNull(),
  evaluatedAt: ms('evaluated_at').notNull(),
});
