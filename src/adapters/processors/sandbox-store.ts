// The sandbox processor's own storage: the `sandbox_*` tables, standing for another system's database. The
// processor calls these functions only; sandbox-store.sqlite.ts implements them on the SQLite connection it is
// given (the service's file, or the CLI's), sandbox-store.pg.ts on a PostgreSQL pool, each write in its own
// transaction, never inside a caller's.
import type { EventStatus, Rail } from './types';

/** A payment as created, which a replay of its idempotency key answers again. */
export interface SandboxPaymentRow {
  id: string;
  amount_cents: number;
  created_at: number;
  created_status: EventStatus;
  created_return_code: string | null;
  created_message: string | null;
}

/** A change of the feed, with its payment's reference, amount and creation time. */
export interface SandboxChangeRow {
  seq: number;
  payment_id: string;
  reference: string | null;
  status: EventStatus;
  amount_cents: number;
  return_code: string | null;
  occurred_at: number;
  message: string | null;
  created_at: number;
  /** The payment's Notification of Change (`C01:<number>`), told with its settlement. */
  correction: string | null;
}

/** A payment's latest status, as a read of it answers now. */
export interface SandboxStatus {
  status: EventStatus;
  returnCode: string | null;
  message: string | null;
}

/** A payment of a listing by creation time, with its latest status. */
export interface SandboxListedRow extends SandboxStatus {
  id: string;
  idempotency_key: string;
  reference: string | null;
  amount_cents: number;
  created_at: number;
}

/** A status of a new payment: its first (due at creation) or a scheduled one. */
export interface SandboxStep {
  status: EventStatus;
  returnCode: string | null;
  message: string | null;
  dueAt: number;
}

export interface SandboxNewPayment {
  account: string;
  idempotencyKey: string;
  now: number;
  /** A payment the key made after this is answered again instead of a new one. */
  replayAfter: number;
  /** The key's first attempt fails (cents 98): recorded, nothing created; the next attempt goes through. */
  failFirstAttempt: boolean;
  payment: { id: string; reference: string | null; amountCents: number; rail: Rail; instrumentKind: string; entryDescription: string | null; correction: string | null };
  /** The first is the creation status; the others are scheduled. */
  steps: SandboxStep[];
}

/** What creating a payment came to: the key's earlier payment, its first attempt failed, or created. */
export type SandboxCreated = { existing: SandboxPaymentRow } | { failedAttempt: true } | { created: true };

export interface SandboxStore {
  /** A tokenized card, in its own write transaction. */
  saveCard(card: { token: string; account: string; last4: string; brand: string; funding: string; expMonth: number; expYear: number; createdAt: number }): Promise<void>;
  /**
   * In one write transaction, so that the replay check and the insert cannot interleave with another caller:
   * the account's due statuses appended, then the key's payment within its window if any, else its failed
   * first attempt, else the payment with its creation event and its scheduled statuses.
   */
  createPayment(p: SandboxNewPayment): Promise<SandboxCreated>;
  /**
   * Appends, in time order and in one write transaction, the account's scheduled statuses whose time has come
   * (each at its scheduled time). Read first: with nothing due, the write lock is never taken.
   */
  appendDueStatuses(account: string, now: number): Promise<void>;
  /** Whether a change among the `take` after `after` has left the feed (older than `keptFrom`). */
  changeLeftFeedAfter(account: string, after: number, take: number, keptFrom: number): Promise<boolean>;
  /** The account's newest change, if any. */
  newestChangeSeq(account: string): Promise<number | null>;
  /** The account's changes after `after` still in the feed, in order, at most `take`. */
  changesAfter(account: string, after: number, keptFrom: number, take: number): Promise<SandboxChangeRow[]>;
  /** The payment an idempotency key made within a time range (the first). */
  paymentMadeWithKey(account: string, idempotencyKey: string, createdFrom: number, createdTo: number): Promise<SandboxPaymentRow | null>;
  /** A payment's latest status. */
  currentStatus(paymentId: string): Promise<SandboxStatus>;
  /**
   * The account's payments created in a range, after a position (creation time, id), in order: at most
   * `limit`, each with its latest status, and whether more follow.
   */
  paymentsCreatedBetween(account: string, createdFrom: number, createdTo: number, after: { at: number; id: string }, limit: number): Promise<{ rows: SandboxListedRow[]; more: boolean }>;
  /** Whether a payment of the account in cents 88 was created after `createdAfter` (its outage not over). */
  outageSince(account: string, createdAfter: number): Promise<boolean>;
}
