import type { Database } from 'bun:sqlite';
import type { HeldReason, MonitorState, Rail } from '../../../db/schema/enums';

// The enrollment's raw prepared statements: a 1000-borrower request is written in one transaction with these
// (bun run bench enrollment: at most 3× a 1000-authorizer balance request), and the monitoring due check
// runs every second against every borrower's index entry (bench: under 2 ms with 100,000 not due).

export interface StoredEnrollment {
  id: string;
  aid: string;
  state: MonitorState;
  windowStartedAt: number | null;
  windowEndsAt: number | null;
}

/** The lender's existing records of these borrowers, by identifier. */
export const existingOf = (sqlite: Database, lenderId: string, ids: string[]) =>
  sqlite
    .query<StoredEnrollment, [string, string]>(
      `SELECT id, authorizer_unique_id AS aid, state, window_started_at AS windowStartedAt, window_ends_at AS windowEndsAt
         FROM enrollments WHERE lender_id = ? AND authorizer_unique_id IN (SELECT value FROM json_each(?))`,
    )
    .all(lenderId, JSON.stringify(ids));

export interface EnrollmentWrite {
  id: string;
  lenderId: string;
  aid: string;
  state: MonitorState;
  reason: HeldReason | null;
  windowStartedAt: number | null;
  windowEndsAt: number | null;
  amount: number;
  daysPastDue: number;
  merchantRef: string | null;
  rail: Rail;
  routing: string;
  bankName: string | null;
  sealed: string;
  metadata: string | null;
  cardTokenSealed: string | null;
  cardLast4: string | null;
  cardBrand: string | null;
  nextReadAt: number | null;
  now: number;
  /** A fresh start resets the payments counted against the enrollment; a refresh keeps them. */
  resetPayments: boolean;
}

/** Insert or refresh one borrower. A refresh keeps the record's id, history and (unless fresh) its payment count. */
export function upsertStatement(sqlite: Database) {
  const stmt = sqlite.query(
    `INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, reason, blocked_reason, window_started_at, window_ends_at,
        collectable_amount_cents, days_past_due, merchant_ref, rail, routing_number, bank_name, sealed, metadata,
        card_token_sealed, card_last4, card_brand, next_read_at, payments_used, enrolled_at, updated_at, erased_at)
     VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, 0, ?20, ?20, NULL)
     ON CONFLICT(lender_id, authorizer_unique_id) DO UPDATE SET
        state = excluded.state, reason = excluded.reason, blocked_reason = NULL,
        window_started_at = excluded.window_started_at, window_ends_at = excluded.window_ends_at,
        collectable_amount_cents = excluded.collectable_amount_cents, days_past_due = excluded.days_past_due,
        merchant_ref = excluded.merchant_ref, rail = excluded.rail, routing_number = excluded.routing_number,
        bank_name = excluded.bank_name, sealed = excluded.sealed, metadata = excluded.metadata,
        card_token_sealed = excluded.card_token_sealed, card_last4 = excluded.card_last4, card_brand = excluded.card_brand,
        next_read_at = COALESCE(excluded.next_read_at, next_read_at),
        payments_used = CASE WHEN ?21 THEN 0 ELSE payments_used END,
        enrolled_at = CASE WHEN ?21 THEN excluded.enrolled_at ELSE enrolled_at END,
        updated_at = excluded.updated_at, erased_at = NULL`,
  );
  return (w: EnrollmentWrite) =>
    stmt.run(
      w.id,
      w.lenderId,
      w.aid,
      w.state,
      w.reason,
      w.windowStartedAt,
      w.windowEndsAt,
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
      w.nextReadAt,
      w.now,
      w.resetPayments ? 1 : 0,
    );
}

export interface DueRead {
  id: string;
  lenderId: string;
  aid: string;
  routing: string | null;
  sealed: string;
  metadata: string | null;
}

/** Monitored borrowers whose read is due, off enrollments_read_due_idx (the partial index of monitored rows). */
export const dueReads = (sqlite: Database, now: number, limit: number) =>
  sqlite
    .query<DueRead, [number, number]>(
      `SELECT id, lender_id AS lenderId, authorizer_unique_id AS aid, routing_number AS routing, sealed, metadata
         FROM enrollments INDEXED BY enrollments_read_due_idx
        WHERE state = 'monitored' AND next_read_at <= ? AND sealed IS NOT NULL
        ORDER BY next_read_at LIMIT ?`,
    )
    .all(now, limit);
