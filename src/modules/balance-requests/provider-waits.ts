// How long a linked read waits on its provider without spending one of its attempts, and how often it looks.
//
// A documented rate limit (Plaid's RATE_LIMIT_EXCEEDED, Stripe's 429) and a Stripe balance refresh still running
// are not failures of the read: the item is put back to be read later, its attempts untouched. Plaid names when
// the next window opens (its minute, adapters/bank-data/plaid-budget.ts); Stripe does not, so its 429s back off
// exponentially from how long the item has waited: 1, 1, 2, 4, 8, 16, 30, 30 … s. A pending refresh is looked at
// the same way, up to every 2 minutes: 1, 2, 4, 8, 16, 32 s after the refresh (7 retrieves for a refresh pending
// 30 s, 12 over the whole wait). Every wait of an item counts from its `waiting_since`, the first time it waited:
// past PROVIDER_WAIT_MS in all, the next rate limit or pending refresh spends an attempt as an outage does, so an
// item never waits for ever.

/** How long an item waits on its provider (rate limits and pending refreshes together) before waits spend attempts. */
export const PROVIDER_WAIT_MS = 10 * 60_000;
/** Stripe's 429: the first wait, and the longest. */
export const RATE_LIMIT_BACKOFF_MIN_MS = 1_000;
export const RATE_LIMIT_BACKOFF_MAX_MS = 30_000;
/** A pending refresh: the first look after it, and the longest between looks. */
export const REFRESH_LOOK_MIN_MS = 1_000;
export const REFRESH_LOOK_MAX_MS = 120_000;

const clamp = (v: number, min: number, max: number) => Math.min(max, Math.max(min, v));

/** The wait after a rate limit that named no time, for an item that has waited `waitedMs` so far. */
export const rateLimitBackoffMs = (waitedMs: number, scale = 1): number => clamp(waitedMs, RATE_LIMIT_BACKOFF_MIN_MS * scale, RATE_LIMIT_BACKOFF_MAX_MS * scale);

/** The wait before looking again at a refresh pending for `waitedMs`. */
export const refreshLookMs = (waitedMs: number, scale = 1): number => clamp(waitedMs, REFRESH_LOOK_MIN_MS * scale, REFRESH_LOOK_MAX_MS * scale);
