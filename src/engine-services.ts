import type { EngineServices } from './platform/engine';
import { sqliteKeyLookup } from './modules/lenders/store.sqlite';
import { pgKeyLookup } from './modules/lenders/store.pg';
import { databaseReady, inMemory, type Db, type DbHandle } from './platform/db';
import { pgLeases, soleLeases } from './platform/leases';
import type { Logger } from './platform/logger';
import { pgReady } from './platform/pg';
import { PgRateBuckets } from './platform/rate-buckets';
import type { Vault } from './platform/vault';
import { RateLimiter } from './http/rate-limit';
import { sqliteTransactions } from './platform/transactions.sqlite';
import { pgTransactions } from './platform/transactions.pg';
import { MemoryHeldFiles, memorySignIns, PgHeldFiles, PgSignInCounter, type PortalState, type SharedDeps } from './modules/portal/shared-state';

/** What the engine's services are built on: the connections the runtime (or a worker thread) opened. */
type Connections = { db: Db; pg?: DbHandle['pg'] };

// The engine's services beside its stores, put together once from the handle the runtime opened (as
// src/stores.ts puts the stores together): nothing else builds one or asks which engine it runs on.

/** One process alone on a SQLite file: leases granted at once, buckets and portal state in memory. */
export function sqliteEngine(handle: Connections): EngineServices {
  return {
    name: 'sqlite',
    transactions: sqliteTransactions(handle.db),
    leases: soleLeases,
    rateBuckets: (_name, perSecond, burst) => new RateLimiter(perSecond, burst),
    clientKey: (address) => address,
    apiKeys: sqliteKeyLookup(handle.db),
    ready: async () => databaseReady(handle.db),
    opensInThreads: !inMemory(handle.db),
    oneWriter: true,
  };
}

/**
 * Replicas on one PostgreSQL database: leases and buckets in tables every replica reads, a client address named
 * there by a keyed hash (a load balancer may send the same client to any replica), never in the clear.
 */
export function pgEngine(handle: Connections, vault: Vault, logger: Logger): EngineServices {
  const pg = handle.pg!;
  return {
    name: 'postgres',
    transactions: pgTransactions(pg),
    leases: pgLeases(pg),
    rateBuckets: (name, perSecond, burst) =>
      new PgRateBuckets(pg, name, perSecond, burst, (e) => logger.warn({ err: (e as Error).message, limit: name }, 'rate bucket sweep failed')),
    clientKey: vault.hasher('rate-bucket-address'),
    apiKeys: pgKeyLookup(pg),
    ready: () => pgReady(pg),
    opensInThreads: true,
    oneWriter: false,
  };
}

/** The portal's state between two requests on SQLite: in this process's memory (a restart forgets it). */
export const sqlitePortalState = (): PortalState => ({ signIns: memorySignIns(), heldFiles: new MemoryHeldFiles() });

/** The same on PostgreSQL: in tables every replica reads. */
export const pgPortalState = (deps: SharedDeps): PortalState => ({ signIns: new PgSignInCounter(deps), heldFiles: new PgHeldFiles(deps) });
