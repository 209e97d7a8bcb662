import type { PlatformDeps, ServiceCtx, JobCtx, Tx } from './platform/context';
import type { BalanceProvider } from './adapters/bank-data/types';
import type { LinkedSources } from './adapters/bank-data/linked';
import type { RoutingDirectory } from './adapters/routing/directory';
import type { Processors } from './adapters/processors';
import type { CompletedBatch, RecordedRead } from './modules/balance-requests/results';
import type { ProviderCallCounts } from './platform/provider-calls';
import type { ScheduleStore } from './modules/schedules/store';
import type { EnrollmentStore } from './modules/enrollments/store';
import type { MonitorStore } from './modules/enrollments/monitor-store';
import type { BankAccountStore } from './modules/bank-accounts/store';
import type { RightsNoticeStore } from './modules/rights-notices/store';
import type { FraudStore } from './modules/fraud-monitoring/store';
import type { BankDataConnectionStore } from './modules/bank-data-connections/store';
import type { PayCycleStore } from './modules/pay-cycles/store';
import type { DispatchStore, OutcomeStore, MatchingStore, DecisionStore, PaymentReadStore } from './modules/collection/store';
import type { CollectionPolicyStore } from './modules/collection-policy/store';
import type { BalanceStore } from './modules/balance-requests/store';
import type { LinkHealthStore } from './modules/balance-requests/link-health-store';
import type { LenderStore } from './modules/lenders/store';
import type { ReturnRateStore } from './modules/return-rates/store';
import type { AchReportStore } from './modules/ach-report/store';
import type { UploadStore } from './modules/payment-results-upload/store';
import type { PaymentConnectionStore } from './modules/payment-connections/store';
import type { FeedStore } from './modules/payment-connections/feed-store';
import type { WebhookStore } from './modules/webhooks/store';
import type { PortalStore } from './modules/portal/store';
import type { PortalState } from './modules/portal/portal-state';

/** Everything a service or job may use: the platform, the adapters, and what a balance result sets off. */
export interface Deps extends PlatformDeps {
  bank: BalanceProvider;
  /** Linked accounts at Plaid and Stripe Financial Connections, read with each lender's own credentials. */
  linked: LinkedSources;
  routing: RoutingDirectory;
  processors: Processors;
  /** What a recorded balance result sets off (modules/balance-results.ts), run by the balance pipeline. */
  /** Every feature's store, of the engine the service runs on (modules/stores.ts). */
  stores: Stores;
  balanceResults: BalanceResultChain;
  /** What a change of an enrollment sets off in collection and pay cycles (modules/enrollment-changes.ts). */
  enrollmentChanges: EnrollmentChangeChain;
  /** Provider calls counted per connection, endpoint and day, not yet written (platform/provider-calls.ts). */
  providerCalls: ProviderCallCounts;
  /** What the portal keeps between two requests (sign-in counts, held files), of the engine, chosen once. */
  portal: PortalState;
}

/**
 * One store per feature, each of the engine the service runs on: chosen once, when the runtime is built
 * (modules/stores.ts), never per call. Services and jobs call `ctx.deps.stores.<feature>.<method>(ctx, …)`.
 */
export interface Stores {
  schedules: ScheduleStore;
  enrollments: EnrollmentStore;
  monitors: MonitorStore;
  bankAccounts: BankAccountStore;
  rightsNotices: RightsNoticeStore;
  fraud: FraudStore;
  bankDataConnections: BankDataConnectionStore;
  payCycles: PayCycleStore;
  dispatch: DispatchStore;
  outcomes: OutcomeStore;
  matching: MatchingStore;
  decisions: DecisionStore;
  paymentReads: PaymentReadStore;
  collectionPolicy: CollectionPolicyStore;
  balances: BalanceStore;
  linkHealth: LinkHealthStore;
  lenders: LenderStore;
  returnRates: ReturnRateStore;
  achReport: AchReportStore;
  uploads: UploadStore;
  paymentConnections: PaymentConnectionStore;
  feeds: FeedStore;
  webhooks: WebhookStore;
  portal: PortalStore;
}

// Every store context carries the stores (platform/store.ts declares the slot; what it holds is named here).
declare module './platform/store' {
  interface StoresSlot {
    stores: Stores;
  }
}

/** A service call's context in this service: `{ lender, deps, tx? }`. */
export type Ctx = ServiceCtx<Deps>;
export type JobContext = JobCtx<Deps>;

/**
 * The chain a balance result sets off, handed to the balance pipeline by the composition root: the pipeline
 * sits below the features it reaches (enrollments, collection, pay cycles, schedules), so it calls them
 * through this and never imports them. Both steps run inside the transaction that records the results.
 */
/**
 * What a change of a borrower's enrollment sets off above the enrollments feature, handed to it by the
 * composition root (modules/enrollment-changes.ts), in the transaction of the change.
 */
export interface EnrollmentChangeChain {
  /** A borrower re-sent while monitored: its debt's chain counted again, and blocked at once if a rule holds it. */
  resent(ctx: JobContext & { tx: Tx }, enrollmentId: string, now: number): Promise<void>;
  /** Borrowers with a linked account want their transaction history, due at once. */
  wantHistory(ctx: JobContext & { tx: Tx }, lenderId: string, enrollmentIds: readonly string[], now: number): Promise<void>;
  /** Monitoring of the borrower stopped (removal, erasure): a payment scheduled and not sent is voided. */
  stopped(ctx: JobContext & { tx: Tx }, enrollmentId: string): Promise<void>;
  /** Erasure: what is stored for the borrowers' pay cycles goes with their personal data. */
  erased(ctx: JobContext & { tx: Tx }, enrollmentIds: readonly string[]): Promise<void>;
}

export interface BalanceResultChain {
  /** A flush of recorded results (up to a few dozen), before the batches' counters are updated. */
  afterResults(ctx: JobContext & { tx: Tx }, reads: RecordedRead[]): Promise<void>;
  /** A batch's last result: after the batch is marked completed and its own notification is in the outbox. */
  afterBatchCompleted(ctx: JobContext & { tx: Tx }, batch: CompletedBatch): Promise<void>;
  /** A borrower's linked account the provider says is well again, in the transaction that closes its episode. */
  afterLinkRepaired(ctx: JobContext & { tx: Tx }, link: { lenderId: string; aid: string; now: number }): Promise<void>;
}
