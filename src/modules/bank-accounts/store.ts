import type { AccountType, BankAccountState, ChangeCode, ChangeSource, ChangeStatus, ValidationMethod } from '../../../db/schema/enums';
import type { BlockingAccountState } from '../../adapters/processors/account-states';
import type { StoreCtx, TxCtx } from '../../platform/store';

// The bank accounts' data: one record per lender per account, its state, and the service's fingerprint key
// (service_secrets). What the collection reads of an account's state is read with the borrower it decides for,
// by the collection's own stores (the account's standing beside the enrollment).

/**
 * An account's standing, as the collection rules read it (enrollments/monitor.ts accountBlockOf): its state and
 * its latest return that set or kept it, a Notification of Change waiting to be applied, and its validation
 * evidence's time beside the time its number last changed.
 */
export interface AccountStanding {
  state: BankAccountState;
  lastReturnAt: number | null;
  pendingChangeId: string | null;
  validatedAt: number | null;
  numberChangedAt: number | null;
}

/** The account an enrollment is linked to: its id and standing. */
export interface LinkedAccount extends AccountStanding {
  id: string;
}

/** An account to link to, by its fingerprint (hex); `id` is used only when the account is new. */
export interface AccountToLink {
  id: string;
  fingerprint: string;
  last4: string;
}

export interface BankAccountRow extends AccountStanding {
  id: string;
  lenderId: string;
  last4: string;
  stateSince: number;
  /** The codes that set or kept its state, each once, in the order they came. */
  returnCodes: string[];
  stateReference: string | null;
  accountType: AccountType | null;
  validationMethod: ValidationMethod | null;
  validationSource: string | null;
  validationReference: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A Notification of Change as kept (account_changes). */
export interface ChangeRow {
  id: string;
  lenderId: string;
  bankAccountId: string;
  code: ChangeCode;
  source: ChangeSource;
  reference: string | null;
  /** The corrected data, sealed (it holds an account number). */
  correctedSealed: string | null;
  oldLast4: string;
  newLast4: string | null;
  status: ChangeStatus;
  receivedAt: number;
  dueBy: number;
  appliedAt: number | null;
  appliedBy: string | null;
}

export type NewChange = Omit<ChangeRow, 'appliedAt' | 'appliedBy'> & { sourceKey: string };

export interface BankAccountPageQuery {
  lenderId: string;
  state?: BankAccountState;
  /** The last id of the page before ('' for the first). */
  after: string;
  limit: number;
}

export interface BankAccountStore {
  // The service's secrets (fingerprint.ts)
  /** A secret the service made for itself, sealed; undefined before it is made. */
  sealedSecret(c: StoreCtx, name: string): Promise<string | undefined>;
  /**
   * Keeps a secret under its name unless one is kept already: one statement, so two transactions (two replicas
   * starting at once) never keep two; the loser's is dropped and it reads the winner's.
   */
  keepSecret(c: TxCtx, v: { name: string; sealed: string; now: number }): Promise<void>;

  // Linking (service.ts)
  /**
   * The lender's accounts with these fingerprints, each made (state ok) where there is none yet, one per
   * fingerprint: the answer has one entry per distinct fingerprint, keyed by it. Made in the order of the
   * fingerprints, so two transactions making the same ones never wait on each other in a cycle.
   */
  accountsFor(c: TxCtx, lenderId: string, accounts: readonly AccountToLink[], now: number): Promise<Map<string, LinkedAccount>>;

  /**
   * Validation evidence for these accounts, each kept where it is later than the account's own (the latest
   * evidence stands), one statement for the list; one entry per account. Their borrowers are due to be told
   * (a validation_required block lifts).
   */
  recordValidations(c: TxCtx, list: readonly { id: string; method: ValidationMethod; source: string | null; reference: string | null; at: number }[]): Promise<void>;

  // Returns (service.ts)
  /**
   * A return recorded against an account, in one statement (several borrowers of one transaction may record at
   * once): the state becomes the more severe of its own and `state` (state_since and the reference move with
   * it; between equals the first stays), the code is added to its codes unless it is there, last_return_at is
   * the latest return's time, and its borrowers are due to be told. Without a code (a lender's confirmed fraud,
   * fraud-monitoring) the state and the telling are the same, and the codes and last_return_at stay as they are.
   */
  recordReturn(c: TxCtx, v: { id: string; state: BlockingAccountState; code: string | null; reference: string; at: number }): Promise<void>;

  // Reads (service.ts)
  /** A page of the lender's accounts by id, all of them or of one state. */
  accountsPage(c: StoreCtx, q: BankAccountPageQuery): Promise<BankAccountRow[]>;
  /** One of the lender's accounts. */
  accountOf(c: StoreCtx, lenderId: string, id: string): Promise<BankAccountRow | undefined>;
  /** For each of these accounts, how many borrowers are on it and the first `perAccount` of them by id. */
  borrowersOn(c: StoreCtx, accountIds: readonly string[], perAccount: number): Promise<{ accountId: string; aid: string; total: number }[]>;

  // Notifications of Change (changes.ts)
  /** Of these borrowers, those whose bank account has no validation evidence given since its number last changed. */
  unvalidatedAmong(c: StoreCtx, enrollmentIds: readonly string[]): Promise<string[]>;
  /** The account a payment was made for, else its borrower's now: its id and last four. */
  accountOfMatch(c: StoreCtx, paymentId: string | null, enrollmentId: string): Promise<{ id: string; last4: string } | undefined>;
  /**
   * Taken before a change of the account's Notifications of Change (one received, one applied), held until the
   * transaction ends: two at once are one after the other, so the account's pending change is always the first
   * not applied. Nothing on SQLite (one writer at a time).
   */
  serializeAccount(c: TxCtx, accountId: string): Promise<void>;
  /** A change kept unless the lender has one of its source key already (a re-upload): whether it was kept. */
  insertChange(c: TxCtx, row: NewChange): Promise<boolean>;
  /**
   * The account's debits held for a change (its pending change is the first not applied), and, `tell`, its
   * borrowers due to be told (collection/account-blocks.ts).
   */
  holdForChange(c: TxCtx, v: { accountId: string; changeId: string; tell: boolean; now: number }): Promise<void>;
  /** One change with its sealed corrected data; of the lender, when one is named. Locked until the transaction ends (PostgreSQL). */
  changeOf(c: StoreCtx, id: string, lenderId?: string): Promise<ChangeRow | undefined>;
  /** Changes received under the policy's automatic and not applied yet, oldest first. */
  changesToApply(c: StoreCtx, limit: number): Promise<{ id: string }[]>;
  /** The latest `perAccount` changes of each account, newest first, and how many each has. */
  changesOn(c: StoreCtx, accountIds: readonly string[], perAccount: number): Promise<(ChangeRow & { total: number })[]>;
  /** The lender's account of a fingerprint (hex), if there is one. */
  accountByFingerprint(c: StoreCtx, lenderId: string, fingerprint: string): Promise<string | undefined>;
  /**
   * A change applied (or recorded): its status, time and who applied it; the account's new fingerprint and last
   * four (when its number changed and it kept its record), its account type, the time its number changed, and
   * its pending change the next not applied, if any; its borrowers due to be told.
   */
  finishChange(
    c: TxCtx,
    v: {
      changeId: string;
      accountId: string;
      status: 'applied' | 'recorded';
      by: string;
      fingerprint: string | null;
      last4: string | null;
      accountType: AccountType | null;
      numberChanged: boolean;
      /** A new routing number: an account invalid by an R12 alone (sold to another bank) is ok again. */
      routingCorrected?: boolean;
      now: number;
    },
  ): Promise<void>;
  /** The lender confirms a change under review: it is to be applied now (status received). Whether it was under review. */
  confirmChange(c: TxCtx, lenderId: string, id: string): Promise<boolean>;

  // Telling an account's borrowers of its state (collection/account-blocks.ts)
  /** Accounts whose borrowers are due to be told of a return, oldest first, with the mark to clear once told. */
  accountsToTell(c: StoreCtx, limit: number): Promise<{ id: string; due: number }[]>;
  /** Monitored borrowers on an account after an enrollment id, in id order. */
  monitoredOn(c: StoreCtx, accountId: string, after: string, limit: number): Promise<{ id: string }[]>;
  /** Every borrower was told: the mark cleared, unless a later return set it again meanwhile (compare and set). */
  told(c: TxCtx, id: string, due: number): Promise<void>;
}
