import { withTransaction } from '../../platform/context';
import { writeGate } from '../../platform/context';
import { eq } from 'drizzle-orm';
import { dashboardUsers, lenders, portalSessions } from '../../../db/schema';
import type { Deps } from '../../deps';
import type { Lender } from '../../platform/context';
import type { DashboardUser } from './users';

// Server-side sessions of the portal: a random token in an HttpOnly, SameSite=Lax cookie (Secure over
// HTTPS), its SHA-256 in SQLite, a CSRF token per session, 30 idle minutes. Failed sign-ins are counted per
// email and per client address and slowed down.

export const SESSION_COOKIE = 'drs_portal';
export const LOGIN_CSRF_COOKIE = 'drs_login_csrf';
export const IDLE_MS = 30 * 60_000;
const TOUCH_EVERY_MS = 60_000;

const random = (bytes = 32) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('base64url');
const hash = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex');

export interface PortalSession {
  user: DashboardUser;
  lender: Lender;
  csrf: string;
  tokenHash: string;
}

export function startSession(deps: Pick<Deps, 'db' | 'clock'>, userId: string): { token: string; csrf: string } {
  const token = random();
  const csrf = random(24);
  const now = deps.clock.now();
  withTransaction({ deps }, ({ tx }) => tx.insert(portalSessions).values({ tokenHash: hash(token), userId, csrfToken: csrf, createdAt: now, lastSeenAt: now }).run());
  return { token, csrf };
}

/** The signed-in user of a request, or null (no cookie, unknown, idle for 30 minutes, or the user disabled). */
export function sessionOf(deps: Pick<Deps, 'db' | 'clock'>, token: string | undefined): PortalSession | null {
  if (!token) return null;
  const tokenHash = hash(token);
  const row = deps.db
    .select({ s: portalSessions, u: dashboardUsers, l: lenders })
    .from(portalSessions)
    .innerJoin(dashboardUsers, eq(dashboardUsers.id, portalSessions.userId))
    .innerJoin(lenders, eq(lenders.id, dashboardUsers.lenderId))
    .where(eq(portalSessions.tokenHash, tokenHash))
    .get();
  if (!row) return null;
  const now = deps.clock.now();
  // Reads never wait for the write lock: while a worker holds it, the clean-up and the touch wait for a later page.
  const writable = !writeGate(deps).held;
  if (row.u.disabledAt !== null || now - row.s.lastSeenAt > IDLE_MS) {
    if (writable) endSession(deps, tokenHash);
    return null;
  }
  if (writable && now - row.s.lastSeenAt > TOUCH_EVERY_MS) {
    withTransaction({ deps }, ({ tx }) => tx.update(portalSessions).set({ lastSeenAt: now }).where(eq(portalSessions.tokenHash, tokenHash)).run());
  }
  return { user: row.u, lender: { id: row.l.id, name: row.l.name, debitCardApproved: row.l.debitCardApproved }, csrf: row.s.csrfToken, tokenHash };
}

export function endSession(deps: Pick<Deps, 'db'>, tokenHash: string): void {
  withTransaction({ deps }, ({ tx }) => tx.delete(portalSessions).where(eq(portalSessions.tokenHash, tokenHash)).run());
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
 * Failed sign-ins, in memory (a restart forgets them), counted per email, per client address, and per pair of
 * the two, over 15 minutes. Each failure makes the next answer for that email, that address or that pair
 * slower (250 ms doubling, up to 5 s), so guessing one user's password is as slow from many addresses as from
 * one. Ten failures lock the pair, and ten lock the address for every email; the email alone never locks, so
 * a stranger who knows a user's email cannot lock that user out from elsewhere.
 */
export class SignInThrottle {
  private readonly failures = new Map<string, { count: number; first: number }>();
  static readonly WINDOW_MS = 15 * 60_000;
  static readonly LOCK_AFTER = 10;
  /** Keys kept at most: past it the oldest windows are dropped first (memory stays bounded under a flood). */
  static readonly MAX_KEYS = 100_000;

  private entry(key: string, now: number) {
    const e = this.failures.get(key);
    if (!e || now - e.first > SignInThrottle.WINDOW_MS) return null;
    return e;
  }

  private static keys(email: string, address: string) {
    const e = email.toLowerCase();
    return { email: `e:${e}`, address: `a:${address}`, pair: `p:${address} ${e}` };
  }

  /** The failures that slow the next answer (the most of the three counts), and whether sign-in is locked for this pair. */
  status(email: string, address: string, now: number): { failures: number; locked: boolean } {
    const k = SignInThrottle.keys(email, address);
    const count = (key: string) => this.entry(key, now)?.count ?? 0;
    const pair = count(k.pair);
    const byAddress = count(k.address);
    return { failures: Math.max(pair, byAddress, count(k.email)), locked: pair >= SignInThrottle.LOCK_AFTER || byAddress >= SignInThrottle.LOCK_AFTER };
  }

  fail(email: string, address: string, now: number): void {
    for (const key of Object.values(SignInThrottle.keys(email, address))) {
      const e = this.entry(key, now);
      if (e) e.count++;
      else {
        if (this.failures.size >= SignInThrottle.MAX_KEYS) this.failures.delete(this.failures.keys().next().value!);
        this.failures.set(key, { count: 1, first: now });
      }
    }
  }

  /** A sign-in that worked clears its pair; the email's count still slows guesses from elsewhere until it passes. */
  succeed(email: string, address: string): void {
    this.failures.delete(SignInThrottle.keys(email, address).pair);
  }

  /** How long to hold the answer to a failed attempt: 250 ms, doubling, at most 5 s. */
  static delayMs(failures: number): number {
    return Math.min(5_000, 250 * 2 ** Math.max(0, failures - 1));
  }
}
