import type { BankAccountState } from '../../../db/schema/enums';

// What a return says of the bank account it came back from, whoever the borrower: one table, read by the
// outcome path (collection/reactions.ts) for every return recorded with a code. A state holds for every
// borrower on the account (payments.md, Bank accounts). R01/R09 and the codes not listed say nothing of the
// account: the borrower's own rules (return-codes.ts) still apply to them. Forward only: a later return never
// moves an account back to `ok`; only a correction does, of an R12 alone (collection/account-changes.ts).

/** A state that blocks debits to the account. */
export type BlockingAccountState = Exclude<BankAccountState, 'ok'>;

/** The account's state a return code sets. */
export const ACCOUNT_STATE_OF_RETURN: Readonly<Record<string, BlockingAccountState>> = {
  // The account is not there to debit: closed, no account, an invalid number, an invalid routing number, a
  // non-transaction account; R12 (sold to another bank) until a Notification of Change gives its new routing
  // number (an account invalid by R12 alone is ok again once it is applied).
  R02: 'invalid',
  R03: 'invalid',
  R04: 'invalid',
  R12: 'invalid',
  R13: 'invalid',
  R20: 'invalid',
  R16: 'frozen',
  // Nacha's unauthorized class: the account holder says no, whoever the borrower.
  R05: 'unauthorized',
  R07: 'unauthorized',
  R10: 'unauthorized',
  R11: 'unauthorized',
  R29: 'unauthorized',
  R51: 'unauthorized',
  R14: 'deceased',
  R15: 'deceased',
};

/**
 * The states from the least to the most severe, by what it takes to debit the account again: `unauthorized`
 * lifts for a borrower whose authorization is dated after the account's last return; `frozen` only when the
 * bank releases the account, `invalid` only once the account is corrected, `deceased` never. Between two
 * blocking states the more severe one is kept (and, between equals, the first); every code is kept beside it.
 */
export const ACCOUNT_STATE_SEVERITY: readonly BankAccountState[] = ['ok', 'unauthorized', 'frozen', 'invalid', 'deceased'];

/**
 * The state a return code sets on its account, or null when it says nothing of the account. `stricter`: the
 * lender's own table (its policy's account_return_states), which may only make a code's action more severe:
 * a code the table above says nothing of may block the account, one it lists may take a more severe state.
 */
export function accountStateOfReturn(code: string | null | undefined, stricter?: Readonly<Record<string, BlockingAccountState>>): BlockingAccountState | null {
  if (code == null) return null;
  const nacha = Object.hasOwn(ACCOUNT_STATE_OF_RETURN, code) ? ACCOUNT_STATE_OF_RETURN[code]! : null;
  const own = stricter && Object.hasOwn(stricter, code) ? stricter[code]! : null;
  if (own === null) return nacha;
  return nacha === null || ACCOUNT_STATE_SEVERITY.indexOf(own) > ACCOUNT_STATE_SEVERITY.indexOf(nacha) ? own : nacha;
}

/** Whether a lender's state for a code is looser than this table's (it may only be as severe, or more). */
export const looserThanNacha = (code: string, state: BlockingAccountState): boolean =>
  Object.hasOwn(ACCOUNT_STATE_OF_RETURN, code) && ACCOUNT_STATE_SEVERITY.indexOf(state) < ACCOUNT_STATE_SEVERITY.indexOf(ACCOUNT_STATE_OF_RETURN[code]!);

/** The state an account takes from `current` on a return setting `next`: the more severe one, the first between equals. */
export const accountStateAfter = (current: BankAccountState, next: BlockingAccountState): BankAccountState =>
  ACCOUNT_STATE_SEVERITY.indexOf(next) > ACCOUNT_STATE_SEVERITY.indexOf(current) ? next : current;
