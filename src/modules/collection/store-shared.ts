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
