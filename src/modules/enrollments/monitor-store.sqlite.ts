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
 * The enrollment of borrowers (new or re-sent), each with its monitor as the state machine decided it: inserted
 * or refreshed. A refresh keeps the record's id and history. Prepared once per call: a 1000-borrower request is
 * written in one transaction (bun run bench enrollment).
 */
function writeEnrollments(tx: Orm, rows: readonly BorrowerEnrollment[], windowMs: number): void {
  const stmt = tx.$client.query(
    `INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, reason, blocked_reason, window_started_at, window_ends_at,
        collectable_amount_cents, days_past_due, merchant_ref, rail, routing_number, bank_name, sealed, metadata,
        card_token_sealed, card_last4, card_brand, next_read_at, payments_used, enrolled_at, updated_at, erased_at,
        cfpb_covered, authorization_at, authorization_ref, bank_account_id)
     VALUES (?1, ?2, ?3, ?4, ?5, ?22, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, 0, ?20, ?20, NULL, ?23, ?24, ?25, ?26)
     ON CONFLICT(lender_id, authorizer_unique_id) DO UPDATE SET
        state = excluded.state, reason = excluded.reason, blocked_reason = excluded.blocked_reason,
        window_started_at = excluded.window_started_at, window_ends_at = excluded.window_ends_at,
        collectable_amount_cents = excluded.collectable_amount_cents, days_past_due = excluded.days_past_due,
        merchant_ref = excluded.merchant_ref, rail = excluded.rail, routing_number = excluded.routing_number,
        bank_name = excluded.bank_name, sealed = excluded.sealed, metadata = excluded.metadata,
        card_token_sealed = excluded.card_token_sealed, card_last4 = excluded.card_last4, card_brand = excluded.card_brand,
        next_read_at = COALESCE(excluded.next_read_at, next_read_at),
        payments_used = CASE WHEN ?21 THEN 0 ELSE payments_used END,
        enrolled_at = CASE WHEN ?21 THEN excluded.enrolled_at ELSE enrolled_at END,
        updated_at = excluded.updated_at, erased_at = NULL,
        cfpb_covered = excluded.cfpb_covered, bank_account_id = excluded.bank_account_id,
        -- An authorization stays until a later one is sent: a re-send without one, or with an older one, keeps it.
        authorization_ref = CASE WHEN excluded.authorization_at > COALESCE(authorization_at, -1) THEN excluded.authorization_ref ELSE authorization_ref END,
        authorization_at = CASE WHEN excluded.authorization_at > COALESCE(authorization_at, -1) THEN excluded.authorization_at ELSE authorization_at END`,
  );
  for (const { write: w, prior, change } of rows) {
    const fresh = change.window === 'fresh';
    stmt.run(
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
    );
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
