import type { HeldReason, LinkHealth, MonitorState } from '../../../db/schema/enums';
import { accountValidated, type Standing } from '../bank-accounts/standing';
import { isRetryableReturn } from '../../adapters/processors/return-codes';
import { mustNotRetry } from '../../adapters/processors/decline-codes';

// A borrower's monitor as one pure state machine (payments.md, Monitor states): from the current state, its
// reason and blocked reason, and an event, the next state, reason and blocked reason and what follows (the
// window, the next read, the payment count). monitor-store.ts is the only code that writes these columns, and
// it writes only what this function returns. A move that is not in the table throws: a bug that tries one
// must not quietly move a borrower into a state that collects money.

/** Why a due payment is not initiated although the monitor is monitored; null when nothing blocks. */
export const BLOCKED_REASONS = [
  'no_processor_key',
  'verification_required',
  // The collection rules (collection/rules.ts): a new authorization is needed (two failures for funds under
  // the payday rule, or an R08); reinitiations used up or too late; the amount of a reinitiation changed.
  'reauthorization_required',
  'reinitiation_limit',
  'reinitiation_window',
  'amount_changed',
  // The lender pauses ACH collection while a return rate is at or above its Nacha threshold.
  'return_rate_paused',
  // The last payment settled and may still be returned late (the policy's late_return_window_days): the debt's
  // chain stays open, and no new payment goes out before the window passes. Reads go on; it lifts by itself.
  'late_return_window',
  // The read decides no debit: a linked account's balance older than the policy's max_balance_age_minutes, or
  // only a current (ledger) balance where the policy wants an available one. Reads go on; a read that passes lifts it.
  'stale_balance',
  'current_only',
  // The linked account cannot be debited (balance-requests/link-health.ts): the borrower revoked it, it closed
  // at the bank, or its account number is not transactable. Lifts by itself when the provider says the same link is well again.
  'account_revoked',
  'account_closed',
  'account_not_transactable',
  // The borrower's bank account is in a blocking state (bank-accounts): a return of a debit to it, whichever
  // borrower's, said it is invalid or closed, frozen, not authorized by its holder, or its holder deceased.
  'account_invalid',
  'account_frozen',
  'account_unauthorized',
  'account_deceased',
  // A Notification of Change on the account waits to be applied (at once under the policy's automatic, on the
  // lender's word under review); and the account has no validation evidence since its number last changed
  // while the policy requires it (Nacha's WEB debit rule). Each lifts when it no longer holds.
  'account_change_pending',
  'validation_required',
  // The borrower revoked its authorization (Regulation E): no debit until an authorization dated after it.
  'authorization_revoked',
  // An alert of a fraud-monitoring hold rule, open or needing information: no debit until the lender clears it.
  // Reads go on; the first read after it is cleared lifts it.
  'fraud_hold',
] as const;
export type BlockedReason = (typeof BLOCKED_REASONS)[number];

/** The blocks a linked account's health sets (balance-requests/link-health.ts); each lifts when the provider says the link is well again. */
export const LINK_BLOCKS = ['account_revoked', 'account_closed', 'account_not_transactable'] as const satisfies readonly BlockedReason[];

/** The blocked_reason a linked account's health gives the borrower's collection, or null (relink_required reads nothing: no block). */
export function blockedReasonOf(health: LinkHealth | null): BlockedReason | null {
  return health === 'revoked' ? 'account_revoked' : health === 'closed' ? 'account_closed' : health === 'not_transactable' ? 'account_not_transactable' : null;
}

/** The blocks a bank account's state sets (bank-accounts): one per blocking state. */
export const ACCOUNT_BLOCKS = [
  'account_invalid',
  'account_frozen',
  'account_unauthorized',
  'account_deceased',
  'account_change_pending',
  'validation_required',
] as const satisfies readonly BlockedReason[];
export type AccountBlock = (typeof ACCOUNT_BLOCKS)[number];
export const isAccountBlock = (r: string | null): r is AccountBlock => r !== null && (ACCOUNT_BLOCKS as readonly string[]).includes(r);

/** Why an account's block stops a debit, in the words of the events and messages that say so. */
export const ACCOUNT_BLOCK_WORDS: Record<AccountBlock, string> = {
  account_invalid: 'a return said the bank account is closed or invalid',
  account_frozen: 'a return said the bank account is frozen',
  account_unauthorized: 'a return said debits to the bank account are not authorized; a new authorization dated after it is needed',
  account_deceased: 'a return said the bank account’s holder is deceased',
  account_change_pending: 'a Notification of Change on the bank account is not applied yet',
  validation_required: 'the bank account has no validation evidence since its number last changed',
};

export { accountValidated };

/**
 * What a borrower's bank account, as it stands, blocks for that borrower, or null: its state's block (an
 * unauthorized account lets a borrower whose authorization is dated after the account's last return be debited;
 * the other states block every borrower on it), then a Notification of Change not yet applied, then, where the
 * lender's policy requires it, the lack of validation evidence. No account (a card borrower) blocks nothing.
 */
export function accountBlockOf(account: Standing | null | undefined, authorizationAt: number | null, requireValidation = false): AccountBlock | null {
  if (!account) return null;
  if (account.state !== 'ok' && !(account.state === 'unauthorized' && authorizationAt !== null && account.lastReturnAt !== null && authorizationAt > account.lastReturnAt)) {
    return `account_${account.state}`;
  }
  if (account.pendingChangeId) return 'account_change_pending';
  if (requireValidation && !accountValidated(account)) return 'validation_required';
  return null;
}

/**
 * The collection rules' reasons (collection/rules.ts planPayment): each stands until the lender acts (a new
 * authorization, a new amount), so it outlives removal and re-send, and the borrower is not read meanwhile:
 * a read could not lead to a debit.
 */
export const CHAIN_BLOCKS = ['reauthorization_required', 'reinitiation_limit', 'reinitiation_window', 'amount_changed'] as const satisfies readonly BlockedReason[];
export type ChainBlock = (typeof CHAIN_BLOCKS)[number];
export const isChainBlock = (r: string | null): r is ChainBlock => r !== null && (CHAIN_BLOCKS as readonly string[]).includes(r);

/**
 * The blocks that stand until the lender acts (the collection rules', and a bank account's state): kept through
 * removal and re-send, which ask again what holds (collection/chain.ts), and the borrower is not read meanwhile.
 */
export const isStandingBlock = (r: string | null): r is ChainBlock | AccountBlock | 'authorization_revoked' => isChainBlock(r) || isAccountBlock(r) || r === 'authorization_revoked';

/** The borrower revoked its authorization and has given none dated after it since (collection/store-shared.ts REVOKED, in SQL). */
export const revokedNow = (e: { revokedAt?: number | null; authorizationAt: number | null; reauthorizedAt?: number | null }): boolean =>
  e.revokedAt != null && !(e.authorizationAt !== null && e.authorizationAt > e.revokedAt) && !(e.reauthorizedAt != null && e.reauthorizedAt > e.revokedAt);

/** Why a revocation stops a debit, in the words of the events and messages that say so. */
export const REVOKED_WORDS = 'the borrower revoked its authorization; a new authorization dated after it is needed';

export type MonitorFrom = MonitorState | 'new';

export interface MonitorSnapshot {
  state: MonitorFrom;
  reason: string | null;
  blockedReason: string | null;
}

export type MonitorEvent =
  /** POST /v1/payment_enrollments for this borrower: first time, or a re-send. held: why its bank is not readable. */
  | { type: 'enrolled'; held: HeldReason | null }
  /** The daily re-check of a held borrower: its bank is readable now. */
  | { type: 'readable' }
  /** The daily re-check of a held borrower: still not readable, perhaps for another reason. */
  | { type: 'still_held'; held: HeldReason }
  /** A due balance read was queued. */
  | { type: 'read' }
  | { type: 'removed' }
  | { type: 'erased' }
  /** The 30-day window ended without collection. */
  | { type: 'lapsed' }
  | { type: 'settled' }
  | { type: 'returned'; code: string | null }
  | { type: 'late_returned'; code: string | null; inWindow: boolean }
  /** Refused by the processor; a card decline that must never be retried gives its code as the reason. */
  | { type: 'invalid'; declineCode?: string | null }
  /** A due payment could not be initiated, for a reason the lender must act on. */
  | { type: 'blocked'; reason: BlockedReason }
  /** A payment was initiated: whatever blocked the last one no longer does. */
  | { type: 'payment_initiated' }
  /** The collection rules allow a payment again (a new authorization, a new amount): reads resume. */
  | { type: 'unblocked' };

export type MonitorEventType = MonitorEvent['type'];

export interface MonitorChange {
  state: MonitorState;
  reason: string | null;
  blockedReason: string | null;
  /** fresh: a new 30-day window from now; keep: as it is; none: no window (not monitored). */
  window: 'fresh' | 'keep' | 'none';
  /** now: read at once; interval: one read interval on; keep: as it is; none: no read scheduled. */
  nextRead: 'now' | 'interval' | 'keep' | 'none';
  /** reset: the payments counted against the enrollment start again from zero. */
  payments: 'reset' | 'keep';
  /** What an enrollment request answers for this borrower. */
  outcome?: 'enrolled' | 'updated' | 'held';
}

export class IllegalTransition extends Error {
  constructor(from: MonitorFrom, event: MonitorEventType) {
    super(`a monitor in state ${from} cannot take the event ${event}`);
    this.name = 'IllegalTransition';
  }
}

const ENDED: readonly MonitorFrom[] = ['lapsed', 'removed', 'stopped', 'collected'];

/**
 * The next state of a monitor on an event, or null when the event leaves it as it is (an outcome observed
 * for an ended monitor is recorded in its history and moves nothing). Throws IllegalTransition for an event
 * that cannot happen in the current state.
 */
export function nextMonitor(cur: MonitorSnapshot, ev: MonitorEvent): MonitorChange | null {
  const s = cur.state;
  const same = { state: s as MonitorState, reason: cur.reason, blockedReason: cur.blockedReason, window: 'keep', nextRead: 'keep', payments: 'keep' } as const;
  const illegal = (): never => {
    throw new IllegalTransition(s, ev.type);
  };
  switch (ev.type) {
    case 'enrolled': {
      if (ev.held) {
        // Stored, not readable. A re-send of a monitored or held borrower is a refresh: the payment count stays.
        const refresh = s === 'monitored' || s === 'held';
        return { state: 'held', reason: ev.held, blockedReason: null, window: 'none', nextRead: 'none', payments: refresh ? 'keep' : 'reset', outcome: 'held' };
      }
      // A block of the collection rules or of the bank account stands through a re-send (the debt's chain and
      // the account's returns are the same); they are asked again with what the re-send brought
      // (collection/chain.ts), which may lift it.
      const standing = isStandingBlock(cur.blockedReason) ? cur.blockedReason : null;
      // A re-send of a monitored borrower refreshes its details and amount; the window is not extended.
      if (s === 'monitored') return { state: 'monitored', reason: null, blockedReason: standing, window: 'keep', nextRead: 'keep', payments: 'keep', outcome: 'updated' };
      // New, held that is now readable, or ended: a fresh 30 days, read at once (unless a block stands).
      return { state: 'monitored', reason: null, blockedReason: standing, window: 'fresh', nextRead: standing ? 'none' : 'now', payments: 'reset', outcome: 'enrolled' };
    }
    case 'readable':
      if (s !== 'held') return illegal();
      return { state: 'monitored', reason: null, blockedReason: null, window: 'fresh', nextRead: 'now', payments: 'reset' };
    case 'still_held':
      if (s !== 'held') return illegal();
      return ev.held === cur.reason ? null : { ...same, reason: ev.held };
    case 'read':
      if (s !== 'monitored') return illegal();
      return { ...same, nextRead: 'interval' };
    case 'removed':
      // A collected borrower is removed too: the lender wants no more debits, and a late return of the
      // collected payment must not bring monitoring back.
      if (s !== 'monitored' && s !== 'collected') return illegal();
      return { ...same, state: 'removed', window: 'keep', nextRead: 'none' };
    case 'erased':
      if (s === 'new') return illegal();
      // Erasure ends monitoring whatever the state; an ended monitor is recorded as removed.
      return { ...same, state: 'removed', nextRead: 'none' };
    case 'lapsed':
      if (s !== 'monitored') return illegal();
      return { ...same, state: 'lapsed', nextRead: 'none' };
    case 'settled':
      if (s === 'new') return illegal();
      // Collected (by the service or by a charge made outside it): nothing blocks a payment of this debt any more.
      return s === 'monitored' ? { ...same, state: 'collected', reason: null, blockedReason: null, nextRead: 'none' } : null;
    case 'returned':
      if (s === 'new') return illegal();
      if (s !== 'monitored') return null;
      // R01/R09: stays monitored, eligible when funds suffice; any other code stops collection.
      return isRetryableReturn(ev.code) ? null : { ...same, state: 'stopped', reason: ev.code ?? 'returned', nextRead: 'none' };
    case 'invalid':
      if (s === 'new') return illegal();
      return s === 'monitored' ? { ...same, state: 'stopped', reason: mustNotRetry(ev.declineCode) ? ev.declineCode! : 'invalid', nextRead: 'none' } : null;
    case 'late_returned': {
      if (s === 'new') return illegal();
      if (s !== 'monitored' && s !== 'collected') return null;
      // Inside the window, R01/R09 makes the borrower eligible again and read at once; any other code stops.
      if (isRetryableReturn(ev.code) && ev.inWindow) {
        return s === 'monitored' ? null : { ...same, state: 'monitored', reason: null, nextRead: 'now' };
      }
      return { ...same, state: 'stopped', reason: ev.code ?? 'late_returned', nextRead: 'none' };
    }
    case 'blocked':
      if (s !== 'monitored') return illegal();
      if (cur.blockedReason === ev.reason) return null;
      // Until the lender acts, a read could not lead to a debit: none is scheduled. A wait that lifts by itself
      // in place of such a block (a settled payment's late-return window) reads again.
      return { ...same, blockedReason: ev.reason, nextRead: isStandingBlock(ev.reason) ? 'none' : isStandingBlock(cur.blockedReason) ? 'now' : 'keep' };
    case 'payment_initiated':
      if (s !== 'monitored') return illegal();
      return cur.blockedReason === null ? null : { ...same, blockedReason: null };
    case 'unblocked':
      if (s !== 'monitored') return illegal();
      if (cur.blockedReason === null) return null;
      return { ...same, blockedReason: null, nextRead: isStandingBlock(cur.blockedReason) ? 'now' : 'keep' };
  }
}

/** Whether the monitor has ended: outcomes are recorded but move nothing, and a re-send starts afresh. */
export const isEnded = (s: MonitorFrom): boolean => ENDED.includes(s);
