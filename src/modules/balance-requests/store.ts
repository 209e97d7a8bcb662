import type { batches, batchItems } from '../../../db/schema';
import type { Finalize } from '../../platform/lease-queue';
import type { BatchSource, BatchStatus, ExportStatus, PaymentType } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { QueuedAuthorizer } from './payload';

export { ITEM_LEASE_MS } from './store-shared';

export type Batch = typeof batches.$inferSelect;

/** A new batch's row: pending, nothing processed yet. */
export interface NewBatch {
  id: string;
  lenderId: string;
  source: BatchSource;
  scheduleId: string | null;
  webhookUrl: string | null;
  creator: string | null;
  now: number;
  total: number;
}

/** A batch's payload as stored: the sensitive fields sealed, the clear part packed and compressed. */
export interface StoredPayload {
  sealed: string;
  items: Uint8Array;
}

/** An answer kept for the 24-hour replay of an identical body. */
export interface CachedResponse {
  statusCode: number;
  responseBody: string;
}

/** An accepted request: the checks made under the write lock, then its batch, its payload and its answer. */
export interface Acceptance {
  batch: NewBatch;
  payload: StoredPayload;
  /** The body's hash and the answer to keep for it (no replay entry without a hash). */
  replay: { bodyHash: string; since: number; responseBody: string } | null;
  /** The lender's bound on authorizers waiting to be checked. */
  maxPending: number;
}

/** What became of an acceptance: an identical body's earlier answer, refused over the bound, or stored. */
export type AcceptOutcome = { kind: 'replay'; hit: CachedResponse } | { kind: 'over_backlog'; pending: number } | { kind: 'accepted' };

export interface OpenBatch {
  id: string;
  lenderId: string;
  status: BatchStatus;
}

export interface ClaimedItem {
  id: number;
  batchId: string;
  lenderId: string;
  seq: number;
  authorizerUniqueId: string;
  paymentType: PaymentType;
  routingNumber: string | null;
  phone: string | null;
  zip: string | null;
  attempts: number;
  /** Since when a linked account's balance refresh has been waited on (null: not waiting). */
  waitingSince: number | null;
  /** The claim holding it (lease-token.ts): its finish holds only while this claim does. */
  leaseToken: string;
}

/** A balance result to record, one per item. */
export interface ResultRow {
  itemId: number;
  batchId: string;
  lenderId: string;
  aid: string;
  cents: number | null;
  code: number;
  exportStatus: string;
  institution: string | null;
  at: number;
  kind: string | null;
  asOf: number | null;
  detail: string | null;
}

/** A batch's counter after results were added: whether this made it complete. */
export interface CountedBatch {
  id: string;
  lenderId: string;
  source: BatchSource;
  scheduleId: string | null;
  webhookUrl: string | null;
  completed: number;
}

export interface ExportRow {
  rid: number;
  aid: string;
  batchId: string;
  institution: string | null;
  phone: string | null;
  zip: string | null;
  cents: number | null;
  status: string;
  creator: string | null;
  at: number;
  /** A linked account's time for the balance, checked as a shown reading's is (never written in the export). */
  asOf: number | null;
  metadata: string | null;
}

export interface BalanceRow {
  id: number;
  aid: string;
  cents: number | null;
  code: number;
  at: number;
  kind: 'available' | 'current' | null;
  asOf: number | null;
  /** A failure's cause, and the earlier read whose answer the result took (link-reads.ts detailOf). */
  detail: string | null;
}

export interface HistoryRow extends BalanceRow {
  batchId: string;
  exportStatus: ExportStatus;
}

export interface ThresholdHit {
  aid: string;
  institution: string | null;
  cents: number;
  threshold: number;
}

export interface LatestResult {
  balanceKind: 'available' | 'current' | null;
  balanceAsOf: number | null;
  detail: string | null;
}

/** The latest result of one of several authorizers read at once. */
export interface LatestResultOf extends LatestResult {
  aid: string;
}


/** A claimed read's queue row, finished: done, or pending again with its next attempt. */
export type ReadFinish = Finalize<typeof batchItems>;

export interface BalanceStore {
  // Accepting.
  /** The answer to an identical body of the lender's since `since`, if there is one (read on every accept). */
  cachedResponse(c: StoreCtx, lenderId: string, bodyHash: string, since: number): Promise<CachedResponse | undefined>;
  /**
   * Accepts a request in a write that may share its commit with others accepted at the same moment: an
   * identical body's answer if one came meanwhile, else the lender's bound checked, then the batch, its
   * payload and the answer stored (bench accept).
   */
  acceptBatch(c: StoreCtx, a: Acceptance): Promise<AcceptOutcome>;
  /**
   * Until the transaction ends, the lender's other accepts wait: taken before the lender's pending authorizers
   * are counted for a batch inserted in the same transaction, so two at once cannot both pass the bound
   * (nothing to do on SQLite, where a transaction writes alone).
   */
  serializeBacklog(c: TxCtx, lenderId: string): Promise<void>;
  /** A new batch and its payload: two rows whatever the batch's size. */
  insertBatch(c: TxCtx, batch: NewBatch, payload: StoredPayload): Promise<void>;
  /** Authorizers accepted and not yet checked, of one lender or of all (one row of balance_backlog). */
  pendingAuthorizers(c: StoreCtx, lenderId: string | null): Promise<number>;
  /** Drops up to `limit` replay entries created before `before`, oldest first; how many went. */
  dropExpiredIdempotency(c: TxCtx, before: number, limit: number): Promise<number>;

  // Processing.
  /**
   * The fewest reads one claim takes (a claim takes four rounds of the concurrency when that is more), and a
   * flush records as many at once. SQLite 0: claims of four rounds and flushes of 64, as a flush is work on the
   * event loop, 3–5 ms at that size. PostgreSQL 128: a flush's work is the server's and its round trips go one
   * after the other, each claim waiting for the flush before it, so fewer and larger flushes go faster (bench
   * reads: about 1,760 → 2,550 reads a second at the median). 256 read a little faster still, but its flushes,
   * which decide and create payments, hold their borrowers twice as long. A claimed read that waits past half
   * its lease behind the others is given back unread (processing.ts), so a larger claim never reads one twice.
   */
  readonly readsPerClaim: number;
  /** Batches with work left, oldest first. */
  openBatches(c: StoreCtx): Promise<OpenBatch[]>;
  /**
   * Leases up to `want` due reads, shared fairly: an equal share per lender with work, then per batch within
   * a lender, so one large batch never starves a small one. The claim only leases rows (batches are started
   * before it, each in its own transaction).
   */
  claimDueReads(c: StoreCtx, want: number, now: number): Promise<ClaimedItem[]>;
  /**
   * The queue rows of a flush's reads held until the transaction ends, taken in one order before any is written:
   * two flushes of the same read (its claim lapsed and it was taken again) never each wait for the other
   * (nothing to do on SQLite).
   */
  lockReads(c: TxCtx, ids: number[]): Promise<void>;
  /** Claimed reads finished, in one call: each done, or back to pending (each only while its claim holds it). */
  finishReads(c: TxCtx, finishes: { id: number; leaseToken: string; finish: ReadFinish }[]): Promise<void>;
  /**
   * At start, the leases a stopped process held let go; how many. On SQLite every lease (one process serves
   * the file); on PostgreSQL only this replica's own (`prefix`: its tokens' start): another's are taken over
   * when they run out.
   */
  releaseReadLeases(c: TxCtx, prefix: string): Promise<number>;
  batchStatus(c: StoreCtx, batchId: string): Promise<BatchStatus | null>;
  /**
   * Whether the batch is still waiting to start, held so until the transaction ends: another starter (or an
   * erasure of one of its borrowers) waits for it, and this one waits for theirs.
   */
  lockWaitingBatch(c: TxCtx, batchId: string): Promise<boolean>;
  /** A waiting batch's clear items as stored (compressed bytes, or JSON text from before compression). */
  waitingItems(c: StoreCtx, batchId: string): Promise<string | Uint8Array | undefined>;
  /**
   * pending → processing: the batch's queue rows created, one per item in order (up to 5000, in one
   * statement's loop), the batch marked processing and the clear copy of its payload dropped.
   */
  startBatch(c: TxCtx, batchId: string, lenderId: string, items: QueuedAuthorizer[]): Promise<void>;
  /** A batch's sealed payload. */
  sealedPayload(c: StoreCtx, batchId: string): Promise<string | undefined>;
  /** Results recorded, one per item: for each row, whether it was recorded (false: its item already had one). */
  recordResults(c: TxCtx, rows: ResultRow[]): Promise<boolean[]>;
  /**
   * The counters of these batches, and their lenders' backlog, held until the transaction ends, taken in one
   * order before any moves: two flushes that count batches of the same lenders never each wait for the other
   * (nothing to do on SQLite).
   */
  lockBatches(c: TxCtx, batchIds: string[]): Promise<void>;
  /** Adds n to a batch's processed count: the batch, and whether that made it complete. */
  countProcessed(c: TxCtx, batchId: string, n: number): Promise<CountedBatch | undefined>;
  /** The batch completed at `at`. */
  completeBatch(c: TxCtx, batchId: string, at: number): Promise<void>;

  // Reading.
  /** The lender's batch, if it is the lender's. */
  batchOf(c: StoreCtx, lenderId: string, batchId: string): Promise<Batch | undefined>;
  /** Which of these batches are the lender's. */
  ownedBatchIds(c: StoreCtx, lenderId: string, batchIds: string[]): Promise<string[]>;
  /** A batch's results after result `afterId`, in the order they were recorded. */
  resultsPage(c: StoreCtx, batchId: string, afterId: number, take: number): Promise<BalanceRow[]>;
  /** A batch's results counted by export status. */
  resultCountsByStatus(c: StoreCtx, batchId: string): Promise<{ status: ExportStatus; n: number }[]>;
  /** How many reads the lender has of one authorizer. */
  historyCount(c: StoreCtx, lenderId: string, aid: string): Promise<number>;
  /** The lender's reads of one authorizer before result `beforeId`, newest first. */
  historyPage(c: StoreCtx, lenderId: string, aid: string, beforeId: number, take: number): Promise<HistoryRow[]>;
  /** The lender's batches older than (t, i), newest first: those it sent, the monitoring reads, or all. */
  batchesPage(c: StoreCtx, lenderId: string, kind: 'sent' | 'monitoring' | 'all', after: { t: number; i: string }, take: number): Promise<Batch[]>;
  /** Threshold hits of a batch: each result whose balance meets or exceeds its item's threshold, in request order. */
  thresholdHits(c: StoreCtx, batchId: string): Promise<ThresholdHit[]>;
  /** An authorizer's latest result of a lender. */
  latestResultOf(c: StoreCtx, lenderId: string, aid: string): Promise<LatestResult | undefined>;
  /** The latest result of each of these authorizers of a lender, in one statement (an authorizer never read is left out). */
  latestResultsAmong(c: StoreCtx, lenderId: string, aids: readonly string[]): Promise<LatestResultOf[]>;
  /** One export chunk: a batch's results after result `afterId`, with their items' details (bench export). */
  exportPage(c: StoreCtx, batchId: string, afterId: number, limit: number): Promise<ExportRow[]>;
  /** The distinct metadata keys of a slice of a batch's items after `afterSeq`, and the slice's last seq (null: no more). */
  metadataKeysPage(c: StoreCtx, batchId: string, afterSeq: number, limit: number): Promise<{ keys: string[]; last: number | null }>;

  // Erasing.
  /** A borrower's clear details (phone, zip, metadata) in the queue rows of started batches, overwritten. */
  eraseQueuedDetails(c: TxCtx, lenderId: string, aid: string): Promise<void>;
  /**
   * The item lists of the lender's batches still waiting to start; inside a transaction those batches are held
   * until it ends, so none of them starts from the list read here.
   */
  waitingPayloads(c: StoreCtx, lenderId: string): Promise<{ batchId: string; items: string | Uint8Array }[]>;
  replacePayloadItems(c: TxCtx, batchId: string, items: Uint8Array): Promise<void>;
}

