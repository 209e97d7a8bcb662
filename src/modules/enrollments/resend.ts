import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { Conflict, NotFound } from '../../platform/errors';
import type { EnrollmentInput } from './service';
import { openBorrower } from './borrower';
import { enroll } from './service';

// The portal's borrower actions, as the API does them: a borrower is re-sent (POST /v1/payment_enrollments)
// with what is stored of it, with a new collectable amount or as it was (which resumes a removed borrower).
// Every rule of an enrollment applies, as if the lender had sent the same borrower again.

/** The stored borrower as an enrollment request would send it, with `over` applied. */
async function storedBorrower(ctx: Ctx, aid: string, over: { collectableAmount?: number }): Promise<EnrollmentInput['borrowers'][number]> {
  const e = await ctx.deps.stores.enrollments.enrollmentOf(ctx, ctx.lender.id, aid);
  if (!e) throw new NotFound('Enrollment', aid);
  if (!e.sealed) throw new Conflict('The borrower’s personal data was erased: send the borrower again through the API with its details');
  const b = openBorrower(ctx.deps, e.sealed);
  const s = b.s;
  const street = s.street ?? undefined;
  return {
    authorizer_unique_id: e.authorizerUniqueId,
    first_name: s.firstName ?? '',
    last_name: s.lastName ?? '',
    phone_number: b.phone ?? '',
    ...(s.dateOfBirth ? { date_of_birth: s.dateOfBirth } : {}),
    address: { zip_code: b.zip ?? '', ...(street ? { street_address_line1: street } : {}) },
    ...(s.ssn ? { ssn: s.ssn } : {}),
    ...(s.ein ? { ein: s.ein } : {}),
    account_number: s.accountNumber ?? '',
    routing_number: e.routingNumber ?? '',
    ...(e.metadata ? { metadata: JSON.parse(e.metadata) } : {}),
    collectable_amount: over.collectableAmount ?? e.collectableAmountCents,
    days_past_due: e.daysPastDue,
    ...(e.merchantRef ? { merchant_ref: e.merchantRef } : {}),
    ...(e.cardTokenSealed && e.cardLast4 ? { charge_instrument: { processor_token: ctx.deps.vault.open(e.cardTokenSealed), card_last4: e.cardLast4 } } : {}),
    ...(e.cfpbCovered !== null ? { cfpb_covered: e.cfpbCovered } : {}),
    ...(e.authorizationAt !== null ? { authorization: { obtained_at: iso(e.authorizationAt), ...(e.authorizationRef ? { reference: e.authorizationRef } : {}) } } : {}),
  } as EnrollmentInput['borrowers'][number];
}

/** Re-sends the stored borrower, with a new collectable amount when given; the enrollment's own result. */
export async function resendBorrower({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string; collectableAmount?: number } }) {
  const borrower = await storedBorrower(ctx, input.authorizerUniqueId, { collectableAmount: input.collectableAmount });
  const r = await enroll({ ctx, input: { body: { borrowers: [borrower] } } });
  return r.results[0]!;
}
