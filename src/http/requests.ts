import type { PlatformDeps } from '../platform/context';
import { newId } from '../platform/ids';
import { ApiError, envelope } from './errors';

// Every request's id, timing, log line and metrics, and the one way an error becomes a response.

interface RequestMeta {
  id: string;
  start: number;
  /** Set when the response is built by the error handler, which Elysia's `set.status` does not see. */
  status?: number;
}

export class RequestTracker {
  private readonly meta = new WeakMap<Request, RequestMeta>();

  /**
   * `page`: an error as a page where a feature shows pages (null elsewhere): a browser's request refused
   * before any route (HTTPS, size, encoding) reads as the page it asked for, not as JSON.
   */
  constructor(
    private readonly deps: PlatformDeps,
    private readonly docsBase: string,
    private readonly page: (request: Request, err: ApiError, headers: Headers) => Response | Promise<Response> | null = () => null,
  ) {}

  /** The error's answer: the envelope, or the page of a route that shows pages, with the same request id. */
  answer(request: Request, err: ApiError): Response | Promise<Response> {
    const json = this.toResponse(request, err);
    return this.page(request, err, json.headers) ?? json;
  }

  /** A new request: its id, set as X-Request-Id on whatever answers it. */
  begin(request: Request, headers: Record<string, string | number>): string {
    const m = { id: newId(), start: performance.now() };
    this.meta.set(request, m);
    headers['x-request-id'] = m.id;
    return m.id;
  }

  requestId(request: Request): string | undefined {
    return this.meta.get(request)?.id;
  }

  /** The error envelope as a response, with the request id. */
  toResponse(request: Request, err: ApiError): Response {
    const m = this.meta.get(request);
    const status = err.status;
    const body = envelope(status, err.errorCode, err.message, this.docsBase, this.deps.clock.now(), err.details, err.suggestion);
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(err.headers ?? {}) };
    if (m) {
      headers['x-request-id'] = m.id;
      m.status = status;
    }
    return new Response(JSON.stringify(body), { status, headers });
  }

  /** One log line (unless `quiet`: the caller logs it another way) and the metrics of a finished request. */
  finish(request: Request, fallbackStatus: number, routeLabel: string, quiet = false): void {
    const m = this.meta.get(request);
    if (!m) return;
    const status = m.status ?? fallbackStatus;
    const duration = performance.now() - m.start;
    this.deps.metrics.httpRequests.inc({ method: request.method, route: routeLabel, status: String(status) });
    this.deps.metrics.httpDuration.observe({ method: request.method, route: routeLabel }, duration / 1000);
    if (quiet) return;
    this.deps.logger.info(
      { reqId: m.id, method: request.method, route: routeLabel, status, duration_ms: Math.round(duration * 100) / 100 },
      'request',
    );
  }

  /** A response from onRequest, which Elysia's after-response hook never sees: logged and counted here. */
  early(request: Request, err: ApiError, opts: { quiet?: boolean } = {}): Response | Promise<Response> {
    const res = this.answer(request, err);
    this.finish(request, err.status, 'unmatched', opts.quiet);
    return res;
  }
}
