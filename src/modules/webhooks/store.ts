import type { WebhookType } from '../../../db/schema/enums';
import type { webhookDeliveries, webhookEndpoints } from '../../../db/schema';
import type { StoreCtx, TxCtx } from '../../platform/store';

export { CUT_SHORT, SENDING } from './store-shared';

/** A due delivery as a claim takes it. */
export interface DueRow {
  id: string;
  /** The attempt row opened for this claim. */
  attemptId?: number;
  lenderId: string;
  type: WebhookType;
  targetUrl: string;
  payload: string;
  attempts: number;
  firstAttemptAt: number | null;
  /** The claim holding it (lease-token.ts): what it records of the delivery's state holds only while this claim does. */
  leaseToken: string;
}

/** One delivery put into the outbox. */
export interface NewDelivery {
  id: string;
  lenderId: string;
  type: WebhookType;
  url: string;
  body: string;
  now: number;
}

/** What a run records of one claimed delivery. */
export type AttemptRecord =
  /** Claimed, never sent: the attempt opened at the claim is dropped and the delivery released as it was. */
  | { id: string; leaseToken: string; attemptId?: number; sent: false }
  | {
      id: string;
      leaseToken: string;
      attemptId?: number;
      sent: true;
      attempt: { at: number; statusCode: number | null; error: string | null; durationMs: number };
      state: 'pending' | 'delivered' | 'failed';
      attempts: number;
      nextAttemptAt: number | null;
      firstAttemptAt: number;
      finishedAt: number | null;
    };

export interface SecretRow {
  secretSealed: string;
  createdAt: number;
}

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type EndpointRow = typeof webhookEndpoints.$inferSelect;

export interface DeliveryListFilter {
  lenderId: string;
  status?: 'pending' | 'delivered' | 'failed';
  type?: WebhookType;
  /** Rows after this position (created_at, id), newest first. */
  after: { c: number; i: string } | null;
  take: number;
}

export interface WebhookStore {
  // Signing secrets.
  /** The lender's current secret (sealed), if it has one. */
  currentSecret(c: StoreCtx, lenderId: string): Promise<SecretRow | undefined>;
  /** When the latest previous secret still signing stops, or null. */
  previousSecretExpiry(c: StoreCtx, lenderId: string, now: number): Promise<number | null>;
  /** Every secret (sealed) that signs at `now`, newest first. */
  signingSecrets(c: StoreCtx, lenderId: string, now: number): Promise<string[]>;
  /**
   * Called first in a transaction that looks for the lender's current secret and then writes one (created on
   * first use, rotated): such transactions of one lender run one after the other, so a lender never has two
   * current secrets. Nothing to do on SQLite, where one transaction writes at a time.
   */
  serializeSecrets(c: TxCtx, lenderId: string): Promise<void>;
  /** Stores a new current secret. */
  addSecret(c: TxCtx, secret: { id: string; lenderId: string; secretSealed: string; createdAt: number }): Promise<void>;
  /** The current secret keeps signing until expiresAt. */
  expireCurrentSecret(c: TxCtx, lenderId: string, expiresAt: number): Promise<void>;

  // The outbox.
  /** Puts deliveries into the outbox, in the transaction of the change that causes them. */
  enqueueDeliveries(c: TxCtx, deliveries: NewDelivery[]): Promise<void>;
  /** The lender's deliveries, newest first, filtered. */
  listDeliveries(c: StoreCtx, filter: DeliveryListFilter): Promise<DeliveryRow[]>;
  /** Deliveries still waiting to be sent. */
  countPendingDeliveries(c: StoreCtx): Promise<number>;

  // Delivery (a queue claimed by leases).
  /**
   * Leases up to `want` due deliveries, oldest first, leaving out `exclude` (ids), and opens an attempt row
   * for each before any request leaves.
   */
  claimDueDeliveries(c: TxCtx, want: number, now: number, leaseMs: number, exclude: string[]): Promise<DueRow[]>;
  /**
   * Records what a run did with its claimed deliveries: attempts completed, and, while each claim still holds
   * its delivery, states set and leases released (a claim taken over records its attempt only).
   */
  recordAttempts(c: TxCtx, records: AttemptRecord[]): Promise<void>;
  /**
   * At start: the attempts a stopped process left open are marked cut short, and its leases released. On SQLite
   * every lease (one process serves the file); on PostgreSQL only this replica's own (`prefix`: its tokens'
   * start), and the attempts of leases that ran out (whoever held them is gone).
   */
  releaseDeliveryLeases(c: TxCtx, prefix: string, now: number): Promise<number>;

  // A lender's endpoints.
  /** The lender's endpoints, oldest first. */
  listEndpoints(c: StoreCtx, lenderId: string): Promise<EndpointRow[]>;
  /** How many endpoints the lender has. */
  countEndpoints(c: StoreCtx, lenderId: string): Promise<number>;
  /**
   * Called first in a transaction that counts the lender's endpoints and then adds one: such transactions of
   * one lender run one after the other, so the count holds until the insert. Nothing to do on SQLite.
   */
  serializeEndpoints(c: TxCtx, lenderId: string): Promise<void>;
  addEndpoint(c: TxCtx, row: EndpointRow): Promise<void>;
  /** Deletes the lender's endpoint; false when it has none with this id. */
  deleteEndpoint(c: TxCtx, lenderId: string, id: string): Promise<boolean>;
  /** The url and event types (JSON) of each of the lender's endpoints (at most ten), read for each event pushed. */
  endpointTargets(c: StoreCtx, lenderId: string): Promise<{ url: string; eventTypes: string }[]>;
}

