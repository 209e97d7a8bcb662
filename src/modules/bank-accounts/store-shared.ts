import { ACCOUNT_STATE_SEVERITY } from '../../adapters/processors/account-states';
import type { AccountType, BankAccountState, ValidationMethod } from '../../../db/schema/enums';
import type { AccountStanding, BankAccountRow } from './store';

// What both engines' bank-account stores share: the severity of a state as SQL, and a row as the store answers it.

/** `CASE <column> WHEN 'unauthorized' THEN 1 … END`: a state's place in ACCOUNT_STATE_SEVERITY, in SQL. */
export const severityOf = (column: string): string =>
  `CASE ${column} ${ACCOUNT_STATE_SEVERITY.map((s, i) => `WHEN '${s}' THEN ${i}`).join(' ')} ELSE 0 END`;

/**
 * The bank account `a` blocks the borrower `e` whatever the lender's policy (monitor.ts accountBlockOf, in SQL):
 * any state but ok, but an unauthorized one for a borrower whose authorization is dated after the account's
 * last return; or a Notification of Change on it not yet applied.
 */
export const BLOCKING_ACCOUNT = `(a.pending_change_id IS NOT NULL OR (a.state <> 'ok' AND NOT (a.state = 'unauthorized' AND e.authorization_at IS NOT NULL AND a.last_return_at IS NOT NULL AND e.authorization_at > a.last_return_at)))`;

/**
 * The columns of an account's standing, named as AccountStanding's fields, for a query whose bank_accounts is
 * `a` (`prefix` 'a.'), or the table itself ('').
 */
export const standingColumns = (prefix: string): string =>
  `${prefix}state, ${prefix}last_return_at AS "lastReturnAt", ${prefix}pending_change_id AS "pendingChangeId", ${prefix}validated_at AS "validatedAt", ${prefix}number_changed_at AS "numberChangedAt"`;

type Num = number | string | null;
const num = (v: Num): number | null => (v === null ? null : Number(v));

/** A standing as read (numbers perhaps as text on PostgreSQL). */
export type RawStanding = { state: BankAccountState; lastReturnAt: Num; pendingChangeId: string | null; validatedAt: Num; numberChangedAt: Num };
export const standingOf = (r: RawStanding): AccountStanding => ({
  state: r.state,
  lastReturnAt: num(r.lastReturnAt),
  pendingChangeId: r.pendingChangeId,
  validatedAt: num(r.validatedAt),
  numberChangedAt: num(r.numberChangedAt),
});

/** A row read with the account's standing beside it (its columns named account…), as the decision takes it: the account's standing as one field, null when none is linked. */
export type StandingBeside = { accountState: BankAccountState | null; accountLastReturnAt: Num; accountPendingChangeId: string | null; accountValidatedAt: Num; accountNumberChangedAt: Num };
export function withStanding<R>({
  accountState,
  accountLastReturnAt,
  accountPendingChangeId,
  accountValidatedAt,
  accountNumberChangedAt,
  ...row
}: R & StandingBeside): Omit<R, 'account'> & { account: AccountStanding | null } {
  const account =
    accountState === null
      ? null
      : standingOf({ state: accountState, lastReturnAt: accountLastReturnAt, pendingChangeId: accountPendingChangeId, validatedAt: accountValidatedAt, numberChangedAt: accountNumberChangedAt });
  return { ...(row as unknown as Omit<R, 'account'>), account };
}

/** The columns a row is read with, named as BankAccountRow's fields (but the codes, one text). */
export const ACCOUNT_COLUMNS = `id, lender_id AS "lenderId", last4, ${standingColumns('')}, state_since AS "stateSince", return_codes AS "returnCodes",
  state_reference AS "stateReference", account_type AS "accountType", validation_method AS "validationMethod", validation_source AS "validationSource",
  validation_reference AS "validationReference", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** A row as read (the codes one comma-separated text, numbers perhaps as text on PostgreSQL), as the store answers it. */
export function accountRowOf(
  r: RawStanding & {
    id: string;
    lenderId: string;
    last4: string;
    stateSince: number | string;
    returnCodes: string | null;
    stateReference: string | null;
    accountType: AccountType | null;
    validationMethod: ValidationMethod | null;
    validationSource: string | null;
    validationReference: string | null;
    createdAt: number | string;
    updatedAt: number | string;
  },
): BankAccountRow {
  return {
    ...standingOf(r),
    id: r.id,
    lenderId: r.lenderId,
    last4: r.last4,
    stateSince: Number(r.stateSince),
    returnCodes: r.returnCodes ? r.returnCodes.split(',') : [],
    stateReference: r.stateReference,
    accountType: r.accountType,
    validationMethod: r.validationMethod,
    validationSource: r.validationSource,
    validationReference: r.validationReference,
    createdAt: Number(r.createdAt),
    updatedAt: Number(r.updatedAt),
  };
}
