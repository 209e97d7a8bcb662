import type { HeldReason, MonitorState, Rail } from '../../../db/schema/enums';
import type { Tx } from '../../platform/context';
import { DAY_MS } from '../../platform/clock';
import { nextMonitor, type MonitorChange, type MonitorEvent, type MonitorFrom } from './monitor';
import { pushToEndpointsNow as pushToEndpoints } from '../webhooks/endpoints';

// The only code that writes a monitor's state, reason and blocked reason, and it writes only what the state
// machine (monitor.ts) returns. Every write takes the open transaction: a monitor changes in the transaction
// of the request, read or outcome that moves it. (tests/architecture checks that no other file writes them.)

export const MONITOR_WINDOW_MS = 30 * DAY_MS;

interface Current {
  state: MonitorState;
  reason: string | null;
  blockedReason: string | null;
  windowEndsAt: number | null;
  lenderId: string;
  aid: string;
}

const currentOf = (tx: Tx, enrollmentId: string) =>
  tx.$client
    .query<Current, [string]>(
      `SELECT state, reason, blocked_reason AS blockedReason, window_ends_at AS windowEndsAt, lender_id AS lenderId, authorizer_unique_id AS aid
         FROM enrollments WHERE id = ?`,
    )
    .get(enrollmentId);

/**
 * Moves one monitor on an event, in the caller's transaction. `late_returned` events are given their
 * `inWindow` here, from the stored window. Returns the change written, or null when the event moved nothing.
 */
export function applyMonitorEvent(
  tx: Tx,
  v: { enrollmentId: string; event: MonitorEvent | { type: 'late_returned'; code: string | null }; now: number; readIntervalMs: number },
): MonitorChange | null {
  const cur = currentOf(tx, v.enrollmentId);
  if (!cur) return null;
  const event: MonitorEvent =
    v.event.type === 'late_returned' ? { type: 'late_returned', code: v.event.code, inWindow: cur.windowEndsAt !== null && v.now < cur.windowEndsAt } : (v.event as MonitorEvent);
  const change = nextMonitor(cur, event);
  if (!change) return null;
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
    .run(change.state, change.reason, change.blockedReason, change.window, v.now, MONITOR_WINDOW_MS, change.nextRead, v.readIntervalMs, change.payments === 'reset' ? 1 : 0, v.enrollmentId);
  // The lender is told when collection stops or waits on it.
  const stopped = change.state === 'stopped' && cur.state !== 'stopped';
  const blocked = change.blockedReason !== null && change.blockedReason !== cur.blockedReason;
  if (stopped || blocked) {
    pushToEndpoints(tx, v.now, cur.lenderId, 'ENROLLMENT_BLOCKED', {
      authorizer_unique_id: cur.aid,
      state: change.state,
      reason: change.reason,
      blocked_reason: change.blockedReason,
    });
  }
  return change;
}

/** The lender's existing records of these borrowers, by identifier. */
export interface StoredMonitor {
  id: string;
  aid: string;
  state: MonitorState;
  reason: string | null;
  blockedReason: string | null;
  windowStartedAt: number | null;
  windowEndsAt: number | null;
}

export const monitorsOf = (tx: Tx, lenderId: string, ids: string[]) =>
  tx.$client
    .query<StoredMonitor, [string, string]>(
      `SELECT id, authorizer_unique_id AS aid, state, reason, blocked_reason AS blockedReason,
              window_started_at AS windowStartedAt, window_ends_at AS windowEndsAt
         FROM enrollments WHERE lender_id = ? AND authorizer_unique_id IN (SELECT value FROM json_each(?))`,
    )
    .all(lenderId, JSON.stringify(ids));

/** A borrower's details as an enrollment request stores them; the monitor's columns come from the machine. */
export interface BorrowerWrite {
  id: string;
  lenderId: string;
  aid: string;
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
  cfpbCovered: boolean | null;
  authorizationAt: number | null;
  authorizationRef: string | null;
  now: number;
}

/**
 * The enrollment of one borrower (new or re-sent): the state machine decides the monitor, and the borrower is
 * inserted or refreshed with it. A refresh keeps the record's id and history. Prepared once per request: a
 * 1000-borrower request is written in one transaction (bun run bench enrollment).
 */
export function enrollStatement(tx: Tx) {
  const stmt = tx.$client.query(
    `INSERT INTO enrollments (id, lender_id, authorizer_unique_id, state, reason, blocked_reason, window_started_at, window_ends_at,
        collectable_amount_cents, days_past_due, merchant_ref, rail, routing_number, bank_name, sealed, metadata,
        card_token_sealed, card_last4, card_brand, next_read_at, payments_used, enrolled_at, updated_at, erased_at,
        cfpb_covered, authorization_at, authorization_ref)
     VALUES (?1, ?2, ?3, ?4, ?5, ?22, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, 0, ?20, ?20, NULL, ?23, ?24, ?25)
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
        cfpb_covered = excluded.cfpb_covered,
        -- An authorization stays until a later one is sent: a re-send without one, or with an older one, keeps it.
        authorization_ref = CASE WHEN excluded.authorization_at > COALESCE(authorization_at, -1) THEN excluded.authorization_ref ELSE authorization_ref END,
        authorization_at = CASE WHEN excluded.authorization_at > COALESCE(authorization_at, -1) THEN excluded.authorization_at ELSE authorization_at END`,
  );
  return (w: BorrowerWrite, prior: StoredMonitor | undefined, held: HeldReason | null): MonitorChange => {
    const from: MonitorFrom = prior?.state ?? 'new';
    const change = nextMonitor({ state: from, reason: prior?.reason ?? null, blockedReason: prior?.blockedReason ?? null }, { type: 'enrolled', held })!;
    const fresh = change.window === 'fresh';
    stmt.run(
      w.id,
      w.lenderId,
      w.aid,
      change.state,
      change.reason,
      change.window === 'none' ? null : fresh ? w.now : prior!.windowStartedAt,
      change.window === 'none' ? null : fresh ? w.now + MONITOR_WINDOW_MS : prior!.windowEndsAt,
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
    );
    return change;
  };
}

/** Monitored borrowers whose window has ended, off enrollments_lapse_due_idx. */
export const dueLapses = (tx: Tx, now: number, limit = -1) =>
  tx.$client
    .query<{ id: string }, [number, number]>(`SELECT id FROM enrollments INDEXED BY enrollments_lapse_due_idx WHERE state = 'monitored' AND window_ends_at <= ? LIMIT ?`)
    .all(now, limit);

export const monitorStateOf = (tx: Tx, enrollmentId: string): MonitorState | null => currentOf(tx, enrollmentId)?.state ?? null;
