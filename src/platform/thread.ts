import type { Config } from '../config';
import { openDatabase } from './db';
import { createLogger } from './logger';
import { Metrics } from './metrics';
import type { PlatformDeps } from './context';

// The platform of a worker thread: its own connection to the service's database file (the main thread has
// migrated it), its own metrics (sent back to the main thread's), and a logger whose lines `post` hands to
// the main thread. What a worker's work never uses (the vault, page tokens) is absent, and reaching for it
// throws.

/** An object whose every property read throws, naming it: what a worker must not use. */
export function absent<T>(name: string): T {
  return new Proxy(
    {},
    {
      get: (_t, prop) => {
        throw new Error(`${name}.${String(prop)} is not available in this worker`);
      },
    },
  ) as T;
}

export function openThreadPlatform(config: Config, post: (line: string) => void): Omit<PlatformDeps, 'clock'> {
  const handle = openDatabase(config.databasePath, { migrate: false });
  return {
    config,
    sqlite: handle.sqlite,
    db: handle.db,
    vault: absent('vault'),
    logger: createLogger(config.logLevel, { write: post }),
    metrics: new Metrics({ defaults: false }),
    pageTokens: absent('pageTokens'),
  };
}
