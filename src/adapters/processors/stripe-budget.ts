// Stripe's rate limit is per account: 25 requests a second per endpoint by default (100 operations a second in
// all, live), shared by every call made with the account's keys. The service makes two kinds of calls with a
// lender's key, its payments and its Financial Connections reads, from two SDK clients; both take their turn
// from one budget per key here, so reads never spend the payments' share in a burst, nor the other way round.
//
// The budget: requests leave evenly spaced, STRIPE_PACED_PER_SECOND a second and never more than 22 in any second
// as they leave, whatever the endpoint (a stricter rule than Stripe's per endpoint, and the only one that holds however
// the calls are mixed). The pace is 90% of Stripe's 25, so that a request slowed on its way (a new connection)
// does not arrive in the same second as the 25th after it. It is this process's: replicas each keep their own.

/** Stripe's default limit per endpoint and account, requests a second. */
export const STRIPE_REQUESTS_PER_SECOND = 25;
/** The pace kept per key, all endpoints together. */
export const STRIPE_PACED_PER_SECOND = 22.5;
/** Keys whose budget is kept at most (the least recently used forgotten first; one forgotten starts full). */
const MAX_BUCKETS = 1_024;

/**
 * Requests leave `intervalMs` apart at least, and never more than `perWindow` in any `windowMs` as measured when
 * they leave: a timer that fires late (a busy event loop) lets the waiting requests go only as the window allows,
 * not all at once.
 */
export class RequestPacer {
  private next = 0;
  private readonly sent: number[] = [];
  constructor(
    private readonly intervalMs: number,
    private readonly perWindow = Number.POSITIVE_INFINITY,
    private readonly windowMs = 1_000,
  ) {}

  /** Resolves when this request may leave. */
  async take(): Promise<void> {
    for (;;) {
      const now = performance.now();
      while (this.sent.length > 0 && this.sent[0]! <= now - this.windowMs) this.sent.shift();
      const free = this.sent.length < this.perWindow ? now : this.sent[0]! + this.windowMs;
      const at = Math.max(this.next, free);
      if (at <= now) {
        this.next = now + this.intervalMs;
        this.sent.push(now);
        return;
      }
      // Checked again on waking: another request may have taken the turn meanwhile.
      await Bun.sleep(at - now);
    }
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
    p = new RequestPacer((1_000 * timeScale) / STRIPE_PACED_PER_SECOND, Math.floor(STRIPE_PACED_PER_SECOND), 1_000 * timeScale);
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
