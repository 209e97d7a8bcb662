import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { REINITIATION_AMOUNTS } from './enums';
import { lenders } from './lenders';

// A lender's collection policy: the rules beyond the spec's defaults that bound its automatic debits. No row
// means every default (the spec's behaviour).
export const collectionPolicies = sqliteTable('collection_policies', {
  lenderId: text('lender_id')
    .primaryKey()
    .references(() => lenders.id),
  // The lender's loans are covered by the CFPB payday rule (12 CFR 1041): two failures for funds stop collection.
  cfpbCovered: integer('cfpb_covered', { mode: 'boolean' }).notNull().default(false),
  // Reinitiations after an R01/R09 return, at most (Nacha allows two).
  maxReinitiations: integer('max_reinitiations').notNull().default(2),
  reinitiationAmount: text('reinitiation_amount', { enum: REINITIATION_AMOUNTS }).notNull().default('current'),
  // Business days of notice before a debit (the payday rule's notice); 0: debit as soon as the balance covers.
  noticeDays: integer('notice_days').notNull().default(0),
  updatedAt: integer('updated_at'),
});
