// What an upload is given and what it answers, shared by the service, the worker that runs it and the
// main thread's side of that worker (offload.ts).
import type { ResultFileFormat } from '../../../db/schema/enums';

export interface UploadReport {
  format: ResultFileFormat;
  rowCount: number;
  dataRowCount: number;
  matched: number;
  needsAttention: number;
  /**
   * Accepted rows whose reference an earlier upload had recorded already with the same status (and every date
   * the row gives): they add nothing and are recorded once, not again; each has a warning saying so.
   */
  alreadyRecorded: number;
  /** Notifications of Change recorded (a dry run's: that would be); those recorded before are warnings. */
  notificationsOfChange: number;
  dryRun: boolean;
  rows: { row: number; reference: string; authorizerUniqueId: string | null; status: string; amountCents: number }[];
  problems: { row: number; reason: string; severity: 'error' | 'warning' }[];
}

/**
 * The file (or the request's whole multipart body, read where the upload runs), whether to write nothing,
 * and whether the caller gives the bytes up (they may be moved to the worker, not copied).
 */
export interface UploadInput {
  bytes: Uint8Array;
  /** Set when `bytes` is a multipart/form-data body (this is its content type): the file is its part `file`. */
  multipart?: string;
  dryRun: boolean;
  handOver?: boolean;
  /** Who sends it, for the upload history: the portal user's name, or the API key's prefix. */
  creator?: string | null;
}

/** The counts and the first problems of a report, for a page: what the portal shows. */
export interface UploadSummary extends Omit<UploadReport, 'rows'> {
  /** How many entries `problems` of the full report has; `problems` here holds the first SUMMARY_PROBLEMS. */
  problemCount: number;
}

/** The report as the API answers it (its JSON, made where the report was) or as a page shows it. */
export type UploadForm = 'json' | 'summary';
export type UploadAnswer = { form: 'json'; json: Uint8Array[] } | { form: 'summary'; summary: UploadSummary };
