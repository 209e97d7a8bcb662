import type { ChangeApplication, NoticeChannel, ReadCadence, ReinitiationAmount } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { CollectionPolicy } from './policy';

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
  lateReturnWindowDays: number;
  allowCurrentBalance: number;
  currentBalanceBufferCents: number;
  maxBalanceAgeMinutes: number;
  applyNotificationsOfChange: ChangeApplication;
  requireAccountValidation: number;
  /** JSON: code → state; null for none. */
  accountReturnStates: string | null;
  noticeChannel: NoticeChannel | null;
  /** JSON: the Regulation E election; null for none. */
  regEElection: string | null;
}

/** The whole policy as stored, with its lender and when it was last changed. */
export type PolicyRecord = Omit<CollectionPolicy, 'accountReturnStates' | 'regEElection'> & { lenderId: string; updatedAt: number; accountReturnStates: string | null; regEElection: string | null };

export interface CollectionPolicyStore {
  /** The lender's policy row, if it ever saved one (read once per collection decision and recorded return). */
  policyRow(c: StoreCtx, lenderId: string): Promise<PolicyRow | undefined>;
  /** When the lender last changed its policy. */
  policyUpdatedAt(c: StoreCtx, lenderId: string): Promise<number | null>;
  /**
   * Taken before a change reads the policy it patches, held until the transaction ends: two changes at once
   * are one after the other, so neither writes back a field the other just changed. Nothing on SQLite (one
   * writer at a time).
   */
  serializePolicyChange(c: TxCtx, lenderId: string): Promise<void>;
  /** Stores the whole policy, created or replaced. */
  savePolicy(c: TxCtx, policy: PolicyRecord): Promise<void>;
}

