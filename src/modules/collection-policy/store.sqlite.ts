import { eq } from 'drizzle-orm';
import { collectionPolicies } from '../../../db/schema';
import type { Db } from '../../platform/db';
import { lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { CollectionPolicyStore, PolicyRow } from './store';

/**
 * The lender's policy row, read by the collection rules once per decision and per recorded return (an upload
 * of a 10 MB file asks it tens of thousands of times): a cached statement, not the query builder.
 */
const policyRow = (db: Db, lenderId: string) =>
  db.$client
    .query<PolicyRow, [string]>(
      `SELECT cfpb_covered AS cfpbCovered, max_reinitiations AS maxReinitiations, reinitiation_amount AS reinitiationAmount, notice_days AS noticeDays,
              return_rate_pause AS returnRatePause, read_cadence AS readCadence, debit_buffer_cents AS debitBufferCents, time_zone AS timeZone,
              late_return_window_days AS lateReturnWindowDays,
              allow_current_balance AS allowCurrentBalance, current_balance_buffer_cents AS currentBalanceBufferCents, max_balance_age_minutes AS maxBalanceAgeMinutes,
              apply_notifications_of_change AS applyNotificationsOfChange, require_account_validation AS requireAccountValidation,
              account_return_states AS accountReturnStates, notice_channel AS noticeChannel, reg_e_election AS regEElection
         FROM collection_policies WHERE lender_id = ?`,
    )
    .get(lenderId) ?? undefined;

/**
 * The policy row read synchronously, for callers not yet asynchronous.
 * @deprecated transitional: call `collectionPolicyStore.policyRow` (through `policyOf`).
 */
export const policyRowNow = policyRow;

export const sqliteCollectionPolicyStore: CollectionPolicyStore = {
  async policyRow(c, lenderId) {
    return policyRow(readerOf(c), lenderId);
  },
  async policyUpdatedAt(c, lenderId) {
    const row = readerOf(c)
      .select({ updatedAt: collectionPolicies.updatedAt })
      .from(collectionPolicies)
      .where(eq(collectionPolicies.lenderId, lenderId))
      .get();
    return row?.updatedAt ?? null;
  },
  // One writer at a time: the change's read and write already run alone.
  async serializePolicyChange(c, lenderId) {
    await lockFor(c, 'collection-policy', lenderId);
  },
  async savePolicy(c, policy) {
    writerOf(c).insert(collectionPolicies).values(policy).onConflictDoUpdate({ target: collectionPolicies.lenderId, set: policy }).run();
  },
};
