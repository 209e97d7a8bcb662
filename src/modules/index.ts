import type { Deps } from '../platform/deps';
import type { Job } from '../platform/jobs';
import type { authPlugin } from '../platform/auth';
import { webhookRoutes } from './webhooks/routes';
import { releaseDeliveryLeases, webhookDeliveryJob } from './webhooks/jobs';
import { balanceRoutes } from './balance-requests/routes';
import { balanceProcessingJob, idempotencyCleanupJob, releaseItemLeases } from './balance-requests/processing';
import { scheduleRoutes } from './schedules/routes';
import { scheduleJob } from './schedules/runs';

export type Auth = ReturnType<typeof authPlugin>;

/** Every feature's routes, mounted by createApp. */
export function featureRoutes(deps: Deps, auth: Auth) {
  return [balanceRoutes(deps, auth), scheduleRoutes(deps, auth), webhookRoutes(deps, auth)] as const;
}

/** Every feature's jobs, started by index.ts. */
export function featureJobs(): Job[] {
  return [scheduleJob, balanceProcessingJob, webhookDeliveryJob, idempotencyCleanupJob];
}

/**
 * One process serves a database file, so at start nothing can still hold a claim: work a stopped process
 * had claimed is made due again at once instead of after its lease.
 */
export function releaseStaleClaims(deps: Deps): void {
  releaseItemLeases(deps);
  releaseDeliveryLeases(deps);
}
