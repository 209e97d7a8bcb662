import { Type, type Static } from '@sinclair/typebox';
import { t } from 'elysia';
import { REINITIATION_AMOUNTS } from '../../../db/schema/enums';
import { Int, OneOf } from '../../platform/schema';

const CfpbCovered = Type.Boolean({
  description: "The lender's loans are covered by the CFPB payday rule (12 CFR 1041.8): after two consecutive failures for funds no further attempt is made without a new authorization",
});
const MaxReinitiations = Int({ minimum: 0, maximum: 2, description: 'Reinitiations of a debit returned R01/R09, at most (Nacha allows two)' });
const ReinitiationAmount = OneOf(REINITIATION_AMOUNTS, {
  description: 'current: the collectable amount at the time (the default); original: the returned debit’s amount, and none when the collectable amount has dropped below it',
});

const NoticeDays = Int({
  minimum: 0,
  maximum: 10,
  description:
    'Business days of notice before each debit (Monday to Friday, without the Federal Reserve holidays): a read that finds the balance covering the amount schedules the payment for that day instead of sending it; 0 sends at once',
});

const ReturnRatePause = Type.Boolean({
  description:
    'Pause on breach: while any return-rate class (GET /v1/return_rates, over 60 days) is at or above its Nacha threshold, no new ACH payment is initiated (blocked_reason return_rate_paused); collection resumes by itself when every class is back under. Card payments are not paused',
});

export const PolicyPatch = Type.Object(
  {
    cfpb_covered: Type.Optional(CfpbCovered),
    max_reinitiations: Type.Optional(MaxReinitiations),
    reinitiation_amount: Type.Optional(ReinitiationAmount),
    notice_days: Type.Optional(NoticeDays),
    return_rate_pause: Type.Optional(ReturnRatePause),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ cfpb_covered: true, max_reinitiations: 1 }] },
);
export type PolicyPatchInput = Static<typeof PolicyPatch>;

export const Policy = t.Object(
  {
    cfpb_covered: CfpbCovered,
    max_reinitiations: MaxReinitiations,
    reinitiation_amount: ReinitiationAmount,
    notice_days: NoticeDays,
    return_rate_pause: ReturnRatePause,
    updated_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the lender last changed it; null while every field is the default' }),
  },
  { examples: [{ cfpb_covered: false, max_reinitiations: 2, reinitiation_amount: 'current', notice_days: 0, return_rate_pause: false, updated_at: null }] },
);
