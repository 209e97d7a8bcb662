import { and, asc, eq, lte, sql } from 'drizzle-orm';
import { enrollments } from '../../../db/schema-pg';
import type { PgDb } from '../../platform/pg';
import { inList, inTransaction, listOf, readerOf, writerOf } from '../../platform/sql/pg';
import type { MonitorChange } from './monitor';
import type { BorrowerEnrollment, CurrentMonitor, MonitorStore, StoredMonitor } from './monitor-store';

// The only SQL on PostgreSQL that writes a monitor's state, reason and blocked reason (monitor-store.sqlite.ts is
// the SQLite one; tests/architecture checks that no other file writes them), and it writes only what the state
// machine (monitor.ts) returns. Every write takes the open transaction.
//
// A monitor is moved from what was read of it: read inside a transaction, its row is locked until the
// transaction ends (FOR NO KEY UPDATE: the rows that refer to the borrower, its events, ledger entries and
// uploaded results, are still written meanwhile), so no other transaction moves it in between, as none could
// on SQLite. A
// borrower not stored yet has no row to lock: its enrollment is serialized by the enrollment store's
// serializeBorrowers, which the service calls first.


const monitorColumns = {
  state: enrollments.state,
  reason: enrollments.reason,
  blockedReason: enrollments.blockedReason,
  windowEndsAt: enrollments.windowEndsAt,
  lenderId: enrollments.lenderId,
  aid: enrollments.authorizerUniqueId,
};

async function writeChange(tx: PgDb, v: { enrollmentId: string; change: MonitorChange; now: number; windowMs: number; readIntervalMs: number }): Promise<void> {
  const { change } = v;
  const now = sql`${v.now}::bigint`;
  await tx.execute(sql`
    UPDATE enrollments SET state = ${change.state}, reason = ${change.reason}::text, blocked_reason = ${change.blockedReason}::text,
           window_started_at = CASE ${change.window}::text WHEN 'fresh' THEN ${now} WHEN 'none' THEN NULL ELSE window_started_at END,
           window_ends_at = CASE ${change.window}::text WHEN 'fresh' THEN ${now} + ${v.windowMs}::bigint WHEN 'none' THEN NULL ELSE window_ends_at END,
           next_read_at = CASE ${change.nextRead}::text WHEN 'now' THEN ${now} WHEN 'interval' THEN ${now} + ${v.readIntervalMs}::bigint WHEN 'none' THEN NULL ELSE next_read_at END,
           payments_used = CASE WHEN ${change.payments === 'reset'}::boolean THEN 0 ELSE payments_used END,
           updated_at = ${now}
     WHERE id = ${v.enrollmentId}`);
}

/** The columns of the borrowers of an enrollment, one array each (in the order of `rows`). */
function columnsOf(rows: readonly BorrowerEnrollment[], windowMs: number) {
  const col = <T>(f: (r: BorrowerEnrollment) => T) => listOf(rows.map(f));
  const window = (r: BorrowerEnrollment, fresh: number, kept: number | null | undefined) =>
    r.change.window === 'none' ? null : r.change.window === 'fresh' ? fresh : (kept ?? null);
  return {
    id: col((r) => r.write.id),
    lender: col((r) => r.write.lenderId),
    aid: col((r) => r.write.aid),
    state: col((r) => r.change.state),
    reason: col((r) => r.change.reason),
    blocked: col((r) => r.change.blockedReason),
    windowStarted: col((r) => window(r, r.write.now, r.prior?.windowStartedAt)),
    windowEnds: col((r) => window(r, r.write.now + windowMs, r.prior?.windowEndsAt)),
    amount: col((r) => r.write.amount),
    daysPastDue: col((r) => r.write.daysPastDue),
    merchantRef: col((r) => r.write.merchantRef),
    rail: col((r) => r.write.rail),
    routing: col((r) => r.write.routing),
    bankName: col((r) => r.write.bankName),
    sealed: col((r) => r.write.sealed),
    metadata: col((r) => r.write.metadata),
    cardToken: col((r) => r.write.cardTokenSealed),
    cardLast4: col((r) => r.write.cardLast4),
    cardBrand: col((r) => r.write.cardBrand),
    // The first read is due at once; a refresh keeps the cadence.
    nextRead: col((r) => (r.change.nextRead === 'now' ? r.write.now : null)),
    now: col((r) => r.write.now),
    reset: col((r) => r.change.payments === 'reset'),
    cfpb: col((r) => (r.write.cfpbCovered === null ? null : r.write.cfpbCovered ? 1 : 0)),
    authAt: col((r) => r.write.authorizationAt),
    authRef: col((r) => r.write.authorizationRef),
    bankAccount: col((r) => r.write.bankAccountId ?? null),
  };
}

/** The borrowers of an enrollment as rows: one `unnest` of an array per column. */
function source(rows: readonly BorrowerEnrollment[], windowMs: number) {
  const c = columnsOf(rows, windowMs);
  return sql`unnest(${c.id}::text[], ${c.lender}::text[], ${c.aid}::text[], ${c.state}::text[], ${c.reason}::text[], ${c.blocked}::text[],
                    ${c.windowStarted}::bigint[], ${c.windowEnds}::bigint[], ${c.amount}::bigint[], ${c.daysPastDue}::int[], ${c.merchantRef}::text[],
                    ${c.rail}::text[], ${c.routing}::text[], ${c.bankName}::text[], ${c.sealed}::text[], ${c.metadata}::text[], ${c.cardToken}::text[],
                    ${c.cardLast4}::text[], ${c.cardBrand}::text[], ${c.nextRead}::bigint[], ${c.now}::bigint[], ${c.reset}::boolean[], ${c.cfpb}::int[],
                    ${c.authAt}::bigint[], ${c.authRef}::text[], ${c.bankAccount}::text[])
           AS s(id, lender_id, aid, state, reason, blocked_reason, window_started_at, window_ends_at, amount, days_past_due, merchant_ref,
                rail, routing, bank_name, sealed, metadata, card_token, card_last4, card_brand, next_read_at, now, reset, cfpb, auth_at, auth_ref,
                bank_account_id)`;
}

/**
 * The enrollment of borrowers (new or re-sent), each with its monitor as the state machine decided it, as
 * store.sqlite.ts writes it with one upsert a borrower: here, the re-sent ones (a record read, and locked, by
 * the service) in one UPDATE, and the new ones in one INSERT, each from arrays of its columns (`unnest`: a
 * 1000-borrower enrollment is two statements). A refresh keeps the record's id and history. A new borrower
 * whose record exists after all (which serializeBorrowers rules out) is refreshed as on SQLite: a new borrower's
 * change always resets its payments.
 */
async function writeEnrollments(tx: PgDb, all: readonly BorrowerEnrollment[], windowMs: number): Promise<void> {
  const resent = all.filter((r) => r.prior !== undefined);
  const fresh = all.filter((r) => r.prior === undefined);
  if (resent.length > 0) {
    await tx.execute(sql`
      UPDATE enrollments e SET
             state = s.state, reason = s.reason, blocked_reason = s.blocked_reason,
             window_started_at = s.window_started_at, window_ends_at = s.window_ends_at,
             collectable_amount_cents = s.amount, days_past_due = s.days_past_due,
             merchant_ref = s.merchant_ref, rail = s.rail, routing_number = s.routing,
             bank_name = s.bank_name, sealed = s.sealed, metadata = s.metadata,
             card_token_sealed = s.card_token, card_last4 = s.card_last4, card_brand = s.card_brand,
             next_read_at = COALESCE(s.next_read_at, e.next_read_at),
             payments_used = CASE WHEN s.reset THEN 0 ELSE e.payments_used END,
             enrolled_at = CASE WHEN s.reset THEN s.now ELSE e.enrolled_at END,
             updated_at = s.now, erased_at = NULL,
             cfpb_covered = s.cfpb, bank_account_id = s.bank_account_id,
             -- An authorization stays until a later one is sent: a re-send without one, or with an older one, keeps it.
             authorization_ref = CASE WHEN s.auth_at > COALESCE(e.authorization_at, -1) THEN s.auth_ref ELSE e.authorization_ref END,
             authorization_at = CASE WHEN s.auth_at > COALESCE(e.authorization_at, -1) THEN s.auth_at ELSE e.authorization_at END
        FROM ${source(resent, windowMs)}
       WHERE e.lender_id = s.lender_id AND e.authorizer_unique_id = s.aid`);
  }
  if (fresh.length > 0) {
    await tx.execute(sql`
      INSERT INTO enrollments AS e (id, lender_id, authorizer_unique_id, state, reason, blocked_reason, window_started_at, window_ends_at,
             collectable_amount_cents, days_past_due, merchant_ref, rail, routing_number, bank_name, sealed, metadata,
             card_token_sealed, card_last4, card_brand, next_read_at, payments_used, enrolled_at, updated_at, erased_at,
             cfpb_covered, authorization_at, authorization_ref, bank_account_id)
      SELECT id, lender_id, aid, state, reason, blocked_reason, window_started_at, window_ends_at, amount, days_past_due, merchant_ref,
             rail, routing, bank_name, sealed, metadata, card_token, card_last4, card_brand, next_read_at, 0, now, now, NULL, cfpb, auth_at, auth_ref,
             bank_account_id
        FROM ${source(fresh, windowMs)}
      ON CONFLICT (lender_id, authorizer_unique_id) DO UPDATE SET
             state = excluded.state, reason = excluded.reason, blocked_reason = excluded.blocked_reason,
             window_started_at = excluded.window_started_at, window_ends_at = excluded.window_ends_at,
             collectable_amount_cents = excluded.collectable_amount_cents, days_past_due = excluded.days_past_due,
             merchant_ref = excluded.merchant_ref, rail = excluded.rail, routing_number = excluded.routing_number,
             bank_name = excluded.bank_name, sealed = excluded.sealed, metadata = excluded.metadata,
             card_token_sealed = excluded.card_token_sealed, card_last4 = excluded.card_last4, card_brand = excluded.card_brand,
             next_read_at = COALESCE(excluded.next_read_at, e.next_read_at),
             payments_used = 0, enrolled_at = excluded.enrolled_at,
             updated_at = excluded.updated_at, erased_at = NULL,
             cfpb_covered = excluded.cfpb_covered, bank_account_id = excluded.bank_account_id,
             authorization_ref = CASE WHEN excluded.authorization_at > COALESCE(e.authorization_at, -1) THEN excluded.authorization_ref ELSE e.authorization_ref END,
             authorization_at = CASE WHEN excluded.authorization_at > COALESCE(e.authorization_at, -1) THEN excluded.authorization_at ELSE e.authorization_at END`);
  }
}

export const pgMonitorStore: MonitorStore = {
  async currentMonitor(c, enrollmentId) {
    const q = readerOf(c).select(monitorColumns).from(enrollments).where(eq(enrollments.id, enrollmentId));
    const [m] = await (inTransaction(c) ? q.for('no key update') : q);
    return m as CurrentMonitor | undefined;
  },
  async writeMonitorChange(c, v) {
    await writeChange(writerOf(c), v);
  },
  async monitorsOf(c, lenderId, aids) {
    if (aids.length === 0) return [];
    const q = readerOf(c)
      .select({
        id: enrollments.id,
        aid: enrollments.authorizerUniqueId,
        state: enrollments.state,
        reason: enrollments.reason,
        blockedReason: enrollments.blockedReason,
        windowStartedAt: enrollments.windowStartedAt,
        windowEndsAt: enrollments.windowEndsAt,
        bankAccountId: enrollments.bankAccountId,
      })
      .from(enrollments)
      .where(and(eq(enrollments.lenderId, lenderId), inList(enrollments.authorizerUniqueId, aids)))
      // Locked in the order of their ids.
      .orderBy(asc(enrollments.id));
    return (await (inTransaction(c) ? q.for('no key update') : q)) as StoredMonitor[];
  },
  async writeEnrollments(c, rows, windowMs) {
    if (rows.length > 0) await writeEnrollments(writerOf(c), rows, windowMs);
  },
  async dueLapses(c, now, limit) {
    const base = readerOf(c)
      .select({ id: enrollments.id })
      .from(enrollments)
      .where(and(eq(enrollments.state, 'monitored'), lte(enrollments.windowEndsAt, now)))
      .orderBy(asc(enrollments.windowEndsAt), asc(enrollments.id));
    const q = limit >= 0 ? base.limit(limit) : base;
    // In its transaction, the lapse job claims what it reads: a monitor another transaction is moving is left for
    // the next tick, and one moved on meanwhile (collected, re-sent) is read again and left out.
    return inTransaction(c) ? q.for('no key update', { skipLocked: true }) : q;
  },
};
