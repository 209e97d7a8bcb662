import type { BatchSource, LinkHealth } from '../../../db/schema/enums';
import type { ChangeNotice } from '../../adapters/bank-data/types';

// What the balance pipeline hands on when it records results: each result, and a batch that has its last one.
// The features that react to them are called in order from one place, modules/balance-results.ts.

/** A balance result as recorded. */
export interface RecordedRead {
  batchId: string;
  lenderId: string;
  authorizerUniqueId: string;
  balanceCents: number | null;
  statusCode: number;
  at: number;
  /** A linked account's read: which balance the provider gave, and its own time for it (null: not linked, or none given). */
  balanceKind: 'available' | 'current' | null;
  asOf: number | null;
  /** The linked account's health when it forbids a debit (revoked, closed, not transactable), else null. */
  linkHealth?: LinkHealth | null;
  /** A Notification of Change the bank-data source passed on with the read (the HTTP bridge's contract). */
  change?: ChangeNotice;
}

/** A batch whose last result was just recorded. */
export interface CompletedBatch {
  id: string;
  lenderId: string;
  source: BatchSource;
  scheduleId: string | null;
  webhookUrl: string | null;
  completedAt: number;
}
