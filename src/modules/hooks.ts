import type { BatchSource } from '../../db/schema/enums';
import type { Tx } from '../platform/context';
import type { JobContext } from '../deps';

// Points where one feature reacts to another's events without either importing the other. A feature
// registers its hooks in modules/index.ts; the composition root hands them to every service through Deps.

export interface CompletedBatch {
  id: string;
  lenderId: string;
  source: BatchSource;
  scheduleId: string | null;
  webhookUrl: string | null;
  completedAt: number;
}

/** Runs inside the transaction that records a batch's last result; what it writes commits with it. */
export type BatchCompletedHook = (ctx: JobContext & { tx: Tx }, batch: CompletedBatch) => void;

export interface FeatureHooks {
  batchCompleted: BatchCompletedHook[];
}
