import { EXPORT_STATUSES, type ExportStatus } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { getBatchStatus } from './service';

// One batch as a page shows it: its status (GET /v1/balance_requests/{id}) and its results counted by export
// Status, off balance_results_batch_idx (a batch holds at most 5000 results, so the count is bounded).

export async function batchSummary({ ctx, input }: { ctx: Ctx; input: { batchId: string } }) {
  const status = await getBatchStatus({ ctx, input });
  const rows = await ctx.deps.stores.balances.resultCountsByStatus(ctx, status.batch_id);
  const byStatus = Object.fromEntries(EXPORT_STATUSES.map((s) => [s, 0])) as Record<ExportStatus, number>;
  for (const r of rows) byStatus[r.status] = r.n;
  return { ...status, by_status: byStatus, waiting: status.total_authorizers - status.total_processed };
}
