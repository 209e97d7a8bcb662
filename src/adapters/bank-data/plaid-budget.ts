import { TransientProviderError } from './types';

// What Plaid's documentation allows, kept by the Plaid source.
//
// Time: `/accounts/balance/get` "typically" answers in less than 10 seconds, "but occasionally up to 30 seconds or
// more"; `/transactions/sync` reads the institution too. Those two are given PLAID_SLOW_TIMEOUT_MS; the cheap
// calls (a credential check) PLAID_TIMEOUT_MS.
//
// Rate: `ACCOUNTS_BALANCE_GET_LIMIT` is 5 balance calls per Item per minute (and 1,200 per client per minute),
// answered HTTP 429 `RATE_LIMIT_EXCEEDED`. The source counts its own balance calls per Item over the last
// minute and does not make a sixth: the read is given back as rate-limited, to be asked once the oldest call
// has left the window. A 429 (the lender's own calls to the Item count too) closes the Item for a whole
// minute from the refusal, which is past the end of Plaid's window however it is aligned, so one refusal
// per Item is the most the service meets. Neither spends a read attempt.

/** Balance and transactions calls: Plaid's "up to 30 seconds or more", and room for the answer. */
export const PLAID_SLOW_TIMEOUT_MS = 40_000;
/** Cheap calls (`/institutions/get`). */
export const PLAID_TIMEOUT_MS = 10_000;
/** Balance calls per Item per window (ACCOUNTS_BALANCE_GET_LIMIT). */
export const PLAID_BALANCE_CALLS_PER_ITEM = 5;
/** Plaid's window: a minute. */
export const PLAID_RATE_WINDOW_MS = 60_000;
/** Items whose recent calls are kept at most (the least recently called forgotten first). */
const MAX_ITEMS = 100_000;

/** The timeout of a call to `path`. */
export const plaidTimeoutMs = (path: string): number => (path === '/accounts/balance/get' || path === '/transactions/sync' ? PLAID_SLOW_TIMEOUT_MS : PLAID_TIMEOUT_MS);

interface ItemCalls {
  /** Times of the calls in the current window, oldest first. */
  at: number[];
  /** Closed until then by a refusal. */
  closedUntil: number;
}

/** Balance calls per Item over the last window, by a hash of the Item's access token (never the token itself). */
export class PlaidItemBudget {
  private readonly items = new Map<string, ItemCalls>();
  constructor(private readonly windowMs = PLAID_RATE_WINDOW_MS, private readonly perWindow = PLAID_BALANCE_CALLS_PER_ITEM) {}

  private key(accessToken: string): string {
    return new Bun.CryptoHasher('sha256').update(accessToken).digest('hex').slice(0, 32);
  }

  private entry(accessToken: string): ItemCalls {
    const k = this.key(accessToken);
    let e = this.items.get(k);
    if (e) this.items.delete(k);
    else {
      if (this.items.size >= MAX_ITEMS) this.items.delete(this.items.keys().next().value!);
      e = { at: [], closedUntil: 0 };
    }
    this.items.set(k, e);
    return e;
  }

  /** Takes one call of the Item's budget now, or throws the rate-limited error naming when one is free. */
  take(accessToken: string, now: number): void {
    const e = this.entry(accessToken);
    while (e.at.length > 0 && e.at[0]! <= now - this.windowMs) e.at.shift();
    if (e.closedUntil > now) throw limited(e.closedUntil - now);
    if (e.at.length >= this.perWindow) throw limited(e.at[0]! + this.windowMs - now);
    e.at.push(now);
  }

  /** Plaid refused a call of the Item for its rate: closed for a whole window from now. */
  refused(accessToken: string, now: number): TransientProviderError {
    const e = this.entry(accessToken);
    e.closedUntil = now + this.windowMs;
    return limited(this.windowMs, 'Plaid answered HTTP 429 RATE_LIMIT_EXCEEDED');
  }
}

const limited = (ms: number, message = 'the Item’s balance calls for this minute are spent') =>
  new TransientProviderError(message, { rateLimited: true, retryAfterMs: Math.max(1, Math.ceil(ms)) });
