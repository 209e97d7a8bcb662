import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from './clock';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

// Calls made to outside providers (Plaid, Stripe), counted as they leave. An adapter names the provider and the
// endpoint of each call; whose call it is (a lender and the connection it goes through) is set by the caller
// around the work that makes the calls (`withCallScope`), so the adapters need not carry it. Counts are kept in
// memory here and taken (`drain`) by the job that adds them to the database in one statement per flush, so no
// call waits for a write.

/**
 * Whose calls these are: the lender, the bank-data connection they are made through (counted for its usage when
 * there is one) and which attempt of the read they serve, when the caller retries.
 */
export interface CallScope {
  lenderId: string;
  connectionId?: string;
  attempt?: number;
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
export interface CallCount {
  lenderId: string;
  connectionId: string;
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

  add(scope: { lenderId: string; connectionId: string }, provider: string, endpoint: string, at: number, n = 1): void {
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

/** How a call ended: the provider's HTTP status, or the name of the error when no answer came. */
export type CallOutcome = { status: number } | { error: string };

/**
 * What an adapter is given: told of each request as it leaves (by its endpoint), it answers with the function
 * the adapter calls once the request ends.
 */
export type CallObserver = (endpoint: string) => (outcome: CallOutcome) => void;

/** Whether the calls go to a bank-data provider or a payment processor (each has its counter and log line). */
export type CallKind = 'bank_data' | 'processor';

/** A bounded label for an outcome: the class of the status, or whether no answer came in time or at all. */
export function outcomeLabel(o: CallOutcome): 'ok' | 'refused' | 'rate_limited' | 'server_error' | 'timeout' | 'unreachable' {
  if ('error' in o) return o.error === 'TimeoutError' || o.error === 'AbortError' ? 'timeout' : 'unreachable';
  if (o.status >= 200 && o.status < 300) return 'ok';
  if (o.status === 429) return 'rate_limited';
  return o.status >= 500 ? 'server_error' : 'refused';
}

/** The name of a network error, in letters only (a driver's code such as ConnectionRefused, or the error's name). */
export function errorName(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  const name = typeof code === 'string' && code !== '' ? code : e instanceof Error ? e.name : 'error';
  return /^[A-Za-z_]{1,40}$/.test(name) ? name : 'error';
}

/** Runs one request, telling the observer (when there is one) that it left and how it ended. */
export async function observed(observe: CallObserver | undefined, endpoint: string, call: () => Promise<Response>): Promise<Response> {
  const done = observe?.(endpoint);
  let res: Response;
  try {
    res = await call();
  } catch (e) {
    done?.({ error: errorName(e) });
    throw e;
  }
  done?.({ status: res.status });
  return res;
}

/**
 * What the composition root hands the adapters: each call counted in /metrics (`provider_calls_total` as it
 * leaves; `bank_data_calls_total` or `processor_calls_total` by how it ended) and, when it is made through a
 * bank-data connection, for the connection's usage. A call that fails is one log line: the provider, the
 * endpoint, the status or the error's name, the attempt and the lender's id, never a body, a key or an account.
 */
export function providerCallObserver(
  metrics: Metrics,
  counts: ProviderCallCounts,
  clock: Clock,
  logger: Pick<Logger, 'warn'>,
): (kind: CallKind, provider: string) => CallObserver {
  return (kind, provider) => (endpoint) => {
    const scope = currentCallScope();
    metrics.providerCalls.inc({ lender: scope?.lenderId ?? '', provider, endpoint });
    if (scope?.connectionId) counts.add({ lenderId: scope.lenderId, connectionId: scope.connectionId }, provider, endpoint, clock.now());
    return (outcome) => {
      const label = outcomeLabel(outcome);
      if (kind === 'bank_data') metrics.bankDataCalls.inc({ provider, endpoint, outcome: label });
      else metrics.processorCalls.inc({ processor: provider, endpoint, outcome: label });
      if (label === 'ok') return;
      logger.warn(
        {
          provider,
          endpoint,
          outcome: label,
          ...('status' in outcome ? { http_status: outcome.status } : { error: outcome.error }),
          ...(scope?.attempt !== undefined ? { attempt: scope.attempt } : {}),
          lender_id: scope?.lenderId ?? null,
        },
        kind === 'bank_data' ? 'bank-data call failed' : 'processor call failed',
      );
    };
  };
}
