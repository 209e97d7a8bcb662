import type { enrollments, paymentEvents, payments } from '../../../db/schema';
import type { AccountType, EventSource, EventStatus, MonitorState, NoticeChannel, NoticeClass, PaymentStatus, ProcessorName, Rail } from '../../../db/schema/enums';
import type { AccountStanding } from '../bank-accounts/store';
import type { Claim, Finalize } from '../../platform/lease-queue';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { PastPayment } from './rules';

export { DISPATCH_LEASE_MS } from './store-shared';
import type { DECIDING_COLUMNS } from './store-shared';

export interface DuePayment {
  id: string;
  lenderId: string;
  enrollmentId: string;
  authorizerUniqueId: string;
  connectionId: string;
  rail: 'ach' | 'card';
  amountCents: number;
  reference: string;
  attempts: number;
  /** 2 and 3 are reinitiations (RETRY PYMT). */
  attempt: number;
  /** The claim holding it (lease-token.ts): its finish and its send hold only while this claim does. */
  leaseToken: string;
}

/** A claimed payment's queue row, finished: done, or pending again with its next attempt. */
export type DueFinish = Finalize<typeof payments>;

// Collection's data: payments, their events and the ledger, what was ingested from the processors' feeds, and
// what collection reads and writes of borrowers and processor keys to decide, send and poll.

export type PaymentRow = typeof payments.$inferSelect;
export type NewPayment = typeof payments.$inferInsert;
export type EnrollmentRow = typeof enrollments.$inferSelect;
/** A borrower as a decision reads it: its enrollment, and its bank account's standing (null: none linked). */
export type DecidingRow = Pick<EnrollmentRow, (typeof DECIDING_COLUMNS)[number]> & { account: AccountStanding | null; fraudHold?: number };
export type PaymentEventRow = typeof paymentEvents.$inferSelect;

export interface EventRecord {
  id: string;
  lenderId: string;
  enrollmentId: string | null;
  aid: string | null;
  paymentId: string | null;
  connectionId: string | null;
  reference: string;
  status: EventStatus;
  amount: number;
  returnCode: string | null;
  message: string | null;
  source: EventSource;
  sourceEventId: string;
  occurredAt: number;
  recordedAt: number;
}

export interface LedgerEntry {
  lenderId: string;
  enrollmentId: string;
  reference: string;
  kind: 'credit' | 'reversal';
  amount: number;
  eventId: string;
  at: number;
}

/**
 * A payment moved from the status it was read in (compare and set). A lender's report of the payment that
 * the new status confirms is cleared; one it does not confirm stands, with `reportHold` as why.
 */
export interface StatusMove {
  id: string;
  from: PaymentStatus | null;
  status: EventStatus;
  returnCode: string | null;
  message: string | null;
  now: number;
  settledAt: number | null;
  reportHold: string;
}

/** A lender's uploaded outcome of the service's own payment, kept on the payment until its processor confirms it. */
export interface PaymentReport {
  id: string;
  status: EventStatus;
  returnCode: string | null;
  at: number;
  /** Why it cannot be confirmed now; null while the processor is being asked. */
  hold: string | null;
  /** The payment is queued for a look-up at its processor now. */
  lookUp: boolean;
}

export interface SetAside {
  lenderId: string;
  connectionId: string | null;
  source: EventSource;
  sourceEventId: string;
  reference: string;
  status: EventStatus;
  error: string;
  at: number;
}

/** The service's own payment a processor change is about. */
export interface OwnPayment {
  id: string;
  enrollmentId: string;
  aid: string;
  amount: number;
  pid: string | null;
}

export interface ScheduledPayment {
  id: string;
  lenderId: string;
  enrollmentId: string;
  aid: string;
  reference: string;
  amountCents: number;
  debitOn: number;
  /** What asks for its notice (cfpb, reg_e; comma-separated), null for none; its window; when the lender sent it. */
  noticeNeeds: string | null;
  noticeDueFrom: number | null;
  noticeDueBy: number | null;
  noticeSentAt: number | null;
}

export interface ChainInputs {
  lenderId: string;
  state: string;
  blockedReason: string | null;
  authorizationAt: number | null;
  cfpbCovered: number | null;
  collectableAmountCents: number;
  /** When the borrower revoked its authorization (Regulation E), if it did. */
  revokedAt: number | null;
  /** When the borrower's new authorization under the payday rule was obtained, if one was recorded. */
  reauthorizedAt: number | null;
}

/** Exact sums of the overview (cents as BigInt: a lender's totals can pass 2^53). */
export interface LedgerTotals {
  credited: bigint;
  reversed: bigint;
}
export interface CountedSum {
  amount: bigint;
  count: number;
}

export interface PaymentPageQuery {
  lenderId: string;
  status?: PaymentStatus;
  /** Created at or after, ms. */
  from: number | null;
  /** Created before, ms. */
  to: number | null;
  sort: 'newest' | 'oldest' | 'amount_desc' | 'amount_asc';
  /** The position of the last row of the page before: its sort key and id. */
  after: { k: number; i: string } | null;
  take: number;
}

// The serialize* members: on SQLite one writer at a time does it already (no-ops); on PostgreSQL transactions
// run side by side, and each of these, taken first, makes a second transaction about the same thing wait until
// the first ends, then read what it committed.

/** The dispatch queue and the sending of a payment (dispatch.ts). */
export interface DispatchStore {
  /** Leases up to `want` due payments, oldest due first (claimed every tick of the dispatch job). */
  claimDuePayments(c: StoreCtx, want: number, now: number): Promise<DuePayment[]>;
  /** A claimed payment's queue row finished, while the claim still holds it: whether it did (see Claim). */
  finishDue(c: TxCtx, claim: Claim, finish: DueFinish): Promise<boolean>;
  /**
   * At start, the leases a stopped process held let go; how many. On SQLite every lease (one process serves
   * the file); on PostgreSQL only this replica's own (`prefix`: its tokens' start).
   */
  releasePaymentLeases(c: TxCtx, prefix: string): Promise<number>;
  sendStateOf(c: StoreCtx, id: string): Promise<{ status: PaymentStatus; firstAttemptAt: number | null; reportedStatus: EventStatus | null } | null>;
  borrowerToDebit(
    c: StoreCtx,
    enrollmentId: string,
  ): Promise<{ state: MonitorState; sealed: string | null; cardToken: string | null; routing: string | null; revoked: boolean } | null>;
  /**
   * What may stop a debit at its bank account: the standings of the account the payment was made for and of
   * the borrower's account now (each once; none when neither is known), and the borrower's authorization.
   */
  accountsToDebit(c: StoreCtx, paymentId: string): Promise<{ authorizationAt: number | null; accounts: AccountStanding[]; accountType: AccountType | null }>;
  keyToSend(c: StoreCtx, connectionId: string): Promise<{ processor: ProcessorName; keySealed: string | null } | null>;
  /** Whether the processor key a payment went through is still there (not deleted). */
  paymentKeyLive(c: StoreCtx, paymentId: string): Promise<boolean>;
  /**
   * The claim of a send, one conditional statement: true when the payment was still initiating, its borrower
   * still monitored, neither the bank account the payment was made for nor the borrower's account now in a
   * state that blocks the borrower (accountBlockOf), and its queue row still held by this claim (a claim whose
   * lease ran out and was taken again sends nothing), its first attempt now recorded. Committed before the
   * request leaves. `details`: the borrower's sealed details and routing number the request was planned with
   * must still be the borrower's (a Notification of Change applied since, or a re-send, changed them: the
   * payment is planned again with the new ones, never sent to the old).
   */
  claimSend(c: TxCtx, claim: Claim, now: number, details?: { sealed: string; routing: string | null }): Promise<boolean>;
  /** The processor's id of a payment it answered about (an id kept before stands). */
  noteProcessorPaymentId(c: TxCtx, id: string, processorPaymentId: string | null, now: number): Promise<void>;
}

/** Recording an observed outcome (record.ts): the only statements that move a payment's status after its creation. */
export interface OutcomeStore {
  /** Whether the lender's source event was recorded before. */
  eventSeen(c: StoreCtx, lenderId: string, source: EventSource, sourceEventId: string): Promise<boolean>;
  /** The latest recorded event of a reference: its status and time. */
  lastEventOf(c: StoreCtx, lenderId: string, reference: string): Promise<{ status: EventStatus; occurredAt: number } | null>;
  /** Which of these source events of a lender were recorded before (eventSeen for a slice at once). */
  seenAmong(c: StoreCtx, lenderId: string, source: EventSource, sourceEventIds: string[]): Promise<string[]>;
  /** The latest recorded event of each of some references (lastEventOf for a slice at once). */
  lastEventsAmong(c: StoreCtx, lenderId: string, references: string[]): Promise<{ reference: string; status: EventStatus; occurredAt: number }[]>;
  paymentStatusOf(c: StoreCtx, id: string): Promise<PaymentStatus | null>;
  /** A payment's rail and the bank account it was made for (null: a card payment, or one made before accounts were known). */
  paymentAccountOf(c: StoreCtx, id: string): Promise<{ rail: Rail; bankAccountId: string | null } | null>;
  recordEvent(c: TxCtx, event: EventRecord): Promise<void>;
  /** What is credited for a reference, net of reversals. */
  creditedFor(c: StoreCtx, lenderId: string, reference: string): Promise<number>;
  postLedgerEntry(c: TxCtx, entry: LedgerEntry): Promise<void>;
  /** Moves a payment from the status it was read in; one whose status moved since is left alone. */
  movePaymentStatus(c: TxCtx, move: StatusMove): Promise<void>;
  /**
   * A scheduled payment whose day has come becomes initiating, due for dispatch now: whether it moved (only
   * from scheduled). Called by the recorder only (record.ts, releaseScheduled).
   */
  releasePayment(c: TxCtx, id: string, now: number): Promise<boolean>;
  /**
   * A payment's status and whether a send of it was ever claimed (its first attempt), its row held until the
   * transaction ends: a claim of its send waits for the transaction, then finds what it left (PostgreSQL; on
   * SQLite the one writer does it). What the recorder reads before it ends a payment not attempted.
   */
  sendStateHeld(c: TxCtx, id: string): Promise<{ status: PaymentStatus; firstAttemptAt: number | null } | null>;
  /** Keeps a lender's report of the payment (replacing an earlier one), queued for a look-up when asked. */
  notePaymentReport(c: TxCtx, report: PaymentReport): Promise<void>;
  /** Why the payment's report stands unconfirmed (nothing when it has none). */
  holdPaymentReport(c: TxCtx, id: string, hold: string): Promise<void>;
  /** An observation that could not be recorded, kept with its reason. */
  setObservationAside(c: TxCtx, v: SetAside): Promise<void>;
  /**
   * Recording observations of these references of a lender: whether a source event was seen, the reference's
   * latest status, then its event, ledger entry and status move. Taken before those are read (before knownAmong
   * reads them for a slice), held to the end of the transaction, several at once in one order for everyone.
   */
  serializeReferences(c: TxCtx, lenderId: string, references: string[]): Promise<void>;
}

/** Matching a processor's change to a payment (poll.ts, reference.ts); the feed's cursor is the key's (payment-connections/feed-store.ts). */
export interface MatchingStore {
  /**
   * The lender's own payments among these references (through any key), and among these processor ids
   * through the key: each found once, with what it was found by.
   */
  ownPaymentsAmong(
    c: StoreCtx,
    lenderId: string,
    connectionId: string,
    references: string[],
    processorPaymentIds: string[],
  ): Promise<{ byReference: Map<string, OwnPayment>; byProcessorId: Map<string, OwnPayment> }>;
  /** A payment the service made, by its id, whichever lender made it. */
  paymentById(c: StoreCtx, id: string): Promise<{ lenderId: string; reference: string } | null>;
  /** Which of these processor payments were ingested through the key before, and whether each was matched then. */
  ingestedAmong(c: StoreCtx, connectionId: string, processorPaymentIds: string[]): Promise<{ id: string; matched: boolean }[]>;
  /** Ingests these processor payments through the key; one ingested before is only ever marked matched. */
  saveIngested(c: TxCtx, connectionId: string, payments: { id: string; matched: boolean }[]): Promise<void>;
  /** When the oldest of a key's payments that can still change was first sent; null when there is none. */
  oldestUnsettled(c: StoreCtx, connectionId: string, settledSince: number): Promise<number | null>;
  /** The service's payment with this id, sent through this key. */
  ownPaymentById(
    c: StoreCtx,
    id: string,
    connectionId: string,
  ): Promise<{ id: string; lenderId: string; enrollmentId: string; aid: string; amount: number; reference: string } | null>;
  /** Keeps the processor's id of a payment the first time it is seen. */
  keepProcessorPaymentId(c: TxCtx, id: string, processorPaymentId: string): Promise<void>;
  /** Reading a page of a key's feed: which processor payments were ingested, then recorded with the counts. */
  serializeFeed(c: TxCtx, connectionId: string): Promise<void>;
}

/** What the collection decision reads and creates (decide.ts, chain.ts). */
/** What a decision reads of one borrower: its enrollment, every payment oldest first, its scheduled payment. */
export interface DecisionRead {
  enrollment: DecidingRow;
  history: PastPayment[];
  scheduled: ScheduledPayment | null;
}

/** A payment's notice as the lender's confirmation reads it. */
export interface PaymentNotice {
  id: string;
  enrollmentId: string;
  aid: string;
  reference: string;
  status: PaymentStatus;
  amountCents: number;
  debitOn: number | null;
  noticeClass: NoticeClass | null;
  noticeNeeds: string | null;
  noticeChannel: NoticeChannel | null;
  noticeDueFrom: number | null;
  noticeDueBy: number | null;
  noticeSentAt: number | null;
  noticeSentChannel: NoticeChannel | null;
  noticeEvidenceRef: string | null;
  createdAt: number;
}

export interface DecisionStore {
  /** The lender's payment's notice (null: no such payment of the lender). */
  paymentNoticeOf(c: StoreCtx, lenderId: string, paymentId: string): Promise<PaymentNotice | null>;
  /**
   * The lender's word that a scheduled payment's notice was sent, with the window for the channel it went by:
   * kept once (only while none is and the payment is scheduled); whether it was.
   */
  confirmNotice(c: TxCtx, v: { id: string; sentAt: number; channel: NoticeChannel; ref: string | null; dueFrom: number; dueBy: number; now: number }): Promise<boolean>;
  /** The borrower a decision is about, with its bank account's standing. */
  enrollmentToDecide(c: StoreCtx, enrollmentId: string): Promise<DecidingRow | null>;
  /**
   * What decisions read of several borrowers, each kind in one statement for all of them (a flush of balance
   * results decides for each of its borrowers): as enrollmentToDecide, paymentHistory and scheduledPaymentOf
   * answer for one. A borrower with no enrollment is left out.
   */
  decisionInputsOf(c: StoreCtx, enrollmentIds: readonly string[]): Promise<Map<string, DecisionRead>>;
  /** Every payment of a borrower, oldest first, as the collection rules read it. */
  paymentHistory(c: StoreCtx, enrollmentId: string): Promise<PastPayment[]>;
  /** The borrower's scheduled payment (at most one). */
  scheduledPaymentOf(c: StoreCtx, enrollmentId: string): Promise<ScheduledPayment | null>;
  /** Borrowers' scheduled payments by enrollment id (at most one each; one with none left out), read at once. */
  scheduledPaymentsOf(c: StoreCtx, enrollmentIds: readonly string[]): Promise<Map<string, ScheduledPayment>>;
  /** Whether a payment of the borrower is initiating or processing. */
  paymentInFlight(c: StoreCtx, enrollmentId: string): Promise<boolean>;
  createPayment(c: TxCtx, payment: NewPayment): Promise<void>;
  /** What the collection rules read of a borrower besides its payments. */
  chainInputsOf(c: StoreCtx, enrollmentId: string): Promise<ChainInputs | null>;
  /** The standing of the borrower's bank account; null when none is linked (or no such borrower). */
  accountStandingOf(c: StoreCtx, enrollmentId: string): Promise<AccountStanding | null>;
  /**
   * The borrowers' collection, each: a decision (no payment in flight, then one created and the presentments
   * counted), a chain recount, a scheduled payment voided on stop. Two at once would both see nothing in
   * flight. All of them in one statement, in the order of their ids.
   */
  serializeBorrowers(c: TxCtx, enrollmentIds: readonly string[]): Promise<void>;
}

/** The portal's and the API's reads of payments, events and the ledger (overview.ts, events.ts, payment-list.ts). */
export interface PaymentReadStore {
  ledgerTotals(c: StoreCtx, lenderId: string, from: number): Promise<LedgerTotals>;
  /** ledgerTotals per UTC day (days without entries left out). */
  ledgerTotalsByDay(c: StoreCtx, lenderId: string, from: number): Promise<(LedgerTotals & { day: number })[]>;
  /** Payments initiating or processing created since `from`. */
  inFlightTotals(c: StoreCtx, lenderId: string, from: number): Promise<CountedSum>;
  /** References returned since `from`, each once, with its amount. */
  returnedTotals(c: StoreCtx, lenderId: string, from: number): Promise<CountedSum>;
  borrowerCountsByState(c: StoreCtx, lenderId: string): Promise<Record<MonitorState, number>>;
  paymentCountsByStatus(c: StoreCtx, lenderId: string): Promise<Record<PaymentStatus, number>>;
  /** Every event of one borrower of the lender, oldest first. */
  eventsOfBorrower(c: StoreCtx, lenderId: string, aid: string): Promise<PaymentEventRow[]>;
  /** Up to `take` of the lender's payments after a position, filtered and in the order asked. */
  paymentsPage(c: StoreCtx, v: PaymentPageQuery): Promise<PaymentRow[]>;
}

