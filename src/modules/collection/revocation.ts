import type { RevocationChannel } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { InvalidInput, NotFound } from '../../platform/errors';
import { applyMonitorEvent } from '../enrollments/monitor-changes';
import { revokedNow, REVOKED_WORDS } from '../enrollments/monitor';
import { voidScheduled } from './decide';

// A borrower's revocation of its authorization to debit (Regulation E, 12 CFR 1005.10(c): a consumer may stop
// a preauthorized transfer by notifying the financial institution or the payee). Recorded as the lender
// received it, it stops every debit of the borrower at once, in this request's transaction: a scheduled payment
// is voided, a payment made and not yet sent is never sent (the send's claim reads the revocation in its
// statement), and no payment is created until an authorization dated after it comes with a re-send. A payment
// already sent cannot be recalled: its outcome is what the processor says. Here, in collection, as it voids.

export interface RevocationInput {
  received_at: string;
  channel: RevocationChannel;
  evidence_ref?: string;
}

/** POST /v1/payment_enrollments/{authorizer_unique_id}/revocation. */
export async function revokeAuthorization({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string; body: RevocationInput } }) {
  const now = ctx.deps.clock.now();
  const at = Date.parse(input.body.received_at);
  if (!Number.isFinite(at)) throw InvalidInput.field('/received_at', 'Expected a date-time');
  if (at > now) throw InvalidInput.field('/received_at', 'Expected a time not in the future');
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.enrollments.serializeBorrowers(tx, ctx.lender.id, [input.authorizerUniqueId]);
    const e = await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId);
    if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
    await tx.deps.stores.enrollments.recordRevocation(tx, { id: e.id, at, channel: input.body.channel, ref: input.body.evidence_ref ?? null, now });
    if (e.state === 'monitored') {
      // Serialized as a decision is: a decision about the borrower meanwhile sees the revocation, or is seen by it.
      await tx.deps.stores.decisions.serializeBorrowers(tx, [e.id]);
      const inputs = await tx.deps.stores.decisions.chainInputsOf(tx, e.id);
      if (inputs && revokedNow(inputs)) {
        const scheduled = await tx.deps.stores.decisions.scheduledPaymentOf(tx, e.id);
        if (scheduled) await voidScheduled(tx, scheduled, `not debited: ${REVOKED_WORDS}`);
        await applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'blocked', reason: 'authorization_revoked' }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
      }
    }
    const after = (await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId))!;
    return {
      authorizer_unique_id: after.authorizerUniqueId,
      state: after.state,
      blocked_reason: after.blockedReason,
      revocation: { received_at: iso(after.revokedAt!), channel: after.revocationChannel!, evidence_ref: after.revocationRef },
    };
  });
}
