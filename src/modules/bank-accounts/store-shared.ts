import { ACCOUNT_STATE_SEVERITY } from '../../adapters/processors/account-states';
import type { BankAccountState } from '../../../db/schema/enums';
import type { BankAccountRow } from './store';

// What both engines' bank-account stores share: the severity of a state as SQL, and a row as the store answers it.

/** `CASE <column> WHEN 'unauthorized' THEN 1 … END`: a state's place in ACCOUNT_STATE_SEVERITY, in SQL. */
export const severityOf = (column: string): string =>
  `CASE ${column} ${ACCOUNT_STATE_SEVERITY.map((s, i) => `WHEN '${s}' THEN ${i}`).join(' ')} ELSE 0 END`;

/** The columns a row is read with, named as BankAccountRow's fields (but the codes, one text). */
export const ACCOUNT_COLUMNS = `id, lender_id AS "lenderId", last4, state, state_since AS "stateSince", return_codes AS "returnCodes",
  state_reference AS "stateReference", last_return_at AS "lastReturnAt", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** A row as read (the codes one comma-separated text, numbers perhaps as text on PostgreSQL), as the store answers it. */
export function accountRowOf(r: {
  id: string;
  lenderId: string;
  last4: string;
  state: BankAccountState;
  stateSince: number | string;
  returnCodes: string | null;
  stateReference: string | null;
  lastReturnAt: number | string | null;
  createdAt: number | string;
  updatedAt: number | string;
}): BankAccountRow {
  return {
    id: r.id,
    lenderId: r.lenderId,
    last4: r.last4,
    state: r.state,
    stateSince: Number(r.stateSince),
    returnCodes: r.returnCodes ? r.returnCodes.split(',') : [],
    stateReference: r.stateReference,
    lastReturnAt: r.lastReturnAt === null ? null : Number(r.lastReturnAt),
    createdAt: Number(r.createdAt),
    updatedAt: Number(r.updatedAt),
  };
}
