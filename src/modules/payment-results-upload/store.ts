import type { paymentResultUploads, unfinishedUploads } from '../../../db/schema';
import type { ResultFileFormat } from '../../../db/schema/enums';
import type { Lender } from '../../platform/context';
import type { StoreCtx, TxCtx } from '../../platform/store';

/** What is stored of an uploaded reference, as a later row of it is decided against. */
export interface UploadedRow {
  id: number;
  status: string;
  settledAt: number | null;
  returnedAt: number | null;
  matched: number;
}

/** What an uploaded row says of its borrower, wherever it is written. */
interface UploadedMatch {
  aid: string | null;
  enrollmentId: string | null;
  batchId: string | null;
  matched: boolean;
  now: number;
}

/**
 * One write of a slice's uploaded references: a reference not stored before (`add`), or a later row of a
 * stored one (`change`), whose `outcome` replaces its status, amount and return code (a new status) or is
 * null for the same status again, which keeps them; recorded dates are kept either way, missing ones filled.
 */
export type UploadedWrite =
  | (UploadedMatch & {
      kind: 'add';
      lenderId: string;
      reference: string;
      status: string;
      amountCents: number;
      submittedAt: number;
      settledAt: number | null;
      returnedAt: number | null;
      returnCode: string | null;
    })
  | (UploadedMatch & {
      kind: 'change';
      id: number;
      outcome: { status: string; amountCents: number; returnCode: string | null } | null;
      settledAt: number | null;
      returnedAt: number | null;
    });

/** One recorded upload for the history, its problems as the report listed them (bounded there). */
export interface UploadRecord {
  id: string;
  lenderId: string;
  recordedAt: number;
  creator: string | null;
  report: { format: ResultFileFormat; rowCount: number; dataRowCount: number; matched: number; needsAttention: number; alreadyRecorded: number; problems: unknown[] };
}

/** A recorded upload as the history reads it. */
export type UploadRow = typeof paymentResultUploads.$inferSelect;

/** An upload whose recording has begun and not ended, as its first transaction stores it. */
export type UnfinishedUpload = typeof unfinishedUploads.$inferSelect;

/**
 * A borrower's credits in the ledger after a position: `credited`, the sum of its credit entries with an id
 * above `from`, and `last`, the id of its latest entry (0 for none).
 */
export interface CreditsSince {
  enrollmentId: string;
  from: number;
  credited: number;
  last: number;
}

// Matching and the re-sending rules run once per row of a file of up to 10 MB (bun run bench upload: about
// 100,000 rows): the upload asks these a slice of rows at a time, never a row at a time.
export interface UploadStore {
  /**
   * The rows of a recorded slice. On SQLite a write that comes while an upload holds the write lock waits for
   * the rest of the slice under way: 128 rows, 15 to 60 ms on a 2-core machine, rather than 512 (up to 900 ms
   * seen on one loaded with other work), at no cost measurable in the upload's own time. On PostgreSQL nothing
   * waits for the upload's transactions, each of one slice, and a slice of 512 makes fewer of them.
   */
  readonly sliceRows: number;
  /**
   * Taken first by an upload's recording transaction: the lender's uploads record one after the other, each
   * deciding its rows on what the one before stored, so two uploads of the same results at once never both
   * add a reference or record its outcome twice. Nothing to do on SQLite, whose transactions already do.
   */
  serializeUploads(c: TxCtx, lenderId: string): Promise<void>;
  /** The lender's own payments among some references. */
  paymentsAmong(c: StoreCtx, lenderId: string, references: string[]): Promise<{ id: string; reference: string; enrollmentId: string; aid: string; amount: number }[]>;
  /** What is stored for some uploaded references. */
  uploadedAmong(c: StoreCtx, lenderId: string, references: string[]): Promise<(UploadedRow & { reference: string })[]>;
  /** A slice's uploaded references, added or changed, in the order given. */
  saveUploaded(c: TxCtx, writes: UploadedWrite[]): Promise<void>;
  /**
   * The credits of some borrowers since a position of their ledger each (the id of the last entry counted, 0
   * for none), in one statement. An answer's `from` is where it was counted from: the position asked on
   * SQLite, whose ids are handed out in the order transactions commit (one writer at a time), so no entry can
   * appear later below it; 0 on PostgreSQL, where an id is handed out when a row is written and a transaction
   * that took a lower one may commit after a higher one was read.
   */
  creditsSince(c: TxCtx, since: { enrollmentId: string; after: number }[]): Promise<CreditsSince[]>;
  /** An upload into the history. */
  recordUpload(c: TxCtx, u: UploadRecord): Promise<void>;
  /** An upload whose first transaction is under way (in that transaction): what finishing it takes. */
  beginUnfinished(c: TxCtx, u: UnfinishedUpload): Promise<void>;
  /**
   * How many accepted rows an unfinished upload has recorded, read in each of its transactions before its
   * first slice is recorded (on PostgreSQL its row is locked until the transaction ends), or null when it is not
   * unfinished (finished meanwhile).
   */
  unfinishedDone(c: TxCtx, id: string): Promise<number | null>;
  /**
   * A transaction's slices recorded: the accepted rows recorded so far, how many of them matched a borrower, and
   * how many of them an earlier upload had recorded already.
   */
  advanceUnfinished(c: TxCtx, id: string, progress: Pick<UnfinishedUpload, 'done' | 'matched' | 'alreadyRecorded'>): Promise<void>;
  /** The upload finished (in the transaction that writes its history record). */
  endUnfinished(c: TxCtx, id: string): Promise<void>;
  /** The ids of the unfinished uploads, at most `take`. */
  unfinishedIds(c: StoreCtx, take: number): Promise<string[]>;
  /** One unfinished upload, with its lender as a request of the lender's would carry it. */
  unfinishedOf(c: StoreCtx, id: string): Promise<{ upload: UnfinishedUpload; lender: Lender } | undefined>;
  /** The lender's recorded uploads older than a position (newest first), at most `take`. */
  uploadsBefore(c: StoreCtx, lenderId: string, before: { t: number; i: string }, take: number): Promise<UploadRow[]>;
  /** One of the lender's recorded uploads. */
  uploadOf(c: StoreCtx, lenderId: string, id: string): Promise<UploadRow | undefined>;
  /** The display prefix of an API key, if it exists. */
  apiKeyPrefix(c: StoreCtx, keyId: string): Promise<string | null>;
}

