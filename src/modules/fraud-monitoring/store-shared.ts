import { sql, type SQL } from 'drizzle-orm';
import { num, numOrNull } from '../../platform/sql/numbers';
import type { AlertCount, AlertPageQuery, AlertRow, DispositionRow, NewAlert, PolicyRow, ReturnContext, ReviewRow, StreakQuery } from './store';

// Fraud monitoring's statements, written once: both engines run them as they are. What differs is how a list
// is bound, how a JSON field of the enrollment's metadata is read and how a row is locked (`Dialect`), and how
// a statement is run, which each engine's store does. Numbers may come back as text on PostgreSQL (int8 from a
// raw query) and are read with num.

export interface Dialect {
  /** `IN (…)` of a list of text, bound as one parameter. */
  inTexts: (values: readonly string[]) => SQL;
  /** The text of the `channel` key of the JSON object in the column named. */
  channelOf: (column: string) => string;
  /** A list of pairs of text as a table `x(account, but, i)`, i its place in the list (from 0 on SQLite, from 1 on PostgreSQL: each store reads its own). */
  pairs: (values: readonly (readonly [string, string])[]) => SQL;
}

type Num = number | string;

/**
 * An alert of a hold rule, open or needs_info, holds the borrower `e` (as the statement names it) (the
 * decision reads it with the borrower, and the dispatch claim refuses to send while it holds). Answered by the
 * partial index fraud_alerts_hold_idx.
 */
export const OPEN_HOLD = (e: string) => `EXISTS (SELECT 1 FROM fraud_alerts h WHERE h.enrollment_id = ${e}.id AND h.action = 'hold' AND h.state IN ('open', 'needs_info'))`;

const POLICY_COLUMNS = sql.raw(`id, lender_id AS "lenderId", version, rules, notes, changed_by AS "changedBy", created_at AS "createdAt"`);
type RawPolicy = Omit<PolicyRow, 'version' | 'createdAt'> & { version: Num; createdAt: Num };
export const policyRowOf = (r: RawPolicy): PolicyRow => ({ ...r, version: num(r.version), createdAt: num(r.createdAt) });

const ALERT_COLUMNS = sql.raw(`id, lender_id AS "lenderId", rule, rule_version AS "ruleVersion", policy_version AS "policyVersion", action, subject, fact,
  enrollment_id AS "enrollmentId", authorizer_unique_id AS "aid", bank_account_id AS "bankAccountId", payment_id AS "paymentId", details, state,
  disposed_at AS "disposedAt", created_at AS "createdAt"`);
type RawAlert = Omit<AlertRow, 'ruleVersion' | 'policyVersion' | 'disposedAt' | 'createdAt'> & { ruleVersion: Num; policyVersion: Num; disposedAt: Num | null; createdAt: Num };
export const alertRowOf = (r: RawAlert): AlertRow => ({
  ...r,
  ruleVersion: num(r.ruleVersion),
  policyVersion: num(r.policyVersion),
  disposedAt: numOrNull(r.disposedAt),
  createdAt: num(r.createdAt),
});

const DISPOSITION_COLUMNS = sql.raw(`id, alert_id AS "alertId", lender_id AS "lenderId", disposition, note, disposed_by AS "disposedBy", created_at AS "createdAt"`);
type RawDisposition = Omit<DispositionRow, 'createdAt'> & { createdAt: Num };
export const dispositionRowOf = (r: RawDisposition): DispositionRow => ({ ...r, createdAt: num(r.createdAt) });

type RawContext = Omit<ReturnContext, 'enrolledAt'> & { enrolledAt: Num };
export const returnContextOf = (r: RawContext): ReturnContext => ({ ...r, enrolledAt: num(r.enrolledAt) });

const REVIEW_COLUMNS = sql.raw(`id, lender_id AS "lenderId", reviewed_on AS "reviewedOn", reviewer, notes, policy_version AS "policyVersion", created_at AS "createdAt"`);
type RawReview = Omit<ReviewRow, 'policyVersion' | 'createdAt'> & { policyVersion: Num; createdAt: Num };
export const reviewRowOf = (r: RawReview): ReviewRow => ({ ...r, policyVersion: num(r.policyVersion), createdAt: num(r.createdAt) });
export const alertCountOf = (r: Omit<AlertCount, 'n'> & { n: Num }): AlertCount => ({ ...r, n: num(r.n) });

/** The statuses of a payment that never moved money: not a debit to the rules. */
const NOT_A_DEBIT = `('voided', 'not_attempted')`;
const BIG = (v: number) => sql`CAST(${v} AS BIGINT)`;

export const fraudStatements = (d: Dialect) => ({
  latestPolicy: (lenderId: string) => sql`SELECT ${POLICY_COLUMNS} FROM fraud_policies WHERE lender_id = ${lenderId} ORDER BY version DESC LIMIT 1`,
  insertPolicy: (r: PolicyRow) => sql`
    INSERT INTO fraud_policies (id, lender_id, version, rules, notes, changed_by, created_at)
    VALUES (${r.id}, ${r.lenderId}, ${r.version}, ${r.rules}, ${r.notes}, ${r.changedBy}, ${BIG(r.createdAt)})`,
  insertAlert: (r: NewAlert) => sql`
    INSERT INTO fraud_alerts (id, lender_id, rule, rule_version, policy_version, action, subject, fact, enrollment_id, authorizer_unique_id,
                              bank_account_id, payment_id, details, state, created_at)
    VALUES (${r.id}, ${r.lenderId}, ${r.rule}, ${r.ruleVersion}, ${r.policyVersion}, ${r.action}, ${r.subject}, ${r.fact}, ${r.enrollmentId}, ${r.aid},
            ${r.bankAccountId}, ${r.paymentId}, ${r.details}, 'open', ${BIG(r.createdAt)})
    ON CONFLICT (lender_id, rule, subject, fact) DO NOTHING RETURNING id`,
  alertOf: (lenderId: string, id: string) => sql`SELECT ${ALERT_COLUMNS} FROM fraud_alerts WHERE id = ${id} AND lender_id = ${lenderId}`,
  alertsPage: (q: AlertPageQuery) => sql`
    SELECT ${ALERT_COLUMNS} FROM fraud_alerts
     WHERE lender_id = ${q.lenderId}
       ${q.rule ? sql`AND rule = ${q.rule}` : sql``}
       ${q.state ? sql`AND state = ${q.state}` : sql``}
       ${q.aid ? sql`AND authorizer_unique_id = ${q.aid}` : sql``}
       ${q.bankAccountId ? sql`AND bank_account_id = ${q.bankAccountId}` : sql``}
       AND (created_at < ${BIG(q.after.createdAt)} OR (created_at = ${BIG(q.after.createdAt)} AND id < ${q.after.id}))
     ORDER BY created_at DESC, id DESC LIMIT ${q.limit}`,
  dispositionsOf: (alertIds: readonly string[]) => sql`SELECT ${DISPOSITION_COLUMNS} FROM fraud_alert_dispositions WHERE alert_id ${d.inTexts(alertIds)} ORDER BY created_at, id`,
  insertDisposition: (r: DispositionRow) => sql`
    INSERT INTO fraud_alert_dispositions (id, alert_id, lender_id, disposition, note, disposed_by, created_at)
    VALUES (${r.id}, ${r.alertId}, ${r.lenderId}, ${r.disposition}, ${r.note}, ${r.disposedBy}, ${BIG(r.createdAt)})
    ON CONFLICT DO NOTHING RETURNING id`,
  setAlertState: (v: { id: string; state: string; at: number }) => sql`
    UPDATE fraud_alerts SET state = ${v.state}, disposed_at = ${v.state === 'needs_info' ? sql`disposed_at` : BIG(v.at)}
     WHERE id = ${v.id} AND state IN ('open', 'needs_info') RETURNING id`,
  holdsDebit: (enrollmentId: string) => sql`SELECT 1 AS held FROM enrollments e WHERE e.id = ${enrollmentId} AND ${sql.raw(OPEN_HOLD('e'))}`,

  earlierToAccount: (enrollmentId: string, bankAccountId: string | null, paymentId: string) => sql`
    SELECT 1 AS n FROM payments WHERE enrollment_id = ${enrollmentId} AND id <> ${paymentId}
       AND ${bankAccountId === null ? sql`bank_account_id IS NULL` : sql`bank_account_id = ${bankAccountId}`} AND status NOT IN ${sql.raw(NOT_A_DEBIT)} LIMIT 1`,
  borrowerAmounts: (enrollmentId: string, paymentId: string) => sql`
    SELECT amount_cents AS "amountCents" FROM payments WHERE enrollment_id = ${enrollmentId} AND id <> ${paymentId} AND status NOT IN ${sql.raw(NOT_A_DEBIT)}
     ORDER BY created_at DESC LIMIT 20`,
  lenderAmounts: (lenderId: string, paymentId: string) => sql`
    SELECT amount_cents AS "amountCents" FROM payments WHERE lender_id = ${lenderId} AND id <> ${paymentId} AND status NOT IN ${sql.raw(NOT_A_DEBIT)}
     ORDER BY created_at DESC LIMIT 200`,
  // Through the borrowers on the account (an index each way), stopping at the cap.
  debitsToAccount: (bankAccountId: string, since: number, cap: number) => sql`
    SELECT COUNT(*) AS n FROM (
      SELECT 1 FROM enrollments e JOIN payments p ON p.enrollment_id = e.id
       WHERE e.bank_account_id = ${bankAccountId} AND p.created_at >= ${BIG(since)} AND p.status NOT IN ${sql.raw(NOT_A_DEBIT)} LIMIT ${cap}) AS d`,
  lastSwitch: (enrollmentId: string) => sql`
    SELECT id, switched_at AS "at" FROM fraud_account_switches WHERE enrollment_id = ${enrollmentId} ORDER BY switched_at DESC, id DESC LIMIT 1`,
  // One statement for the whole list (an enrollment of up to 1000 borrowers): per pair, the count stops at the
  // cap and the other borrower is the first by authorizer_unique_id, each off enrollments_bank_account_idx (an
  // order the index does not give would sort every borrower on the account, for each one enrolled). The
  // lender's borrowers on an account are those on it when it is the lender's (an account is one lender's, and
  // its borrowers are linked to it under that lender): the account is checked once, and the probes name no
  // lender. Naming it in them let PostgreSQL, on statistics taken while the table was small, intersect the
  // account's index with the lender's, reading every borrower of the lender a probe (300–930 ms a call).
  sharing: (lenderId: string, accounts: readonly { accountId: string; except: string }[], cap: number) => sql`
    SELECT x.i AS i,
           CASE WHEN a.id IS NULL THEN 0 ELSE
             (SELECT COUNT(*) FROM (SELECT 1 FROM enrollments b WHERE b.bank_account_id = x.account AND b.sealed IS NOT NULL LIMIT ${cap}) AS n) END AS borrowers,
           CASE WHEN a.id IS NULL THEN NULL ELSE
             (SELECT f.id FROM enrollments f WHERE f.bank_account_id = x.account AND f.sealed IS NOT NULL AND f.id <> x.but
               ORDER BY f.authorizer_unique_id LIMIT 1) END AS "firstId"
      FROM ${d.pairs(accounts.map((a) => [a.accountId, a.except]))}
      LEFT JOIN bank_accounts a ON a.id = x.account AND a.lender_id = ${lenderId}
     ORDER BY x.i`,
  sealedOf: (ids: readonly string[]) => sql`SELECT id, sealed FROM enrollments WHERE id ${d.inTexts(ids)}`,
  recordSwitch: (r: { id: string; lenderId: string; enrollmentId: string; bankAccountId: string | null; switchedAt: number }) => sql`
    INSERT INTO fraud_account_switches (id, lender_id, enrollment_id, bank_account_id, switched_at)
    VALUES (${r.id}, ${r.lenderId}, ${r.enrollmentId}, ${r.bankAccountId}, ${BIG(r.switchedAt)})`,
  returnContext: (paymentId: string) => sql`
    SELECT e.id AS "enrollmentId", e.authorizer_unique_id AS "aid", e.bank_account_id AS "bankAccountId", e.routing_number AS "routing",
           e.enrolled_at AS "enrolledAt", ${sql.raw(d.channelOf('e.metadata'))} AS "channel"
      FROM payments p JOIN enrollments e ON e.id = p.enrollment_id WHERE p.id = ${paymentId}`,
  // The lender's returned payments (off payments_lender_status_idx, those created within the window and the
  // 60 days before it, as a return comes at most that long after its debit), each dimension counted up to the cap.
  streak: (q: StreakQuery, dimension: SQL) => sql`
    SELECT COUNT(*) AS n FROM (
      SELECT 1 FROM payments p JOIN enrollments e ON e.id = p.enrollment_id
       WHERE p.lender_id = ${q.lenderId} AND p.status IN ('returned', 'late_returned') AND p.created_at >= ${BIG(q.since - 60 * 86_400_000)}
         AND p.updated_at >= ${BIG(q.since)} AND p.return_code ${d.inTexts(q.codes)} AND ${dimension} LIMIT ${q.cap}) AS s`,
  byRouting: (routing: string | null) => (routing === null ? sql`1 = 0` : sql`e.routing_number = ${routing}`),
  byDay: (start: number, end: number) => sql`e.enrolled_at >= ${BIG(start)} AND e.enrolled_at < ${BIG(end)}`,
  policyVersionsBefore: (lenderId: string, until: number, limit: number) => sql`
    SELECT ${POLICY_COLUMNS} FROM fraud_policies WHERE lender_id = ${lenderId} AND created_at < ${BIG(until)} ORDER BY version DESC LIMIT ${limit}`,
  insertReview: (r: ReviewRow) => sql`
    INSERT INTO fraud_reviews (id, lender_id, reviewed_on, reviewer, notes, policy_version, created_at)
    VALUES (${r.id}, ${r.lenderId}, ${r.reviewedOn}, ${r.reviewer}, ${r.notes}, ${r.policyVersion}, ${BIG(r.createdAt)})`,
  reviewsPage: (q: { lenderId: string; after: { reviewedOn: string; id: string }; limit: number }) => sql`
    SELECT ${REVIEW_COLUMNS} FROM fraud_reviews WHERE lender_id = ${q.lenderId}
       AND (reviewed_on < ${q.after.reviewedOn} OR (reviewed_on = ${q.after.reviewedOn} AND id < ${q.after.id}))
     ORDER BY reviewed_on DESC, id DESC LIMIT ${q.limit}`,
  reviewsBetween: (lenderId: string, fromDay: string, toDay: string, limit: number) => sql`
    SELECT ${REVIEW_COLUMNS} FROM fraud_reviews WHERE lender_id = ${lenderId} AND reviewed_on >= ${fromDay} AND reviewed_on <= ${toDay}
     ORDER BY reviewed_on, id LIMIT ${limit}`,
  alertCounts: (lenderId: string, from: number, to: number) => sql`
    SELECT rule, state, action, COUNT(*) AS n FROM fraud_alerts WHERE lender_id = ${lenderId} AND created_at >= ${BIG(from)} AND created_at < ${BIG(to)}
     GROUP BY rule, state, action ORDER BY rule, state, action`,
  accountsConfirmed: (lenderId: string, from: number, to: number) => sql`
    SELECT COUNT(DISTINCT bank_account_id) AS n FROM fraud_alerts
     WHERE lender_id = ${lenderId} AND state = 'confirmed_fraud' AND bank_account_id IS NOT NULL AND disposed_at >= ${BIG(from)} AND disposed_at < ${BIG(to)}`,
  byChannel: (channel: string | null) => (channel === null ? sql`1 = 0` : sql`${sql.raw(d.channelOf('e.metadata'))} = ${channel}`),
});
