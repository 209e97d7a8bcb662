// One delivery attempt. The target is re-checked here because DNS can change after the URL was accepted, and
// the request goes to an address that passed the check instead of a name fetch would resolve again.
import { isIP } from 'node:net';
import { checkWebhookUrl, type Resolver } from './ssrf';
import { assertOutsideTransaction } from '../../platform/tx-lock';

export const WEBHOOK_USER_AGENT = 'debit-recovery-webhooks/0.3.0';
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;

export interface SendWebhookOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Covers DNS, connect, TLS and the response headers together. */
  timeoutMs?: number;
  allowPrivate: boolean;
  resolve?: Resolver;
  /** Aborts the attempt from outside (the service stopping): the outcome is then 'interrupted'. */
  signal?: AbortSignal;
}

/** 'interrupted': cut short by `signal`, not by the receiver; the delivery stays due. */
export type DeliveryOutcome = 'delivered' | 'retry' | 'gone' | 'blocked' | 'interrupted';

export const INTERRUPTED_ERROR = 'interrupted: the service stopped before the receiver answered';

export interface SendWebhookResult {
  outcome: DeliveryOutcome;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** Only from a 429 or 503 that sent a usable Retry-After. */
  retryAfterMs: number | null;
}

// Connect failures happen before any byte of the request is sent, so the next resolved address can be tried
// without risking a second delivery.
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

export async function sendWebhook(opts: SendWebhookOptions): Promise<SendWebhookResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
  const started = performance.now();
  const signal = opts.signal ? AbortSignal.any([AbortSignal.timeout(timeoutMs), opts.signal]) : AbortSignal.timeout(timeoutMs);
  const timedOut = `timeout after ${timeoutMs} ms`;
  const finish = (
    outcome: DeliveryOutcome,
    statusCode: number | null,
    error: string | null,
    retryAfterMs: number | null = null,
  ): SendWebhookResult => ({
    outcome,
    statusCode,
    error,
    durationMs: Math.round(performance.now() - started),
    retryAfterMs,
  });

  let check: Awaited<ReturnType<typeof checkWebhookUrl>>;
  try {
    const checking = checkWebhookUrl(opts.url, { allowPrivate: opts.allowPrivate, resolve: opts.resolve });
    check = await abortable(checking, signal);
  } catch {
    if (opts.signal?.aborted) return finish('interrupted', null, INTERRUPTED_ERROR);
    return finish('retry', null, timedOut);
  }
  if (!check.ok) {
    // A name that fails to resolve may resolve on the next attempt; a forbidden target is reported as such.
    return finish(check.kind === 'unresolvable' ? 'retry' : 'blocked', null, check.reason);
  }

  let lastError = 'no address to connect to';
  for (const address of check.addresses) {
    let res: Response;
    try {
      assertOutsideTransaction('a webhook delivery');
      res = await fetch(pinnedUrl(check.url, address), requestInit(check.url, opts, signal));
    } catch (err) {
      if (opts.signal?.aborted) return finish('interrupted', null, INTERRUPTED_ERROR);
      if (signal.aborted) return finish('retry', null, timedOut);
      lastError = describeNetworkError(err);
      if (CONNECT_FAILURES.has(errorCode(err) ?? '')) continue;
      break;
    }
    // Only the status matters; dropping the body frees the connection without waiting on a slow receiver.
    res.body?.cancel().catch(() => {});
    const status = res.status;
    if (status >= 200 && status < 300) return finish('delivered', status, null);
    if (status === 410) return finish('gone', status, 'receiver answered 410 Gone');
    if (status >= 300 && status < 400) return finish('retry', status, 'redirect not followed');
    const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(res.headers.get('retry-after')) : null;
    return finish('retry', status, `HTTP ${status}`, retryAfterMs);
  }
  return finish('retry', null, lastError);
}

/** Retry-After is either delay-seconds or an HTTP date; anything else is ignored rather than guessed at. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Every HTTP-date form opens with a day name; without that, Date.parse would read "-5" or "1.5" as dates.
  if (!/^[a-z]{3}/i.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function pinnedUrl(url: URL, address: string): string {
  const host = address.includes(':') ? `[${address}]` : address;
  const port = url.port === '' ? '' : `:${url.port}`;
  return `${url.protocol}//${host}${port}${url.pathname}${url.search}`;
}

function requestInit(url: URL, opts: SendWebhookOptions, signal: AbortSignal): BunFetchRequestInit {
  const headers = new Headers(opts.headers);
  headers.set('content-type', 'application/json');
  headers.set('user-agent', WEBHOOK_USER_AGENT);
  // The URL now names an IP, so the receiver's virtual host comes from here.
  headers.set('host', url.host);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const namedHttps = url.protocol === 'https:' && isIP(hostname) === 0;
  return {
    method: 'POST',
    headers,
    body: opts.body,
    redirect: 'manual',
    signal,
    // A proxy would resolve the name itself and undo the pinning.
    proxy: false,
    // SNI and certificate verification use the name the lender registered, not the pinned IP.
    tls: namedHttps ? { serverName: hostname } : undefined,
  };
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function describeNetworkError(err: unknown): string {
  const code = errorCode(err);
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'EHOSTUNREACH':
      return 'host unreachable';
    case 'ENETUNREACH':
      return 'network unreachable';
    case 'ETIMEDOUT':
      return 'connect timed out';
  }
  if (code && /CERT|TLS|SSL/i.test(code)) return `tls error: ${code}`;
  const message = err instanceof Error ? err.message : String(err);
  return code ? `${code}: ${message}` : message;
}
