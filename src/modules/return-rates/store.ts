import type { RateStatus } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';

/** Each class's status as last evaluated. */
export interface WatchedStatuses {
  unauthorized: RateStatus;
  administrative: RateStatus;
  overall: RateStatus;
}

/** The statuses of an evaluation as saved, and when it was made. */
export type SavedStatuses = WatchedStatuses & { evaluatedAt: number };

/** A return in the window: its reference and its code (null when it came without one). */
export interface WindowReturn {
  reference: string;
  code: string | null;
}

/** Debits that went to the bank: how many, and their amounts summed exactly. */
export interface DebitTotals {
  count: number;
  cents: bigint;
}

export interface ReturnRateStore {
  /**
   * Taken first by an evaluation (before the rates are read): the lender's evaluations take turns, each reading
   * the statuses the one before saved and the rates as of its turn, so a change of status is alerted once.
   * Nothing to do on SQLite, whose transactions already take turns.
   */
  serializeWatch(c: TxCtx, lenderId: string): Promise<void>;
  /** ACH debits that went to the bank in [from, to]: the service's own that reached the processor, and uploaded ones. */
  debitsIn(c: StoreCtx, lenderId: string, from: number, to: number): Promise<number>;
  /** The same debits as debitsIn (the same rows, always), with the total of their amounts: the monthly ACH report's. */
  debitTotalsIn(c: StoreCtx, lenderId: string, from: number, to: number): Promise<DebitTotals>;
  /** Returns in [from, to], once per reference, with their code. */
  returnsIn(c: StoreCtx, lenderId: string, from: number, to: number): Promise<WindowReturn[]>;
  /** The statuses of the lender's last evaluation and when it was made, if it had one. */
  watchedStatuses(c: StoreCtx, lenderId: string): Promise<SavedStatuses | undefined>;
  /** Stores the statuses of an evaluation, created or replaced. */
  saveWatchedStatuses(c: TxCtx, lenderId: string, statuses: WatchedStatuses, evaluatedAt: number): Promise<void>;
  /** Every lender's id (the timer's evaluation of each). */
  lenderIds(c: StoreCtx): Promise<string[]>;
}

