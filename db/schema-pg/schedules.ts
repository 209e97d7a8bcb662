// Generated from db/schema/schedules.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { cents, count, ident, ms, rowId } from './columns';
import { lenders } from './lenders';
import { PAYMENT_TYPES, SCHEDULE_STATUSES } from '../schema/enums';

export const schedules = pgTable(
  'schedules',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    name: text('name').notNull(),
    status: text('status', { enum: SCHEDULE_STATUSES }).notNull(),
    intervalDays: count('interval_days').notNull(),
    timeOfDay: text('time_of_day').notNull(), // HH:mm UTC
    startsAt: text('starts_at'), // YYYY-MM-DD
    expiresAt: text('expires_at').notNull(), // YYYY-MM-DD, the date of the final run
    webhook: text('webhook'),
    thresholdCents: cents('threshold_cents'),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
    lastRunAt: ms('last_run_at'),
    nextRunAt: ms('next_run_at'),
  },
  (t) => [
    uniqueIndex('schedules_lender_name_idx').on(t.lenderId, t.name),
    // The scheduler's due check reads this index only.
    index('schedules_due_idx').on(t.status, t.nextRunAt),
  ],
);

export const scheduleAuthorizers = pgTable(
  'schedule_authorizers',
  {
    id: rowId('id'),
    scheduleId: ident('schedule_id')
      .notNull()
      .references(() => schedules.id),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    paymentType: text('payment_type', { enum: PAYMENT_TYPES }).notNull(),
    routingNumber: text('routing_number'),
    phone: text('phone'),
    zip: text('zip'),
    metadata: text('metadata'),
    thresholdCents: cents('threshold_cents'),
    sealed: text('sealed').notNull(), // the authorizer's sensitive fields, vault-sealed
  },
  (t) => [uniqueIndex('schedule_authorizers_unique_idx').on(t.scheduleId, t.authorizerUniqueId)],
);
