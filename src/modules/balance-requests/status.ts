// balance_status_code → meaning and CSV export Status. 9000 splits three ways by cause, so the cause is
// recorded with the result (export_status) rather than derived from the code.

import type { ExportStatus } from '../../../db/schema/enums';

export type { ExportStatus };

export const STATUS_MESSAGES: Record<number, string> = {
  0: 'Success, balance retrieved',
  2560: 'Invalid phone number',
  3000: 'No tax ID match',
  3001: 'No SSN match',
  3100: 'No date of birth match',
  3200: 'Account closed',
  3300: 'Institution not supported',
  3310: 'Institution currently in testing',
  3400: 'No match with provided authorizer information',
  9000: 'Other error',
};

export function exportStatusFor(code: number, cause: 'provider' | 'retry_limit' | 'internal' = 'provider'): ExportStatus {
  switch (code) {
    case 0:
      return 'SUCCESS';
    case 2560:
    case 3000:
    case 3001:
    case 3100:
    case 3400:
      return 'NO_MATCH';
    case 3200:
      return 'ACCOUNT_CLOSED';
    case 3300:
    case 3310:
      return 'BANK_UNSUPPORTED';
    default:
      return cause === 'retry_limit' ? 'RETRY_LIMIT' : cause === 'internal' ? 'PROCESSING_ERROR' : 'RETRIEVAL_FAILED';
  }
}

/** The detail of a result the database refused as read: recorded in its place, with nothing of what was refused. */
export const RESULT_NOT_STORABLE = 'result_not_storable';

/** error_message of a history entry: the meaning of the code, with the cause for the 9000 family. */
export function errorMessageFor(code: number, exportStatus: string, detail: string | null = null): string {
  if (detail === 'relink_required') return 'Other error: relink_required, the borrower must link the account again (send a new bank_link)';
  if (detail === 'connection_missing') return 'Other error: no bank-data connection for the bank_link’s provider';
  if (detail === 'connection_refused') return 'Other error: the provider refused the lender’s bank-data credentials';
  if (detail === 'stale_balance') return 'Other error: stale_balance, the institution has no balance newer than a day';
  if (detail === 'answer_too_large') return 'Other error: answer_too_large, the source answered more than it may (1 MB for a balance), and it was not read';
  if (detail === 'not_an_account') return 'Other error: not_an_account, Stripe answered something other than the linked account';
  if (detail === 'implausible_balance') return 'Other error: implausible_balance, the source answered a balance no account holds (not whole cents, or past a billion dollars either way)';
  if (detail === 'not_a_cash_account') return 'Other error: not_a_cash_account, the linked account is a credit, loan or investment account, whose balance is not money to debit';
  if (detail === RESULT_NOT_STORABLE) return 'Other error: result_not_storable, the database refused the result as read; nothing of it was kept';
  if (detail === 'implausible_as_of') return 'Other error: implausible_as_of, the source’s time for the balance is not a time, or is in the future';
  if (code === 9000 && exportStatus === 'RETRY_LIMIT') return 'Other error: the bank-data provider failed on every retry';
  if (code === 9000 && exportStatus === 'PROCESSING_ERROR') return 'Other error: the check could not be processed';
  return STATUS_MESSAGES[code] ?? STATUS_MESSAGES[9000]!;
}
