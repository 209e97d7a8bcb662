import type { BankAccountState } from '../../../db/schema/enums';

// What the service reads of a bank account's standing to decide whether it may be debited (enrollments/monitor.ts
// accountBlockOf): its state and last return, a Notification of Change waiting, its validation evidence.

/** An account's standing as the blocks read it (store.ts AccountStanding, whose fields may be absent here). */
export interface Standing {
  state: BankAccountState;
  lastReturnAt: number | null;
  pendingChangeId?: string | null;
  validatedAt?: number | null;
  numberChangedAt?: number | null;
}

/** The account has validation evidence, given after its routing or account number last changed, if it did. */
export const accountValidated = (a: Standing): boolean => a.validatedAt != null && (a.numberChangedAt == null || a.validatedAt > a.numberChangedAt);
