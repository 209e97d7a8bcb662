import type { PlatformDeps, TransactionsSlot } from '../../platform/context';
import type { StoresSlot } from '../../platform/store';
import type { HeldFile, HeldFiles, PortalState, SignInCounter } from './portal-state';
import { transaction } from '../../platform/context';
import { againOnConflict } from '../../platform/pg';
import { normalizeEmail } from './users';
import { SignInThrottle } from './session';
import {
  countSignInAttempt,
  holdFile,
  releaseSignInAttempt,
  signInCounts,
  sweepHeldFiles,
  sweepSignInCounts,
  takeHeldFile,
  type SignInKeys,
} from './shared-state-store.pg';

export type { HeldFile, HeldFiles, PortalState, SignInCounter };

// What the portal keeps between two requests of one user besides the session: the sign-in counts and the
// files checked and held for confirmation. One process on SQLite keeps them in memory; the replicas on one
// PostgreSQL database share them in the database (a load balancer may send the next request elsewhere). The
// composition root chooses once, at start (src/engine-services.ts), and hands them over as `deps.portal`.

export type SharedDeps = Pick<PlatformDeps, 'pg' | 'db' | 'reader' | 'vault' | 'logger'> & StoresSlot & TransactionsSlot;

/** How often (at most) one process deletes what has expired. */
const SWEEP_EVERY_MS = 60_000;

/** The counts of one process, in its memory. */
export function memorySignIns(): SignInCounter {
  const t = new SignInThrottle();
  return {
    attempt: async (email, address, now) => t.attempt(email, address, now),
    succeed: async (email, address, now) => t.succeed(email, address, now),
    status: async (email, address, now) => t.status(email, address, now),
  };
}

/**
 * The counts in `sign_in_counts`, by a keyed hash (HMAC-SHA-256 with a key derived from the vault, the same on
 * every replica) of the normalized email, the address and the pair: never an email in the clear. An attempt
 * is one transaction that serializes the attempts of its address, so however many arrive at once on however
 * many replicas, at most LOCK_AFTER of a pair or an address are checked in a window.
 */
export class PgSignInCounter implements SignInCounter {
  private readonly hash: (value: string) => string;
  private lastSweep = 0;

  constructor(private readonly deps: SharedDeps) {
    this.hash = deps.vault.hasher('portal-sign-in-counts');
  }

  private keys(email: string, address: string): SignInKeys {
    const e = normalizeEmail(email);
    return {
      email: this.hash(`e:${e}`),
      address: this.hash(`a:${address}`),
      pair: this.hash(`p:${address} ${e}`),
    };
  }

  async attempt(email: string, address: string, now: number) {
    this.sweepNowAndThen(now);
    const k = this.keys(email, address);
    // Beside the attempts of other addresses (the email's count is shared), a transaction may lose a deadlock:
    // it is run again, not the sign-in failed.
    const failures = await againOnConflict(3, () => transaction({ deps: this.deps }, (tx) => countSignInAttempt(tx, k, now, SignInThrottle.WINDOW_MS, SignInThrottle.LOCK_AFTER)));
    return failures === null ? ({ locked: true } as const) : ({ locked: false, failures } as const);
  }

  async succeed(email: string, address: string, now: number) {
    const k = this.keys(email, address);
    await againOnConflict(3, () => transaction({ deps: this.deps }, (tx) => releaseSignInAttempt(tx, k, now, SignInThrottle.WINDOW_MS)));
  }

  async status(email: string, address: string, now: number) {
    const k = this.keys(email, address);
    const counts = await signInCounts({ deps: this.deps }, [k.email, k.address, k.pair], now, SignInThrottle.WINDOW_MS);
    const pair = counts.get(k.pair) ?? 0;
    const byAddress = counts.get(k.address) ?? 0;
    return { failures: Math.max(pair, byAddress, counts.get(k.email) ?? 0), locked: pair >= SignInThrottle.LOCK_AFTER || byAddress >= SignInThrottle.LOCK_AFTER };
  }

  private sweepNowAndThen(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    sweepSignInCounts({ deps: this.deps }, now, SignInThrottle.WINDOW_MS, SignInThrottle.MAX_KEYS).catch((e: unknown) =>
      this.deps.logger.warn({ err: (e as Error).message }, 'sign-in count sweep failed'),
    );
  }
}

export const HELD_TTL_MS = 30 * 60_000;
export const MAX_HELD = 16;

/** In this process's memory (a restart forgets them). */
export class MemoryHeldFiles implements HeldFiles {
  readonly acrossRestarts = false;
  private readonly held = new Map<string, HeldFile>();
  async hold(session: string, file: { bytes: Uint8Array; name: string; at: number }): Promise<string> {
    const id = crypto.randomUUID();
    this.held.delete(session);
    while (this.held.size >= MAX_HELD) this.held.delete(this.held.keys().next().value!);
    this.held.set(session, { id, ...file });
    return id;
  }
  async take(session: string, id: string): Promise<HeldFile | null> {
    const f = this.held.get(session);
    if (!f || f.id !== id) return null;
    this.held.delete(session);
    return f;
  }
  async sweep(now: number): Promise<void> {
    for (const [k, f] of this.held) if (now - f.at > HELD_TTL_MS) this.held.delete(k);
  }
}

/**
 * In `held_files`, keyed by a keyed hash of the session (its token's hash, hashed again with a key derived from
 * the vault), the name and the body sealed with the vault: they are borrowers' payment data. A take deletes
 * the row in the statement that reads it, so two replicas confirming at once record it once.
 */
export class PgHeldFiles implements HeldFiles {
  readonly acrossRestarts = true;
  private readonly hash: (value: string) => string;
  private lastSweep = 0;

  constructor(private readonly deps: SharedDeps) {
    this.hash = deps.vault.hasher('portal-held-files');
  }

  async hold(session: string, file: { bytes: Uint8Array; name: string; at: number }): Promise<string> {
    const id = crypto.randomUUID();
    const sealed = { id, name: this.deps.vault.seal(file.name), body: Buffer.from(this.deps.vault.sealBytes(file.bytes)), at: file.at };
    await transaction({ deps: this.deps }, (tx) => holdFile(tx, this.hash(session), sealed, MAX_HELD));
    return id;
  }

  async take(session: string, id: string, now: number): Promise<HeldFile | null> {
    const r = await takeHeldFile({ deps: this.deps }, this.hash(session), id, now - HELD_TTL_MS);
    if (!r) return null;
    return { id: r.id, name: this.deps.vault.open(r.name), bytes: new Uint8Array(this.deps.vault.openBytes(Buffer.from(r.body).toString('latin1'))), at: r.at };
  }

  async sweep(now: number): Promise<void> {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    await sweepHeldFiles({ deps: this.deps }, now - HELD_TTL_MS);
  }
}
