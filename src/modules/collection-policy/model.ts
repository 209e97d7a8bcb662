import { Type, type Static } from '@sinclair/typebox';
import { t } from 'elysia';
import { CHANGE_APPLICATIONS, NOTICE_CHANNELS, READ_CADENCES, REINITIATION_AMOUNTS } from '../../../db/schema/enums';
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
    'Business days of notice before each debit (Monday to Friday, without the Federal Reserve holidays): a read that finds the balance covering the amount schedules the payment for that day instead of sending it; 0 sends at once. With cfpb_covered it is the lead time of the payday rule’s notices and must stay inside their windows (3 to 7 for electronic notices, 6 to 10 for mail; a 400 otherwise), and 0 lets each notice take its own (one business day more than the latest the rule allows); a debit that needs a notice is scheduled even at 0',
});

const NoticeChannel = t.Union([OneOf(NOTICE_CHANNELS), t.Null()], {
  description:
    'How the lender sends the CFPB payday rule’s payment notices, which makes a covered borrower’s debit wait for them (docs/payments.md, Payment notices): electronic (12 CFR 1041.9(b)(2): an unusual-withdrawal or reinitiation notice no earlier than 7 and no later than 3 business days before the debit, a first-payment notice no later than 3) or mail (no earlier than 10 and no later than 6; first payment no later than 6). A debit that needs one is scheduled with PAYMENT_NOTICE_DUE and goes out only once the lender confirms the notice inside its window (POST /v1/payments/{id}/notice). electronic for lenders created from this version on; null, for those there before until they set it: no debit waits for them (the lender sends them itself)',
});

const RangeCents = Int({ minimum: 0, maximum: 100_000_000 });
/** A borrower's Regulation E election for varying amounts (12 CFR 1005.10(d)(2)). */
export const RegEElectionSchema = Type.Union(
  [
    Type.Object({ type: Type.Literal('always') }, { additionalProperties: false }),
    Type.Object({ type: Type.Literal('outside_range'), min_cents: RangeCents, max_cents: RangeCents }, { additionalProperties: false }),
    Type.Object({ type: Type.Literal('difference_over'), amount_cents: RangeCents }, { additionalProperties: false }),
  ],
  {
    description:
      'When a debit whose amount varies needs Regulation E’s written notice, at least 10 calendar days before it (12 CFR 1005.10(d)): always (whenever its amount differs from the last debit that reached the processor, or there was none); outside_range (only when it is below min_cents or above max_cents); difference_over (only when it differs from the last one by more than amount_cents)',
  },
);
const RegEPolicyElection = Type.Union([Type.Object({ type: Type.Literal('none') }, { additionalProperties: false }), ...RegEElectionSchema.anyOf], {
  description:
    'The Regulation E election a borrower without its own gets (POST /v1/payment_enrollments/{id}/reg_e_election). none (the default): the service asks no varying-amount notice (the lender’s authorizations name fixed amounts, or it sends them itself); otherwise as the borrower’s election',
});

const ReturnRatePause = Type.Boolean({
  description:
    'Pause on breach: while any return-rate class (GET /v1/return_rates, over 60 days) is at or above its Nacha threshold, no new ACH payment is initiated (blocked_reason return_rate_paused); collection resumes by itself when every class is back under. Card payments are not paused',
});

const ReadCadence = OneOf(READ_CADENCES, {
  description:
    'payday (the default): a monitored borrower whose pay cycle is known is read on and the day after each predicted payday (the day before too when its pay has come a day early; no more once the pay is seen), at 08:00 in time_zone, and otherwise every few days; one whose cycle is irregular or unknown on the read interval. interval: every borrower on the read interval (MONITOR_READ_INTERVAL_MS)',
});

const TimeZone = Type.Union(
  [
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z][A-Za-z0-9_+\\-]*(/[A-Za-z0-9_+\\-]+)*$',
      description: 'An IANA time zone name, such as America/Chicago',
    }),
    Type.Null(),
  ],
  {
    description:
      "The lender's time zone (an IANA name such as America/Chicago): with read_cadence payday, the reads around a payday are at 08:00 there, through daylight-saving changes. null (the default): 08:00 UTC",
  },
);

const DebitBufferCents = Int({ minimum: 0, maximum: 10_000_000, description: 'A debit waits until the balance covers the amount plus this many cents (0 by default)' });

const LateReturnWindowDays = Int({
  minimum: 2,
  maximum: 60,
  description:
    'Business days after a payment settles during which a late return may still come (5 by default; an R01 or R09 is returned within two banking days of settlement under the Nacha Operating Rules, and the rest is room for the processor’s report). Until they pass, the debt’s chain of presentments stays open: a late return inside them counts as the failure it is (a reinitiation of the same chain, and a failure for the payday rule), and a re-send of the borrower inside them does not start a new chain: no further debit goes out before they pass (blocked_reason late_return_window, reads go on)',
});

const AllowCurrentBalance = Type.Boolean({
  description:
    'A debit may follow a linked account’s current (ledger) balance when the provider gives no available one (false by default: pending debits are not taken out of a current balance, and Plaid’s guidance for preventing NSF returns is the available balance). A read that gives only a current balance is recorded as usual but decides no debit; the enrollment shows blocked_reason current_only until a read that passes',
});
const CurrentBalanceBufferCents = Int({
  minimum: 0,
  maximum: 10_000_000,
  description: 'With allow_current_balance, a debit on a current balance waits until it covers the amount plus this many cents more (0 by default), on top of debit_buffer_cents',
});
const MaxBalanceAgeMinutes = Int({
  minimum: 1,
  maximum: 1440,
  description:
    'A linked account’s balance older than this many minutes by the provider’s own time for it (Stripe’s balance.as_of, Plaid’s last_updated_datetime; the time of the read when the provider gives none) decides no debit (60 by default): the read is recorded, and the enrollment shows blocked_reason stale_balance until a read that passes',
});

const ApplyNotificationsOfChange = OneOf(CHANGE_APPLICATIONS, {
  description:
    'What a Notification of Change (C01, C02, C03, C05, C06, C07) does. automatic (the default): the correction is applied to the sealed details of every borrower on the account at once, and the next debit uses it. review: the account’s debits are held (blocked_reason account_change_pending) until the lender applies it (POST /v1/bank_accounts/{id}/changes/{change_id}/apply), due 6 banking days after receipt. Either way no debit goes to the old details once it is received',
});
const RequireAccountValidation = Type.Boolean({
  description:
    'No debit to a bank account without validation evidence (Nacha’s WEB debit rule): a bank link, the processor’s verified payment method, or the lender’s account_validation on the enrollment entry, given since the account’s number last changed (a C01, C02, C03, C06 or C07 correction). A borrower on such an account shows blocked_reason validation_required. true for lenders created from this version on; false for those there before, until they turn it on',
});

const BLOCKING_STATES = ['unauthorized', 'frozen', 'invalid', 'deceased'] as const;
const AccountReturnStates = Type.Record(Type.String({ pattern: '^R[0-9]{2}$' }), OneOf(BLOCKING_STATES), {
  maxProperties: 100,
  additionalProperties: false,
  description:
    'The lender’s own actions of return codes on the bank account, stricter than Nacha’s table (payments.md, Bank accounts): a code the table says nothing of (R01, R09, R08…) may set a state, and a code it lists may set a more severe one (unauthorized < frozen < invalid < deceased), never a less severe one (a 400). A return of any borrower’s debit with that code then blocks every borrower on the account. {} (the default): Nacha’s table only',
});

export const PolicyPatch = Type.Object(
  {
    cfpb_covered: Type.Optional(CfpbCovered),
    max_reinitiations: Type.Optional(MaxReinitiations),
    reinitiation_amount: Type.Optional(ReinitiationAmount),
    notice_days: Type.Optional(NoticeDays),
    return_rate_pause: Type.Optional(ReturnRatePause),
    read_cadence: Type.Optional(ReadCadence),
    debit_buffer_cents: Type.Optional(DebitBufferCents),
    time_zone: Type.Optional(TimeZone),
    late_return_window_days: Type.Optional(LateReturnWindowDays),
    allow_current_balance: Type.Optional(AllowCurrentBalance),
    current_balance_buffer_cents: Type.Optional(CurrentBalanceBufferCents),
    max_balance_age_minutes: Type.Optional(MaxBalanceAgeMinutes),
    apply_notifications_of_change: Type.Optional(ApplyNotificationsOfChange),
    require_account_validation: Type.Optional(RequireAccountValidation),
    account_return_states: Type.Optional(AccountReturnStates),
    notice_channel: Type.Optional(NoticeChannel),
    reg_e_election: Type.Optional(RegEPolicyElection),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ cfpb_covered: true, max_reinitiations: 1 }, { time_zone: 'America/Chicago' }] },
);
export type PolicyPatchInput = Static<typeof PolicyPatch>;

export const Policy = t.Object(
  {
    cfpb_covered: CfpbCovered,
    max_reinitiations: MaxReinitiations,
    reinitiation_amount: ReinitiationAmount,
    notice_days: NoticeDays,
    return_rate_pause: ReturnRatePause,
    read_cadence: ReadCadence,
    debit_buffer_cents: DebitBufferCents,
    time_zone: TimeZone,
    late_return_window_days: LateReturnWindowDays,
    allow_current_balance: AllowCurrentBalance,
    current_balance_buffer_cents: CurrentBalanceBufferCents,
    max_balance_age_minutes: MaxBalanceAgeMinutes,
    apply_notifications_of_change: ApplyNotificationsOfChange,
    require_account_validation: RequireAccountValidation,
    account_return_states: AccountReturnStates,
    notice_channel: NoticeChannel,
    reg_e_election: RegEPolicyElection,
    updated_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the lender last changed it; null while every field is the default' }),
  },
  { examples: [{ cfpb_covered: false, max_reinitiations: 2, reinitiation_amount: 'current', notice_days: 0, return_rate_pause: false, read_cadence: 'payday', debit_buffer_cents: 0, time_zone: 'America/Chicago', late_return_window_days: 5, allow_current_balance: false, current_balance_buffer_cents: 0, max_balance_age_minutes: 60, apply_notifications_of_change: 'automatic', require_account_validation: true, account_return_states: {}, notice_channel: 'electronic', reg_e_election: { type: 'none' }, updated_at: null }] },
);
