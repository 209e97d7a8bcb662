import type { PlatformDeps } from './context';
import type { Leases } from './engine';
import type { PgHandle } from './pg';

// Leases of work that one replica at a time does (a job's tick, one processor key's feed), on the `leases`
// table: a row per piece of work, held by `owner` until `until`. Taking one is one conditional statement, so of
// two replicas asking at once exactly one gets it; a lease past its time is taken over by whoever asks next,
// never before. Times are the database server's (one clock for every replica, whatever their own clocks say).
//
// On SQLite one process serves the database file, so nothing else can hold the work: a lease is granted at once
// without touching the table, and costs nothing.

type LeaseDeps = Pick<PlatformDeps, 'engine'>;

/** The database server's time in milliseconds, in SQL. */
const DB_NOW = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/**
 * The server's clock is read once: the new term starts at the instant the old one is checked against
 * (`EXCLUDED.until - ttl`). Read twice, the check could see a later instant than the term started from, and a
 * lease taken at its expiry be recorded as taken a millisecond before it.
 */
const TAKE = `INSERT INTO leases (name, owner, until) VALUES ($1, $2, ${DB_NOW} + $3::bigint)
  ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
    WHERE leases.until <= EXCLUDED.until - $3::bigint OR leases.owner = EXCLUDED.owner
  RETURNING 1 AS taken`;

const RELEASE = `DELETE FROM leases WHERE name = $1 AND owner = $2`;

/** Leases in the `leases` table, shared by every replica on the database. */
export function pgLeases(pg: PgHandle): Leases {
  return {
    expire: true,
    take: async (name, owner, ttlMs) => ((await pg.sql.unsafe(TAKE, [name, owner, Math.max(1, Math.round(ttlMs))])) as unknown[]).length > 0,
    release: async (name, owner) => void (await pg.sql.unsafe(RELEASE, [name, owner])),
  };
}

/** The leases of a process alone on its database: every lease granted at once, never lost. */
export const soleLeases: Leases = {
  expire: false,
  take: async () => true,
  release: async () => undefined,
};

/**
 * Takes the lease `name` for `owner` for `ttlMs`, or renews it when `owner` holds it already: true when
 * `owner` holds it now, until the server's now + ttlMs. False while another owner's lease has not expired.
 */
export const takeLease = (deps: LeaseDeps, name: string, owner: string, ttlMs: number): Promise<boolean> => deps.engine.leases.take(name, owner, ttlMs);

/** Lets the lease go, if `owner` still holds it (one taken over meanwhile is left to its new owner). */
export const releaseLease = (deps: LeaseDeps, name: string, owner: string): Promise<void> => deps.engine.leases.release(name, owner);

/** Work stopped because its lease passed to another replica (it was not renewed in time). */
export class LeaseLostError extends Error {
  constructor(readonly lease: string) {
    super(`the lease ${lease} passed to another replica`);
    this.name = 'LeaseLostError';
  }
}

/**
 * A lease taken for a stretch of work, renewed as the work goes on: `keep()` between two steps takes it again
 * once a third of its time has passed since it was last taken (a cheap check otherwise), and says whether it
 * is still held. A step must take less than the lease's time; a replica stopped longer (paused, cut off) loses
 * the lease to the next taker and learns it at its next `keep()`.
 */
export class HeldLease {
  private takenAt = performance.now();
  private lost = false;
  private readonly lostAbort = new AbortController();
  /** Aborted once the lease is found lost: the work stops taking new steps. */
  readonly signal = this.lostAbort.signal;

  private constructor(
    private readonly deps: LeaseDeps,
    readonly name: string,
    readonly owner: string,
    readonly ttlMs: number,
  ) {}

  /** The lease, taken now, or null while another owner holds it. */
  static async take(deps: LeaseDeps, name: string, owner: string, ttlMs: number): Promise<HeldLease | null> {
    const at = performance.now();
    if (!(await takeLease(deps, name, owner, ttlMs))) return null;
    const held = new HeldLease(deps, name, owner, ttlMs);
    held.takenAt = at;
    return held;
  }

  /** Whether the lease is still held, renewed first when a third of its time has passed. */
  async keep(): Promise<boolean> {
    if (this.lost) return false;
    if (!this.deps.engine.leases.expire || performance.now() - this.takenAt < this.ttlMs / 3) return true;
    const at = performance.now();
    if (await takeLease(this.deps, this.name, this.owner, this.ttlMs)) this.takenAt = at;
    else {
      this.lost = true;
      this.lostAbort.abort(new LeaseLostError(this.name));
    }
    return !this.lost;
  }

  /** As keep(), throwing LeaseLostError when the lease is no longer held. */
  async keepOrThrow(): Promise<void> {
    if (!(await this.keep())) throw new LeaseLostError(this.name);
  }

  async release(): Promise<void> {
    if (this.lost) return;
    await releaseLease(this.deps, this.name, this.owner);
  }
}
