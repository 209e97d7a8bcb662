import { ACCOUNT_STATE_SEVERITY } from '../../adapters/processors/account-states';
import type { AccountType, BankAccountState, ValidationMethod } from '../../../db/schema/enums';
import { sql, type SQL } from 'drizzle-orm';
import type { AccountStanding, BankAccountRow, ChangeRow, NewChange } from './store';

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

// Notifications of Change: the statements both engines run as they are, written once. What differs is how a
// list and a fingerprint are bound, which each engine gives (`Dialect`), and how a statement is run.

/** How an engine binds what the statements below take. */
export interface Dialect {
  /** `IN (…)` of a list of text, bound as one parameter. */
  inTexts: (values: readonly string[]) => SQL;
  /** A fingerprint (hex) as the bytes the column holds. */
  bytes: (hex: string) => SQL;
  /** Locks the rows a read in a transaction returns until it ends (PostgreSQL's FOR UPDATE; SQLite has one writer). */
  forUpdate: SQL;
}

const CHANGE_COLUMNS = sql.raw(`id, lender_id AS "lenderId", bank_account_id AS "bankAccountId", code, source, reference, corrected_sealed AS "correctedSealed",
  old_last4 AS "oldLast4", new_last4 AS "newLast4", status, received_at AS "receivedAt", due_by AS "dueBy", applied_at AS "appliedAt", applied_by AS "appliedBy"`);

type RawChange = Omit<ChangeRow, 'receivedAt' | 'dueBy' | 'appliedAt'> & { receivedAt: number | string; dueBy: number | string; appliedAt: Num };
export const changeRowOf = (r: RawChange): ChangeRow => ({ ...r, receivedAt: Number(r.receivedAt), dueBy: Number(r.dueBy), appliedAt: num(r.appliedAt) });
/** A change read with how many its account has; `n`, its place among them, is the query's own and not answered. */
export const changeWithTotalOf = ({ n, total, ...r }: RawChange & { n: number | string; total: number | string }): ChangeRow & { total: number } => ({ ...changeRowOf(r), total: Number(total) });

/** `blocks_due_at` moved on, so the account's borrowers are told again (as a return does). */
const tellAgain = (now: number) => sql`CASE WHEN COALESCE(blocks_due_at, 0) + 1 > CAST(${now} AS BIGINT) THEN COALESCE(blocks_due_at, 0) + 1 ELSE CAST(${now} AS BIGINT) END`;

/** The account is invalid by an R12 (sold to another bank) and nothing else. */
const SOLD = `(state = 'invalid' AND return_codes = 'R12')`;

export const changeStatements = (d: Dialect) => ({
  unvalidatedAmong: (enrollmentIds: readonly string[]) => sql`
    SELECT e.id FROM enrollments e JOIN bank_accounts a ON a.id = e.bank_account_id
     WHERE e.id ${d.inTexts(enrollmentIds)} AND NOT (a.validated_at IS NOT NULL AND (a.number_changed_at IS NULL OR a.validated_at > a.number_changed_at))`,
  accountOfMatch: (paymentId: string | null, enrollmentId: string) => sql`
    SELECT a.id, a.last4 FROM bank_accounts a
     WHERE a.id = COALESCE((SELECT p.bank_account_id FROM payments p WHERE p.id = ${paymentId}), (SELECT e.bank_account_id FROM enrollments e WHERE e.id = ${enrollmentId}))`,
  insert: (r: NewChange) => sql`
    INSERT INTO account_changes (id, lender_id, bank_account_id, code, source, source_key, reference, corrected_sealed, old_last4, new_last4, status, received_at, due_by)
    VALUES (${r.id}, ${r.lenderId}, ${r.bankAccountId}, ${r.code}, ${r.source}, ${r.sourceKey}, ${r.reference}, ${r.correctedSealed}, ${r.oldLast4}, ${r.newLast4}, ${r.status},
            CAST(${r.receivedAt} AS BIGINT), CAST(${r.dueBy} AS BIGINT))
    ON CONFLICT (lender_id, source_key) DO NOTHING RETURNING id`,
  hold: (v: { accountId: string; changeId: string; tell: boolean; now: number }) => sql`
    UPDATE bank_accounts SET pending_change_id = COALESCE(pending_change_id, ${v.changeId}),
           blocks_due_at = ${v.tell ? tellAgain(v.now) : sql.raw('blocks_due_at')}, updated_at = CAST(${v.now} AS BIGINT)
     WHERE id = ${v.accountId}`,
  // Locked: two replicas applying the same change (or the job and the lender) apply it once, the second finding
  // it applied once the first commits.
  changeOf: (id: string, lenderId?: string) =>
    sql`SELECT ${CHANGE_COLUMNS} FROM account_changes WHERE id = ${id}${lenderId === undefined ? sql`` : sql` AND lender_id = ${lenderId}`} ${d.forUpdate}`,
  toApply: (limit: number) => sql`SELECT id FROM account_changes WHERE status = 'received' ORDER BY received_at, id LIMIT ${limit}`,
  changesOn: (accountIds: readonly string[], perAccount: number) => sql`
    SELECT * FROM (
      SELECT ${CHANGE_COLUMNS}, ROW_NUMBER() OVER (PARTITION BY bank_account_id ORDER BY received_at DESC, id DESC) AS n,
             COUNT(*) OVER (PARTITION BY bank_account_id) AS total
        FROM account_changes WHERE bank_account_id ${d.inTexts(accountIds)}) AS c
     WHERE n <= ${perAccount} ORDER BY "bankAccountId", "receivedAt" DESC, id DESC`,
  byFingerprint: (lenderId: string, fingerprint: string) => sql`SELECT id FROM bank_accounts WHERE lender_id = ${lenderId} AND fingerprint = ${d.bytes(fingerprint)}`,
  finishChange: (v: { changeId: string; status: string; by: string; now: number }) =>
    sql`UPDATE account_changes SET status = ${v.status}, applied_at = CAST(${v.now} AS BIGINT), applied_by = ${v.by} WHERE id = ${v.changeId}`,
  // An account invalid by R12 alone (sold to another bank) is corrected by a new routing number: ok again.
  finishAccount: (v: { accountId: string; fingerprint: string | null; last4: string | null; accountType: string | null; numberChanged: boolean; routingCorrected?: boolean; now: number }) => sql`
    UPDATE bank_accounts SET
           state = CASE WHEN ${v.routingCorrected ? 1 : 0} = 1 AND ${sql.raw(SOLD)} THEN 'ok' ELSE state END,
           state_since = CASE WHEN ${v.routingCorrected ? 1 : 0} = 1 AND ${sql.raw(SOLD)} THEN CAST(${v.now} AS BIGINT) ELSE state_since END,
           state_reference = CASE WHEN ${v.routingCorrected ? 1 : 0} = 1 AND ${sql.raw(SOLD)} THEN NULL ELSE state_reference END,
           fingerprint = ${v.fingerprint === null ? sql.raw('fingerprint') : d.bytes(v.fingerprint)},
           last4 = COALESCE(${v.last4}, last4),
           account_type = COALESCE(${v.accountType}, account_type),
           number_changed_at = ${v.numberChanged ? sql`CAST(${v.now} AS BIGINT)` : sql.raw('number_changed_at')},
           pending_change_id = (SELECT c.id FROM account_changes c WHERE c.bank_account_id = ${v.accountId} AND c.status IN ('received', 'review') ORDER BY c.received_at, c.id LIMIT 1),
           blocks_due_at = ${tellAgain(v.now)},
           updated_at = CAST(${v.now} AS BIGINT)
     WHERE id = ${v.accountId}`,
  confirm: (lenderId: string, id: string) => sql`UPDATE account_changes SET status = 'received' WHERE id = ${id} AND lender_id = ${lenderId} AND status = 'review' RETURNING id`,
});
