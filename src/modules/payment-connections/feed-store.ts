import type { ProcessorName } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';

// A processor key's feed: where its reading stands (the cursor, the last page's time and error, its counts)
// and its reconciliation. Collection's poll and reconciliation read and move it; the key's own columns are
// this feature's, so every write of payment_connections is here or in store.ts's implementations.

/** A live key as the poll reads it, with its feed's cursor. */
export interface PolledKeyRow {
  id: string;
  lenderId: string;
  processor: ProcessorName;
  accountId: string | null;
  keySealed: string | null;
  cursor: string | null;
}

/** A live key as reconciliation reads it. */
export interface KeyToReconcile {
  id: string;
  lenderId: string;
  processor: ProcessorName;
  keySealed: string | null;
}

/** A page of a key's feed as recorded: read from cursor `from` to `cursor`, when, its error or none, the counts it adds. */
export interface FeedPage {
  from: string | null;
  cursor: string | null;
  at: number;
  error: string | null;
  reconcileDue: boolean;
  ingested: number;
  matched: number;
}

export interface FeedStore {
  /** Every live key (not deleted, its key held), with its feed's cursor. */
  keysToPoll(c: StoreCtx): Promise<PolledKeyRow[]>;
  /** A key's feed cursor as stored now (read again once its feed is leased); undefined when the key is gone. */
  pollCursorOf(c: StoreCtx, connectionId: string): Promise<{ cursor: string | null } | undefined>;
  /**
   * A page of a key's feed recorded. Compare and set: false, and nothing written, when the stored cursor is no
   * longer `from` (another poller moved it since the page was asked for); the caller then discards the page.
   */
  recordPoll(c: TxCtx, connectionId: string, page: FeedPage): Promise<boolean>;
  /** The key's last poll failed: why, kept for the lender to see. */
  recordPollError(c: TxCtx, connectionId: string, message: string): Promise<void>;
  /** The live keys to reconcile: the given ones, or those due (asked to, or not reconciled since `dueBefore`). */
  keysToReconcile(c: StoreCtx, v: { connectionIds?: string[]; dueBefore: number }): Promise<KeyToReconcile[]>;
  markReconciled(c: TxCtx, connectionId: string, at: number): Promise<void>;
}
