import type { DestinationStream } from 'pino';
import { ConfigError, type Config } from './config';
import type { Deps } from './deps';
import { systemClock, type Clock } from './platform/clock';
import { openDatabase, type DbHandle } from './platform/db';
import { openPg, pgDbHandle } from './platform/pg';
import { createLogger } from './platform/logger';
import { setReplicaId } from './platform/lease-token';
import { Metrics } from './platform/metrics';
import { loadVault, type Vault } from './platform/vault';
import { PageTokens } from './platform/pagination';
import { gateOf } from './platform/write-gate';
import { ProviderCallCounts, providerCallObserver } from './platform/provider-calls';
import { createBalanceProvider, createLinkedSources } from './adapters/bank-data';
import type { LinkedSources } from './adapters/bank-data/linked';
import type { BalanceProvider } from './adapters/bank-data/types';
import { loadRoutingDirectory } from './adapters/routing';
import { createProcessors, type Processor } from './adapters/processors';
import { StripeProcessor } from './adapters/processors/stripe';
import { balanceResultChain } from './modules/balance-results';
import { pgStores, sqliteStores } from './stores';
import { pgEngine, pgPortalState, sqliteEngine, sqlitePortalState } from './engine-services';
import { enrollmentChangeChain } from './modules/enrollment-changes';
import { queueDepth } from './modules/balance-requests/service';
import { Wakeups } from './platform/wakeups';

// The composition root: the one place that knows every concrete piece (platform, adapters, features) and
// wires them into the Deps that routes, services and jobs receive.

export interface Runtime extends Deps {
  handle: DbHandle;
  vaultKeyCreated: boolean;
}

/** Opens everything the service runs on: vault, database (migrated), logger, metrics, adapters. */
export function createRuntime(
  config: Config,
  opts: {
    clock?: Clock;
    logDestination?: DestinationStream;
    vault?: Vault;
    defaultMetrics?: boolean;
    bank?: BalanceProvider;
    linked?: LinkedSources;
    /** Stands in for Stripe (tests point the real adapter at a fake server through STRIPE_API_URL instead). */
    stripe?: () => Processor;
  } = {},
): Runtime {
  setReplicaId(config.replicaId);
  let vault = opts.vault;
  let vaultKeyCreated = false;
  if (!vault) {
    try {
      const loaded = loadVault(config);
      vault = loaded.vault;
      vaultKeyCreated = loaded.created;
    } catch (e) {
      throw new ConfigError(config.vaultKey ? 'VAULT_KEY' : 'VAULT_KEY_FILE', 'a readable 32-byte base64 key', (e as Error).message);
    }
  }
  const routing = loadRoutingDirectory(config.routingDirectoryFile);
  const logger = createLogger(config.logLevel, opts.logDestination);
  if (config.routingDirectoryFile) {
    logger.info({ loaded: routing.loaded, skipped: routing.skipped }, 'routing directory loaded');
  }
  // PostgreSQL when DATABASE_URL is set (migrated by the start before this, index.ts), else the SQLite file.
  const handle: DbHandle = config.databaseUrl ? pgDbHandle(openPg(config.databaseUrl, { max: config.databasePoolMax })) : openDatabase(config.databasePath, { walSync: true });
  const clock = opts.clock ?? systemClock;
  const metrics = new Metrics({ defaults: opts.defaultMetrics });
  const providerCalls = new ProviderCallCounts();
  const observer = providerCallObserver(metrics, providerCalls, clock, logger);
  const processors = createProcessors({
    sqlite: handle.sqlite,
    pg: handle.pg,
    clock,
    sandbox: {
      settlementMs: config.sandboxSettlementMs,
      latencyMs: config.sandboxProcessorLatencyMs,
      latencyJitterMs: config.sandboxProcessorLatencyJitterMs,
      idempotencyTtlMs: config.sandboxIdempotencyTtlMs,
      outageMs: config.sandboxOutageMs,
      eventRetentionMs: config.sandboxEventRetentionMs,
    },
    stripe: opts.stripe ?? (() => new StripeProcessor({ apiUrl: config.stripeApiUrl, logger, timeScale: config.providerTimeScale, onCall: observer('processor', 'stripe') })),
  });
  // The engine chosen once: its stores and its services beside them.
  const stores = handle.pg ? pgStores : sqliteStores;
  const engine = handle.pg ? pgEngine(handle, vault, logger) : sqliteEngine(handle);
  const portal = handle.pg ? pgPortalState({ ...handle, vault, logger, stores, engine }) : sqlitePortalState();
  metrics.setQueueDepthSource(() => queueDepth({ ...handle, stores, engine }));
  metrics.setWriteGateSources(() => gateOf(handle.sqlite).bypassed, () => gateOf(handle.sqlite).held);
  return {
    config,
    handle,
    sqlite: handle.sqlite,
    db: handle.db,
    reader: handle.reader,
    pg: handle.pg,
    clock,
    vault,
    vaultKeyCreated,
    logger,
    metrics,
    pageTokens: new PageTokens(vault),
    wakeups: new Wakeups(),
    routing: routing.directory,
    bank: opts.bank ?? createBalanceProvider(config, routing.directory, logger, clock, observer('bank_data', 'http')),
    linked: opts.linked ?? createLinkedSources(config, (provider) => observer('bank_data', provider)),
    processors,
    stores,
    engine,
    portal,
    balanceResults: balanceResultChain,
    enrollmentChanges: enrollmentChangeChain,
    providerCalls,
  };
}
