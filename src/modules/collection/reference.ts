import type { Db } from '../../platform/db';
import { IDENTIFIER_MAX as AID_MAX } from '../../platform/fields';
import { borrowersAmong, paymentById } from './queries';

/** The prefix of the references the service gives its payments: `DRS-{authorizer_unique_id}-{payment_id}`. */
export const REFERENCE_PREFIX = 'DRS-';

/**
 * The borrower a reference names, the prefix already taken off: the text is split at each dash, and the one
 * split whose left part is a borrower of the lender wins. No such split, or more than one: null.
 */
export function borrowerNamedBy(db: Db, lenderId: string, rest: string): { id: string; aid: string } | null {
  const lefts = namesIn(rest);
  if (lefts.length === 0) return null;
  const found = borrowersAmong(db, lenderId, lefts);
  return found.length === 1 ? found[0]! : null;
}


/**
 * The left parts of a reference (prefix taken off) that could be a borrower's identifier: each part before a
 * dash, up to the longest identifier a borrower can have, so that a long reference costs no more than that.
 */
export function namesIn(rest: string): string[] {
  const lefts: string[] = [];
  for (let i = rest.indexOf('-'); i > 0 && i <= AID_MAX; i = rest.indexOf('-', i + 1)) lefts.push(rest.slice(0, i));
  return lefts;
}

const PAYMENT_ID_TAIL = /-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/**
 * Whether a reference is that of a payment the service made for another lender. Two lenders can reach one
 * processor account (a key registered twice, an account shared by mistake): its feed then carries both
 * lenders' payments, and a payment is matched to the lender that made it, never to a borrower of the same
 * identifier at another lender. The payment id is the reference's tail, so this is one primary-key read.
 */
export function madeForAnotherLender(db: Db, lenderId: string, reference: string | null): boolean {
  const id = reference?.startsWith(REFERENCE_PREFIX) ? PAYMENT_ID_TAIL.exec(reference)?.[1] : undefined;
  if (!id) return false;
  const p = paymentById(db, id);
  return p !== null && p.reference === reference && p.lenderId !== lenderId;
}
