import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from './clock';
import type { Metrics } from './metrics';

// Calls made to outside providers (Plaid, Stripe), counted as they leave. An adapter names the provider and the
// endpoint of each call; whose call it is (a lender and the connection it goes through) is set by the caller
// around the work that makes the calls (`withCallScope`), so the adapters need not carry it. Counts are kept in
// memory here and taken (`drain`) by the job that adds them to the database in one statement per flush, so no
// call waits for a write.

/** Whose calls these are: the lender and the connection they are made through. */
export interface CallScope {
  lenderId: string;
  connectionId: string;
}

const scopes = new AsyncLocalStorage<CallScope>();

/** Runs `fn` with its provider calls counted as the lender's, through the connection. */
export function withCallScope<T>(scope: CallScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/** The scope of the calls being made now, if any. */
export function currentCallScope(): CallScope | undefined {
  return scopes.getStore();
}

/** One counted row: calls of one connection to one endpoint on one UTC day (YYYY-MM-DD). */
export interface CallCount extends CallScope {
  provider: string;
  endpoint: string;
  day: string;
  calls: number;
}

/** Keys kept in memory at most between flushes: past it a call is still in /metrics, not in the usage table. */
export const MAX_PENDING_COUNTS = 50_000;

/** Calls counted since the last flush, per connection, endpoint and day. */
export class ProviderCallCounts {
  private pending = new Map<string, CallCount>();
  /** Calls not kept because the memory was full (the flush job is behind). */
  dropped = 0;

  add(scope: CallScope, provider: string, endpoint: string, at: number, n = 1): void {
    const day = new Date(at).toISOString().slice(0, 10);
    const key = `${scope.connectionId}\n${endpoint}\n${day}`;
    const row = this.pending.get(key);
    if (row) row.calls += n;
    else if (this.pending.size >= MAX_PENDING_COUNTS) this.dropped += n;
    else this.pending.set(key, { lenderId: scope.lenderId, connectionId: scope.connectionId, provider, endpoint, day, calls: n });
  }

  /** Everything counted so far, taken out: the caller writes it, or gives it back with `restore` when it cannot. */
  drain(): CallCount[] {
    const rows = [...this.pending.values()];
    this.pending = new Map();
    return rows;
  }

  restore(rows: CallCount[]): void {
    for (const r of rows) this.add(r, r.provider, r.endpoint, Date.parse(`${r.day}T00:00:00Z`), r.calls);
  }

  /** What is counted and not yet written for one connection, days starting with `prefix` (a month: YYYY-MM). */
  unwritten(connectionId: string, prefix: string): CallCount[] {
    return [...this.pending.values()].filter((r) => r.connectionId === connectionId && r.day.startsWith(prefix));
  }
}

/**
 * What the composition root hands the adapters: a call counted in /metrics (`provider_calls_total`) and, when it
 * is made within a scope, for the connection's usage.
 */
export function providerCallCounter(metrics: Metrics, counts: ProviderCallCounts, clock: Clock): (provider: string, endpoint: string) => void {
  return (provider, endpoint) => {
    const scope = currentCallScope();
    metrics.providerCalls.inc({ lender: scope?.lenderId ?? '', provider, endpoint });
    if (scope) counts.add(scope, provider, endpoint, clock.now());
  };
}
