import type { Db, Orm } from '../../platform/db';
import { listOf, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { MonitorChange } from './monitor';
import type { BorrowerEnrollment, CurrentMonitor, MonitorStore, StoredMonitor } from './monitor-store';

// The only SQL that writes a monitor's state, reason and blocked reason (tests/architecture checks that no
// other file writes them), and it writes only what the state machine (monitor.ts) returns, as monitor-store.ts
// hands it over. Every write takes the open transaction.

const currentOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<CurrentMonitor, [string]>(
      `SELECT state, reason, blocked_reason AS blockedReason, window_ends_at AS windowEndsAt, lender_id AS lenderId, authorizer_unique_id AS aid
         FROM enrollments WHERE id = ?`,
    )
    .get(enrollmentId) ?? undefined;

function writeChange(tx: Orm, v: { enrollmentId: string; change: MonitorChange; now: number; windowMs: number; readIntervalMs: number }): void {
  const { change } = v;
  tx.$client
    .query(
      `UPDATE enrollments SET state = ?1, reason = ?2, blocked_reason = ?3,
          window_started_at = CASE ?4 WHEN 'fresh' THEN ?5 WHEN 'none' THEN NULL ELSE window_started_at END,
          window_ends_at = CASE ?4 WHEN 'fresh' THEN ?5 + ?6 WHEN 'none' THEN NULL ELSE window_ends_at END,
          next_read_at = CASE ?7 WHEN 'now' THEN ?5 WHEN 'interval' THEN ?5 + ?8 WHEN 'none' THEN NULL ELSE next_read_at END,
          payments_used = CASE WHEN ?9 THEN 0 ELSE payments_used END,
          updated_at = ?5
        WHERE id = ?10`,
    )
    .run(change.state, change.reason, change.blockedReason, change.window, v.now, v.windowMs, change.nextRead, v.readIntervalMs, change.payments === 'reset' ? 1 : 0, v.enrollmentId);
}

/**
 * The statements an enrollment writes its borrowers with. Both take the same values: ?1 the id (the insert's
 * only), ?2 the lender, ?3 the borrower, then the rest.
 */
export const ENROLLMENT_WRITES = {
  insert: `INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, reason, blocked_reason, window_started_at, window_ends_at,
        collectable_amount_cents, days_past_due, merchant_ref, rail, routing_number, bank_name, sealed, metadata,
        card_token_sealed, card_last4, card_brand, next_read_at, payments_used, enrolled_at, updated_at, erased_at,
        cfpb_covered, authorization_at, authorization_ref, bank_account_id)
     VALUES (?1, ?2, ?3, ?4, ?5, ?22, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, 0, ?20, ?20, NULL, ?23, ?24, ?25, ?26)
     ON CONFLICT(lender_id, authorizer_unique_id) DO NOTHING`,
  refresh: `UPDATE enrollments SET
        state = ?4, reason = ?5, blocked_reason = ?22, window_started_at = ?6, window_ends_at = ?7,
        collectable_amount_cents = ?8, days_past_due = ?9, merchant_ref = ?10, rail = ?11, routing_number = ?12,
        bank_name = ?13, sealed = ?14, metadata = ?15, card_token_sealed = ?16, card_last4 = ?17, card_brand = ?18,
        next_read_at = COALESCE(?19, next_read_at),
        payments_used = CASE WHEN ?21 THEN 0 ELSE payments_used END,
        enrolled_at = CASE WHEN ?21 THEN ?20 ELSE enrolled_at END,
        updated_at = ?20, erased_at = NULL, cfpb_covered = ?23, bank_account_id = ?26,
        -- An authorization stays until a later one is sent: a re-send without one, or with an older one, keeps it.
        authorization_ref = CASE WHEN ?24 > COALESCE(authorization_at, -1) THEN ?25 ELSE authorization_ref END,
        authorization_at = CASE WHEN ?24 > COALESCE(authorization_at, -1) THEN ?24 ELSE authorization_at END
      WHERE lender_id = ?2 AND authorizer_unique_id = ?3`,
} as const;

/**
 * The enrollment of borrowers (new or re-sent), each with its monitor as the state machine decided it: inserted
 * or refreshed. A refresh keeps the record's id and history. Statements cached by the connection: a
 * 1000-borrower request is written in one transaction (bun run bench enrollment).
 *
 * An insert, and an update when the borrower is there already, rather than one upsert: for an upsert that sets
 * a foreign-key column (the bank account), SQLite looks for each row's children in every table that refers to
 * enrollments, two of them (payment_events, uploaded_results) by a scan of the whole table, so each borrower
 * enrolled cost a pass over every payment event. A plain insert of a parent row cannot break a foreign key, and
 * an update that keeps the row's id looks at no child (tests/modules/enrollments/write-plans.test.ts).
 */
function writeEnrollments(tx: Orm, rows: readonly BorrowerEnrollment[], windowMs: number): void {
  const insert = tx.$client.query(ENROLLMENT_WRITES.insert);
  const refresh = tx.$client.query(ENROLLMENT_WRITES.refresh);
  for (const { write: w, prior, change } of rows) {
    const fresh = change.window === 'fresh';
    const values = [
      w.id,
      w.lenderId,
      w.aid,
      change.state,
      change.reason,
      change.window === 'none' ? null : fresh ? w.now : prior!.windowStartedAt,
      change.window === 'none' ? null : fresh ? w.now + windowMs : prior!.windowEndsAt,
      w.amount,
      w.daysPastDue,
      w.merchantRef,
      w.rail,
      w.routing,
      w.bankName,
      w.sealed,
      w.metadata,
      w.cardTokenSealed,
      w.cardLast4,
      w.cardBrand,
      // The first read is due at once; a refresh keeps the cadence.
      change.nextRead === 'now' ? w.now : null,
      w.now,
      change.payments === 'reset' ? 1 : 0,
      change.blockedReason,
      w.cfpbCovered === null ? null : w.cfpbCovered ? 1 : 0,
      w.authorizationAt,
      w.authorizationRef,
      w.bankAccountId ?? null,
    ] as const;
    // A borrower read as there (prior) is refreshed; one not there is inserted, and refreshed only if the same
    // borrower was inserted earlier in this call.
    if (prior || insert.run(...values).changes === 0) refresh.run(...values);
  }
}

export const sqliteMonitorStore: MonitorStore = {
  async currentMonitor(c, enrollmentId) {
    return currentOf(readerOf(c), enrollmentId);
  },
  async writeMonitorChange(c, v) {
    writeChange(writerOf(c), v);
  },
  async monitorsOf(c, lenderId, aids) {
    return readerOf(c)
      .$client.query<StoredMonitor, [string, string]>(
        `SELECT id, authorizer_unique_id AS aid, state, reason, blocked_reason AS blockedReason,
                window_started_at AS windowStartedAt, window_ends_at AS windowEndsAt, bank_account_id AS bankAccountId
           FROM enrollments WHERE lender_id = ? AND authorizer_unique_id IN (SELECT value FROM json_each(?))`,
      )
      .all(lenderId, listOf(aids));
  },
  async writeEnrollments(c, rows, windowMs) {
    if (rows.length > 0) writeEnrollments(writerOf(c), rows, windowMs);
  },
  async dueLapses(c, now, limit) {
    return readerOf(c)
      .$client.query<{ id: string }, [number, number]>(`SELECT id FROM enrollments INDEXED BY enrollments_lapse_due_idx WHERE state = 'monitored' AND window_ends_at <= ? LIMIT ?`)
      .all(now, limit);
  },
};
