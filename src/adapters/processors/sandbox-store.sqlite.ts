import type { Database } from 'bun:sqlite';
import { writeAlone } from '../../platform/tx-lock';
import type { SandboxChangeRow, SandboxListedRow, SandboxPaymentRow, SandboxStatus, SandboxStore } from './sandbox-store';
import type { EventStatus } from './types';

interface TransitionRow {
  id: number;
  payment_id: string;
  status: EventStatus;
  return_code: string | null;
  message: string | null;
  due_at: number;
}

/** The sandbox's storage on a SQLite connection: its statements prepared once. */
export function sqliteSandboxStore(db: Database): SandboxStore {
  // Raw prepared statements rather than Drizzle: listChanges is polled hard (50,000-change backlogs), and
  // prepared-once statements keep each page to one indexed query with no per-call query building.
  const q = {
    anyDue: db.prepare('SELECT 1 FROM sandbox_transitions WHERE account = ? AND due_at <= ? LIMIT 1'),
    due: db.prepare(
      'SELECT id, payment_id, status, return_code, message, due_at FROM sandbox_transitions WHERE account = ? AND due_at <= ? ORDER BY due_at, id',
    ),
    deleteTransition: db.prepare('DELETE FROM sandbox_transitions WHERE id = ?'),
    insertEvent: db.prepare(
      'INSERT INTO sandbox_events (account, payment_id, status, return_code, message, occurred_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    page: db.prepare(
      `SELECT e.seq, e.payment_id, p.reference, e.status, p.amount_cents, e.return_code, e.occurred_at, e.message, p.created_at, p.correction
         FROM sandbox_events e JOIN sandbox_payments p ON p.id = e.payment_id
        WHERE e.account = ? AND e.seq > ? AND e.occurred_at >= ? ORDER BY e.seq LIMIT ?`,
    ),
    // A change of the next page that has already left the feed: the cursor is lost there. Only the page's
    // own changes are looked at, so a long backlog costs a page per read, not the whole feed.
    lostAfter: db.prepare(
      'SELECT 1 FROM (SELECT occurred_at FROM sandbox_events WHERE account = ? AND seq > ? ORDER BY seq LIMIT ?) WHERE occurred_at < ? LIMIT 1',
    ),
    newest: db.prepare('SELECT MAX(seq) AS seq FROM sandbox_events WHERE account = ?'),
    // The payment a key made within its idempotency window (the newest, should a key have been reused after it).
    findPayment: db.prepare(
      `SELECT id, amount_cents, created_at, created_status, created_return_code, created_message FROM sandbox_payments
        WHERE account = ? AND idempotency_key = ? AND created_at > ? ORDER BY created_at DESC LIMIT 1`,
    ),
    findAnyPayment: db.prepare(
      `SELECT id, amount_cents, created_at, created_status, created_return_code, created_message FROM sandbox_payments
        WHERE account = ? AND idempotency_key = ? AND created_at BETWEEN ? AND ? ORDER BY created_at LIMIT 1`,
    ),
    current: db.prepare('SELECT status, return_code, message FROM sandbox_events WHERE payment_id = ? ORDER BY seq DESC LIMIT 1'),
    listPage: db.prepare(
      `SELECT id, idempotency_key, reference, amount_cents, created_at FROM sandbox_payments
        WHERE account = ?1 AND created_at >= ?2 AND created_at <= ?3 AND (created_at > ?4 OR (created_at = ?4 AND id > ?5))
        ORDER BY created_at, id LIMIT ?6`,
    ),
    // Cents 88: the account answers nothing about such a payment until its outage has passed.
    inOutage: db.prepare(
      'SELECT 1 FROM sandbox_payments INDEXED BY sandbox_payments_outage_idx WHERE account = ? AND amount_cents % 100 = 88 AND created_at > ? LIMIT 1',
    ),
    findAttempt: db.prepare('SELECT failed_attempts FROM sandbox_idempotency WHERE account = ? AND idempotency_key = ?'),
    recordFailedAttempt: db.prepare(
      `INSERT INTO sandbox_idempotency (account, idempotency_key, failed_attempts, first_attempt_at) VALUES (?, ?, 1, ?)
       ON CONFLICT (account, idempotency_key) DO UPDATE SET failed_attempts = failed_attempts + 1`,
    ),
    insertPayment: db.prepare(
      `INSERT INTO sandbox_payments (id, account, idempotency_key, reference, amount_cents, rail, instrument_kind,
         created_status, created_return_code, created_message, created_at, entry_description, correction) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertTransition: db.prepare(
      'INSERT INTO sandbox_transitions (account, payment_id, status, return_code, message, due_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    insertCard: db.prepare(
      `INSERT INTO sandbox_cards (token, account, last4, brand, funding, exp_month, exp_year, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
  };

  /** Appends, in time order, the scheduled statuses of this account whose time has come. Inside a write transaction. */
  const materialise = (account: string, now: number): void => {
    const due = q.due.all(account, now) as TransitionRow[];
    for (const t of due) {
      q.insertEvent.run(account, t.payment_id, t.status, t.return_code, t.message, t.due_at);
      q.deleteTransition.run(t.id);
    }
  };

  const currentOf = (paymentId: string): SandboxStatus => {
    const e = q.current.get(paymentId) as { status: EventStatus; return_code: string | null; message: string | null };
    return { status: e.status, returnCode: e.return_code, message: e.message };
  };

  return {
    async saveCard(c) {
      // In its own transaction: written bare, it would land inside another caller's open one, and go with it.
      await writeAlone(db, () => q.insertCard.run(c.token, c.account, c.last4, c.brand, c.funding, c.expMonth, c.expYear, c.createdAt));
    },
    async createPayment(p) {
      return writeAlone(db, () => {
        materialise(p.account, p.now);
        const existing = q.findPayment.get(p.account, p.idempotencyKey, p.replayAfter) as SandboxPaymentRow | null;
        if (existing) return { existing };
        if (p.failFirstAttempt && !q.findAttempt.get(p.account, p.idempotencyKey)) {
          q.recordFailedAttempt.run(p.account, p.idempotencyKey, p.now);
          return { failedAttempt: true as const };
        }
        const [first, ...later] = p.steps;
        const pay = p.payment;
        q.insertPayment.run(
          pay.id, p.account, p.idempotencyKey, pay.reference, pay.amountCents, pay.rail, pay.instrumentKind,
          first!.status, first!.returnCode, first!.message, p.now, pay.entryDescription, pay.correction,
        );
        q.insertEvent.run(p.account, pay.id, first!.status, first!.returnCode, first!.message, p.now);
        for (const s of later) q.insertTransition.run(p.account, pay.id, s.status, s.returnCode, s.message, s.dueAt);
        return { created: true as const };
      });
    },
    async appendDueStatuses(account, now) {
      if (q.anyDue.get(account, now)) await writeAlone(db, () => materialise(account, now));
    },
    async changeLeftFeedAfter(account, after, take, keptFrom) {
      return !!q.lostAfter.get(account, after, take, keptFrom);
    },
    async newestChangeSeq(account) {
      return (q.newest.get(account) as { seq: number | null }).seq;
    },
    async changesAfter(account, after, keptFrom, take) {
      return q.page.all(account, after, keptFrom, take) as SandboxChangeRow[];
    },
    async paymentMadeWithKey(account, idempotencyKey, createdFrom, createdTo) {
      return (q.findAnyPayment.get(account, idempotencyKey, createdFrom, createdTo) as SandboxPaymentRow | null) ?? null;
    },
    async currentStatus(paymentId) {
      return currentOf(paymentId);
    },
    async paymentsCreatedBetween(account, createdFrom, createdTo, after, limit) {
      const rows = q.listPage.all(account, createdFrom, createdTo, after.at, after.id, limit + 1) as Omit<SandboxListedRow, keyof SandboxStatus>[];
      const more = rows.length > limit;
      if (more) rows.length = limit;
      return { rows: rows.map((r) => ({ ...r, ...currentOf(r.id) })), more };
    },
    async outageSince(account, createdAfter) {
      return !!q.inOutage.get(account, createdAfter);
    },
  };
}
