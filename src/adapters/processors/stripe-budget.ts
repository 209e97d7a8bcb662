// Stripe's rate limit is per account: 25 requests a second per endpoint by default (100 operations a second in
// all, live), shared by every call made with the account's keys. The service makes two kinds of calls with a
// lender's key, its payments and its Financial Connections reads, from two SDK clients; both take their turn
// from one budget per key here, so reads never spend the payments' share in a burst, nor the other way round.
//
// The budget is a token bucket of STRIPE_REQUESTS_PER_SECOND with room for one request: requests leave evenly
// spaced, at most 25 in any second, whatever the endpoint (a stricter rule than Stripe's per endpoint, and the
// only one that holds however the calls are mixed). It is this process's: replicas each keep their own.

/** Requests a second per Stripe key, all endpoints together. */
export const STRIPE_REQUESTS_PER_SECOND = 25;
/** Keys whose budget is kept at most (the least recently used forgotten first; one forgotten starts full). */
const MAX_BUCKETS = 1_024;

/** Requests leave one after the other, `intervalMs` apart at least. */
export class RequestPacer {
  private next = 0;
  constructor(private readonly intervalMs: number) {}

  /** Resolves when this request may leave; the turn is taken at once, so callers leave in the order they asked. */
  take(): Promise<void> {
    const now = performance.now();
    const at = Math.max(now, this.next);
    this.next = at + this.intervalMs;
    const wait = at - now;
    return wait <= 0 ? Promise.resolve() : Bun.sleep(wait);
  }
}

const pacers = new Map<string, RequestPacer>();

/** The pacer of a key, shared by every client made with it in this process. */
export function pacerOf(key: string, timeScale = 1): RequestPacer {
  const id = new Bun.CryptoHasher('sha256').update(`${timeScale}\n${key}`).digest('hex');
  let p = pacers.get(id);
  if (p) {
    pacers.delete(id);
  } else {
    if (pacers.size >= MAX_BUCKETS) pacers.delete(pacers.keys().next().value!);
    p = new RequestPacer((1_000 * timeScale) / STRIPE_REQUESTS_PER_SECOND);
  }
  pacers.set(id, p);
  return p;
}

const ID_SEGMENT = /^[A-Za-z]+_[A-Za-z0-9_]+$/;

/**
 * A request's endpoint as counted: the method and the path with its object ids replaced (`POST
 * /v1/financial_connections/accounts/{id}/refresh`). An id is a segment with a prefix and an underscore that
 * holds something other than lower-case letters and underscores (Stripe's resource names never do).
 */
export function stripeEndpoint(method: string, url: string): string {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return 'other';
  }
  const parts = path.split('/').map((s) => (ID_SEGMENT.test(s) && !/^[a-z_]+$/.test(s) ? '{id}' : s));
  // A bounded set of names: anything past a few segments is not one of the API's paths.
  if (parts.length > 6) return 'other';
  return `${method.toUpperCase()} ${parts.join('/')}`;
}
