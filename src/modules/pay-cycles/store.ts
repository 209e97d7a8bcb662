import type { PayFrequency } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { RegularFrequency } from './infer';

/** A borrower's monitor and cycle as the cadence reads them after a read. */
export interface CadenceState {
  lenderId: string;
  state: string;
  blockedReason: string | null;
  nextReadAt: number | null;
  frequency: PayFrequency | null;
  nextPayday: number | null;
  confidence: number | null;
  learnedAt: number | null;
  altFrequency: RegularFrequency | null;
  altNextPayday: number | null;
  landsEarly: number | null;
}


/** A transaction reading due, with what is needed to read the borrower's account. */
export interface DueHistory {
  enrollmentId: string;
  lenderId: string;
  wantedAt: number | null;
  attempts: number;
  aid: string;
  routing: string | null;
  sealed: string | null;
}

export interface Deposit {
  at: number;
  amountCents: number;
}

export interface PayCycleStore {
  // The cadence (learn.ts), after each monitoring read
  /**
   * Borrowers' cadence states by enrollment id (one left out has no enrollment), read at once. Read inside
   * a transaction, held until it ends (the rows locked on PostgreSQL, in id order): the cadence writes from them.
   */
  cadenceStatesOf(c: StoreCtx, enrollmentIds: readonly string[]): Promise<Map<string, CadenceState>>;
  /** The borrower's balances as the service read them since a time, oldest first. */
  balanceHistory(c: StoreCtx, lenderId: string, aid: string, since: number): Promise<{ at: number; balanceCents: number }[]>;
  /** The stored deposits of the last transaction reading and the last day they cover; null when none gave credits. */
  historyOf(c: StoreCtx, enrollmentId: string): Promise<{ coveredTo: number; deposits: Deposit[] } | null>;
  /** The time of an enrollment's last read (the floor of the next one). */
  lastReadOf(c: StoreCtx, enrollmentId: string): Promise<number | null>;

  // Transaction history readings (history.ts)
  /** Readings due, oldest due first. */
  dueHistories(c: StoreCtx, now: number, limit: number): Promise<DueHistory[]>;
  /** Readings due, oldest due first, at most `limit`, claimed: each due again at `until` (if the process stops). */
  claimDueHistories(c: TxCtx, now: number, limit: number, until: number): Promise<DueHistory[]>;
  /** These borrowers want a reading, due at once, their failures forgotten. */
  wantHistory(c: TxCtx, lenderId: string, enrollmentIds: readonly string[], now: number): Promise<void>;
  /** Pushes a reading's due time (a retry, a pending source's time), with its attempts. */
  setHistoryDue(c: TxCtx, enrollmentId: string, dueAt: number, attempts: number): Promise<void>;
  /** A reading ended (credits, none, given up): nothing more is due, unless it was wanted again meanwhile. */
  endHistory(c: TxCtx, enrollmentId: string, wantedAt: number | null, outcome: string): Promise<void>;
  /** The income deposits of a reading, in place of the last one's. */
  storeDeposits(c: TxCtx, enrollmentId: string, deposits: readonly Deposit[], at: number, coveredTo: number): Promise<void>;
  /** Erasure: these borrowers' deposits and reading records. */
  eraseHistory(c: TxCtx, enrollmentIds: readonly string[]): Promise<void>;
  /**
   * Called first in the transaction that records a reading: the borrower held until it ends, before its reading
   * and deposits are written, as an enrollment or an erasure holds it before them. Nothing to do on SQLite.
   */
  serializeReading(c: TxCtx, enrollmentId: string): Promise<void>;
}

