import type { Static } from '@sinclair/typebox';
import { t } from 'elysia';
import { BALANCE_KINDS, BATCH_SOURCES, BATCH_STATUSES, PAYMENT_TYPES } from '../../../db/schema/enums';
import { pageTokenQuery } from '../../platform/pagination';
import { Int, OneOf } from '../../platform/schema';
import { Authorizer } from '../authorizers/fields';

export { Authorizer };

export const MAX_AUTHORIZERS = 1000;

const exampleAuthorizer = {
  authorizer_unique_id: 'loan-1001',
  first_name: 'Ada',
  last_name: 'Lovelace',
  phone_number: '2025550143',
  ssn: '123-45-6789',
  account_number: '0001234567',
  routing_number: '110000000',
  address: { zip_code: '02139' },
  metadata: { branch: 'north' },
};

export const BalanceRequestBody = t.Object(
  {
    authorizers: t.Array(Authorizer, { minItems: 1, maxItems: MAX_AUTHORIZERS }),
    webhook_url: t.Optional(t.String({ maxLength: 2048, description: 'Receives BALANCE_BATCH_COMPLETED when the batch completes' })),
  },
  { additionalProperties: false, examples: [{ authorizers: [exampleAuthorizer], webhook_url: 'https://hooks.example.com/balances' }] },
);
export type BalanceRequest = Static<typeof BalanceRequestBody>;

export const FailedAuthorizer = t.Object({
  authorizer_unique_id: t.Nullable(t.String()),
  error: t.String(),
  account_type: OneOf(PAYMENT_TYPES),
  row_number: Int({ description: 'Position in the request (1-based); in a CSV the header is row 1' }),
});

const submissionExample = {
  batch_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
  submitted_at: '2026-11-21T10:00:00.000Z',
  message: 'Batch accepted: 1 authorizer queued for a balance check',
  failed_authorizers: [],
  replayed: false,
};

const Replayed = t.Boolean({
  description:
    'true: this is the answer to an identical request the lender sent in the last 24 hours, sent again: no new batch was ' +
    'made and no balance is read again (batch_id is that request’s batch). To read again, send a changed request',
});

export const BatchSubmission = t.Object(
  {
    batch_id: t.String({ format: 'uuid' }),
    submitted_at: t.String({ format: 'date-time' }),
    message: t.String(),
    failed_authorizers: t.Array(FailedAuthorizer),
    replayed: Replayed,
  },
  { examples: [submissionExample] },
);

export const CsvBatchSubmission = t.Object(
  {
    batch_id: t.String({ format: 'uuid' }),
    submitted_at: t.String({ format: 'date-time' }),
    message: t.String(),
    failed_authorizers: t.Array(FailedAuthorizer),
    warnings: t.Array(t.String()),
    replayed: Replayed,
  },
  { examples: [{ ...submissionExample, warnings: [] }] },
);

export const CsvUploadBody = t.Object(
  {
    file: t.File({ description: 'CSV file (text/csv), at most 5000 data rows' }),
    webhook_url: t.Optional(t.String({ maxLength: 2048 })),
  },
  {
    examples: [
      {
        file: 'authorizer_unique_id,ssn,account_number,routing_number,zip_code\nloan-1001,123456789,0001234567,110000000,02139\n',
        webhook_url: 'https://hooks.example.com/balances',
      },
    ],
  },
);

export const BatchStatus = t.Object(
  {
    batch_id: t.String(),
    status: OneOf(BATCH_STATUSES),
    source: OneOf(BATCH_SOURCES),
    schedule_id: t.Nullable(t.String()),
    creator: t.Nullable(t.String({ description: 'Display name of the dashboard user who submitted; null for API submissions' })),
    submitted_at: t.String({ format: 'date-time' }),
    completed_at: t.Nullable(t.String({ format: 'date-time' })),
    total_authorizers: Int(),
    total_processed: Int(),
  },
  {
    examples: [
      {
        batch_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
        status: 'processing',
        source: 'api',
        schedule_id: null,
        creator: null,
        submitted_at: '2026-11-21T10:00:00.000Z',
        completed_at: null,
        total_authorizers: 1000,
        total_processed: 412,
      },
    ],
  },
);

/** The earlier read of the same linked account whose answer a result took (link-reads.ts). */
export const ReusedFrom = t.Object(
  {
    batch_id: t.String(),
    authorizer_unique_id: t.String(),
    timestamp: t.String({ format: 'date-time', description: 'When that read was answered' }),
  },
  {
    description:
      'Linked accounts only, present when this result is the answer of an earlier read of the same linked account, taken instead of asking ' +
      'the provider again within BANK_LINK_MIN_READ_INTERVAL_MS (the same balance or failure, balance_kind and as_of): that read’s batch, ' +
      'authorizer and time',
  },
);

export const BalanceEntry = t.Object({
  authorizer_unique_id: t.String(),
  balance: t.Nullable(t.Number({ description: 'Dollars; null when the check failed' })),
  timestamp: t.String({ format: 'date-time' }),
  balance_status_code: Int(),
  balance_kind: t.Optional(OneOf(BALANCE_KINDS, { description: 'Linked accounts (bank_link) only: available, or current when the provider had no available balance' })),
  as_of: t.Optional(t.Nullable(t.String({ format: 'date-time', description: 'Linked accounts only: the provider’s time for the balance' }))),
  reused_from: t.Optional(ReusedFrom),
});

export const BalanceResult = t.Object(
  {
    batch_id: t.String(),
    total_processed: Int(),
    balances: t.Array(BalanceEntry),
    has_more: t.Boolean(),
    next_page_token: t.Nullable(t.String()),
  },
  {
    examples: [
      {
        batch_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
        total_processed: 2,
        balances: [
          { authorizer_unique_id: 'loan-1001', balance: 12345.67, timestamp: '2026-11-21T10:00:03.000Z', balance_status_code: 0 },
          { authorizer_unique_id: 'loan-1002', balance: null, timestamp: '2026-11-21T10:00:03.100Z', balance_status_code: 3200 },
        ],
        has_more: false,
        next_page_token: null,
      },
    ],
  },
);

export const BalancesQuery = t.Object({
  batchId: t.Optional(t.String({ description: 'batch_id of the submission (required, as batchId or batch_id)' })),
  batch_id: t.Optional(t.String({ description: 'Same as batchId' })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 100 })),
  ...pageTokenQuery,
});

export const ExportQuery = t.Object({
  batch_ids: t.Optional(
    t.Union([t.String(), t.Array(t.String())], { description: 'Repeat the parameter per batch; each a UUID' }),
  ),
  batchIds: t.Optional(t.Union([t.String(), t.Array(t.String())], { description: 'Same as batch_ids (both may be given)' })),
});

export const HistoryEntry = t.Object({
  run_at: t.String({ format: 'date-time' }),
  batch_id: t.String(),
  balance_amount: t.Nullable(t.Number({ description: 'Dollars; null when the read failed' })),
  status: t.Union([t.Literal('success'), t.Literal('failed')]),
  error_message: t.Optional(t.String({ description: 'Why the read failed; names relink_required when the borrower must link the account again' })),
  balance_kind: t.Optional(OneOf(BALANCE_KINDS, { description: 'Linked accounts (bank_link) only' })),
  as_of: t.Optional(t.Nullable(t.String({ format: 'date-time', description: 'Linked accounts only: the provider’s time for the balance' }))),
  reused_from: t.Optional(ReusedFrom),
});

export const History = t.Object(
  {
    authorizer_unique_id: t.String(),
    total_count: Int(),
    history: t.Array(HistoryEntry),
    next_page_token: t.Nullable(t.String()),
    has_more: t.Boolean(),
  },
  {
    examples: [
      {
        authorizer_unique_id: 'loan-1001',
        total_count: 2,
        history: [
          { run_at: '2026-11-21T10:00:03.000Z', batch_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b', balance_amount: 12345.67, status: 'success' },
          { run_at: '2026-11-14T10:00:03.000Z', batch_id: '019a2b11-0000-7000-8000-000000000000', balance_amount: null, status: 'failed', error_message: 'Account closed' },
        ],
        next_page_token: null,
        has_more: false,
      },
    ],
  },
);

export const HistoryQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 10 })),
  ...pageTokenQuery,
});
