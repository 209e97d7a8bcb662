import type { MonitorState, Rail } from '../../../db/schema/enums';
import { DAY_MS } from '../../platform/clock';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { MonitorChange } from './monitor';

// The monitor store: the only SQL that writes a monitor's state, reason and blocked reason (monitor-store.sqlite.ts,
// monitor-store.pg.ts), called only by monitor-changes.ts with what the state machine (monitor.ts) returns;
// tests/architecture checks that no other file writes these columns.

export const MONITOR_WINDOW_MS = 30 * DAY_MS;

/** A monitor as an event finds it. */
export interface CurrentMonitor {
  state: MonitorState;
  reason: string | null;
  blockedReason: string | null;
  windowEndsAt: number | null;
  lenderId: string;
  aid: string;
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
  /** The bank account it is on (before the write a re-send makes). */
  bankAccountId: string | null;
}

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
  /** The bank account its ACH debits go to (bank-accounts); null or absent for a card borrower. */
  bankAccountId?: string | null;
  now: number;
}

/** One borrower of an enrollment as the store writes it: its details, its prior record, its monitor's change. */
export interface BorrowerEnrollment {
  write: BorrowerWrite;
  prior: StoredMonitor | undefined;
  change: MonitorChange;
}

export interface MonitorStore {
  /**
   * A monitor as it stands, with its lender and borrower. Read inside a transaction, it is held until the
   * transaction ends (the row locked on PostgreSQL): it is read to be moved, and moved from what was read.
   */
  currentMonitor(c: StoreCtx, enrollmentId: string): Promise<CurrentMonitor | undefined>;
  /** Writes a change the state machine returned (its window, next read and payment count with it). */
  writeMonitorChange(c: TxCtx, v: { enrollmentId: string; change: MonitorChange; now: number; windowMs: number; readIntervalMs: number }): Promise<void>;
  /** The lender's records of these borrowers; read inside a transaction, held until it ends (as currentMonitor). */
  monitorsOf(c: StoreCtx, lenderId: string, aids: readonly string[]): Promise<StoredMonitor[]>;
  /** Borrowers inserted or refreshed with their monitors, one statement prepared for all of them. */
  writeEnrollments(c: TxCtx, rows: readonly BorrowerEnrollment[], windowMs: number): Promise<void>;
  /**
   * Monitored borrowers whose window has ended, off enrollments_lapse_due_idx (`limit` -1: all). Read inside a
   * transaction, they are claimed until it ends: a monitor another transaction holds is left for the next tick.
   */
  dueLapses(c: StoreCtx, now: number, limit: number): Promise<{ id: string }[]>;
}
