import { transaction } from '../../platform/context';
import { writeGate } from '../../platform/context';
import type { Deps } from '../../deps';
import type { Lender, TransactionsSlot } from '../../platform/context';
import { type SessionRecord } from './store';
import { normalizeEmail, type DashboardUser } from './users';

// Server-side sessions of the portal: a random token in an HttpOnly, SameSite=Lax cookie (Secure over
// HTTPS), its SHA-256 in SQLite, a CSRF token per session, 30 idle minutes. Sign-in attempts are counted per
// email and per client address before the password is checked, and slowed down.

export const SESSION_COOKIE = 'drs_portal';
export const LOGIN_CSRF_COOKIE = 'drs_login_csrf';
export const IDLE_MS = 30 * 60_000;
const TOUCH_EVERY_MS = 60_000;

const random = (bytes = 32) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('base64url');
const hash = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex');

type SessionDeps = Pick<Deps, 'db' | 'reader' | 'pg' | 'clock' | 'stores'> & TransactionsSlot;

export interface PortalSession {
  user: DashboardUser;
  lender: Lender;
  csrf: string;
  tokenHash: string;
}

/**
 * A new session for the user, with a new random token: the session of `replacing` (the cookie the browser sent
 * with the sign-in, whoever's it was) ends in the same transaction, so signing in never keeps an old session id.
 */
export async function startSession(deps: SessionDeps, userId: string, replacing?: string): Promise<{ token: string; csrf: string }> {
  const token = random();
  const csrf = random(24);
  const now = deps.clock.now();
  await transaction({ deps }, async (tx) => {
    if (replacing) await tx.deps.stores.portal.deleteSession(tx, hash(replacing));
    await tx.deps.stores.portal.insertSession(tx, { tokenHash: hash(token), userId, csrfToken: csrf, createdAt: now, lastSeenAt: now });
  });
  return { token, csrf };
}

/** The signed-in user of a request, or null (no cookie, unknown, idle for 30 minutes, or the user disabled). */
export async function sessionOf(deps: SessionDeps, token: string | undefined): Promise<PortalSession | null> {
  if (!token) return null;
  const tokenHash = hash(token);
  return sessionFrom(deps, tokenHash, await deps.stores.portal.sessionByToken({ deps }, tokenHash));
}

function sessionFrom(deps: SessionDeps, tokenHash: string, row: SessionRecord | undefined): PortalSession | null {
  if (!row) return null;
  const now = deps.clock.now();
  // Reads never wait for the write lock: while a worker holds it, the clean-up and the touch wait for a later page.
  const writable = !writeGate(deps).held;
  if (row.u.disabledAt !== null || now - row.s.lastSeenAt > IDLE_MS) {
    if (writable) bestEffort(endSession(deps, tokenHash));
    return null;
  }
  if (writable && now - row.s.lastSeenAt > TOUCH_EVERY_MS) {
    bestEffort(transaction({ deps }, (tx) => tx.deps.stores.portal.touchSession(tx, tokenHash, now)));
  }
  return { user: row.u, lender: { id: row.l.id, name: row.l.name, debitCardApproved: row.l.debitCardApproved }, csrf: row.s.csrfToken, tokenHash };
}

export async function endSession(deps: SessionDeps, tokenHash: string): Promise<void> {
  await transaction({ deps }, (tx) => tx.deps.stores.portal.deleteSession(tx, tokenHash));
}

/**
 * A write a read makes on the side (a session's touch, an idle session's end): written in its turn, after any
 * transaction open now, and not waited for; if it fails, the next page makes it again.
 */
function bestEffort(write: Promise<unknown>): void {
  write.catch(() => undefined);
}

export const newLoginCsrf = () => random(24);

/** Constant-time comparison of two tokens. */
export function sameToken(a: string | undefined | null, b: string | undefined | null): boolean {
  if (!a || !b || a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Sign-in attempts, in memory (a restart forgets them), counted per email, per client address, and per pair of
 * the two, over 15 minutes. An attempt is counted before its password is checked (a reservation), so a burst
 * sent at once is counted as it arrives: at most LOCK_AFTER attempts of a pair or an address are ever checked
 * in a window, however many are in flight. A failure keeps its count; a success gives its reservation back.
 * Each count makes the next answer for that email, that address or that pair slower (250 ms doubling, up to
 * 5 s), so guessing one user's password is as slow from many addresses as from one. Ten lock the pair, and
 * ten lock the address for every email; the email alone never locks, so a stranger who knows a user's email
 * cannot lock that user out from elsewhere. Emails are counted in their normalized form (normalizeEmail), the
 * one the user look-up uses, so a variant of an email (case, white space at its ends) is the same bucket.
 */
export class SignInThrottle {
  private readonly counts = new Map<string, { count: number; first: number }>();
  static readonly WINDOW_MS = 15 * 60_000;
  static readonly LOCK_AFTER = 10;
  /** Keys kept at most: past it the oldest windows are dropped first (memory stays bounded under a flood). */
  static readonly MAX_KEYS = 100_000;

  private entry(key: string, now: number) {
    const e = this.counts.get(key);
    if (!e || now - e.first > SignInThrottle.WINDOW_MS) return null;
    return e;
  }

  private static keys(email: string, address: string) {
    const e = normalizeEmail(email);
    return { email: `e:${e}`, address: `a:${address}`, pair: `p:${address} ${e}` };
  }

  /** The attempts counted that slow the next answer (the most of the three counts), and whether sign-in is locked for this pair. */
  status(email: string, address: string, now: number): { failures: number; locked: boolean } {
    const k = SignInThrottle.keys(email, address);
    const count = (key: string) => this.entry(key, now)?.count ?? 0;
    const pair = count(k.pair);
    const byAddress = count(k.address);
    return { failures: Math.max(pair, byAddress, count(k.email)), locked: pair >= SignInThrottle.LOCK_AFTER || byAddress >= SignInThrottle.LOCK_AFTER };
  }

  /**
   * An attempt about to check a password: refused when the pair or the address is locked (nothing counted),
   * else counted at once in all three buckets, with the count that sets how long a failure is held.
   */
  attempt(email: string, address: string, now: number): { locked: true } | { locked: false; failures: number } {
    if (this.status(email, address, now).locked) return { locked: true };
    for (const key of Object.values(SignInThrottle.keys(email, address))) {
      const e = this.entry(key, now);
      if (e) e.count++;
      else {
        if (this.counts.size >= SignInThrottle.MAX_KEYS) this.counts.delete(this.counts.keys().next().value!);
        this.counts.set(key, { count: 1, first: now });
      }
    }
    return { locked: false, failures: this.status(email, address, now).failures };
  }

  /** An attempt that signed in: the pair cleared, its reservation given back to the email and the address. */
  succeed(email: string, address: string, now: number): void {
    const k = SignInThrottle.keys(email, address);
    this.counts.delete(k.pair);
    for (const key of [k.email, k.address]) {
      const e = this.entry(key, now);
      if (e && e.count > 0) e.count--;
    }
  }

  /** How long to hold the answer to a failed attempt: 250 ms, doubling, at most 5 s. */
  static delayMs(failures: number): number {
    return Math.min(5_000, 250 * 2 ** Math.max(0, failures - 1));
  }
}
