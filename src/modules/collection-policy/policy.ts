import type { BankAccountState, ChangeApplication, NoticeChannel, ReadCadence, ReinitiationAmount } from '../../../db/schema/enums';
import type { RegEElection } from './notice-windows';

// A lender's collection policy as the rules read it, and what a lender without one gets. The policy's own
// feature owns it; collection (the rules, the decision, the chain check) and the cadence read it.

export interface CollectionPolicy {
  cfpbCovered: boolean;
  maxReinitiations: number;
  reinitiationAmount: ReinitiationAmount;
  /** Business days of notice before each debit; 0: a debit goes out as soon as the balance covers it. */
  noticeDays: number;
  /** No new ACH payment while a return-rate class is at or above its threshold. */
  returnRatePause: boolean;
  /** When monitored borrowers are read: around predicted paydays, or on the fixed interval. */
  readCadence: ReadCadence;
  /** A debit waits until the balance covers the amount plus this. */
  debitBufferCents: number;
  /** The lender's IANA time zone: payday reads are at 08:00 there (null: UTC). */
  timeZone: string | null;
  /**
   * Business days after a payment settles during which its late return may still come (an R01 or R09 is
   * returned within two banking days of settlement, Nacha Operating Rules, Article Three, 3.8; five leaves
   * room for the processor's report): the debt's chain stays open until they pass.
   */
  lateReturnWindowDays: number;
  /** A debit may follow a linked account's current (ledger) balance when no available one is given. */
  allowCurrentBalance: boolean;
  /** With allowCurrentBalance, a debit on a current balance waits for this much more. */
  currentBalanceBufferCents: number;
  /** A linked account's balance older than this (by the provider's as_of) decides no debit. */
  maxBalanceAgeMinutes: number;
  /** A Notification of Change is applied to every borrower on its account at once, or held until the lender confirms it. */
  applyNotificationsOfChange: ChangeApplication;
  /** No debit to an account without validation evidence (given since its number last changed). */
  requireAccountValidation: boolean;
  /** The lender's stricter actions of return codes on the bank account (adapters/processors/account-states.ts); empty: Nacha's table. */
  accountReturnStates: Readonly<Record<string, Exclude<BankAccountState, 'ok'>>>;
  /**
   * How the lender sends the payday rule's payment notices: their windows follow it (collection/notices.ts), and
   * a covered borrower's debit that needs one waits for it; null: no debit waits for them. Electronic for a lender
   * created from the version that made them bind; null for those there before, until they set it.
   */
  noticeChannel: NoticeChannel | null;
  /** The Regulation E election of a borrower that has none of its own; `none`: no varying-amount notice. */
  regEElection: RegEElection;
}

export const DEFAULT_POLICY: CollectionPolicy = { cfpbCovered: false, maxReinitiations: 2, reinitiationAmount: 'current', noticeDays: 0, returnRatePause: false, readCadence: 'payday', debitBufferCents: 0, timeZone: null, lateReturnWindowDays: 5, allowCurrentBalance: false, currentBalanceBufferCents: 0, maxBalanceAgeMinutes: 60, applyNotificationsOfChange: 'automatic', requireAccountValidation: true, accountReturnStates: {}, noticeChannel: 'electronic', regEElection: { type: 'none' } };
