import type { bankDataConnections } from '../../../db/schema';
import type { CallCount } from '../../platform/provider-calls';
import type { BankDataProvider } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';

/** A bank-data connection as stored (its sealed credentials null once deleted). */
export type BankDataConnectionRow = typeof bankDataConnections.$inferSelect;
export type NewBankDataConnection = typeof bankDataConnections.$inferInsert;

export interface BankDataConnectionStore {
  /** The lender's live connections, oldest first. */
  liveConnections(c: StoreCtx, lenderId: string): Promise<BankDataConnectionRow[]>;
  /** One live connection of the lender. */
  liveConnection(c: StoreCtx, lenderId: string, id: string): Promise<BankDataConnectionRow | undefined>;
  /** The lender's live connection for a provider (at most one). */
  liveConnectionFor(c: StoreCtx, lenderId: string, provider: BankDataProvider): Promise<BankDataConnectionRow | undefined>;
  /** A connection, live or not. */
  connectionById(c: StoreCtx, id: string): Promise<BankDataConnectionRow | undefined>;
  /**
   * Taken before the lender's live connections are checked and then one is stored or deleted, held until the
   * transaction ends: two creations for one provider (or two deletions) at once are one after the other, so
   * the second finds the first's. Nothing on SQLite (one writer at a time).
   */
  serializeConnections(c: TxCtx, lenderId: string): Promise<void>;
  /** Stores a new connection. */
  insertConnection(c: TxCtx, row: NewBankDataConnection): Promise<void>;
  /** Erases a connection's credentials and marks it deleted. */
  eraseConnection(c: TxCtx, id: string, at: number): Promise<void>;
  /** Marks when connections were last read through: one statement for all of them. */
  markRead(c: TxCtx, ids: string[], at: number): Promise<void>;
  /** Adds counted provider calls to their rows (created at 0): one statement for all of them. */
  addProviderCalls(c: TxCtx, rows: CallCount[]): Promise<void>;
  /** A connection's provider calls over the days from `fromDay` to before `toDay` (YYYY-MM-DD), by day then endpoint. */
  providerCalls(c: StoreCtx, connectionId: string, fromDay: string, toDay: string): Promise<{ day: string; endpoint: string; calls: number }[]>;
}

