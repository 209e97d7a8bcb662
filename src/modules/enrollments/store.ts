import type { RevocationChannel, MonitorState, PayCycleSource, PayFrequency } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { Enrollment } from './borrower';
import type { BlockedReason } from './monitor';

/** A monitored borrower whose balance read is due. */
export interface DueRead {
  id: string;
  lenderId: string;
  aid: string;
  routing: string | null;
  sealed: string;
  metadata: string | null;
}

/** A payment of a borrower as its enrollment shows it. */
export interface EnrollmentPayment {
  reference: string;
  amount: number;
  status: string;
  attempt: number;
  reinitiationOf: string | null;
  createdAt: number;
  debitOn: number | null;
  /** A lender's uploaded outcome its processor has not confirmed, and why it stands (null while asked). */
  reportedStatus: string | null;
  reportedReturnCode: string | null;
  reportedAt: number | null;
  reportHold: string | null;
  /** Its id, its class for the payment notices, what asks for its notice, the window, and when the lender sent it. */
  id: string;
  noticeClass: string | null;
  noticeNeeds: string | null;
  noticeDueFrom: number | null;
  noticeDueBy: number | null;
  noticeSentAt: number | null;
}

export interface LedgerEntryRow {
  reference: string;
  kind: 'credit' | 'reversal';
  amountCents: number;
  at: number;
}

/** A ledger entry of one of several borrowers read at once (a page of enrollments). */
export interface LedgerEntryOf extends LedgerEntryRow {
  enrollmentId: string;
}

/** A payment of one of several borrowers read at once (a page of enrollments). */
export interface EnrollmentPaymentOf extends EnrollmentPayment {
  enrollmentId: string;
}

/** One borrower's credited and reversed cents, of several read at once. */
export interface LedgerTotalsOf {
  enrollmentId: string;
  collected: bigint;
  reversed: bigint;
}

/** A borrower's search entries as written: `fresh` for a borrower new to the lender, with none to replace. */
export interface SearchEntries {
  lenderId: string;
  aid: string;
  keyId: string;
  hashes: Uint8Array[];
  fresh: boolean;
}

/** The range of text values that start with a prefix: from it (inclusive) to its end (exclusive). */
export interface PrefixRange {
  from: string;
  to: string;
}

export interface EnrollmentPageQuery {
  lenderId: string;
  /** The last authorizer_unique_id of the previous page ('' for the first). */
  after: string;
  prefix: PrefixRange | null;
  state?: MonitorState;
  blockedReason?: BlockedReason;
  limit: number;
}

/** A borrower as linking to its bank account reads it (account-links.ts). */
export interface BorrowerToLink {
  id: string;
  lenderId: string;
  rail: 'ach' | 'card';
  routing: string | null;
  /** Personal data (the account number in it); null once erased. */
  sealed: string | null;
  bankAccountId: string | null;
}

/** A pay cycle learned for a borrower (pay-cycles/learn.ts), with its alternative and whether its pay lands early. */
export interface LearnedPayCycle {
  frequency: PayFrequency;
  nextPayday: number | null;
  confidence: number;
  alternative?: { frequency: PayFrequency; nextPayday: number };
  landsEarly?: boolean;
  source: PayCycleSource;
  at: number;
}

export interface EnrollmentStore {
  /**
   * The borrower's revocation of its authorization, as the lender received it: kept when it is later than the
   * one kept (a revocation never moves back), with its channel and the lender's evidence.
   */
  recordRevocation(c: TxCtx, v: { id: string; at: number; channel: RevocationChannel; ref: string | null; now: number }): Promise<void>;
  /**
   * The borrower's new authorization under the payday rule (collection/authorizations.ts): on the enrollment as
   * its latest (when obtained, its record as JSON), and kept for good among its authorizations (`authorizationId`).
   */
  recordReauthorization(c: TxCtx, v: { id: string; lenderId: string; authorizationId: string; at: number; record: string; now: number }): Promise<void>;
  /** The borrower's recorded new authorizations (their records as JSON), latest first, at most `limit`. */
  reauthorizationsOf(c: StoreCtx, enrollmentId: string, limit: number): Promise<string[]>;
  /** The borrower's Regulation E election (JSON), or null for the policy's. */
  recordRegEElection(c: TxCtx, v: { id: string; election: string | null; now: number }): Promise<void>;
  // A Notification of Change applied to the borrowers on an account (collection/account-changes.ts)
  /** The borrowers on an account with their sealed details (not the erased), after an identifier, in identifier order. */
  detailsOnAccount(c: StoreCtx, accountId: string, after: string, limit: number): Promise<{ id: string; lenderId: string; aid: string; sealed: string; routing: string | null }[]>;
  /** A borrower's details corrected: its sealed personal data and its routing number (and bank's name). */
  correctDetails(c: TxCtx, v: { id: string; sealed: string; routing: string | null; bankName: string | null; now: number }): Promise<void>;
  /** Every borrower on account `from` now on account `to` (a correction led to an account the lender already has). */
  moveToAccount(c: TxCtx, from: string, to: string, now: number): Promise<void>;

  // Monitoring reads (monitoring.ts, read-now.ts)
  /**
   * Monitored borrowers whose read is due, oldest due first (the due check, every second: a cached statement).
   * Read inside a transaction, they are claimed until it ends: another transaction's due check skips them.
   */
  dueReads(c: StoreCtx, now: number, limit: number): Promise<DueRead[]>;
  /** Sets these borrowers' next read. */
  setNextReads(c: TxCtx, enrollmentIds: readonly string[], at: number): Promise<void>;

  // What the features above keep on a borrower's enrollment, written here (one writer per table): the read
  // cadence's next read and the pay cycle learned (pay-cycles), the presentments of the debt's chain (collection).
  /**
   * Monitored borrowers' next reads, each its own, as the read cadence sets them (nothing for one no longer
   * monitored), for a flush's borrowers at once (a borrower given twice: the later).
   */
  setNextReadEach(c: TxCtx, reads: readonly { enrollmentId: string; at: number }[]): Promise<void>;
  /** A monitored borrower's next read brought forward to `at` at the latest (a scheduled payment's day); never put back. */
  readNoLaterThan(c: TxCtx, enrollmentId: string, at: number): Promise<void>;
  setPayCycle(c: TxCtx, enrollmentId: string, cycle: LearnedPayCycle): Promise<void>;
  /** The presentments the debt's chain has used. */
  setPaymentsUsed(c: TxCtx, enrollmentId: string, n: number, now: number): Promise<void>;
  /** One presentment given back (never below 0): a payment that never went out does not count. */
  giveBackPresentment(c: TxCtx, enrollmentId: string, now: number): Promise<void>;
  /** Which of these batches are monitoring batches. */
  monitoringBatchesAmong(c: StoreCtx, batchIds: string[]): Promise<string[]>;
  /** The lender's borrowers among some identifiers, with their enrollment ids (one look-up for many). */
  borrowersAmong(c: StoreCtx, lenderId: string, aids: string[]): Promise<{ id: string; aid: string }[]>;
  /**
   * The enrollments of a flush's monitoring reads, in their order: each one's id, or null when its borrower has
   * none. A plain look-up: the caller holds them (collection's holdBorrowers) before it writes on them.
   */
  enrollmentsOfReads(c: TxCtx, reads: readonly { lenderId: string; authorizerUniqueId: string }[]): Promise<(string | null)[]>;
  /**
   * Reads set on their borrowers' enrollments as the last read (a borrower given twice: the later), each with
   * the next read its cadence set while it is still monitored (`next` null: the next read stays as it is). One
   * write of a borrower's row for both, a flush's reads at once.
   */
  setLastReads(c: TxCtx, reads: readonly { enrollmentId: string; balanceCents: number | null; at: number; next: number | null }[]): Promise<void>;
  /** Held borrowers with personal data after an id, in id order, at most `limit`. */
  heldBorrowers(c: StoreCtx, after: string, limit: number): Promise<{ id: string; lenderId: string; routing: string | null }[]>;
  setBankName(c: TxCtx, enrollmentId: string, bankName: string | null): Promise<void>;

  // Enrollments as the API and the portal read them (service.ts, resend.ts, ledger.ts)
  /** A borrower's enrollment; read inside a transaction, held until it ends (the row locked on PostgreSQL). */
  enrollmentOf(c: StoreCtx, lenderId: string, aid: string): Promise<Enrollment | undefined>;
  /** A page of the lender's enrollments by authorizer_unique_id, filtered. */
  enrollmentsPage(c: StoreCtx, q: EnrollmentPageQuery): Promise<Enrollment[]>;
  /** Erasure: the personal data and card tokens of these enrollments overwritten, and their bank account unlinked. */
  eraseBorrowerData(c: TxCtx, enrollmentIds: readonly string[], now: number): Promise<void>;
  // The ledger, the payments: for a page of borrowers (a listing, or one borrower), one statement each whatever
  // the page's size.
  /** These borrowers' ledger entries, each borrower's in the order posted. */
  ledgerEntriesAmong(c: StoreCtx, lenderId: string, enrollmentIds: readonly string[]): Promise<LedgerEntryOf[]>;
  /** These borrowers' credited and reversed cents, summed exactly and read as BigInt; a borrower with no entry is left out. */
  ledgerTotalsAmong(c: StoreCtx, lenderId: string, enrollmentIds: readonly string[]): Promise<LedgerTotalsOf[]>;
  /** These borrowers' payments, each borrower's oldest first, with the original's reference for reinitiations. */
  paymentsAmong(c: StoreCtx, lenderId: string, enrollmentIds: readonly string[]): Promise<EnrollmentPaymentOf[]>;

  // Borrower search (search.ts)
  /** Each borrower's search entries replaced (a re-send with the same hashes under the same key writes nothing). */
  replaceSearchEntries(c: TxCtx, entries: readonly SearchEntries[], hashBytes: number): Promise<void>;
  /** These borrowers' search entries removed (erasure). */
  removeSearchEntries(c: TxCtx, lenderId: string, aids: readonly string[], hashBytes: number): Promise<void>;
  /** The lender's borrowers with an entry of this hash. */
  borrowersWith(c: StoreCtx, lenderId: string, hash: Uint8Array, limit: number): Promise<{ aid: string }[]>;
  /** The lender's borrowers with both of two name entries. */
  borrowersNamed(c: StoreCtx, lenderId: string, one: Uint8Array, other: Uint8Array, limit: number): Promise<{ aid: string }[]>;
  /** The lender's borrowers with a payment whose reference is in the range, by reference. */
  borrowersByReference(c: StoreCtx, lenderId: string, prefix: PrefixRange, limit: number): Promise<{ aid: string }[]>;
  /** The lender's borrowers whose authorizer_unique_id is in the range, by id. */
  borrowersByIdPrefix(c: StoreCtx, lenderId: string, prefix: PrefixRange, limit: number): Promise<{ aid: string }[]>;
  /**
   * Borrowers with personal data and no search entries under this key, after an id, in id order. Read inside a
   * transaction, they are held until it ends, and one another transaction holds (being erased, re-sent) is skipped.
   */
  unsearchedBorrowers(
    c: StoreCtx,
    after: string,
    keyId: string,
    limit: number,
  ): Promise<{ id: string; lenderId: string; aid: string; sealed: string | null; cardLast4: string | null }[]>;

  // Bank accounts (account-links.ts)
  /**
   * ACH borrowers with personal data not linked to their bank account yet (stored before accounts were known),
   * after an id, in id order, off enrollments_unlinked_idx. Read inside a transaction, they are held until it
   * ends, and one another transaction holds (being erased, re-sent) is skipped.
   */
  unlinkedBorrowers(c: StoreCtx, after: string, limit: number): Promise<BorrowerToLink[]>;
  /** One borrower as linking reads it. */
  borrowerToLink(c: StoreCtx, enrollmentId: string): Promise<BorrowerToLink | undefined>;
  /** Borrowers linked to their bank accounts, each only while it is not linked (a re-send meanwhile linked it itself). */
  linkBankAccounts(c: TxCtx, links: readonly { id: string; bankAccountId: string }[]): Promise<void>;

  // Concurrency
  /**
   * Called first in a transaction that changes some of a lender's borrowers after reading them (an enrollment, a
   * removal, an erasure, a read now): two such transactions about one borrower run one after the other, as they
   * do on SQLite's single writer, a borrower not stored yet included. Nothing to do on SQLite.
   */
  serializeBorrowers(c: TxCtx, lenderId: string, aids: readonly string[]): Promise<void>;
}

