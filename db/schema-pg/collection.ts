// Generated from db/schema/collection.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { cents, count, flag, ident, ms, rowId } from './columns';
import { enrollments } from './enrollments';
import { EVENT_SOURCES, EVENT_STATUSES, ITEM_STATES, LEDGER_KINDS, NOTICE_CHANNELS, NOTICE_CLASSES, PAYMENT_STATUSES, RAILS } from '../schema/enums';
import { lenders } from './lenders';
import { paymentConnections } from './payments';

// A debit the service initiates. Its id is the idempotency key of every processor call for it and the tail
// of its reference; the row is committed (status initiating) before the processor is called. It is also the
// dispatch queue (lease-queue columns): pending until the processor has answered.
export const payments = pgTable(
  'payments',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    enrollmentId: ident('enrollment_id')
      .notNull()
      .references(() => enrollments.id),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    connectionId: ident('connection_id')
      .notNull()
      .references(() => paymentConnections.id),
    rail: text('rail', { enum: RAILS }).notNull(),
    amountCents: cents('amount_cents').notNull(),
    reference: ident('reference').notNull(),
    status: text('status', { enum: PAYMENT_STATUSES }).notNull(),
    processorPaymentId: ident('processor_payment_id'),
    returnCode: text('return_code'),
    message: text('message'),
    // Dispatch to the processor, as a lease queue.
    state: text('state', { enum: ITEM_STATES }).notNull().default('pending'),
    attempts: count('attempts').notNull().default(0),
    nextAttemptAt: ms('next_attempt_at').notNull().default(0),
    leaseUntil: ms('lease_until').notNull().default(0),
    // The claim holding the row (replica id and a nonce): a finish whose token no longer matches was taken over.
    leaseToken: text('lease_token'),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
    settledAt: ms('settled_at'),
    // When the first request for it was about to leave for the processor (committed before the call): null
    // means the processor was never asked. The idempotency horizon counts from here.
    firstAttemptAt: ms('first_attempt_at'),
    // 1 for an original (or a payment under a new authorization), 2 and 3 for reinitiations of it.
    attempt: count('attempt').notNull().default(1),
    // The original payment a reinitiation presents again (its id); null for an original.
    reinitiationOf: ident('reinitiation_of'),
    // A scheduled payment's day (UTC midnight): the borrower was told it is debited then, not before.
    debitOn: ms('debit_on'),
    // The lender's uploaded outcome of this payment that its processor has not confirmed (the processor's word
    // wins for the service's own payments): it decides nothing until the processor says the same. Null when
    // there is none or it was confirmed. report_hold: why it stands unconfirmed (null while the processor is
    // being asked).
    reportedStatus: text('reported_status', { enum: EVENT_STATUSES }),
    reportedReturnCode: text('reported_return_code'),
    reportedAt: ms('reported_at'),
    reportHold: text('report_hold'),
    // The bank account an ACH debit went to, as the borrower's enrollment named it when the payment was made: a
    // return of it sets that account's state, whatever the borrower's account is by then. Null for a card
    // payment and for payments made before accounts were known.
    bankAccountId: ident('bank_account_id'),
    // The notice a payment needs before it goes out (collection/notices.ts): its class; what asks for a notice
    // (cfpb, reg_e, or both, comma-separated; null: none); the channel its window was set for; the window (the
    // notice is sent no earlier than notice_due_from and no later than notice_due_by); and the lender's word
    // that it was sent: when, how, and its evidence. A payment needing one goes out only with one confirmed
    // inside its window.
    noticeClass: text('notice_class', { enum: NOTICE_CLASSES }),
    noticeNeeds: text('notice_needs'),
    noticeChannel: text('notice_channel', { enum: NOTICE_CHANNELS }),
    noticeDueFrom: ms('notice_due_from'),
    noticeDueBy: ms('notice_due_by'),
    noticeSentAt: ms('notice_sent_at'),
    noticeSentChannel: text('notice_sent_channel', { enum: NOTICE_CHANNELS }),
    noticeEvidenceRef: text('notice_evidence_ref'),
  },
  (t) => [
    // At most one payment in flight per borrower, whatever the code does.
    uniqueIndex('payments_in_flight_uq').on(t.enrollmentId).where(sql`${t.status} IN ('scheduled', 'initiating', 'processing')`),
    uniqueIndex('payments_reference_uq').on(t.lenderId, t.reference),
    index('payments_dispatch_idx').on(t.state, t.nextAttemptAt),
    index('payments_processor_idx').on(t.connectionId, t.processorPaymentId),
    index('payments_enrollment_idx').on(t.enrollmentId, t.createdAt),
    // Return rates: the lender's ACH debits by when they first reached the processor.
    index('payments_rates_idx').on(t.lenderId, t.rail, t.firstAttemptAt, t.status),
    // The portal's overview: the lender's payments by status, with their amounts.
    index('payments_lender_status_idx').on(t.lenderId, t.status, t.createdAt, t.amountCents),
    // The portal's Payments page: every status, by date or by amount, a page at a time.
    index('payments_lender_created_idx').on(t.lenderId, t.createdAt, t.id),
    index('payments_lender_amount_idx').on(t.lenderId, t.amountCents, t.id),
  ],
);

// One row per observed status of a payment (reference). event_id is minted once and never reissued; reading
// the same processor event twice records nothing (unique per lender on source and source event id).
export const paymentEvents = pgTable(
  'payment_events',
  {
    id: ident('id').primaryKey(), // event_id
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    enrollmentId: ident('enrollment_id').references(() => enrollments.id),
    authorizerUniqueId: ident('authorizer_unique_id'),
    paymentId: ident('payment_id').references(() => payments.id),
    connectionId: ident('connection_id').references(() => paymentConnections.id),
    reference: ident('reference').notNull(),
    status: text('status', { enum: EVENT_STATUSES }).notNull(),
    amountCents: cents('amount_cents').notNull(),
    returnCode: text('return_code'),
    message: text('message'),
    source: text('source', { enum: EVENT_SOURCES }).notNull(),
    sourceEventId: ident('source_event_id').notNull(),
    occurredAt: ms('occurred_at').notNull(),
    recordedAt: ms('recorded_at').notNull(),
  },
  (t) => [
    uniqueIndex('payment_events_source_uq').on(t.lenderId, t.source, t.sourceEventId),
    index('payment_events_reference_idx').on(t.lenderId, t.reference, t.recordedAt),
    index('payment_events_borrower_idx').on(t.lenderId, t.authorizerUniqueId, t.recordedAt),
    // Return rates: the lender's returns by when they happened.
    index('payment_events_returns_idx')
      .on(t.lenderId, t.occurredAt, t.reference, t.returnCode, t.paymentId)
      .where(sql`${t.status} IN ('returned', 'late_returned')`),
    // Return rates: whether a reference was returned before (a late return after a return counts once).
    index('payment_events_reference_returns_idx').on(t.lenderId, t.reference, t.occurredAt).where(sql`${t.status} IN ('returned', 'late_returned')`),
  ],
);

// The borrower's ledger: a credit when a payment settles, a reversal of what was credited for its reference
// when it is returned or clawed back (0 when nothing was).
export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: rowId('id'),
    lenderId: ident('lender_id').notNull(),
    enrollmentId: ident('enrollment_id')
      .notNull()
      .references(() => enrollments.id),
    reference: ident('reference').notNull(),
    kind: text('kind', { enum: LEDGER_KINDS }).notNull(),
    amountCents: cents('amount_cents').notNull(),
    eventId: ident('event_id')
      .notNull()
      .references(() => paymentEvents.id),
    at: ms('at').notNull(),
  },
  (t) => [
    index('ledger_entries_enrollment_idx').on(t.enrollmentId, t.id),
    index('ledger_entries_reference_idx').on(t.lenderId, t.reference),
    // The portal's overview: money collected and returned per day, from the index alone.
    index('ledger_entries_lender_at_idx').on(t.lenderId, t.at, t.kind, t.amountCents),
  ],
);

// Distinct processor payments read through each key (ingested), and whether each matched a borrower.
export const ingestedPayments = pgTable(
  'ingested_payments',
  {
    connectionId: ident('connection_id')
      .notNull()
      .references(() => paymentConnections.id),
    processorPaymentId: ident('processor_payment_id').notNull(),
    matched: flag('matched').notNull(),
  },
  (t) => [uniqueIndex('ingested_payments_uq').on(t.connectionId, t.processorPaymentId)],
);

// Observations of a payment's status that could not be recorded (a fault, not a stale status, which is simply
// not ahead): kept here with the reason, so the change feed and every other payment of the key go on and an
// operator can see what was left out. Nothing here is personal data beyond the reference.
export const paymentObservationsSetAside = pgTable(
  'payment_observations_set_aside',
  {
    id: rowId('id'),
    lenderId: ident('lender_id').notNull(),
    connectionId: ident('connection_id'),
    source: text('source', { enum: EVENT_SOURCES }).notNull(),
    sourceEventId: ident('source_event_id').notNull(),
    reference: ident('reference').notNull(),
    status: text('status', { enum: EVENT_STATUSES }).notNull(),
    error: text('error').notNull(),
    at: ms('at').notNull(),
  },
  (t) => [index('payment_observations_set_aside_lender_idx').on(t.lenderId, t.at)],
);
