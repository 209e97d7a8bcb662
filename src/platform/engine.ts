import type { Tx } from './tx';
import type { WriteGate } from './write-gate';

// What the platform does differently on each engine beyond the stores, built once by the composition root
// (src/engine-services.ts) from the handle it opened: work leases, rate buckets, how a client address is named
// in them, the lookup of an API key, and the readiness check. One process on SQLite keeps leases and buckets
// in memory (nothing else serves the file); the replicas on one PostgreSQL database share them in tables.
// Nothing outside the composition asks which engine it runs on.

/** Token buckets of one limit: in memory (http/rate-limit.ts) or shared in a table (platform/rate-buckets.ts). */
export interface RateBuckets {
  /** 0 when the request may go ahead (a token is spent), else the whole seconds to wait before one is free. */
  take(key: string, now: number): number | Promise<number>;
  /** Like take, without spending: 0 when a token is there now, else the seconds until one is. */
  wait(key: string, now: number): number | Promise<number>;
  /** Spends a token if there is one (a failure counted after the fact). */
  spend(key: string, now: number): void | Promise<void>;
}

/** Leases of work one replica at a time does (platform/leases.ts). */
export interface Leases {
  /** Takes or renews the lease `name` for `owner` for `ttlMs`: false while another owner's has not expired. */
  take(name: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Lets the lease go if `owner` still holds it. */
  release(name: string, owner: string): Promise<void>;
  /** Whether a lease can pass to another owner (so a holder renews it): false where one process is alone. */
  readonly expire: boolean;
}

/** An API key as authentication finds it, with its lender. */
export interface KeyHolder {
  keyId: string;
  lastUsedAt: number | null;
  id: string;
  name: string;
  debitCardApproved: number;
  /** Set when the key was revoked: it names no lender any more, and the answer says so. */
  revokedAt: number | null;
}

/** The service's own API keys, as authentication reads them. */
export interface ApiKeyLookup {
  /** The key with this hash and its lender (revoked or not), or undefined. */
  holderOf(hash: string): Promise<KeyHolder | undefined>;
  /** Notes the key's last use; not waited for, and skipped when a write cannot go now (written next time). */
  touch(keyId: string, now: number): void;
}

/** Transactions on one engine (platform/transactions.sqlite.ts, transactions.pg.ts), run by platform/context.ts. */
export interface Transactions {
  /** fn in a transaction of its own, or in the caller's when `ctx.tx` is set. */
  run<C extends { tx?: Tx }, T>(ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T>;
  /** fn in a savepoint of the open transaction: its writes alone undone when it throws. */
  savepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T>;
  /** fn on one read snapshot, rolled back whatever fn does. */
  snapshot<C extends { tx?: Tx }, T>(ctx: C, fn: (ctx: C & { tx: Tx }) => T | Promise<T>): Promise<T>;
  /** The write gate of the database (platform/write-gate.ts). */
  readonly gate: WriteGate;
}

export interface EngineServices {
  /** The engine's name, as /readyz reports it. */
  readonly name: 'sqlite' | 'postgres';
  transactions: Transactions;
  leases: Leases;
  /** The token buckets of one limit, `name`: `perSecond` refill each second up to `burst`. */
  rateBuckets(name: string, perSecond: number, burst: number): RateBuckets;
  /** A client address as the buckets name it: itself in memory, a keyed hash in a shared table. */
  clientKey(address: string): string;
  apiKeys: ApiKeyLookup;
  /** Whether the database answers and its migrations are all applied. */
  ready(): Promise<{ database: boolean; migrations: boolean }>;
  /**
   * Whether a worker thread can open the database on its own connection: not a SQLite database in memory,
   * which exists only on the connection that made it.
   */
  readonly opensInThreads: boolean;
  /**
   * Whether the database has one writer at a time, whose lock another thread's long write must give up when
   * writes wait for it (SQLite's file lock); PostgreSQL's writers lock rows.
   */
  readonly oneWriter: boolean;
}
