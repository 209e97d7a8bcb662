import { Type } from '@sinclair/typebox';
import { t } from 'elysia';
import { SCHEDULE_STATUSES } from '../../../db/schema/enums';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';
import { textSchema } from '../../platform/fields';
import { AuthorizerId, ScheduleAuthorizer, ThresholdAmount } from '../authorizers/fields';

const TimeOfDayField = Type.String({ maxLength: 5, pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', description: 'HH:mm, 24-hour UTC' });
const DateField = Type.String({ maxLength: 10, pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' });

const StatusEnum = OneOf(SCHEDULE_STATUSES);
const Name = textSchema({ minLength: 1, maxLength: 255 });
const TimeOfDay = t.String({ pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', description: 'HH:mm, 24-hour UTC' });

export const CreateScheduleBody = t.Object(
  {
    name: Name,
    interval_days: Int({ minimum: 1, maximum: 30 }),
    time_of_day: Type.Optional(TimeOfDayField),
    starts_at: Type.Optional(DateField),
    start_at: Type.Optional(DateField),
    expires_at: Type.Optional(DateField),
    webhook: Type.Optional(Type.String({ maxLength: 2048, description: 'Receives run results and threshold alerts; required with any threshold' })),
    threshold_amount: Type.Optional(ThresholdAmount),
    authorizers: t.Array(ScheduleAuthorizer, { minItems: 1, maxItems: 1000 }),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Weekly check, north branch',
        interval_days: 7,
        time_of_day: '09:30',
        starts_at: '2026-12-01',
        expires_at: '2027-03-01',
        webhook: 'https://hooks.example.com/schedules',
        threshold_amount: 500,
        authorizers: [
          { authorizer_unique_id: 'loan-1001', ssn: '123-45-6789', account_number: '0001234567', routing_number: '110000000', threshold_amount: 250 },
        ],
      },
    ],
  },
);

export const UpdateScheduleBody = t.Object(
  {
    name: t.Optional(Name),
    interval_days: t.Optional(Int({ minimum: 1, maximum: 30 })),
    time_of_day: t.Optional(TimeOfDay),
    expires_at: t.Optional(t.String({ description: 'ISO 8601 date (or date-time; its date is used); must be in the future' })),
  },
  { additionalProperties: false, examples: [{ interval_days: 14, time_of_day: '10:00' }] },
);

export const RemoveAuthorizersBody = t.Object(
  { authorizer_unique_ids: t.Array(AuthorizerId, { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false, examples: [{ authorizer_unique_ids: ['loan-1001'] }] },
);

const scheduleExample = {
  schedule_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
  name: 'Weekly check, north branch',
  status: 'ACTIVE',
  interval_days: 7,
  time_of_day: '09:30',
  starts_at: '2026-12-01',
  expires_at: '2027-03-01',
  last_run_at: null,
  next_run_at: '2026-12-01T09:30:00.000Z',
  total_authorizers: 1,
  webhook: 'https://hooks.example.com/schedules',
  threshold_amount: 500,
  created_at: '2026-11-21T10:00:00.000Z',
};

export const ScheduleView = t.Object(
  {
    schedule_id: t.String(),
    name: t.String(),
    status: StatusEnum,
    interval_days: Int(),
    time_of_day: t.String(),
    starts_at: t.Nullable(t.String()),
    expires_at: t.String(),
    last_run_at: t.Nullable(t.String({ format: 'date-time' })),
    next_run_at: t.Nullable(t.String({ format: 'date-time' })),
    total_authorizers: Int(),
    webhook: t.Nullable(t.String()),
    threshold_amount: t.Nullable(t.Number({ description: 'Dollars: an alert when a balance falls below it' })),
    created_at: t.String({ format: 'date-time' }),
  },
  { examples: [scheduleExample] },
);

export const CreateScheduleResponse = t.Object(
  {
    schedule_id: t.String(),
    name: t.String(),
    status: StatusEnum,
    message: t.String(),
    expires_at: t.String(),
    next_run_at: t.Nullable(t.String({ format: 'date-time' })),
    total_authorizers: Int(),
  },
  {
    examples: [
      {
        schedule_id: scheduleExample.schedule_id,
        name: scheduleExample.name,
        status: 'ACTIVE',
        message: 'Schedule created',
        expires_at: '2027-03-01',
        next_run_at: '2026-12-01T09:30:00.000Z',
        total_authorizers: 1,
      },
    ],
  },
);

export const UpdateScheduleResponse = t.Object(
  {
    schedule_id: t.String(),
    name: t.String(),
    message: t.String(),
    expires_at: t.String(),
    next_run_at: t.Nullable(t.String({ format: 'date-time' })),
  },
  {
    examples: [
      { schedule_id: scheduleExample.schedule_id, name: scheduleExample.name, message: 'Schedule updated', expires_at: '2027-03-01', next_run_at: '2026-12-01T10:00:00.000Z' },
    ],
  },
);

export const RemoveAuthorizersResponse = t.Object(
  { removed_count: Int(), remaining_count: Int() },
  { examples: [{ removed_count: 1, remaining_count: 99 }] },
);

export const ScheduleList = t.Object(
  { schedules: t.Array(ScheduleView), has_more: t.Boolean(), next_page_token: t.Nullable(t.String()) },
  { examples: [{ schedules: [scheduleExample], has_more: false, next_page_token: null }] },
);

export const ScheduleListQuery = t.Object({
  status: t.Optional(StatusEnum),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  ...pageTokenQuery,
});

export const DisableResponse = t.Object(
  { schedule_id: t.String(), status: t.Literal('DISABLED'), message: t.String() },
  { examples: [{ schedule_id: scheduleExample.schedule_id, status: 'DISABLED', message: 'Schedule disabled; its history is kept' }] },
);
