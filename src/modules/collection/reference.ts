import type { StoreCtx } from '../../platform/store';
import { IDENTIFIER_MAX as AID_MAX } from '../../platform/fields';

import { REFERENCE_PREFIX } from '../../adapters/processors/types';

export { REFERENCE_PREFIX };

/** The reference of a payment the service initiates: `DRS-{authorizer_unique_id}-{payment_id}`. */
export const referenceOf = (authorizerUniqueId: string, paymentId: string): string => `${REFERENCE_PREFIX}${authorizerUniqueId}-${paymentId}`;

/** The borrower (and, for the service's own payments, the payment) an outcome belongs to. */
export interface PaymentMatch {
  enrollmentId: string;
  authorizerUniqueId: string;
  paymentId: string | null;
  /** The amount the service sent, for its own payments: every event of a reference carries it. */
  amountCents: number | null;
  /** Whether the service already knows the processor's id of its payment. */
  processorIdKnown?: boolean;
}

/** Where matching looks things up: straight from the database (polling), or from a slice's keyed look-ups (uploads). */
export interface MatchSource {
  /** The lender's own payment with this reference. */
  payment(reference: string): { id: string; enrollmentId: string; aid: string; amount: number; pid?: string | null } | null;
  /** The lender's borrowers among these identifiers, by identifier. */
  borrowers(ids: string[]): Map<string, string>;
  /** Whether the reference is that of a payment the service made for another lender. */
  othersPayment(reference: string): boolean;
}

/**
 * The one matching of an outcome to a borrower (payments.md, section 5), for polling and uploads alike: the
 * service's own payment by its reference; else, unless it is another lender's payment, the one borrower the
 * reference names — split after the `DRS-` prefix at each dash, the split whose left part is a borrower of
 * the lender; none or more than one: unmatched. `prefixed`: only `DRS-` references name borrowers (the
 * processor's feed); an uploaded reference may come without the prefix.
 */
export function matchReference(src: MatchSource, reference: string, opts: { prefixed: boolean }): PaymentMatch | null {
  const own = src.payment(reference);
  if (own) return ownMatch(own);
  const hasPrefix = reference.startsWith(REFERENCE_PREFIX);
  if (opts.prefixed && !hasPrefix) return null;
  if (hasPrefix && src.othersPayment(reference)) return null;
  const names = namesInReference(reference);
  if (names.length === 0) return null;
  return oneBorrower(src.borrowers(names));
}

/** The match of the service's own payment. */
export const ownMatch = (own: NonNullable<ReturnType<MatchSource['payment']>>): PaymentMatch => ({
  enrollmentId: own.enrollmentId,
  authorizerUniqueId: own.aid,
  paymentId: own.id,
  amountCents: own.amount,
  processorIdKnown: !!own.pid,
});

/** The one borrower found, or unmatched when none or more than one. */
function oneBorrower(found: Map<string, string>): PaymentMatch | null {
  if (found.size !== 1) return null;
  const [[aid, enrollmentId]] = [...found];
  return { enrollmentId: enrollmentId!, authorizerUniqueId: aid!, paymentId: null, amountCents: null };
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
export async function madeForAnotherLender(c: StoreCtx, lenderId: string, reference: string | null): Promise<boolean> {
  const id = paymentIdIn(reference);
  if (!id) return false;
  const p = await c.deps.stores.matching.paymentById(c, id);
  return p !== null && p.reference === reference && p.lenderId !== lenderId;
}

/** The payment id a reference of the service's ends with, if it is one. */
export const paymentIdIn = (reference: string | null): string | undefined =>
  reference?.startsWith(REFERENCE_PREFIX) ? PAYMENT_ID_TAIL.exec(reference)?.[1] : undefined;

/** The identifiers a reference could name, its `DRS-` prefix (if any) taken off. */
export const namesInReference = (reference: string): string[] =>
  namesIn(reference.startsWith(REFERENCE_PREFIX) ? reference.slice(REFERENCE_PREFIX.length) : reference);
