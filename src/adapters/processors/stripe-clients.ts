import Stripe from 'stripe';
import { boundedFetch, PAGE_LIMIT_BYTES } from '../bounded-body';
import { pacerOf, stripeEndpoint } from './stripe-budget';
import { observed, type CallObserver } from '../../platform/provider-calls';

/** The Stripe API version every client of the service pins (payments and Financial Connections alike). */
export const STRIPE_API_VERSION = '2026-10-28.endive' satisfies Stripe.LatestApiVersion;
const TIMEOUT_MS = 10_000;

/**
 * One official SDK client per key (the key is the account), pointed at STRIPE_API_URL when it is set (a test
 * double on loopback). The SDK never retries on its own: the caller's own retry policy is the only one (the
 * payment dispatch knows how old an idempotency key is; the balance pipeline has its backoff and limit).
 */
/**
 * SDK clients kept at most: each holds about 50 KB, and every key tried makes one (a refused key too, through
 * the connection routes), so an unbounded cache let one lender grow the process by half a gigabyte with 10,000
 * refused keys. The keys in use (a lender's few, polled and sent through every minute) stay among the most
 * recently used; one evicted is made again on its next call.
 */
export const MAX_STRIPE_CLIENTS = 64;

export class StripeClients {
  private readonly clients = new Map<string, Stripe>();

  constructor(
    private readonly opts: {
      apiUrl?: string | null;
      timeoutMs?: number;
      maxClients?: number;
      /** Told of every request as it leaves, by its endpoint (`POST /v1/payment_intents`), and of how it ended. */
      onCall?: CallObserver;
      /** Multiplies the per-key request spacing (PROVIDER_TIME_SCALE; 1 in production). */
      timeScale?: number;
    } = {},
  ) {}

  /** How many clients are kept now. */
  get size(): number {
    return this.clients.size;
  }

  of(key: string): Stripe {
    let c = this.clients.get(key);
    if (c) {
      // Least recently used goes first: a client used again moves to the end.
      this.clients.delete(key);
      this.clients.set(key, c);
    } else {
      if (this.clients.size >= (this.opts.maxClients ?? MAX_STRIPE_CLIENTS)) this.clients.delete(this.clients.keys().next().value!);
      const url = this.opts.apiUrl ? new URL(this.opts.apiUrl) : null;
      const protocol = url?.protocol === 'http:' ? 'http' : 'https';
      c = new Stripe(key, {
        apiVersion: STRIPE_API_VERSION,
        timeout: this.opts.timeoutMs ?? TIMEOUT_MS,
        maxNetworkRetries: 0,
        telemetry: false,
        // Answers read with a bound (a page of a list at most): a larger one fails as the network would. Each
        // request first takes its turn in the key's budget (stripe-budget.ts), shared with the other clients of the key.
        httpClient: Stripe.createFetchHttpClient(this.paced(key, boundedFetch(PAGE_LIMIT_BYTES))),
        ...(url ? { host: url.hostname, port: url.port || (protocol === 'http' ? 80 : 443), protocol } : {}),
      });
      this.clients.set(key, c);
    }
    return c;
  }

  private paced(key: string, f: typeof fetch): typeof fetch {
    const pacer = pacerOf(key, this.opts.timeScale ?? 1);
    const onCall = this.opts.onCall;
    const paced = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      await pacer.take();
      const endpoint = stripeEndpoint(init?.method ?? 'GET', typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      return observed(onCall, endpoint, () => f(input, init));
    };
    return Object.assign(paced, { preconnect: fetch.preconnect }) as typeof fetch;
  }
}
