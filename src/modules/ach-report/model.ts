import { t } from 'elysia';
import { CHANGE_STATUSES, RATE_STATUSES } from '../../../db/schema/enums';
import { Int, OneOf } from '../../platform/schema';
import { TIMELINESS } from './store';

export const REPORT_FORMATS = ['json', 'csv'] as const;

export const AchReportQuery = t.Object({
  month: t.String({
    pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$',
    description: 'a calendar month as YYYY-MM (UTC): the current month (its figures so far) or an earlier one',
    examples: ['2026-10'],
  }),
  format: t.Optional(OneOf(REPORT_FORMATS, { description: 'csv for the CSV file; without it, JSON unless the Accept header asks for text/csv' })),
});

const date = (description: string) => t.String({ format: 'date-time', description });
const counts = (keys: readonly string[], description: string) => t.Object(Object.fromEntries(keys.map((k) => [k, Int()])), { description });

const ClassRate = t.Object({
  returns: Int(),
  rate: t.Number({ description: 'returns ÷ the month’s debits, unrounded; with no debits, 0 without returns and 1 with any' }),
  threshold: t.Number({ description: 'Nacha’s threshold for the class (measured over 60 days; shown here against the month)' }),
  status: OneOf(RATE_STATUSES, { description: 'ok below 80% of the threshold, warning from 80%, exceeded at or above it, as GET /v1/return_rates sets it' }),
});

const Change = t.Object({
  id: t.String(),
  code: t.String({ description: 'The Notification of Change code (C01, C02, C03, C05, C06, C07, C09, C13)' }),
  status: OneOf(CHANGE_STATUSES, { description: 'received, review, applied or recorded, as it stands now' }),
  bank_account_id: t.String({ description: 'The bank account it corrects (GET /v1/bank_accounts/{id})' }),
  received_at: date('When it was received'),
  due_by: date('Six banking days after receipt: the day by which Nacha has it applied'),
  applied_at: t.Union([date('When it was applied'), t.Null()], { description: 'When it was applied; null while it is not' }),
  banking_days_to_apply: t.Union([Int(), t.Null()], {
    description: 'Banking days from the day received to the day applied (Monday to Friday but the Federal Reserve holidays; the same day is 0); null while not applied',
  }),
  applied_by_due: t.Union([t.Boolean(), t.Null()], {
    description: 'true when applied on or before the day of due_by (UTC); false when applied after it, or not applied and that day is over; null while not applied and still within it, or recorded with nothing to apply',
  }),
  timeliness: OneOf(TIMELINESS, { description: 'on_time, late, overdue (not applied, past due), pending (not applied, not yet due) or none (nothing to apply: C09, C13)' }),
});

/** The example of the document, for the JSON and (written as the route writes it) for the CSV. */
export const ACH_REPORT_EXAMPLE = {
  month: '2026-10',
  from: '2026-10-01T00:00:00.000Z',
  to: '2026-10-31T23:59:59.999Z',
  generated_at: '2026-11-02T09:15:00.000Z',
  debits: { count: 230, total_cents: 9_775_000 },
  returns: {
    count: 12,
    by_code: { R01: 9, R02: 2, R10: 1 },
    rates: {
      unauthorized: { returns: 1, rate: 0.0043, threshold: 0.005, status: 'warning' },
      administrative: { returns: 2, rate: 0.0087, threshold: 0.03, status: 'ok' },
      overall: { returns: 12, rate: 0.0522, threshold: 0.15, status: 'ok' },
    },
  },
  notifications_of_change: {
    count: 1,
    by_code: { C01: 1 },
    by_status: { received: 0, review: 0, applied: 1, recorded: 0 },
    by_timeliness: { on_time: 1, late: 0, overdue: 0, pending: 0, none: 0 },
    changes: [
      {
        id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
        code: 'C01',
        status: 'applied',
        bank_account_id: '019a4f3e-8c1d-7b2a-9f00-aa2d3e4f5a6b',
        received_at: '2026-10-14T16:20:00.000Z',
        due_by: '2026-10-22T00:00:00.000Z',
        applied_at: '2026-10-15T08:00:00.000Z',
        banking_days_to_apply: 1,
        applied_by_due: true,
        timeliness: 'on_time',
      },
    ],
    truncated: false,
  },
  accounts_blocked: { count: 3, by_state: { invalid: 2, frozen: 0, unauthorized: 1, deceased: 0 } },
};

export const AchReport = t.Object(
  {
    month: t.String({ description: 'The month reported, YYYY-MM (UTC)' }),
    from: date('Its first millisecond (UTC)'),
    to: date('Its last millisecond (UTC); every figure is of [from, to], both included'),
    generated_at: date('When the report was made: the current month’s figures, and the standing of each Notification of Change, are as of then'),
    debits: t.Object(
      { count: Int(), total_cents: Int({ description: 'Their amounts summed, in cents' }) },
      { description: 'The lender’s ACH debits that went to the bank in the month, counted as GET /v1/return_rates counts them' },
    ),
    returns: t.Object(
      {
        count: Int({ description: 'Returned and late-returned ACH debits whose return date is in the month, once per reference' }),
        by_code: t.Record(t.String(), Int(), { description: 'By return code, in code order (a return without a code counts in count and overall only)' }),
        rates: t.Object({ unauthorized: ClassRate, administrative: ClassRate, overall: ClassRate }),
      },
      { description: 'The month’s returns, classed as GET /v1/return_rates classes them, each class’s rate over the month’s debits' },
    ),
    notifications_of_change: t.Object(
      {
        count: Int({ description: 'Received in the month (every one, listed or not)' }),
        by_code: t.Record(t.String(), Int(), { description: 'By code, in code order' }),
        by_status: counts(CHANGE_STATUSES, 'By status, as each stands now'),
        by_timeliness: counts(TIMELINESS, 'By timeliness against due_by, as of generated_at'),
        changes: t.Array(Change, { description: 'The first 1,000 received in the month, in the order received' }),
        truncated: t.Boolean({ description: 'true when more were received than are listed (count says how many)' }),
      },
      { description: 'Notifications of Change received in the month' },
    ),
    accounts_blocked: t.Object(
      {
        count: Int(),
        by_state: counts(['invalid', 'frozen', 'unauthorized', 'deceased'], 'By the state set'),
      },
      { description: 'The lender’s bank accounts whose blocking state was set in the month (state_since in it), by that state as it is now' },
    ),
  },
  { examples: [ACH_REPORT_EXAMPLE] },
);
