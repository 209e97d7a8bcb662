import type { Database } from 'bun:sqlite';
import type { Config } from '../config';
import type { Clock } from './clock';
import type { Db } from './db';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { Vault } from './vault';
import type { PageTokens } from './pagination';
import type { BalanceProvider } from '../adapters/bank-data/types';
import type { RoutingDirectory } from '../adapters/routing/directory';

/** Everything a route, service or job needs from the platform; built once at start (or per test). */
export interface Deps {
  config: Config;
  sqlite: Database;
  db: Db;
  clock: Clock;
  vault: Vault;
  logger: Logger;
  metrics: Metrics;
  pageTokens: PageTokens;
  bank: BalanceProvider;
  routing: RoutingDirectory;
}

/** The base address used in links (documentation_url), from PUBLIC_BASE_URL or the listen address. */
export function baseUrl(config: Config): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const scheme = config.tlsCertFile ? 'https' : 'http';
  const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  return `${scheme}://${host}:${config.port}`;
}
