// Generated from db/schema/sandbox-processor.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { sql } from 'drizzle-orm';
import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { cents, count, ident, ms, rowId } from './columns';
import { EVENT_STATUSES, RAILS, SANDBOX_INSTRUMENT_KINDS } from '../schema/enums';

// The built-in sandbox processor's own state. It stands for an outside system, so it lives in its own
// tables: a restart of the service never loses a payment that is "at the processor". `account` is the
// SHA-256 hex of the processor key: the key itself is never stored here.

export const sandboxPayments = pgTable(
  'sandbox_payments',
  {
    id: ident('id').primaryKey(), // sbxpay_…
    account: ident('account').notNull(),
    // The caller's payment id: a repeated create with it returns this payment.
    idempotencyKey: ident('idempotency_key').notNull(),
    reference: ident('reference'),
    // The entry's description: RETRY PYMT for a reinitiation (Nacha), null otherwise.
    entryDescription: text('entry_description'),
    amountCents: cents('amount_cents').notNull(),
    rail: text('rail', { enum: RAILS }).notNull(),
    instrumentKind: text('instrument_kind', { enum: SANDBOX_INSTRUMENT_KINDS }).notNull(),
    // The answer to the first create, returned again on a replay.
    createdStatus: text('created_status', { enum: EVENT_STATUSES }).notNull(),
    createdReturnCode: text('created_return_code'),
    createdMessage: text('created_message'),
    createdAt: ms('created_at').notNull(),
    // The Notification of Change the receiving bank answers the entry with, once settled (`C01:<number>`): an
    // account number of the sandbox's 9996 test value. The sandbox is the outside system: its data is its own.
    correction: text('correction'),
  },
  (t) => [
    // Not unique: past SANDBOX_IDEMPOTENCY_TTL_MS a reused key makes a new payment, as Stripe's does.
    index('sandbox_payments_account_idem_idx').on(t.account, t.idempotencyKey, t.createdAt),
    index('sandbox_payments_account_created_idx').on(t.account, t.createdAt, t.id),
    // Cents 88 (the outage case): the outage check reads only these, whatever the account's volume.
    index('sandbox_payments_outage_idx').on(t.account, t.createdAt).where(sql`${t.amountCents} % 100 = 88`),
  ],
);

// The outcome schedule: statuses a payment will take once the clock reaches due_at. Each is moved into
// sandbox_events (and deleted here) when it comes due, so the change feed only shows what has happened.
export const sandboxTransitions = pgTable(
  'sandbox_transitions',
  {
    id: rowId('id'),
    account: ident('account').notNull(),
    paymentId: ident('payment_id')
      .notNull()
      .references(() => sandboxPayments.id),
    status: text('status', { enum: EVENT_STATUSES }).notNull(),
    returnCode: text('return_code'),
    message: text('message'),
    dueAt: ms('due_at').notNull(),
  },
  (t) => [index('sandbox_transitions_due_idx').on(t.account, t.dueAt)],
);

// The change feed: seq is the cursor, so it only ever grows (AUTOINCREMENT never reuses a value).
export const sandboxEvents = pgTable(
  'sandbox_events',
  {
    seq: rowId('seq'),
    account: ident('account').notNull(),
    paymentId: ident('payment_id')
      .notNull()
      .references(() => sandboxPayments.id),
    status: text('status', { enum: EVENT_STATUSES }).notNull(),
    returnCode: text('return_code'),
    message: text('message'),
    occurredAt: ms('occurred_at').notNull(),
  },
  (t) => [index('sandbox_events_account_seq_idx').on(t.account, t.seq), index('sandbox_events_payment_idx').on(t.paymentId, t.seq)],
);

// Tokenized cards: what a processor keeps about a card, never its number or CVV.
export const sandboxCards = pgTable('sandbox_cards', {
  token: ident('token').primaryKey(), // sbxpm_…
  account: ident('account').notNull(),
  last4: text('last4').notNull(),
  brand: text('brand').notNull(),
  funding: text('funding').notNull(),
  expMonth: count('exp_month').notNull(),
  expYear: count('exp_year').notNull(),
  createdAt: ms('created_at').notNull(),
});

// Creates that failed transiently before any payment existed (cents 98), so the next try of the same
// idempotency key succeeds.
export const sandboxIdempotency = pgTable(
  'sandbox_idempotency',
  {
    account: ident('account').notNull(),
    idempotencyKey: ident('idempotency_key').notNull(),
    failedAttempts: count('failed_attempts').notNull(),
    firstAttemptAt: ms('first_attempt_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.account, t.idempotencyKey] })],
);
