import type { ReadCadence, ReinitiationAmount } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { CollectionPolicy } from './policy';
import { sqliteCollectionPolicyStore } from './store.sqlite';

/** A lender's policy as stored: flags as 0/1. */
export interface PolicyRow {
  cfpbCovered: number;
  maxReinitiations: number;
  reinitiationAmount: ReinitiationAmount;
  noticeDays: number;
  returnRatePause: number;
  readCadence: ReadCadence;
  debitBufferCents: number;
  timeZone: string | null;
}

/** The whole policy as stored, with its lender and when it was last changed. */
export type PolicyRecord = CollectionPolicy & { lenderId: string; updatedAt: number };

export interface CollectionPolicyStore {
  /** The lender's policy row, if it ever saved one (read once per collection decision and recorded return). */
  policyRow(c: StoreCtx, lenderId: string): Promise<PolicyRow | undefined>;
  /** When the lender last changed its policy. */
  policyUpdatedAt(c: StoreCtx, lenderId: string): Promise<number | null>;
  /** Stores the whole policy, created or replaced. */
  savePolicy(c: TxCtx, policy: PolicyRecord): Promise<void>;
}

/** The store of the engine the service runs on. */
export const collectionPolicyStore: CollectionPolicyStore = sqliteCollectionPolicyStore;
