import type { Server } from 'elysia/universal';
import type { PlatformDeps } from '../platform/context';
import { DomainError, InvalidInput, RateLimited, Unauthenticated } from '../platform/errors';
import { shownKey } from '../platform/fields';
import type { AuthedLender, Authenticate } from './auth';
import { fromDomainError, HttpsRequired } from './errors';
import { httpsAllowed, resolveClient } from './https';
import { oversized } from './limits';
import { SampledLog } from './rate-limit';
import type { RequestTracker } from './requests';

/**
 * Failed authentications a client address may make: a burst of 20, then one a second. Past it, every /v1
 * request from the address is refused (429) before its key is looked at, so guessing keys and flooding the
 * log both stop; a valid key from the same address waits too, which is why TRUST_PROXY must be set behind a
 * proxy (otherwise every client shares the proxy's address).
 */
export const AUTH_FAILURE_BURST = 20;
export const AUTH_FAILURES_PER_SECOND = 1;

/** The providers' webhooks (modules/bank-data-webhooks): authenticated by the provider's signature, not an API key. */
export const PROVIDER_WEBHOOKS = '/v1/bank_data_webhooks/';

/**
 * The first thing every request meets: its id, the HTTPS policy, and, for /v1, authentication, all before
 * any body is read or validated. Without a valid key nothing about a /v1 route, not even whether it exists
 * or what its body looks like, is told.
 */
export function requestGate(
  deps: PlatformDeps,
  tracker: RequestTracker,
  authenticate: Authenticate,
  authenticated: WeakMap<Request, AuthedLender>,
) {
  // Per client address: in memory on SQLite; on PostgreSQL shared by the replicas, keyed by a keyed hash of
  // the address (a load balancer may send the same client to any of them).
  const failures = deps.engine.rateBuckets('auth-failures', AUTH_FAILURES_PER_SECOND, AUTH_FAILURE_BURST);
  const addressKey = deps.engine.clientKey;
  // One line per client address a second, with how many refusals it stands for, instead of one a request.
  const failureLog = new SampledLog(1000, (client, count) => deps.logger.warn({ client, refused: count }, 'authentication failed'));

  const gate = ({ request, set, server }: { request: Request; set: { headers: Record<string, string | number> }; server: Server | null }) => {
    tracker.begin(request, set.headers);
    const url = new URL(request.url);
    const tooLarge = oversized(request, url);
    if (tooLarge) return tracker.early(request, tooLarge);
    const path = url.pathname;
    if (path === '/healthz') return;
    // A path that does not decode names no resource: said once here, not as a route's puzzling "Expected a string".
    if (path.includes('%') && !decodes(path)) {
      return tracker.early(
        request,
        fromDomainError(InvalidInput.field('path', 'The path has malformed percent-encoding', 'Encode each reserved or non-ASCII byte of the path as %XX of its UTF-8 form'))!,
      );
    }
    // Likewise a query value that does not decode (UTF-16 surrogates written as bytes, a stray %): decoders
    // would quietly turn it into U+FFFD, and a route would then answer for another value than the one sent.
    const param = url.search.includes('%') ? undecodableParam(url.search.slice(1)) : null;
    if (param !== null) {
      return tracker.early(
        request,
        fromDomainError(
          InvalidInput.field(param === '' ? 'query' : `/${param}`, 'The query has malformed percent-encoding', 'Encode each reserved or non-ASCII byte of the query as %XX of its UTF-8 form'),
        )!,
      );
    }
    const remote = server?.requestIP(request)?.address ?? null;
    if (!httpsAllowed(deps.config, request, remote)) return tracker.early(request, new HttpsRequired());
    // The providers' webhooks carry their signature, checked by their routes, instead of an API key.
    if (path.startsWith(PROVIDER_WEBHOOKS)) return;
    if (path === '/v1' || path.startsWith('/v1/')) {
      // In-process requests (app.handle: tests, tools) have no address and no failure budget.
      const client = remote === null ? null : (resolveClient(deps.config, request, remote).address ?? remote);
      const now = deps.clock.now();
      const refused = (e: unknown) => {
        if (e instanceof Unauthenticated && client !== null) {
          failureLog.note(client, now);
          const answer = () => tracker.early(request, fromDomainError(e)!, { quiet: true });
          // On PostgreSQL the failure is counted before the answer goes: the client's next try sees it.
          const spent = failures.spend(addressKey(client), now);
          return spent instanceof Promise ? spent.then(answer) : answer();
        }
        if (e instanceof DomainError) return tracker.early(request, fromDomainError(e)!);
        throw e;
      };
      const tooMany = (wait: number) => {
        failureLog.note(client!, now);
        const limited = new RateLimited(wait, 'Too many failed authentications from this address', `Retry after ${wait} seconds with a valid API key`);
        return tracker.early(request, fromDomainError(limited)!, { quiet: true });
      };
      if (client !== null) {
        const wait = failures.wait(addressKey(client), now);
        if (wait instanceof Promise) return wait.then((w) => (w > 0 ? tooMany(w) : authenticateRequest(request, refused)));
        if (wait > 0) return tooMany(wait);
      }
      return authenticateRequest(request, refused);
    }
  };
  // The key is looked up by the engine (a cached statement on SQLite, the pool on PostgreSQL): the gate answers
  // once it is, the one path on both.
  const authenticateRequest = <R>(request: Request, refused: (e: unknown) => R) =>
    authenticate(request.headers.get('authorization') ?? undefined).then((l) => void authenticated.set(request, l), refused);
  // An async function, so that Elysia awaits what the gate answers.
  type GateArgs = Parameters<typeof gate>[0];
  return async (a: GateArgs) => gate(a);
}

/** The name of the first query parameter whose value does not decode ('' when the name itself does not), or null. */
function undecodableParam(search: string): string | null {
  for (const part of search.split('&')) {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    if (!decodes(name)) return '';
    if (eq >= 0 && !decodes(part.slice(eq + 1))) return shownKey(decodeURIComponent(name.replaceAll('+', ' ')));
  }
  return null;
}

function decodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
