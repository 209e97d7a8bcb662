import { sql, type SQL } from 'drizzle-orm';
import type { PgDb, PgHandle } from '../../platform/pg';
import type { SandboxChangeRow, SandboxListedRow, SandboxPaymentRow, SandboxStatus, SandboxStore } from './sandbox-store';
import type { EventStatus } from './types';

// The sandbox's storage on PostgreSQL: the same statements as on SQLite, on the pool it is given, each write in
// a transaction of its own (never a caller's: the pool's, not the service's open one).
//
// SQLite ran one writer at a time; here writers run side by side, so every write transaction of an account
// first takes the account's advisory lock, held until it ends. That keeps two things the single writer gave:
// - a key's replay check and its payment's insert are one step: concurrent creates with one idempotency key
//   make one payment (the key's index is not unique: past its window a reused key makes a new payment);
// - the account's change feed only grows behind its readers: a change is numbered (seq, an identity) while
//   the lock is held, so the account's changes commit in seq order, and a reader that has seen seq n never
//   later finds a change below n appear. Without it, a transaction numbered first could commit last, under
//   a cursor already past it, and its change would be skipped for good.
//
// Times and cents are int8, which a raw query returns as a string: read back as float8 (exact below 2^53), and
// seq likewise.

const all = async <T>(db: PgDb, query: SQL): Promise<T[]> => (await db.execute(query)) as unknown as T[];
const one = async <T>(db: PgDb, query: SQL): Promise<T | undefined> => (await all<T>(db, query))[0];

const PAYMENT_COLUMNS = sql.raw(
  'id, amount_cents::float8 AS amount_cents, created_at::float8 AS created_at, created_status, created_return_code, created_message',
);

/** The account's lock, taken first by each of its write transactions and held until the transaction ends. */
const lockAccount = (tx: PgDb, account: string) => tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`sandbox-account\u001f${account}`}, 0))`);

/**
 * Appends, in time order, the scheduled statuses of this account whose time has come (each at its scheduled
 * time), and removes them from the schedule. Inside a write transaction holding the account's lock.
 */
const materialise = (tx: PgDb, account: string, now: number) =>
  tx.execute(sql`
    WITH due AS (
      DELETE FROM sandbox_transitions WHERE account = ${account} AND due_at <= ${now}
      RETURNING id, payment_id, status, return_code, message, due_at
    )
    INSERT INTO sandbox_events (account, payment_id, status, return_code, message, occurred_at)
    SELECT ${account}, payment_id, status, return_code, message, due_at FROM due ORDER BY due_at, id`);

/** A payment's latest status: its newest change. */
const currentOf = async (db: PgDb, paymentId: string): Promise<SandboxStatus> => {
  const e = (await one<{ status: EventStatus; return_code: string | null; message: string | null }>(
    db,
    sql`SELECT status, return_code, message FROM sandbox_events WHERE payment_id = ${paymentId} ORDER BY seq DESC LIMIT 1`,
  ))!;
  return { status: e.status, returnCode: e.return_code, message: e.message };
};

/** The sandbox's storage on a PostgreSQL pool. */
export function pgSandboxStore(pg: PgHandle): SandboxStore {
  const db: PgDb = pg.db;
  /** fn in a transaction of its own that holds the account's lock. */
  const writeAlone = <T>(account: string, fn: (tx: PgDb) => Promise<T>): Promise<T> =>
    pg.db.transaction(async (tx) => {
      await lockAccount(tx, account);
      return fn(tx);
    });

  return {
    async saveCard(c) {
      await db.execute(sql`
        INSERT INTO sandbox_cards (token, account, last4, brand, funding, exp_month, exp_year, created_at)
        VALUES (${c.token}, ${c.account}, ${c.last4}, ${c.brand}, ${c.funding}, ${c.expMonth}, ${c.expYear}, ${c.createdAt})`);
    },
    async createPayment(p) {
      return writeAlone(p.account, async (tx) => {
        await materialise(tx, p.account, p.now);
        // The payment a key made within its idempotency window (the newest, should a key have been reused after it).
        const existing = await one<SandboxPaymentRow>(
          tx,
          sql`SELECT ${PAYMENT_COLUMNS} FROM sandbox_payments
               WHERE account = ${p.account} AND idempotency_key = ${p.idempotencyKey} AND created_at > ${p.replayAfter}
               ORDER BY created_at DESC LIMIT 1`,
        );
        if (existing) return { existing };
        if (p.failFirstAttempt) {
          const attempted = await one(tx, sql`SELECT 1 FROM sandbox_idempotency WHERE account = ${p.account} AND idempotency_key = ${p.idempotencyKey}`);
          if (!attempted) {
            await tx.execute(sql`
              INSERT INTO sandbox_idempotency (account, idempotency_key, failed_attempts, first_attempt_at) VALUES (${p.account}, ${p.idempotencyKey}, 1, ${p.now})
              ON CONFLICT (account, idempotency_key) DO UPDATE SET failed_attempts = sandbox_idempotency.failed_attempts + 1`);
            return { failedAttempt: true as const };
          }
        }
        const [first, ...later] = p.steps;
        const pay = p.payment;
        await tx.execute(sql`
          INSERT INTO sandbox_payments (id, account, idempotency_key, reference, amount_cents, rail, instrument_kind,
            created_status, created_return_code, created_message, created_at, entry_description, correction)
          VALUES (${pay.id}, ${p.account}, ${p.idempotencyKey}, ${pay.reference}, ${pay.amountCents}, ${pay.rail}, ${pay.instrumentKind},
            ${first!.status}, ${first!.returnCode}, ${first!.message}, ${p.now}, ${pay.entryDescription}, ${pay.correction})`);
        await tx.execute(sql`
          INSERT INTO sandbox_events (account, payment_id, status, return_code, message, occurred_at)
          VALUES (${p.account}, ${pay.id}, ${first!.status}, ${first!.returnCode}, ${first!.message}, ${p.now})`);
        if (later.length > 0) {
          await tx.execute(sql`
            INSERT INTO sandbox_transitions (account, payment_id, status, return_code, message, due_at)
            SELECT ${p.account}, ${pay.id}, s.status, s.return_code, s.message, s.due_at
              FROM unnest(${sql.param(later.map((s) => s.status))}::text[], ${sql.param(later.map((s) => s.returnCode))}::text[],
                          ${sql.param(later.map((s) => s.message))}::text[], ${sql.param(later.map((s) => s.dueAt))}::int8[])
                   WITH ORDINALITY AS s(status, return_code, message, due_at, n)
             ORDER BY s.n`);
        }
        return { created: true as const };
      });
    },
    async appendDueStatuses(account, now) {
      const due = await one(db, sql`SELECT 1 FROM sandbox_transitions WHERE account = ${account} AND due_at <= ${now} LIMIT 1`);
      if (due) await writeAlone(account, (tx) => materialise(tx, account, now));
    },
    async changeLeftFeedAfter(account, after, take, keptFrom) {
      // A change of the next page that has already left the feed: the cursor is lost there. Only the page's
      // own changes are looked at, so a long backlog costs a page per read, not the whole feed.
      return !!(await one(
        db,
        sql`SELECT 1 FROM (SELECT occurred_at FROM sandbox_events WHERE account = ${account} AND seq > ${after} ORDER BY seq LIMIT ${take}) page
             WHERE occurred_at < ${keptFrom} LIMIT 1`,
      ));
    },
    async newestChangeSeq(account) {
      return (await one<{ seq: number | null }>(db, sql`SELECT MAX(seq)::float8 AS seq FROM sandbox_events WHERE account = ${account}`))!.seq;
    },
    async changesAfter(account, after, keptFrom, take) {
      return all<SandboxChangeRow>(
        db,
        sql`SELECT e.seq::float8 AS seq, e.payment_id, p.reference, e.status, p.amount_cents::float8 AS amount_cents, e.return_code,
                   e.occurred_at::float8 AS occurred_at, e.message, p.created_at::float8 AS created_at, p.correction
              FROM sandbox_events e JOIN sandbox_payments p ON p.id = e.payment_id
             WHERE e.account = ${account} AND e.seq > ${after} AND e.occurred_at >= ${keptFrom} ORDER BY e.seq LIMIT ${take}`,
      );
    },
    async paymentMadeWithKey(account, idempotencyKey, createdFrom, createdTo) {
      return (
        (await one<SandboxPaymentRow>(
          db,
          sql`SELECT ${PAYMENT_COLUMNS} FROM sandbox_payments
               WHERE account = ${account} AND idempotency_key = ${idempotencyKey} AND created_at BETWEEN ${createdFrom} AND ${createdTo}
               ORDER BY created_at LIMIT 1`,
        )) ?? null
      );
    },
    async currentStatus(paymentId) {
      return currentOf(db, paymentId);
    },
    async paymentsCreatedBetween(account, createdFrom, createdTo, after, limit) {
      // Each payment with its latest status in the same statement (SQLite asks once per payment).
      const rows = await all<Omit<SandboxListedRow, keyof SandboxStatus> & { status: EventStatus; return_code: string | null; message: string | null }>(
        db,
        sql`SELECT p.id, p.idempotency_key, p.reference, p.amount_cents::float8 AS amount_cents, p.created_at::float8 AS created_at,
                   e.status, e.return_code, e.message
              FROM (SELECT id, idempotency_key, reference, amount_cents, created_at FROM sandbox_payments
                     WHERE account = ${account} AND created_at >= ${createdFrom} AND created_at <= ${createdTo}
                       AND (created_at > ${after.at} OR (created_at = ${after.at} AND id > ${after.id}))
                     ORDER BY created_at, id LIMIT ${limit + 1}) p
              CROSS JOIN LATERAL (SELECT status, return_code, message FROM sandbox_events
                                   WHERE payment_id = p.id ORDER BY seq DESC LIMIT 1) e
             ORDER BY p.created_at, p.id`,
      );
      const more = rows.length > limit;
      if (more) rows.length = limit;
      return {
        rows: rows.map(({ return_code, ...r }) => ({ ...r, returnCode: return_code })),
        more,
      };
    },
    async outageSince(account, createdAfter) {
      // Cents 88: the account answers nothing about such a payment until its outage has passed.
      return !!(await one(
        db,
        sql`SELECT 1 FROM sandbox_payments WHERE account = ${account} AND amount_cents % 100 = 88 AND created_at > ${createdAfter} LIMIT 1`,
      ));
    },
  };
}
