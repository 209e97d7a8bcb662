import type { Db } from '../../platform/db';
import { borrowersAmong } from './queries';

/** The prefix of the references the service gives its payments: `DRS-{authorizer_unique_id}-{payment_id}`. */
export const REFERENCE_PREFIX = 'DRS-';

/**
 * The borrower a reference names, the prefix already taken off: the text is split at each dash, and the one
 * split whose left part is a borrower of the lender wins. No such split, or more than one: null.
 */
export function borrowerNamedBy(db: Db, lenderId: string, rest: string): { id: string; aid: string } | null {
  const lefts: string[] = [];
  for (let i = rest.indexOf('-'); i > 0; i = rest.indexOf('-', i + 1)) lefts.push(rest.slice(0, i));
  if (lefts.length === 0) return null;
  const found = borrowersAmong(db, lenderId, lefts);
  return found.length === 1 ? found[0]! : null;
}
