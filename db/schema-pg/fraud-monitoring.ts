import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { FRAUD_ACTIONS, FRAUD_ALERT_STATES, FRAUD_DISPOSITIONS, FRAUD_RULES } from '../schema/enums';
import { lenders } from './lenders';
import { ident, ms } from './columns';

// Fraud monitoring (db/schema/fraud-monitoring.ts says what each table and column holds).
export const fraudPolicies = pgTable(
  'fraud_policies',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    version: integer('version').notNull(),
    rules: text('rules').notNull(),
    notes: text('notes'),
    changedBy: text('changed_by').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [uniqueIndex('fraud_policies_version_uq').on(t.lenderId, t.version)],
);

export const fraudAlerts = pgTable(
  'fraud_alerts',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    rule: text('rule', { enum: FRAUD_RULES }).notNull(),
    ruleVersion: integer('rule_version').notNull(),
    policyVersion: integer('policy_version').notNull(),
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
    index('fraud_alerts_lender_idx').on(t.lenderId, t.createdAt, t.id),
    index('fraud_alerts_hold_idx').on(t.enrollmentId).where(sql`${t.action} = 'hold' AND ${t.state} IN ('open', 'needs_info')`),
    index('fraud_alerts_enrollment_idx').on(t.enrollmentId, t.rule),
    index('fraud_alerts_account_idx').on(t.bankAccountId, t.rule),
  ],
);

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
    policyVersion: integer('policy_version').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [index('fraud_reviews_lender_idx').on(t.lenderId, t.reviewedOn, t.id)],
);

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
