import { eq } from 'drizzle-orm';
import { collectionPolicies } from '../../../db/schema-pg';
import { lockFor, readerOf, writerOf } from '../../platform/sql/pg';
import type { CollectionPolicyStore } from './store';

export const pgCollectionPolicyStore: CollectionPolicyStore = {
  async policyRow(c, lenderId) {
    // The query builder reads debit_buffer_cents (int8) as a number; the flags come back as 0/1 as SQLite's row has them.
    const [row] = await readerOf(c)
      .select({
        cfpbCovered: collectionPolicies.cfpbCovered,
        maxReinitiations: collectionPolicies.maxReinitiations,
        reinitiationAmount: collectionPolicies.reinitiationAmount,
        noticeDays: collectionPolicies.noticeDays,
        returnRatePause: collectionPolicies.returnRatePause,
        readCadence: collectionPolicies.readCadence,
        debitBufferCents: collectionPolicies.debitBufferCents,
        timeZone: collectionPolicies.timeZone,
        lateReturnWindowDays: collectionPolicies.lateReturnWindowDays,
        allowCurrentBalance: collectionPolicies.allowCurrentBalance,
        currentBalanceBufferCents: collectionPolicies.currentBalanceBufferCents,
        maxBalanceAgeMinutes: collectionPolicies.maxBalanceAgeMinutes,
        applyNotificationsOfChange: collectionPolicies.applyNotificationsOfChange,
        requireAccountValidation: collectionPolicies.requireAccountValidation,
        accountReturnStates: collectionPolicies.accountReturnStates,
        noticeChannel: collectionPolicies.noticeChannel,
        regEElection: collectionPolicies.regEElection,
      })
      .from(collectionPolicies)
      .where(eq(collectionPolicies.lenderId, lenderId));
    return row && { ...row, cfpbCovered: row.cfpbCovered ? 1 : 0, returnRatePause: row.returnRatePause ? 1 : 0, allowCurrentBalance: row.allowCurrentBalance ? 1 : 0, requireAccountValidation: row.requireAccountValidation ? 1 : 0 };
  },
  async policyUpdatedAt(c, lenderId) {
    const [row] = await readerOf(c)
      .select({ updatedAt: collectionPolicies.updatedAt })
      .from(collectionPolicies)
      .where(eq(collectionPolicies.lenderId, lenderId));
    return row?.updatedAt ?? null;
  },
  async serializePolicyChange(c, lenderId) {
    await lockFor(c, 'collection-policy', lenderId);
  },
  async savePolicy(c, policy) {
    await writerOf(c).insert(collectionPolicies).values(policy).onConflictDoUpdate({ target: collectionPolicies.lenderId, set: policy });
  },
};
