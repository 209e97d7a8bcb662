import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { Conflict, NotFound } from '../../platform/errors';
import { takeOnDemand } from '../../platform/on-demand';
import { insertBatch, refuseOverBacklog } from '../balance-requests/service';
import { monitoringAuthorizer } from './monitoring';

// POST /v1/payment_enrollments/{authorizer_unique_id}/read: a monitored borrower's balance read now, not at
// its next_read_at. The read is a monitoring batch of one, exactly what the due check queues: its result is
// set on the enrollment and handed to collection, which may then debit. The next regular read is one interval
// after this one. Bounded by the lender's on-demand bucket and its bound on authorizers waiting.

export interface ReadNowResult {
  authorizer_unique_id: string;
  batch_id: string;
  submitted_at: string;
  next_read_at: string;
}

export function readBorrowerNow({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string } }): Promise<ReadNowResult> {
  const now = ctx.deps.clock.now();
  return transaction(ctx, async (tx) => {
    // Read and queued with no erasure or re-send of the borrower in between.
    await tx.deps.stores.enrollments.serializeBorrowers(tx, ctx.lender.id, [input.authorizerUniqueId]);
    const e = await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId);
    if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
    if (e.state !== 'monitored') {
      throw new Conflict(`The borrower is ${e.state}: only a monitored borrower's balance is read`);
    }
    if (!e.sealed) throw new Conflict('The borrower’s personal data was erased: there is no account to read');
    await refuseOverBacklog(tx, ctx.lender.id, 1, 'this read');
    takeOnDemand(ctx.deps, ctx.lender.id, 'the read');
    const batchId = await insertBatch({
      ctx: tx,
      input: {
        lenderId: ctx.lender.id,
        source: 'monitoring',
        authorizers: [monitoringAuthorizer(ctx.deps, { aid: e.authorizerUniqueId, routing: e.routingNumber, sealed: e.sealed, metadata: e.metadata }, 1)],
        now,
      },
    });
    const next = now + ctx.deps.config.monitorReadIntervalMs;
    await tx.deps.stores.enrollments.setNextReads(tx, [e.id], next);
    return { authorizer_unique_id: e.authorizerUniqueId, batch_id: batchId, submitted_at: iso(now), next_read_at: iso(next) };
  });
}
