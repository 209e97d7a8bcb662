// What collection's stores on both engines share (store.sqlite.ts, store.pg.ts): neither imports the other.

/** How long a claimed payment stays leased: longer than a processor call can take with the SDK's own retries. */
export const DISPATCH_LEASE_MS = 120_000;

/**
 * The borrower revoked its authorization and gave none dated after it since (Regulation E; a re-send's
 * authorization or a new one recorded under the payday rule): in SQL, of the
 * enrollments row as the statement names it (REVOKED: the table itself; REVOKED_E: as `e`).
 */
const revokedIn = (e: string) =>
  `(${e}revoked_at IS NOT NULL AND (${e}authorization_at IS NULL OR ${e}authorization_at <= ${e}revoked_at) AND (${e}reauthorized_at IS NULL OR ${e}reauthorized_at <= ${e}revoked_at))`;
export const REVOKED = revokedIn('');
export const REVOKED_E = revokedIn('e.');

/**
 * The columns of a borrower a decision reads (decision.ts's DecidingEnrollment, and what decide.ts writes from):
 * a flush of results reads them for each of its borrowers, so nothing else of the row is read.
 */
export const DECIDING_COLUMNS = [
  'id',
  'lenderId',
  'authorizerUniqueId',
  'state',
  'windowEndsAt',
  'blockedReason',
  'rail',
  'routingNumber',
  'sealed',
  'bankAccountId',
  'merchantRef',
  'cfpbCovered',
  'authorizationAt',
  'collectableAmountCents',
  'paymentsUsed',
  'revokedAt',
  'reauthorizedAt',
  'reauthorization',
  'regEElection',
] as const;

/** Of an enrollments table's columns (either engine's), those a decision reads (DECIDING_COLUMNS). */
export function decidingColumns<C extends Record<(typeof DECIDING_COLUMNS)[number], unknown>>(columns: C): Pick<C, (typeof DECIDING_COLUMNS)[number]> {
  return Object.fromEntries(DECIDING_COLUMNS.map((k) => [k, columns[k]])) as Pick<C, (typeof DECIDING_COLUMNS)[number]>;
}
