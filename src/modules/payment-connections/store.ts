import type { paymentConnections } from '../../../db/schema';
import type { ProcessorName, RailScope } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';

/** A processor key as stored (its sealed value null once deleted). */
export type PaymentConnection = typeof paymentConnections.$inferSelect;
export type NewPaymentConnection = typeof paymentConnections.$inferInsert;
/** The columns a key's change writes. */
export type PaymentConnectionChange = Partial<NewPaymentConnection>;

/** Which lender holds a processor account, and from when. */
export interface AccountBinding {
  lenderId: string;
  boundAt: number;
}

/** A live key whose processor account is not known yet. */
export interface KeyWithoutAccount {
  id: string;
  lenderId: string;
  processor: ProcessorName;
  keySealed: string | null;
}

/** A bound account as the operator lists it. */
export interface BoundAccount {
  processor: ProcessorName;
  accountId: string;
  lender: string;
  boundAt: number;
}

/** The part of a live key that chooses it for a payment, with what a payment is made with. */
export interface ResolvableKey {
  id: string;
  railScope: RailScope;
  isDefault: boolean;
  merchantRef: string | null;
  processor: ProcessorName;
  keySealed: string | null;
}

/** What every key of a lender, deleted ones too, has read. */
export interface KeyTotals {
  ingested: number;
  matched: number;
  lastPollAt: number | null;
}

export interface PaymentConnectionStore {
  /**
   * Taken first by a transaction that checks the lender's live keys and then writes one (create, change,
   * delete): such transactions of one lender run one after the other, each reading what the one before
   * committed. Nothing to do on SQLite, whose transactions already do.
   */
  serializeKeyChanges(c: TxCtx, lenderId: string): Promise<void>;
  /**
   * Taken first by a transaction that reads a processor account's binding and then writes it or a key of it
   * (bind, learn, release): one at a time per account. Nothing to do on SQLite.
   */
  serializeAccount(c: TxCtx, processor: ProcessorName, accountId: string): Promise<void>;
  /** The lender holding a processor account, if any holds it. */
  accountBinding(c: StoreCtx, processor: ProcessorName, accountId: string): Promise<AccountBinding | undefined>;
  /** Binds a free account to a lender from `boundAt`. */
  bindAccount(c: TxCtx, v: { processor: ProcessorName; accountId: string; lenderId: string; boundAt: number }): Promise<void>;
  /** Releases an account's binding. */
  releaseAccount(c: TxCtx, processor: ProcessorName, accountId: string): Promise<void>;
  /** Whether a live key of the lender uses the account. */
  accountInUse(c: StoreCtx, v: { processor: ProcessorName; accountId: string; lenderId: string }): Promise<boolean>;
  /** Every bound account with its lender's name, oldest binding first. */
  listBindings(c: StoreCtx): Promise<BoundAccount[]>;
  /** Live keys (of one processor, or all) whose account is not known, oldest first. */
  keysWithoutAccount(c: StoreCtx, processor?: ProcessorName): Promise<KeyWithoutAccount[]>;
  /** Records a key's account; `lastPollError` set too when given. */
  recordKeyAccount(c: TxCtx, id: string, accountId: string, lastPollError?: string): Promise<void>;

  /** The lender's live keys, in no particular order. */
  liveKeys(c: StoreCtx, lenderId: string): Promise<PaymentConnection[]>;
  /** The lender's live keys as listed: defaults first, then oldest first. */
  listLiveKeys(c: StoreCtx, lenderId: string): Promise<PaymentConnection[]>;
  /** One live key of the lender. */
  liveKey(c: StoreCtx, lenderId: string, id: string): Promise<PaymentConnection | undefined>;
  /** Payments read and matched through every key of the lender, deleted ones included, and the last poll. */
  keyTotals(c: StoreCtx, lenderId: string): Promise<KeyTotals>;
  /** The lender's live keys as a payment chooses among them. */
  resolvableKeys(c: StoreCtx, lenderId: string): Promise<ResolvableKey[]>;
  /** Stores a new key. */
  insertKey(c: TxCtx, row: NewPaymentConnection): Promise<void>;
  /** Changes a key's columns. */
  updateKey(c: TxCtx, id: string, set: PaymentConnectionChange): Promise<void>;
  /** Erases a key (its sealed value overwritten with null) and marks it deleted. */
  eraseKey(c: TxCtx, id: string, at: number): Promise<void>;
}

