import { transaction } from '../platform/context';
import { replicaPrefix } from '../platform/lease-token';
import { againOnConflict } from '../platform/pg';
import type { Ctx, Deps } from '../deps';
import type { Auth } from '../http/auth';
import type { Job } from '../platform/jobs';
import type { SealedColumn } from '../platform/vault';
import { webhookEndpointRoutes, webhookRoutes } from './webhooks/routes';
import { webhookDocuments } from './webhook-payloads';
import { releaseDeliveryLeases, webhookDeliveryJob } from './webhooks/jobs';
import { balanceRoutes } from './balance-requests/routes';
import { balanceProcessingJob, idempotencyCleanupJob } from './balance-requests/processing';
import { scheduleRoutes } from './schedules/routes';
import { paymentConnectionRoutes } from './payment-connections/routes';
import { bankDataConnectionRoutes } from './bank-data-connections/routes';
import { bankDataWebhookRoutes } from './bank-data-webhooks/routes';
import { sealedColumns as bankDataSealed } from './bank-data-connections/service';
import { providerCallsJob } from './bank-data-connections/usage';
import { sealedColumns as connectionSealed } from './payment-connections/service';
import { bankAccountRoutes } from './bank-accounts/routes';
import { rightsNoticeRoutes } from './rights-notices/routes';
import { fraudRoutes } from './fraud-monitoring/routes';
import { sealedColumns as bankAccountSealed } from './bank-accounts/fingerprint';
import { enrollmentRoutes } from './enrollments/routes';
import { sealedColumns as enrollmentSealed } from './enrollments/service';
import { heldRecheckJob, lapseJob, monitoringReadsJob } from './enrollments/monitoring';
import { searchIndexJob } from './enrollments/search';
import { accountLinkJob } from './enrollments/account-links';
import { payHistoryJob } from './pay-cycles/history';
import { linkProbeJob } from './balance-requests/link-health';
import { dispatchJob } from './collection/dispatch';
import { accountBlocksJob } from './collection/account-blocks';
import { accountChangesJob } from './collection/account-changes';
import { pollJob } from './collection/poll';
import { reconcileJob } from './collection/reconcile';
import { paymentEventRoutes } from './collection/routes';
import { collectionPolicyRoutes } from './collection-policy/routes';
import { returnRateRoutes } from './return-rates/routes';
import { returnRateJob } from './return-rates/watch';
import { achReportRoutes } from './ach-report/routes';
import { portalRoutes } from './portal/routes';
import { portalErrorPage } from './portal/plugin';
import { uploadRoutes } from './payment-results-upload/routes';
import { refuseWhenUploadsFull } from './payment-results-upload/service';
import { sealedColumns as uploadSealed } from './payment-results-upload/recording';
import { uploadResumeJob } from './payment-results-upload/jobs';
import { scheduleJob } from './schedules/runs';
import { sealedColumns as webhookSealed } from './webhooks/service';
import { refuseWhenBacklogFull, sealedColumns as batchSealed } from './balance-requests/service';
import { sealedColumns as scheduleSealed } from './schedules/service';

// The features, as the composition root sees them: their routes, jobs, sealed columns and queues (what a
// balance result sets off is in balance-results.ts).

/** Every feature's routes, mounted by createApp. */
export function featureRoutes(deps: Deps, auth: Auth) {
  return [balanceRoutes(deps, auth), scheduleRoutes(deps, auth), webhookRoutes(deps, auth), webhookEndpointRoutes(deps, auth), paymentConnectionRoutes(deps, auth), bankDataConnectionRoutes(deps, auth), bankDataWebhookRoutes(deps), enrollmentRoutes(deps, auth), bankAccountRoutes(deps, auth), rightsNoticeRoutes(deps, auth), fraudRoutes(deps, auth), paymentEventRoutes(deps, auth), collectionPolicyRoutes(deps, auth), returnRateRoutes(deps, auth), achReportRoutes(deps, auth), uploadRoutes(deps, auth), portalRoutes(deps)] as const;
}

/** Routes whose writes run in a worker that takes the write gate itself: they hold no share of it. */
export const TAKE_THE_GATE_THEMSELVES = new Set(['/v1/payment_results/uploads', '/portal/payments/results-upload']);

/**
 * What a request must pass before its body is read, by method and path: a lender whose bound no body could
 * fit now (its balance backlog full, its uploads' queue full) is refused (429) without reading it.
 */
export const FEATURE_ADMISSIONS: Record<string, (ctx: Ctx) => Promise<void> | void> = {
  'POST /v1/balance_requests': refuseWhenBacklogFull,
  'POST /v1/balance_requests/csv': refuseWhenBacklogFull,
  'POST /v1/payment_results/uploads': refuseWhenUploadsFull,
};

/** An error of a request for a page, as a page (null for API requests: they get the JSON envelope). */
export const featureErrorPage = portalErrorPage;

/** What every webhook the service sends carries, for the OpenAPI document. */
export const featureWebhooks = webhookDocuments;

/** Every feature's jobs, started by index.ts. */
export function featureJobs(deps: Pick<Deps, 'config'>): Job<Deps>[] {
  return [
    scheduleJob,
    balanceProcessingJob,
    webhookDeliveryJob,
    idempotencyCleanupJob,
    monitoringReadsJob,
    lapseJob,
    heldRecheckJob,
    searchIndexJob,
    accountLinkJob,
    payHistoryJob,
    linkProbeJob,
    providerCallsJob,
    dispatchJob,
    accountBlocksJob,
    accountChangesJob,
    pollJob(deps.config.processorPollIntervalMs),
    reconcileJob(deps.config.processorReconcileIntervalMs),
    returnRateJob(deps.config.returnRateCheckIntervalMs),
    uploadResumeJob,
  ];
}

/** Every column holding vault-sealed values, for `vault rotate` and `vault status`. */
export const SEALED_COLUMNS: SealedColumn[] = [...webhookSealed, ...batchSealed, ...scheduleSealed, ...connectionSealed, ...bankDataSealed, ...enrollmentSealed, ...bankAccountSealed, ...uploadSealed];

/**
 * At start, work a stopped process had claimed is made due again at once instead of after its lease. On SQLite
 * one process serves the file, so that is every claim. On PostgreSQL other replicas may be alive: only this
 * replica's own claims (from before a restart under the same REPLICA_ID) are let go; another's are taken over
 * once their leases run out, never before.
 */
export async function releaseStaleClaims(deps: Pick<Deps, 'db' | 'reader' | 'pg' | 'engine' | 'clock' | 'stores'>): Promise<void> {
  const prefix = replicaPrefix();
  // Beside other replicas' claims a release may lose a deadlock: it is run again, not the start failed.
  await againOnConflict(5, async () => {
    await transaction({ deps }, async (tx) => {
      await tx.deps.stores.balances.releaseReadLeases(tx, prefix);
      // Payments whose outcome is not known yet are due again at once (dispatch resolves them at the processor).
      await tx.deps.stores.dispatch.releasePaymentLeases(tx, prefix);
    });
    await releaseDeliveryLeases(deps);
  });
}
