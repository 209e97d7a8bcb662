import type { apiKeys, lenders } from '../../../db/schema';
import type { StoreCtx, TxCtx } from '../../platform/store';

export type LenderRow = typeof lenders.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
/** An API key as listed: never its hash. */
export type ApiKeyListing = Pick<ApiKeyRow, 'id' | 'prefix' | 'createdAt' | 'lastUsedAt' | 'revokedAt'>;

export interface LenderStore {
  /** The lender with this name, if any. */
  lenderNamed(c: StoreCtx, name: string): Promise<LenderRow | undefined>;
  /** Every lender, oldest first. */
  listLenders(c: StoreCtx): Promise<LenderRow[]>;
  /** Whether any lender exists. */
  anyLender(c: StoreCtx): Promise<boolean>;
  addLender(c: TxCtx, lender: LenderRow): Promise<void>;
  setDebitCardApproval(c: TxCtx, lenderId: string, approved: boolean): Promise<void>;
  /**
   * Taken first by a transaction that checks a lender's name (or a key's hash) and then creates it, held until
   * it ends: two creations of the same name at once are one after the other, so the second sees the first.
   * Nothing on SQLite, where one writer at a time already does it.
   */
  serializeLenderCreation(c: TxCtx): Promise<void>;

  /**
   * Taken before the lender's live keys are counted for a new one, held until the transaction ends: two
   * issues at once cannot both take the last place. Nothing on SQLite (one writer at a time).
   */
  serializeKeyIssue(c: TxCtx, lenderId: string): Promise<void>;

  /** How many unrevoked keys the lender holds. */
  liveKeyCount(c: StoreCtx, lenderId: string): Promise<number>;
  /** Whether a key with this hash exists (revoked or not). */
  keyHashKnown(c: StoreCtx, keyHash: string): Promise<boolean>;
  addKey(c: TxCtx, key: Pick<ApiKeyRow, 'id' | 'lenderId' | 'prefix' | 'keyHash' | 'createdAt'>): Promise<void>;
  /** The lender's keys, oldest first. */
  listKeys(c: StoreCtx, lenderId: string): Promise<ApiKeyListing[]>;
  /** Revokes the lender's live key with this id; false when it has none. */
  revokeLenderKey(c: TxCtx, lenderId: string, keyId: string, now: number): Promise<boolean>;
  /** Revokes the live key with this display prefix; false when there is none. */
  revokeKeyByPrefix(c: TxCtx, prefix: string, now: number): Promise<boolean>;
}

