// Every enumerated value the service stores, defined once. The Drizzle column enums, the TypeBox schemas
// (platform/schema.ts `OneOf`) and the TypeScript types all derive from these arrays.

export const PAYMENT_TYPES = ['ACCOUNT_NUMBER', 'DEBIT_CARD'] as const;
export type PaymentType = (typeof PAYMENT_TYPES)[number];

export const BATCH_SOURCES = ['api', 'csv', 'schedule'] as const;
export type BatchSource = (typeof BATCH_SOURCES)[number];

export const BATCH_STATUSES = ['pending', 'processing', 'completed'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** A queue row of a lease queue: waiting (or leased) work, or finished. */
export const ITEM_STATES = ['pending', 'done'] as const;
export type ItemState = (typeof ITEM_STATES)[number];

export const EXPORT_STATUSES = [
  'SUCCESS',
  'NO_MATCH',
  'ACCOUNT_CLOSED',
  'BANK_UNSUPPORTED',
  'RETRIEVAL_FAILED',
  'RETRY_LIMIT',
  'PROCESSING_ERROR',
] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

export const SCHEDULE_STATUSES = ['ACTIVE', 'COMPLETED', 'DISABLED'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

export const WEBHOOK_TYPES = ['BALANCE_BATCH_COMPLETED', 'BALANCE_THRESHOLD_ALERT'] as const;
export type WebhookType = (typeof WEBHOOK_TYPES)[number];

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];
