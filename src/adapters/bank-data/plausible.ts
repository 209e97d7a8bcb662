// Every number a bank-data source answers is checked at the edge, whichever it is (Plaid, Stripe Financial
// Connections, the HTTP bridge, the sandbox): an amount must be whole cents a JavaScript number holds exactly,
// within a plausible range, and the time of a balance must be a real time, not in the future. An answer that is
// not is a failed read with its reason named, never a success: a balance of 1e300 (or Infinity) once decided a
// debit, and an as_of of 1e300 made every list that shows it fail.

/** The largest balance, either way, a borrower's account is taken to hold: one billion dollars. */
export const PLAUSIBLE_BALANCE_CENTS = 100_000_000_000;
/** How far ahead of the service's clock a provider's time for a balance may be (clocks differ a little). */
export const AS_OF_SLACK_MS = 60_000;

export const IMPLAUSIBLE_BALANCE = 'implausible_balance';
export const IMPLAUSIBLE_AS_OF = 'implausible_as_of';

/**
 * Why a stored reading cannot be shown as the balance it holds, or null when it can: a row written before the
 * sources' answers were checked may hold a balance or a time no reading may have. Such a row is shown as the
 * failed read it was, never as a balance to debit against nor as a time that cannot be written (an as_of of
 * 1e300 once made every list that showed it answer 500). `recordedAt` is the row's own time: the provider's
 * time may not be ahead of when the answer was recorded.
 */
export function storedReadingProblem(cents: number | null, asOf: number | null, recordedAt: number): typeof IMPLAUSIBLE_BALANCE | typeof IMPLAUSIBLE_AS_OF | null {
  if (cents !== null && (!Number.isSafeInteger(cents) || Math.abs(cents) > PLAUSIBLE_BALANCE_CENTS)) return IMPLAUSIBLE_BALANCE;
  if (asOf !== null && (!Number.isFinite(asOf) || asOf < 0 || asOf > recordedAt + AS_OF_SLACK_MS)) return IMPLAUSIBLE_AS_OF;
  return null;
}

/** Why a balance answered by a source cannot be taken, or null when it can. */
export function implausible(balanceCents: number, asOf: number | null, now: number): typeof IMPLAUSIBLE_BALANCE | typeof IMPLAUSIBLE_AS_OF | null {
  if (!Number.isSafeInteger(balanceCents) || Math.abs(balanceCents) > PLAUSIBLE_BALANCE_CENTS) return IMPLAUSIBLE_BALANCE;
  if (asOf !== null && (!Number.isFinite(asOf) || asOf < 0 || asOf > now + AS_OF_SLACK_MS)) return IMPLAUSIBLE_AS_OF;
  return null;
}
