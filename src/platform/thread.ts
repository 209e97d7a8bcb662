import type { Config } from '../config';
import { FALLBACK_AUTOCHECKPOINT_PAGES } from './checkpointer';
import { openDatabase } from './db';
import { openPg, pgDbHandle } from './pg';
import { createLogger } from './logger';
import { Metrics } from './metrics';
import type { PlatformDeps } from './context';
import * as domainErrors from './errors';
import { absent } from './absent';

export { absent };

// The platform of a worker thread: its own connection to the service's database file (the main thread has
// migrated it), its own metrics (sent back to the main thread's), and a logger whose lines `post` hands to
// the main thread. What a worker's work never uses (the vault, page tokens) is absent, and reaching for it
// throws.

/** A worker thread's platform: its composition adds the engine's services (src/engine-services.ts). */
export function openThreadPlatform(config: Config, post: (line: string) => void): Omit<PlatformDeps, 'clock' | 'engine'> {
  // On PostgreSQL a small pool of its own (its transactions run beside the main thread's).
  const handle = config.databaseUrl ? pgDbHandle(openPg(config.databaseUrl, { max: 4 })) : openDatabase(config.databasePath, { migrate: false });
  // Checkpoints are the checkpointer's (platform/checkpointer.ts), as for the main connection: else every
  // commit of this connection that leaves the WAL past 1000 pages copies it into the database file and syncs
  // it before it returns, holding the write lock meanwhile (an upload commits about once a second, and after
  // each slice while other writes wait). The same fallback as the main connection's, should it stop.
  if (!config.databaseUrl) handle.sqlite.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  return {
    config,
    sqlite: handle.sqlite,
    db: handle.db,
    reader: handle.reader,
    pg: handle.pg,
    vault: absent('vault'),
    logger: createLogger(config.logLevel, { write: post }),
    metrics: new Metrics({ defaults: false }),
    pageTokens: absent('pageTokens'),
  };
}

/** An error as a worker posts it: a domain error's name, message, details and suggestion survive the trip. */
export interface PostedError {
  name: string;
  message: string;
  details?: Record<string, unknown>;
  suggestion?: string;
  stack?: string;
}

export function postedError(e: unknown): PostedError {
  const err = e instanceof Error ? e : new Error(String(e));
  const { details, suggestion } = err as Error & { details?: Record<string, unknown>; suggestion?: string };
  return { name: err.name, message: err.message, details, suggestion, stack: err.stack };
}

/** A posted error as the error it was: the same domain error class (so the answer is the same), else an Error. */
export function revivedError(e: PostedError): Error {
  const Cls = (domainErrors as Record<string, unknown>)[e.name];
  if (typeof Cls === 'function' && Cls.prototype instanceof domainErrors.DomainError) {
    const err = Object.create((Cls as { prototype: object }).prototype) as Error & { details?: unknown; suggestion?: unknown };
    Object.assign(err, { name: e.name, message: e.message, details: e.details, suggestion: e.suggestion, stack: e.stack });
    return err;
  }
  const err = new Error(e.message);
  err.stack = e.stack;
  return err;
}

/**
 * Bytes to post to a worker with their buffer in the transfer list: the bytes themselves when the caller
 * gives them up and they are their whole buffer (moved, not copied), else a copy the worker owns.
 */
export function bytesToPost(bytes: Uint8Array, giveUp: boolean): Uint8Array {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  return giveUp && whole ? bytes : bytes.slice();
}

/**
 * The one `T` of a database (a worker's handle, made at first use), closed with the database: `make` runs
 * once per connection, and the runtime's handle (when the deps have one) closes what it made.
 */
export function oncePerDatabase<T extends { close(): void }>(made: WeakMap<object, T>, deps: { db: object }, make: () => T): T {
  let t = made.get(deps.db);
  if (!t) {
    const created = make();
    made.set(deps.db, created);
    (deps as { handle?: { beforeClose: (() => void)[] } }).handle?.beforeClose.push(() => created.close());
    t = created;
  }
  return t;
}
