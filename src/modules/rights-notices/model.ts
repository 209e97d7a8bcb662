import { t } from 'elysia';
import { Type } from '@sinclair/typebox';
import { RIGHTS_NOTICE_CHANNELS } from '../../../db/schema/enums';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';
import { textSchema } from '../../platform/fields';
import { AuthorizerId } from '../authorizers/fields';

/** The listing's states: open, not sent yet (the overdue among them); overdue, not sent and past due_by; sent. */
export const NOTICE_STATES = ['open', 'overdue', 'sent'] as const;
export type NoticeState = (typeof NOTICE_STATES)[number];

const EXAMPLE = {
  id: '019a4f52-2222-7b2a-9f00-1c2d3e4f5a6b',
  learned_at: '2026-11-25T15:02:11.000Z',
  due_by: '2026-12-01T23:59:59.999Z',
  sent_at: null,
  channel: null,
  evidence_ref: null,
  overdue: false,
};

/** A notice as the enrollment view shows it (its latest). */
const NOTICE_FIELDS = {
  id: t.String(),
  learned_at: t.String({ format: 'date-time', description: 'When the service recorded the second consecutive failure for funds' }),
  due_by: t.String({ format: 'date-time', description: 'The end (UTC) of the third business day after learned_at: send the notice by then' }),
  sent_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the lender says it sent the notice; null until recorded' }),
  channel: t.Union([OneOf(RIGHTS_NOTICE_CHANNELS), t.Null()], { description: 'How it was sent: electronic or mail; null until recorded' }),
  evidence_ref: t.Union([t.String(), t.Null()], { description: 'The lender’s own reference of the proof of sending' }),
  overdue: t.Boolean({ description: 'Not sent and due_by has passed' }),
};

export const RightsNoticeView = t.Object(NOTICE_FIELDS, {
  description:
    'The consumer-rights notice (12 CFR 1041.9(c)) owed after a covered borrower’s second consecutive failed attempt for funds, its latest; null when none was ever due',
  examples: [EXAMPLE],
});

/** A notice as the lender's listing and the recording of its sending answer it. */
export const RightsNotice = t.Object(
  {
    ...NOTICE_FIELDS,
    authorizer_unique_id: t.String(),
    reference: t.String({ description: 'The second failed payment’s reference' }),
  },
  { examples: [{ ...EXAMPLE, authorizer_unique_id: 'loan-1001', reference: 'DRS-loan-1001-019a4f3e-90aa-7c11-8e22-3344556677aa' }] },
);

export const RightsNoticeList = t.Object(
  { notices: t.Array(RightsNotice), has_more: t.Boolean(), next_page_token: t.Union([t.String(), t.Null()]) },
  {
    examples: [
      {
        notices: [{ ...EXAMPLE, overdue: true, authorizer_unique_id: 'loan-1001', reference: 'DRS-loan-1001-019a4f3e-90aa-7c11-8e22-3344556677aa' }],
        has_more: false,
        next_page_token: null,
      },
    ],
  },
);

export const RightsNoticeListQuery = t.Object({
  state: t.Optional(OneOf(NOTICE_STATES, { description: 'open: not sent yet (overdue ones too); overdue: not sent and past due_by; sent. Every notice when absent' })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  ...pageTokenQuery,
});

export const RightsNoticeParams = t.Object({ authorizer_unique_id: AuthorizerId });

export const RightsNoticeSent = Type.Object(
  {
    sent_at: Type.String({ format: 'date-time', description: 'When the notice was sent: not in the future, not before the notice’s learned_at' }),
    channel: OneOf(RIGHTS_NOTICE_CHANNELS, { description: 'electronic (email, text message, the lender’s app) or mail' }),
    evidence_ref: Type.Optional(textSchema({ minLength: 1, maxLength: 255, description: 'The lender’s own reference of the proof of sending (a message id, a mailing record)' })),
  },
  { additionalProperties: false, examples: [{ sent_at: '2026-11-26T14:00:00.000Z', channel: 'electronic', evidence_ref: 'msg-88231' }] },
);

/** One failed attempt, as RIGHTS_NOTICE_DUE carries it. */
const FailedAttempt = t.Object({
  reference: t.String(),
  amount: Int({ description: 'Cents' }),
  attempted_at: t.String({ format: 'date-time', description: 'When it was sent to the processor' }),
  returned_at: t.String({ format: 'date-time', description: 'When the service recorded its return' }),
  return_code: t.Union([t.String(), t.Null()], { description: 'R01 or R09' }),
});

/** What RIGHTS_NOTICE_DUE carries beside its event_uuid and type (webhook-payloads.ts). */
export const RightsNoticeDueFields = {
  authorizer_unique_id: t.String(),
  notice_id: t.String({ description: 'The notice: record its sending with POST /v1/payment_enrollments/{authorizer_unique_id}/rights_notice' }),
  failed_attempts: t.Array(FailedAttempt, { description: 'The two consecutive failed attempts, oldest first' }),
  learned_at: t.String({ format: 'date-time' }),
  due_by: t.String({ format: 'date-time', description: 'The end (UTC) of the third business day after learned_at' }),
};
export const RIGHTS_NOTICE_DUE_EXAMPLE = {
  authorizer_unique_id: 'loan-1001',
  notice_id: EXAMPLE.id,
  failed_attempts: [
    { reference: 'DRS-loan-1001-019a4f3e-0000-7000-8000-000000000001', amount: 42500, attempted_at: '2026-11-20T10:00:02.000Z', returned_at: '2026-11-23T09:12:40.000Z', return_code: 'R01' },
    { reference: 'DRS-loan-1001-019a4f3e-90aa-7c11-8e22-3344556677aa', amount: 42500, attempted_at: '2026-11-24T10:00:02.000Z', returned_at: '2026-11-25T15:02:11.000Z', return_code: 'R01' },
  ],
  learned_at: EXAMPLE.learned_at,
  due_by: EXAMPLE.due_by,
};
