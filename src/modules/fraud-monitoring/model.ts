import { t } from 'elysia';
import { Type } from '@sinclair/typebox';
import { FRAUD_ACTIONS, FRAUD_ALERT_STATES, FRAUD_DISPOSITIONS, FRAUD_RULES } from '../../../db/schema/enums';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';
import { textSchema } from '../../platform/fields';
import { AuthorizerId } from '../authorizers/fields';
import { RULES, RULE_IDS } from './rules';

// The fraud-monitoring API's schemas: the rule catalogue, the lender's policy and its versions, the alerts and
// their dispositions. They are the OpenAPI document too.

const RuleId = OneOf(FRAUD_RULES, { description: RULE_IDS.map((r) => `${r}: ${RULES[r].catches}`).join('; ') });
const Action = OneOf(FRAUD_ACTIONS, { description: 'hold: a hit keeps the borrower’s debits (none is sent) until its alert is cleared; alert: a hit only raises the alert' });

const SettingView = t.Object({ default: Int(), minimum: Int(), maximum: Int(), description: t.String() });
const RuleView = t.Object({
  id: RuleId,
  version: Int({ description: 'Raised when what the rule catches changes; every alert keeps the version that raised it' }),
  catches: t.String(),
  reason: t.String({ description: 'Why the rule exists' }),
  evaluated_at: t.String({ description: 'Where the service evaluates it' }),
  actions: t.Array(Action, { description: 'The actions the rule may take' }),
  default_action: Action,
  settings: t.Record(t.String(), SettingView, { description: 'Its settings by name, each with its default and bounds (whole numbers)' }),
});

export const RuleCatalogue = t.Object(
  { rules: t.Array(RuleView) },
  {
    examples: [
      {
        rules: [
          {
            id: 'velocity',
            version: 1,
            catches: RULES.velocity.catches,
            reason: RULES.velocity.reason,
            evaluated_at: RULES.velocity.evaluatedAt,
            actions: ['hold', 'alert'],
            default_action: 'alert',
            settings: Object.fromEntries(Object.entries(RULES.velocity.settings).map(([k, s]) => [k, { default: s.default, minimum: s.minimum, maximum: s.maximum, description: s.description }])),
          },
        ],
      },
    ],
  },
);

const RulePolicyView = t.Object({
  enabled: t.Boolean(),
  action: Action,
  settings: t.Record(t.String(), Int(), { description: 'Each setting of the rule (GET /v1/fraud_monitoring/rules gives their bounds)' }),
});

const POLICY_RULES_EXAMPLE = Object.fromEntries(
  RULE_IDS.map((r) => [r, { enabled: true, action: RULES[r].defaultAction, settings: Object.fromEntries(Object.entries(RULES[r].settings).map(([k, s]) => [k, s.default])) }]),
);

export const FraudPolicyView = t.Object(
  {
    version: Int({ description: 'The version in force: 1 for the first the lender saved, one more for each change; 0 while the lender never saved one (every rule on with its defaults)' }),
    rules: t.Object(Object.fromEntries(RULE_IDS.map((r) => [r, RulePolicyView])), { description: 'Every rule: whether it is on, its action and its settings' }),
    notes: t.Union([t.String(), t.Null()], { description: 'The lender’s own text: its risk assessment, who acts on alerts, how' }),
    changed_by: t.Union([t.String(), t.Null()], { description: 'Who saved this version (changed_by as sent, else the API key’s id); null for version 0' }),
    changed_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When it was saved; null for version 0' }),
  },
  { examples: [{ version: 2, rules: POLICY_RULES_EXAMPLE, notes: 'Reviewed by the compliance officer; alerts worked daily by the servicing team.', changed_by: 'j.doe', changed_at: '2026-11-20T15:00:00.000Z' }] },
);

const RuleInput = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'true when absent' })),
    action: Type.Optional(Action),
    settings: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Int(), { maxProperties: 10, description: 'Settings of the rule; one absent takes its default' })),
  },
  { additionalProperties: false },
);

export const FraudPolicyPut = Type.Object(
  {
    rules: Type.Optional(Type.Object(Object.fromEntries(RULE_IDS.map((r) => [r, Type.Optional(RuleInput)])), { additionalProperties: false, description: 'A rule absent is on with its defaults' })),
    notes: Type.Optional(Type.Union([textSchema({ maxLength: 20_000, lines: true }), Type.Null()])),
    changed_by: Type.Optional(textSchema({ minLength: 1, maxLength: 100, description: 'Who makes the change (a person’s name or login); the API key’s id when absent' })),
  },
  {
    additionalProperties: false,
    examples: [{ rules: { velocity: { action: 'hold', settings: { max_debits: 2, window_days: 14 } }, amount_outlier: { enabled: false } }, notes: 'Velocity holds after the Q3 review.', changed_by: 'j.doe' }],
  },
);

const DispositionView = t.Object({
  disposition: OneOf(FRAUD_DISPOSITIONS),
  note: t.Union([t.String(), t.Null()]),
  disposed_by: t.String(),
  disposed_at: t.String({ format: 'date-time' }),
});

const ALERT_EXAMPLE = {
  id: '019a4f52-3333-7b2a-9f00-1c2d3e4f5a6b',
  rule: 'velocity',
  rule_version: 1,
  policy_version: 2,
  action: 'hold',
  state: 'open',
  holds: true,
  subject: 'bank_account:019a4f3e-1111-7c11-8e22-3344556677aa',
  authorizer_unique_id: 'loan-1001',
  bank_account_id: '019a4f3e-1111-7c11-8e22-3344556677aa',
  payment_id: '019a4f3e-90aa-7c11-8e22-3344556677aa',
  details: { debits: 4, max_debits: 3, window_days: 7 },
  created_at: '2026-11-25T15:02:11.000Z',
  disposed_at: null,
};

const ALERT_FIELDS = {
  id: t.String(),
  rule: RuleId,
  rule_version: Int(),
  policy_version: Int({ description: 'The lender’s policy version in force when it was raised' }),
  action: Action,
  state: OneOf(FRAUD_ALERT_STATES, { description: 'open; needs_info (the lender is finding out: a hold stays); cleared; confirmed_fraud' }),
  holds: t.Boolean({ description: 'It keeps the borrower’s debits now: a hold rule’s alert, open or needs_info' }),
  subject: t.String({ description: 'What the rule is about: enrollment:<id>, bank_account:<id>, routing:<routing number>, enrolled_on:<date>, channel:<value>' }),
  authorizer_unique_id: t.Union([t.String(), t.Null()], { description: 'The borrower whose fact raised it' }),
  bank_account_id: t.Union([t.String(), t.Null()], { description: 'The borrower’s bank account (GET /v1/bank_accounts/{id}); confirmed_fraud freezes it' }),
  payment_id: t.Union([t.String(), t.Null()], { description: 'The payment that raised it, for a debit’s or a return’s rule' }),
  details: t.Record(t.String(), t.Union([t.Number(), t.String(), t.Boolean(), t.Null()]), { description: 'The figures the rule compared (docs/fraud-monitoring.md, per rule); never personal data' }),
  created_at: t.String({ format: 'date-time' }),
  disposed_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When it was cleared or confirmed' }),
};

/** What FRAUD_ALERT_RAISED carries beside its event_uuid and type (webhook-payloads.ts). */
export const FraudAlertRaisedFields = { alert_id: t.String(), ...Object.fromEntries(Object.entries(ALERT_FIELDS).filter(([k]) => k !== 'id' && k !== 'disposed_at')) } as Omit<typeof ALERT_FIELDS, 'id' | 'disposed_at'> & { alert_id: ReturnType<typeof t.String> };
export const FRAUD_ALERT_RAISED_EXAMPLE = (({ id, disposed_at: _d, ...rest }) => ({ alert_id: id, ...rest }))(ALERT_EXAMPLE);

export const FraudAlert = t.Object(
  { ...ALERT_FIELDS, dispositions: t.Array(DispositionView, { description: 'Every disposition, oldest first, kept for good' }) },
  { examples: [{ ...ALERT_EXAMPLE, dispositions: [] }] },
);

export const FraudAlertList = t.Object(
  { alerts: t.Array(FraudAlert), has_more: t.Boolean(), next_page_token: t.Union([t.String(), t.Null()]) },
  { examples: [{ alerts: [{ ...ALERT_EXAMPLE, dispositions: [] }], has_more: false, next_page_token: null }] },
);

export const FraudAlertQuery = t.Object({
  rule: t.Optional(RuleId),
  state: t.Optional(OneOf(FRAUD_ALERT_STATES, { description: 'Only alerts in this state' })),
  authorizer_unique_id: t.Optional(AuthorizerId),
  bank_account_id: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  ...pageTokenQuery,
});

export const FraudAlertParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) });

/** At most this many needs_info dispositions an alert takes before its final one. */
export const MAX_NEEDS_INFO = 20;

export const FraudDispositionInput = Type.Object(
  {
    disposition: OneOf(FRAUD_DISPOSITIONS, {
      description: `cleared (a hold lifts: the held debit goes out) and confirmed_fraud (the bank account is frozen for every borrower on it, and no payment not yet sent to it goes out) are final; needs_info records what is being found out and keeps the alert open, at most ${MAX_NEEDS_INFO} times`,
    }),
    note: Type.Optional(textSchema({ maxLength: 2000, lines: true, description: 'What was found, and why this disposition' })),
    disposed_by: Type.Optional(textSchema({ minLength: 1, maxLength: 100, description: 'Who disposes (a person’s name or login); the API key’s id when absent' })),
  },
  { additionalProperties: false, examples: [{ disposition: 'cleared', note: 'Borrower confirmed the new account by phone; statement on file.', disposed_by: 'j.doe' }] },
);

const REVIEW_EXAMPLE = {
  id: '019a4f52-4444-7b2a-9f00-1c2d3e4f5a6b',
  reviewed_on: '2026-11-20',
  reviewer: 'J. Doe, compliance officer',
  notes: 'Rules and settings reviewed against the year’s alerts; velocity moved to hold.',
  policy_version: 2,
  recorded_at: '2026-11-20T16:00:00.000Z',
};

export const ReviewInput = Type.Object(
  {
    reviewed_on: Type.String({ format: 'date', description: 'The day of the review (YYYY-MM-DD): not after today (UTC)' }),
    reviewer: textSchema({ minLength: 1, maxLength: 100, description: 'Who reviewed the process' }),
    notes: Type.Optional(textSchema({ maxLength: 20_000, lines: true, description: 'What was reviewed, found and changed' })),
    policy_version: Int({ minimum: 0, description: 'The policy version reviewed: one the lender has (0: the defaults)' }),
  },
  { additionalProperties: false, examples: [{ reviewed_on: '2026-11-20', reviewer: 'J. Doe, compliance officer', notes: 'Rules and settings reviewed; velocity moved to hold.', policy_version: 2 }] },
);

export const Review = t.Object(
  {
    id: t.String(),
    reviewed_on: t.String({ format: 'date' }),
    reviewer: t.String(),
    notes: t.Union([t.String(), t.Null()]),
    policy_version: Int(),
    recorded_at: t.String({ format: 'date-time', description: 'When the service recorded it' }),
  },
  { examples: [REVIEW_EXAMPLE] },
);

export const ReviewList = t.Object(
  { reviews: t.Array(Review), has_more: t.Boolean(), next_page_token: t.Union([t.String(), t.Null()]) },
  { examples: [{ reviews: [REVIEW_EXAMPLE], has_more: false, next_page_token: null }] },
);

export const ReviewListQuery = t.Object({ limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })), ...pageTokenQuery });

export const REPORT_FORMATS = ['json', 'csv'] as const;
export const FraudReportQuery = t.Object({
  year: t.String({ pattern: '^[0-9]{4}$', description: 'A calendar year (UTC) as YYYY: the current one (its figures so far) or an earlier one', examples: ['2026'] }),
  format: t.Optional(OneOf(REPORT_FORMATS, { description: 'csv for the CSV file; without it, JSON unless the Accept header asks for text/csv' })),
});

/** At most this many policy versions and reviews a report lists (`truncated` says when there were more). */
export const REPORT_LIST_MAX = 500;

const StateCounts = t.Object({ raised: Int(), open: Int(), needs_info: Int(), cleared: Int(), confirmed_fraud: Int() });

export const FraudReport = t.Object(
  {
    year: Int(),
    from: t.String({ format: 'date-time' }),
    to: t.String({ format: 'date-time', description: 'The year’s last millisecond, or now for the current year' }),
    generated_at: t.String({ format: 'date-time' }),
    policy_versions: t.Array(
      t.Object({
        version: Int(),
        changed_by: t.Union([t.String(), t.Null()]),
        changed_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
        in_force_from: t.String({ format: 'date-time', description: 'From when in the year (the year’s start for one saved before it)' }),
        in_force_until: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Until the next version; null while it is in force' }),
        notes: t.Union([t.String(), t.Null()]),
        rules: FraudPolicyView.properties.rules,
      }),
      { description: `The versions in force during the year, oldest first (at most ${REPORT_LIST_MAX}, the latest kept)` },
    ),
    reviews: t.Array(Review, { description: `The reviews dated in the year, oldest first (at most ${REPORT_LIST_MAX})` }),
    alerts: t.Object({
      raised: Int({ description: 'Alerts raised in the year' }),
      by_rule: t.Object(Object.fromEntries(RULE_IDS.map((r) => [r, StateCounts])), { description: 'Per rule: raised in the year, and how many of them are in each state now' }),
    }),
    holds: t.Object({ raised: Int({ description: 'Alerts of a hold rule raised in the year' }), holding: Int({ description: 'Of them, those holding a borrower’s debits now' }) }),
    frozen_accounts: Int({ description: 'Bank accounts frozen by confirmed_fraud in the year' }),
    unauthorized_returns: t.Array(t.Object({ month: t.String(), debits: Int(), returns: Int(), rate: t.Number() }), {
      description: 'Per month of the year (through the current one): ACH debits that went to the bank, unauthorized-class returns (R05, R07, R10, R11, R29, R51) and their rate, as GET /v1/reports/ach counts them',
    }),
    truncated: t.Boolean({ description: 'More policy versions or reviews than listed' }),
  },
  {
    examples: [
      {
        year: 2026,
        from: '2026-01-01T00:00:00.000Z',
        to: '2026-11-25T15:02:11.000Z',
        generated_at: '2026-11-25T15:02:11.000Z',
        policy_versions: [{ version: 2, changed_by: 'j.doe', changed_at: '2026-11-20T15:00:00.000Z', in_force_from: '2026-11-20T15:00:00.000Z', in_force_until: null, notes: null, rules: POLICY_RULES_EXAMPLE }],
        reviews: [REVIEW_EXAMPLE],
        alerts: { raised: 1, by_rule: Object.fromEntries(RULE_IDS.map((r) => [r, { raised: r === 'velocity' ? 1 : 0, open: 0, needs_info: 0, cleared: r === 'velocity' ? 1 : 0, confirmed_fraud: 0 }])) },
        holds: { raised: 1, holding: 0 },
        frozen_accounts: 0,
        unauthorized_returns: [{ month: '2026-11', debits: 120, returns: 0, rate: 0 }],
        truncated: false,
      },
    ],
  },
);
