import type { PlatformDeps, ServiceCtx, JobCtx } from './platform/context';
import type { BalanceProvider } from './adapters/bank-data/types';
import type { LinkedSources } from './adapters/bank-data/linked';
import type { RoutingDirectory } from './adapters/routing/directory';
import type { Processors } from './adapters/processors';
import type { FeatureHooks } from './modules/hooks';

/** Everything a service or job may use: the platform, the adapters, and the hooks features registered. */
export interface Deps extends PlatformDeps {
  bank: BalanceProvider;
  /** Linked accounts at Plaid and Stripe Financial Connections, read with each lender's own credentials. */
  linked: LinkedSources;
  routing: RoutingDirectory;
  processors: Processors;
  hooks: FeatureHooks;
}

/** A service call's context in this service: `{ lender, deps, tx? }`. */
export type Ctx = ServiceCtx<Deps>;
export type JobContext = JobCtx<Deps>;
