import type { FraudAction, FraudAlertState, FraudDisposition, FraudRule } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';

// What fraud monitoring asks of the database (fraud_policies, fraud_alerts, fraud_alert_dispositions,
// fraud_reviews and fraud_account_switches, written here only), and the facts its rules read of payments,
// enrollments and bank accounts. Every read is bounded: a borrower's or an account's latest rows, counts that
// stop at what a rule needs, a page of a listing off an index.

/** A version of a lender's policy as stored: its rules a JSON document (policy.ts reads it). */
export interface PolicyRow {
  id: string;
  lenderId: string;
  version: number;
  rules: string;
  notes: string | null;
  changedBy: string;
  createdAt: number;
}

/** An alert as stored. */
export interface AlertRow {
  id: string;
  lenderId: string;
  rule: FraudRule;
  ruleVersion: number;
  policyVersion: number;
  action: FraudAction;
  subject: string;
  fact: string;
  enrollmentId: string | null;
  aid: string | null;
  bankAccountId: string | null;
  paymentId: string | null;
  /** JSON: the figures the rule compared. */
  details: string;
  state: FraudAlertState;
  disposedAt: number | null;
  createdAt: number;
}
export type NewAlert = Omit<AlertRow, 'state' | 'disposedAt'>;

export interface DispositionRow {
  id: string;
  alertId: string;
  lenderId: string;
  disposition: FraudDisposition;
  note: string | null;
  disposedBy: string;
  createdAt: number;
}

export interface AlertPageQuery {
  lenderId: string;
  rule?: FraudRule;
  state?: FraudAlertState;
  aid?: string;
  bankAccountId?: string;
  /** Newest first: the page starts after this created_at, then id (descending). */
  after: { createdAt: number; id: string };
  limit: number;
}

/** What the debit rules read of a planned debit, each bounded. */
export interface DebitFacts {
  /** The borrower's payments to this account before this one (0, or 1: the read stops at one). */
  earlierToAccount: number;
  /** Amounts of the borrower's latest payments before this one (at most 20), voided and never-attempted ones left out. */
  borrowerAmounts: number[];
  /** Amounts of the lender's latest payments before this one (at most 200), the same left out. */
  lenderAmounts: number[];
  /** Payments to the account (any borrower on it) created at or after `since`, this one included, counted up to `cap`. */
  debitsToAccount: number;
  /** The borrower's latest switch of account by a re-send, if any. */
  lastSwitch: { id: string; at: number } | null;
}

/** A borrower on an account, as shared_account compares them. */
export interface AccountSharing {
  accountId: string;
  /** Borrowers of the lender on the account, counted up to the cap asked. */
  borrowers: number;
  /** Another borrower on it than the one evaluated (the first by authorizer_unique_id), and its sealed details. */
  firstId: string | null;
  firstSealed: string | null;
}

/** What unauthorized_streak reads of a returned payment's borrower. */
export interface ReturnContext {
  enrollmentId: string;
  aid: string;
  bankAccountId: string | null;
  routing: string | null;
  enrolledAt: number;
  channel: string | null;
}

export interface StreakQuery {
  lenderId: string;
  codes: readonly string[];
  /** Returns recorded at or after it. */
  since: number;
  routing: string | null;
  /** The day of enrollments: [dayStart, dayEnd). */
  dayStart: number;
  dayEnd: number;
  channel: string | null;
  /** Counts stop here. */
  cap: number;
}

/** A review of the lender's fraud-monitoring process, as stored. */
export interface ReviewRow {
  id: string;
  lenderId: string;
  /** YYYY-MM-DD. */
  reviewedOn: string;
  reviewer: string;
  notes: string | null;
  policyVersion: number;
  createdAt: number;
}

/** Alerts raised in a period, counted by rule, state and action. */
export interface AlertCount {
  rule: FraudRule;
  state: FraudAlertState;
  action: FraudAction;
  n: number;
}

export interface FraudStore {
  /** The lender's latest policy version, if it ever saved one. */
  latestPolicy(c: StoreCtx, lenderId: string): Promise<PolicyRow | undefined>;
  /** Taken before a change reads the version it follows: two changes at once are one after the other. */
  serializePolicy(c: TxCtx, lenderId: string): Promise<void>;
  insertPolicy(c: TxCtx, row: PolicyRow): Promise<void>;

  /** An alert kept unless one of the lender's for its rule, subject and fact is there: whether it was kept. */
  insertAlert(c: TxCtx, row: NewAlert): Promise<boolean>;
  alertOf(c: StoreCtx, lenderId: string, id: string): Promise<AlertRow | undefined>;
  /** A page of the lender's alerts, newest first, by the filters given. */
  alertsPage(c: StoreCtx, q: AlertPageQuery): Promise<AlertRow[]>;
  /** These alerts' dispositions, oldest first. */
  dispositionsOf(c: StoreCtx, alertIds: readonly string[]): Promise<DispositionRow[]>;
  /** Taken before a disposition reads the alert it follows: two at once are one after the other. */
  serializeAlert(c: TxCtx, alertId: string): Promise<void>;
  /** A disposition kept unless the alert has a final one already (for a final one): whether it was kept. */
  insertDisposition(c: TxCtx, row: DispositionRow): Promise<boolean>;
  /** The alert's state moved on, if it is still open or needs_info: whether it moved. */
  setAlertState(c: TxCtx, v: { id: string; state: FraudAlertState; at: number }): Promise<boolean>;
  /** Whether an alert of a hold rule, open or needs_info, holds the borrower's debits. */
  holdsDebit(c: StoreCtx, enrollmentId: string): Promise<boolean>;

  /** What the debit rules read of a planned debit (see DebitFacts). */
  debitFacts(c: StoreCtx, v: { lenderId: string; enrollmentId: string; bankAccountId: string | null; paymentId: string; since: number; cap: number }): Promise<DebitFacts>;
  /** Per account, how many of the lender's borrowers are on it (up to `cap`) and the first of them other than `except` by authorizer_unique_id. */
  accountSharing(c: StoreCtx, lenderId: string, accounts: readonly { accountId: string; except: string }[], cap: number): Promise<AccountSharing[]>;
  /** A borrower re-sent with another account. */
  recordSwitch(c: TxCtx, row: { id: string; lenderId: string; enrollmentId: string; bankAccountId: string | null; switchedAt: number }): Promise<void>;
  /** The returned payment's borrower as unauthorized_streak groups it; undefined for a payment made elsewhere. */
  returnContext(c: StoreCtx, paymentId: string): Promise<ReturnContext | undefined>;
  /** The lender's returns of these codes since `since` on the routing number, the day of enrollments and the channel, each counted up to `cap`. */
  streakCounts(c: StoreCtx, q: StreakQuery): Promise<{ routing: number; day: number; channel: number }>;

  /** The lender's policy versions saved before `until`, newest first, at most `limit`. */
  policyVersionsBefore(c: StoreCtx, lenderId: string, until: number, limit: number): Promise<PolicyRow[]>;
  insertReview(c: TxCtx, row: ReviewRow): Promise<void>;
  /** A page of the lender's reviews, by reviewed_on then id, newest first, after a position. */
  reviewsPage(c: StoreCtx, q: { lenderId: string; after: { reviewedOn: string; id: string }; limit: number }): Promise<ReviewRow[]>;
  /** The lender's reviews dated in [fromDay, toDay] (YYYY-MM-DD), oldest first, at most `limit`. */
  reviewsBetween(c: StoreCtx, lenderId: string, fromDay: string, toDay: string, limit: number): Promise<ReviewRow[]>;
  /** The lender's alerts raised in [from, to), counted by rule, state and action. */
  alertCounts(c: StoreCtx, lenderId: string, from: number, to: number): Promise<AlertCount[]>;
  /** The bank accounts the lender's confirmed_fraud dispositions froze in [from, to): how many distinct ones. */
  accountsConfirmed(c: StoreCtx, lenderId: string, from: number, to: number): Promise<number>;
}
