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

/** A balance result as recorded. */
export interface RecordedRead {
  batchId: string;
  lenderId: string;
  authorizerUniqueId: string;
  balanceCents: number | null;
  statusCode: number;
  at: number;
}

/** Runs inside the transaction that records balance results (a flush of up to a few dozen). */
export type BalancesRecordedHook = (ctx: JobContext & { tx: Tx }, reads: RecordedRead[]) => void;

/** A monitored borrower's balance read, recorded on its enrollment. */
export interface MonitoringRead extends RecordedRead {
  enrollmentId: string;
}

/** Runs inside the transaction that records a monitoring read on its enrollment: where collection decides. */
export type MonitoringReadHook = (ctx: JobContext & { tx: Tx }, read: MonitoringRead) => void;

/** Monitoring of a borrower stopped (removal, erasure), in the transaction that stops it. */
export type MonitoringStoppedHook = (ctx: JobContext & { tx: Tx }, stopped: { enrollmentId: string }) => void;

export interface FeatureHooks {
  batchCompleted: BatchCompletedHook[];
  balancesRecorded: BalancesRecordedHook[];
  monitoringRead: MonitoringReadHook[];
  monitoringStopped: MonitoringStoppedHook[];
}
