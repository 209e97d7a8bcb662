import Stripe from 'stripe';

/** The Stripe API version every client of the service pins (payments and Financial Connections alike). */
export const STRIPE_API_VERSION = '2026-10-28.endive' satisfies Stripe.LatestApiVersion;
const TIMEOUT_MS = 10_000;

/**
 * One official SDK client per key (the key is the account), pointed at STRIPE_API_URL when it is set (a test
 * double on loopback). The SDK never retries on its own: the caller's own retry policy is the only one (the
 * payment dispatch knows how old an idempotency key is; the balance pipeline has its backoff and limit).
 */
export class StripeClients {
  private readonly clients = new Map<string, Stripe>();

  constructor(private readonly opts: { apiUrl?: string | null; timeoutMs?: number } = {}) {}

  of(key: string): Stripe {
    let c = this.clients.get(key);
    if (!c) {
      const url = this.opts.apiUrl ? new URL(this.opts.apiUrl) : null;
      const protocol = url?.protocol === 'http:' ? 'http' : 'https';
      c = new Stripe(key, {
        apiVersion: STRIPE_API_VERSION,
        timeout: this.opts.timeoutMs ?? TIMEOUT_MS,
        maxNetworkRetries: 0,
        telemetry: false,
        ...(url ? { host: url.hostname, port: url.port || (protocol === 'http' ? 80 : 443), protocol } : {}),
      });
      this.clients.set(key, c);
    }
    return c;
  }
}
