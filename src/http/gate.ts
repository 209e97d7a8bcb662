import type { Server } from 'elysia/universal';
import type { PlatformDeps } from '../platform/context';
import { DomainError, InvalidInput } from '../platform/errors';
import type { AuthedLender } from './auth';
import { fromDomainError, HttpsRequired } from './errors';
import { httpsAllowed } from './https';
import { oversized } from './limits';
import type { RequestTracker } from './requests';

/**
 * The first thing every request meets: its id, the HTTPS policy, and, for /v1, authentication, all before
 * any body is read or validated. Without a valid key nothing about a /v1 route, not even whether it exists
 * or what its body looks like, is told.
 */
export function requestGate(
  deps: PlatformDeps,
  tracker: RequestTracker,
  authenticate: (header: string | undefined) => AuthedLender,
  authenticated: WeakMap<Request, AuthedLender>,
) {
  return ({ request, set, server }: { request: Request; set: { headers: Record<string, string | number> }; server: Server | null }) => {
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
    const remote = server?.requestIP(request)?.address ?? null;
    if (!httpsAllowed(deps.config, request, remote)) return tracker.early(request, new HttpsRequired());
    if (path === '/v1' || path.startsWith('/v1/')) {
      try {
        authenticated.set(request, authenticate(request.headers.get('authorization') ?? undefined));
      } catch (e) {
        if (e instanceof DomainError) return tracker.early(request, fromDomainError(e)!);
        throw e;
      }
    }
  };
}

function decodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
