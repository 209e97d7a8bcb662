import type { Server } from 'elysia/universal';
import type { PlatformDeps } from '../platform/context';
import { DomainError, RateLimited } from '../platform/errors';
import type { AuthedLender } from './auth';
import { fromDomainError } from './errors';
import type { RequestTracker } from './requests';

// A request that will be refused is refused before its body is read: for its size (the gate, on the declared
// length, and each route's parser before it reads), for its key's rate (the gate) and, here, for what its
// lender already has under way: a bound of the route's feature that no body could pass (authorizers waiting to
// be checked, uploads waiting for the worker), and the large bodies the lender has in flight. Bun reads
// nothing of a body no one asks for, and an early answer ends the upload: a refused client has sent little
// more than its headers, and the service has held none of it.

/**
 * A body over this (declared, or of no declared length: chunked) is a large one. Large bodies take one of
 * their lender's places; smaller ones take none (at most 1 MB each, as many at once as the key's rate allows).
 */
export const LARGE_BODY_BYTES = 1024 * 1024;
/**
 * Large bodies one lender may have in flight at once, from the moment each is admitted to its answer (the rows
 * parsed from it live as long), so that they hold at most twice the largest body the service takes. A 4.6 MB
 * balance CSV costs the service about 50 MB until it is answered: 60 at once cost 2.5 GB.
 */
export const LARGE_BODIES_PER_LENDER = 2;
/** What a lender with its large bodies in flight is told to wait: the ones ahead are answered within seconds. */
export const BODIES_RETRY_AFTER_SECONDS = 1;

/** Whether a request's body is a large one: declared over LARGE_BODY_BYTES, or sent without a declared length. */
export function isLargeBody(request: Request): boolean {
  if (!request.body) return false;
  const declared = request.headers.get('content-length');
  return declared === null || Number(declared) > LARGE_BODY_BYTES;
}

/** The places of large bodies in flight, per lender. In this process's memory: it is memory they bound. */
export class BodySlots {
  private readonly taken = new Map<string, number>();

  constructor(private readonly perLender = LARGE_BODIES_PER_LENDER) {}

  /** A place for one more large body of the lender: the function that gives it back, or null when none is free. */
  take(lenderId: string): (() => void) | null {
    const now = this.taken.get(lenderId) ?? 0;
    if (now >= this.perLender) return null;
    this.taken.set(lenderId, now + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.taken.get(lenderId) ?? 1) - 1;
      if (left > 0) this.taken.set(lenderId, left);
      else this.taken.delete(lenderId);
    };
  }
}

/**
 * The onRequest hook after the gate: for an authenticated request with a body, its route's admission (a
 * feature's check, by `METHOD /path`, that throws when no body sent there could be taken now), then, for a
 * large body, a place among its lender's, whose release `held` keeps until the app has answered. Requests made
 * in process (app.handle: tests, tools) take no place: no body of theirs comes off the network.
 */
export function bodyAdmission<D extends PlatformDeps>(
  deps: D,
  tracker: RequestTracker,
  authenticated: WeakMap<Request, AuthedLender>,
  admissions: Record<string, (ctx: { lender: AuthedLender; deps: D }) => void | Promise<void>>,
  held: WeakMap<Request, () => void>,
  slots = new BodySlots(),
) {
  const refused = (request: Request, e: unknown) => {
    if (e instanceof DomainError) return tracker.early(request, fromDomainError(e)!);
    throw e;
  };
  // Async: a feature's bound is read from the database (on the pool, on PostgreSQL).
  return async ({ request, server }: { request: Request; server: Server | null }) => {
    const lender = authenticated.get(request);
    if (!lender || !request.body) return;
    try {
      await admissions[`${request.method} ${new URL(request.url).pathname}`]?.({ lender, deps });
    } catch (e) {
      return refused(request, e);
    }
    if (!isLargeBody(request) || !server?.requestIP(request)) return;
    const release = slots.take(lender.id);
    if (!release) {
      return refused(
        request,
        new RateLimited(
          BODIES_RETRY_AFTER_SECONDS,
          `This lender already has ${LARGE_BODIES_PER_LENDER} requests with bodies over ${LARGE_BODY_BYTES / (1024 * 1024)} MB being received or ` +
            `processed, and at most ${LARGE_BODIES_PER_LENDER} may be at once`,
          `Retry after ${BODIES_RETRY_AFTER_SECONDS} second; send large requests one or two at a time`,
        ),
      );
    }
    held.set(request, release);
  };
}
