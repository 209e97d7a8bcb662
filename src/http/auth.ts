import { Elysia } from 'elysia';
import type { Lender, PlatformDeps } from '../platform/context';
import { API_KEY_PATTERN } from '../platform/api-key-format';
import { hashApiKey, type KeyHolder } from '../platform/api-keys';
import { RateLimited, Unauthenticated } from '../platform/errors';
import { ErrorEnvelope } from './errors';

export interface AuthedLender extends Lender {
  keyId: string;
}

const CHECK_KEY = 'Check the key you send (it is shown once, when created), or create a new one';
const NEW_KEY = 'Use another live key of the lender, or create one: in the portal (Developers, Create API key) or with bun run cli key create LENDER';

// last_used_at is written at most this often per key: a write per request would cost an fsync each.
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

/** Resolves a key to its lender: a look-up of the engine's (a cached statement on SQLite, the pool on PostgreSQL). */
export type Authenticate = (header: string | undefined) => Promise<AuthedLender>;

/** Resolves `Authorization: Bearer <key>` to its lender and applies the per-key rate limit. */
export function createAuthenticator(deps: PlatformDeps): Authenticate {
  // Per key id (never the key): in memory on SQLite, shared by the replicas in the database on PostgreSQL.
  const limiter = deps.engine.rateBuckets('api-key', deps.config.rateLimitPerSecond, deps.config.rateLimitBurst);
  const keys = deps.engine.apiKeys;
  const lastWrite = new Map<string, number>();

  async function authenticate(header: string | undefined): Promise<AuthedLender> {
    if (!header) throw new Unauthenticated('Missing Authorization header');
    // The scheme is case-insensitive (RFC 9110 §11.1): "bearer" and "BEARER" are the same scheme.
    const match = /^Bearer ([^\s]+)$/i.exec(header.trim());
    if (!match) throw new Unauthenticated('Authorization must use the Bearer scheme');
    const key = match[1]!;
    if (!API_KEY_PATTERN.test(key)) throw new Unauthenticated('Invalid API key: a key is drs_live_ followed by 32 letters and digits', CHECK_KEY);
    return admit(await keys.holderOf(hashApiKey(key)));
  }

  async function admit(row: KeyHolder | undefined): Promise<AuthedLender> {
    if (!row) throw new Unauthenticated('Invalid API key: no lender has this key', CHECK_KEY);
    // Only the holder of the key itself learns it was revoked; it sent the header, so it is told what to do instead.
    if (row.revokedAt !== null) throw new Unauthenticated('This API key was revoked', NEW_KEY);
    const now = deps.clock.now();
    const wait = await limiter.take(row.keyId, now);
    if (wait > 0) throw new RateLimited(wait);
    if (now - (lastWrite.get(row.keyId) ?? row.lastUsedAt ?? 0) >= LAST_USED_WRITE_INTERVAL_MS) {
      lastWrite.set(row.keyId, now);
      keys.touch(row.keyId, now);
    }
    return { keyId: row.keyId, id: row.id, name: row.name, debitCardApproved: row.debitCardApproved === 1 };
  }
  return authenticate;
}

/**
 * The `auth` macro: a route declared with `{ auth: true }` gets `lender`, resolved once per request from
 * `Authorization: Bearer <key>`, and is rate limited per key. Routes never read a lender from the body.
 */
export function authPlugin(authenticated: WeakMap<Request, AuthedLender>) {
  // The shared error model travels with the macro, so every feature's response map can name it.
  return new Elysia({ name: 'auth' }).model({ ErrorEnvelope }).macro({
    auth: {
      // The app authenticates every /v1 request before its body is read; the lender is taken from there.
      resolve({ request }) {
        const lender = authenticated.get(request);
        // The request gate (http/gate.ts) authenticates every /v1 request and refuses the rest before any route.
        if (!lender) throw new Error('the request gate did not authenticate this request');
        return { lender };
      },
      detail: { security: [{ bearerAuth: [] }] },
    },
  });
}

export type Auth = ReturnType<typeof authPlugin>;
