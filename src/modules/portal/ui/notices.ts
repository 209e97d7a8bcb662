// The payment notices' vocabulary in words (docs/payments.md, Payment notices): a debit's class, what asks for
// its notice, and a Regulation E election. The borrower page and the collection rules page say them alike.

import type { NoticeClass } from '../../../../db/schema/enums';
import { dollars } from './format';

export const NOTICE_CLASS_WORDS: Record<NoticeClass, string> = {
  first: 'first payment: no debit of the borrower has reached its processor before',
  unusual: 'unusual withdrawal: its date or amount follows the balance, not a schedule',
  reinitiation: 'reinitiation of a returned debit',
  regular: 'on a date of the borrower’s new authorization, within its amount and channel',
  consumer_initiated: 'a single payment the borrower asked for',
};

/** What asks for a payment's notice, by the API's `requirements` value. */
export const NOTICE_NEED_WORDS: Record<string, string> = {
  cfpb: 'the CFPB payday rule’s payment notice (12 CFR 1041.9(b))',
  reg_e: 'Regulation E’s varying-amount notice (12 CFR 1005.10(d))',
};

/** A Regulation E election as the API gives it (`{type, …}`), in words; an unknown type by its name. */
export function electionWords(e: { type: string; [k: string]: unknown }): string {
  const cents = (k: string) => (typeof e[k] === 'number' ? dollars(e[k]) : '—');
  switch (e.type) {
    case 'none':
      return 'none: no varying-amount notice is asked';
    case 'always':
      return 'always: a notice whenever the amount differs from the last debit';
    case 'outside_range':
      return `outside a range: a notice only below ${cents('min_cents')} or above ${cents('max_cents')}`;
    case 'difference_over':
      return `beyond a difference: a notice only when the amount differs from the last debit by more than ${cents('amount_cents')}`;
    default:
      return e.type;
  }
}
