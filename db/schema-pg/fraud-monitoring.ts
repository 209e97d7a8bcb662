// Generated from db/schema/fraud-monitoring.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { count, ident, ms } from './columns';
import { FRAUD_ACTIONS, FRAUD_ALERT_STATES, FRAUD_DISPOSITIONS, FRAUD_RULES } from '../schema/enums';
import { lenders } from './lenders';

// Nacha's fraud-monitoring rule for non-consumer Originators (in force 19 June 2026): the lender's written,
// risk-based process to identify debits unauthorized or authorized under false pretenses, what it found, what
// the lender did about it, and the yearly review of the process. Every row here is kept: a policy change is a
// new version, a disposition is a new row, a review is a new row.

// The lender's fraud-monitoring policy, one row per version (1, 2, …): the rules on, their action and settings
// (JSON, the shape of modules/fraud-monitoring/model.ts FraudPolicy's rules), its free text, who changed it and
// when. A lender that never saved one is under version 0, every rule's defaults.
export const fraudPolicies = pgTable(
  'fraud_policies',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    version: count('version').notNull(),
    rules: text('rules').notNull(),
    notes: text('notes'),
    changedBy: text('changed_by').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [uniqueIndex('fraud_policies_version_uq').on(t.lenderId, t.version)],
);

// A rule's hit: one per (rule, subject, triggering fact), however often the fact is evaluated (the unique
// index). The subject is what the rule is about (a borrower's enrollment, a bank account, a routing number, a
// day of enrollments, a channel); the fact is what made it fire (a payment, an enrollment, a return). Details
// (JSON) are the figures the rule compared, never personal data. A hold's alert keeps the borrower's debits
// while it is open or needs_info.
export const fraudAlerts = pgTable(
  'fraud_alerts',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    rule: text('rule', { enum: FRAUD_RULES }).notNull(),
    ruleVersion: count('rule_version').notNull(),
    policyVersion: count('policy_version').notNull(),
    action: text('action', { enum: FRAUD_ACTIONS }).notNull(),
    subject: ident('subject').notNull(),
    fact: ident('fact').notNull(),
    enrollmentId: ident('enrollment_id'),
    authorizerUniqueId: ident('authorizer_unique_id'),
    bankAccountId: ident('bank_account_id'),
    paymentId: ident('payment_id'),
    details: text('details').notNull(),
    state: text('state', { enum: FRAUD_ALERT_STATES }).notNull(),
    disposedAt: ms('disposed_at'),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('fraud_alerts_fact_uq').on(t.lenderId, t.rule, t.subject, t.fact),
    // The lender's listing, newest first, and its report's year.
    index('fraud_alerts_lender_idx').on(t.lenderId, t.createdAt, t.id),
    // The holds a borrower's debit waits on (the decision and the dispatch claim ask it).
    index('fraud_alerts_hold_idx').on(t.enrollmentId).where(sql`${t.action} = 'hold' AND ${t.state} IN ('open', 'needs_info')`),
    // A borrower's and an account's alerts (the listing's filters, a rule's look-back).
    index('fraud_alerts_enrollment_idx').on(t.enrollmentId, t.rule),
    index('fraud_alerts_account_idx').on(t.bankAccountId, t.rule),
  ],
);

// Each disposition of an alert, kept for good: who, when, what and why. One final (cleared or confirmed_fraud)
// per alert at most (the partial unique index); needs_info may come before it.
export const fraudAlertDispositions = pgTable(
  'fraud_alert_dispositions',
  {
    id: ident('id').primaryKey(),
    alertId: ident('alert_id')
      .notNull()
      .references(() => fraudAlerts.id),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    disposition: text('disposition', { enum: FRAUD_DISPOSITIONS }).notNull(),
    note: text('note'),
    disposedBy: text('disposed_by').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [
    index('fraud_alert_dispositions_alert_idx').on(t.alertId, t.createdAt, t.id),
    uniqueIndex('fraud_alert_dispositions_final_uq').on(t.alertId).where(sql`${t.disposition} <> 'needs_info'`),
  ],
);

// The lender's yearly reviews of its fraud-monitoring process: when, by whom, what was found, and the policy
// version reviewed.
export const fraudReviews = pgTable(
  'fraud_reviews',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    reviewedOn: text('reviewed_on').notNull(),
    reviewer: text('reviewer').notNull(),
    notes: text('notes'),
    policyVersion: count('policy_version').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [index('fraud_reviews_lender_idx').on(t.lenderId, t.reviewedOn, t.id)],
);

// A borrower re-sent with another bank account than the one it was on: when, and the account it moved to
// (account_changed reads the latest). A Notification of Change is read from the account itself
// (bank_accounts.number_changed_at).
export const fraudAccountSwitches = pgTable(
  'fraud_account_switches',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    enrollmentId: ident('enrollment_id').notNull(),
    bankAccountId: ident('bank_account_id'),
    switchedAt: ms('switched_at').notNull(),
  },
  (t) => [index('fraud_account_switches_enrollment_idx').on(t.enrollmentId, t.switchedAt)],
);
