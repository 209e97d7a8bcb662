// The payment-processor contract. One small interface per processor, each with a transformer from the
// processor's own statuses and codes into the spec's event-status vocabulary. Amounts are integer cents.
// Every processor call that creates money movement carries the service's payment id as its idempotency key.

import { EVENT_STATUSES, PROCESSOR_NAMES, RAILS, type EventStatus, type ProcessorName, type Rail } from '../../../db/schema/enums';

export { EVENT_STATUSES, PROCESSOR_NAMES, RAILS, type EventStatus, type ProcessorName, type Rail };

/** The prefix of the references the service gives its payments: `DRS-{authorizer_unique_id}-{payment_id}`. */
export const REFERENCE_PREFIX = 'DRS-';

/** A raw debit card, only ever held in memory on its way to the processor's tokenization. */
export interface RawCard {
  number: string;
  cvv: string | null;
  expMonth: number;
  expYear: number;
}

export interface TokenizedCard {
  /** Opaque processor token (Stripe `pm_…`, sandbox `sbxpm_…`); the only card reference the service keeps. */
  token: string;
  last4: string;
  brand: string | null;
  funding: string | null;
  expMonth: number;
  expYear: number;
}

/** What a debit is drawn on: a bank account by its numbers, or a processor token (stored `pm_…` or card token). */
export type DebitInstrument =
  | { kind: 'bank_account'; routingNumber: string; accountNumber: string; accountType?: 'checking' | 'savings' }
  | { kind: 'token'; token: string };

export interface DebitRequest {
  /** The service's payment id: the idempotency key of the create call. */
  paymentId: string;
  /** `DRS-{authorizer_unique_id}-{payment_id}`: into the processor's metadata and description. */
  reference: string;
  amountCents: number;
  rail: Rail;
  instrument: DebitInstrument;
  borrower: { name: string; email?: string | null };
  /** A reinitiation of a returned debit: Nacha's Company Entry Description for it, `RETRY PYMT`. */
  entryDescription?: 'RETRY PYMT';
}

export interface DebitResult {
  /** The processor's id of the payment (Stripe `pi_…`); null only when the processor kept nothing. */
  processorPaymentId: string | null;
  /** The status known at creation: usually `processing`; a card can be `settled`, `returned` or `invalid` at once. */
  status: EventStatus;
  returnCode: string | null;
  /** Why, when the status is not `processing`/`settled` (a decline, `requires_action`). No personal data. */
  message: string | null;
  /** A card decline's code (Stripe's decline_code): one that must never be retried stops the borrower with it. */
  declineCode?: string | null;
  /**
   * The processor holds the payment open, waiting for an action (Stripe's `requires_action`: bank account
   * verification). Reported as `not_attempted`, it could still debit once verified: cancel it first.
   */
  open?: boolean;
}

/** What the processor holds for one of the service's payment ids: the payment with its current status, or none. */
export type FoundPayment = ({ found: true; processorPaymentId: string } & Omit<DebitResult, 'processorPaymentId'>) | { found: false };

/** One payment of a listing of the processor's payments, with its current status. */
export interface ListedPayment extends Omit<DebitResult, 'processorPaymentId'> {
  processorPaymentId: string;
  /** The service's payment id (the idempotency key), from the processor's metadata; null for payments made elsewhere. */
  paymentId: string | null;
  reference: string | null;
  amountCents: number;
  createdAt: number;
}

export interface PaymentPage {
  payments: ListedPayment[];
  /** Pass back to read the next page; null at the end. */
  next: string | null;
}

/** One observed status of one processor payment, read from the processor's change feed. */
export interface ProcessorChange {
  /** Unique per processor account and stable across re-reads (Stripe `evt_…`, sandbox event sequence). */
  sourceEventId: string;
  processorPaymentId: string;
  /** The `DRS-…` reference from metadata, or whatever reference the lender set; null when none. */
  reference: string | null;
  status: EventStatus;
  amountCents: number;
  returnCode: string | null;
  occurredAt: number;
  /** When the payment itself was created at the processor, where the change says (ms). */
  paymentCreatedAt?: number;
  message: string | null;
  declineCode?: string | null;
  /**
   * Money that had gone back comes back: a dispute won after a late return, a refund that failed. Recorded
   * as `settled` again (a new event of the reference), which credits the ledger once more.
   */
  reinstated?: boolean;
  /**
   * The receiving bank answered the entry with a Notification of Change (its code and corrected data), where
   * the processor gives one through its feed.
   */
  notificationOfChange?: { code: string; correctedData: string };
}

export interface ChangePage {
  /** Oldest first. */
  changes: ProcessorChange[];
  /** Pass back to read on from here; unchanged when nothing new was read. */
  nextCursor: string | null;
  /** More changes are waiting beyond this page. */
  hasMore: boolean;
  /**
   * The processor no longer knows the cursor (its events are kept for a limited time): changes were missed.
   * nextCursor then points at the newest change, to read on from there, and the key must be reconciled.
   */
  cursorLost?: boolean;
}

/** The processor refused the key (authentication failed, revoked, wrong mode). */
export class KeyRefused extends Error {
  constructor(message = 'the processor refused this key') {
    super(message);
    this.name = 'KeyRefused';
  }
}

/** The card was refused at tokenization (bad number, expired, declined); the message says why, without the number. */
export class CardRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CardRefused';
  }
}

/**
 * The processor could not be reached or answered a transient error (network, timeout, 5xx, 429). Worth
 * retrying with the same idempotency key; says nothing about the payment or the key.
 */
export class ProcessorUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProcessorUnavailable';
  }
}

export interface Processor {
  readonly name: ProcessorName;
  /**
   * One cheap authenticated read. Answers the account the key belongs to (Stripe: the account id; sandbox:
   * the key's account), so that one processor account serves one lender. Throws KeyRefused or ProcessorUnavailable.
   */
  verifyKey(key: string): Promise<{ accountId: string }>;
  /** Throws CardRefused or ProcessorUnavailable. */
  tokenizeCard(key: string, card: RawCard): Promise<TokenizedCard>;
  /**
   * Creates (or, for a repeated paymentId, returns the first) debit. A definite refusal comes back as a
   * result (`invalid`, `returned`, `not_attempted`); throws ProcessorUnavailable when the outcome is unknown.
   */
  createDebit(key: string, req: DebitRequest): Promise<DebitResult>;
  /** Changes after `cursor` (null: from the start), oldest first. Throws KeyRefused or ProcessorUnavailable. */
  listChanges(key: string, cursor: string | null, opts?: { limit?: number }): Promise<ChangePage>;
  /**
   * The payment that the service's payment id created, found by a strongly consistent read (not a search
   * index), or a definite "none". It was created (if at all) between the first attempt and the last one:
   * `createdFrom`, `createdTo` (ms), with room for clock differences. Throws ProcessorUnavailable.
   */
  findPayment(key: string, q: { paymentId: string; createdFrom: number; createdTo: number }): Promise<FoundPayment>;
  /** The processor's payments created in [from, to], oldest first, a page at a time. Throws ProcessorUnavailable. */
  listPayments(key: string, q: { createdFrom: number; createdTo: number; page: string | null; limit?: number }): Promise<PaymentPage>;
  /**
   * Cancels a payment held open (see DebitResult.open), so that it can never debit, and answers its status
   * after: `voided`, or what it became if it could no longer be cancelled. Throws ProcessorUnavailable.
   */
  cancelPayment(key: string, processorPaymentId: string): Promise<DebitResult>;
}
