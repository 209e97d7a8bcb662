import { and, asc, desc, eq, isNotNull, isNull, max, sum } from 'drizzle-orm';
import { lenders, paymentConnections, processorAccounts } from '../../../db/schema-pg';
import { lockFor, readerOf, writerOf } from '../../platform/sql/pg';
import type { PaymentConnectionStore } from './store';

// The processor keys on PostgreSQL. Transactions run side by side here, so the rules a key's write is checked
// against (one default per rail_scope, one key per tag and rail_scope, one lender per processor account) are
// read and written under the advisory locks of serializeKeyChanges and serializeAccount, which the service
// takes first; the unique indexes stay behind them.

const live = (lenderId: string) => and(eq(paymentConnections.lenderId, lenderId), isNull(paymentConnections.deletedAt));

export const pgPaymentConnectionStore: PaymentConnectionStore = {
  async serializeKeyChanges(c, lenderId) {
    await lockFor(c, 'payment-connections', lenderId);
  },
  async serializeAccount(c, processor, accountId) {
    await lockFor(c, 'processor-account', processor, accountId);
  },
  async accountBinding(c, processor, accountId) {
    const [row] = await readerOf(c)
      .select({ lenderId: processorAccounts.lenderId, boundAt: processorAccounts.boundAt })
      .from(processorAccounts)
      .where(and(eq(processorAccounts.processor, processor), eq(processorAccounts.accountId, accountId)));
    return row;
  },
  async bindAccount(c, v) {
    await writerOf(c).insert(processorAccounts).values({ processor: v.processor, accountId: v.accountId, lenderId: v.lenderId, boundAt: v.boundAt });
  },
  async releaseAccount(c, processor, accountId) {
    await writerOf(c)
      .delete(processorAccounts)
      .where(and(eq(processorAccounts.processor, processor), eq(processorAccounts.accountId, accountId)));
  },
  async accountInUse(c, v) {
    const [row] = await readerOf(c)
      .select({ id: paymentConnections.id })
      .from(paymentConnections)
      .where(
        and(
          eq(paymentConnections.processor, v.processor),
          eq(paymentConnections.accountId, v.accountId),
          eq(paymentConnections.lenderId, v.lenderId),
          isNull(paymentConnections.deletedAt),
        ),
      )
      .limit(1);
    return row !== undefined;
  },
  async listBindings(c) {
    return readerOf(c)
      .select({ processor: processorAccounts.processor, accountId: processorAccounts.accountId, lender: lenders.name, boundAt: processorAccounts.boundAt })
      .from(processorAccounts)
      .innerJoin(lenders, eq(lenders.id, processorAccounts.lenderId))
      .orderBy(asc(processorAccounts.boundAt));
  },
  async keysWithoutAccount(c, processor) {
    return readerOf(c)
      .select({ id: paymentConnections.id, lenderId: paymentConnections.lenderId, processor: paymentConnections.processor, keySealed: paymentConnections.keySealed })
      .from(paymentConnections)
      .where(
        and(
          isNull(paymentConnections.accountId),
          isNull(paymentConnections.deletedAt),
          isNotNull(paymentConnections.keySealed),
          processor ? eq(paymentConnections.processor, processor) : undefined,
        ),
      )
      .orderBy(asc(paymentConnections.createdAt), asc(paymentConnections.id));
  },
  async recordKeyAccount(c, id, accountId, lastPollError) {
    await writerOf(c)
      .update(paymentConnections)
      .set({ accountId, ...(lastPollError !== undefined ? { lastPollError } : {}) })
      .where(eq(paymentConnections.id, id));
  },

  async liveKeys(c, lenderId) {
    return readerOf(c).select().from(paymentConnections).where(live(lenderId));
  },
  async listLiveKeys(c, lenderId) {
    return readerOf(c)
      .select()
      .from(paymentConnections)
      .where(live(lenderId))
      .orderBy(desc(paymentConnections.isDefault), asc(paymentConnections.createdAt), asc(paymentConnections.id));
  },
  async liveKey(c, lenderId, id) {
    const [row] = await readerOf(c)
      .select()
      .from(paymentConnections)
      .where(and(eq(paymentConnections.id, id), live(lenderId)));
    return row;
  },
  async keyTotals(c, lenderId) {
    const [totals] = await readerOf(c)
      .select({ ingested: sum(paymentConnections.ingested), matched: sum(paymentConnections.matched), lastPollAt: max(paymentConnections.lastPollAt) })
      .from(paymentConnections)
      .where(eq(paymentConnections.lenderId, lenderId));
    const last = totals?.lastPollAt;
    return { ingested: Number(totals?.ingested ?? 0), matched: Number(totals?.matched ?? 0), lastPollAt: last === null || last === undefined ? null : Number(last) };
  },
  async resolvableKeys(c, lenderId) {
    return readerOf(c)
      .select({
        id: paymentConnections.id,
        railScope: paymentConnections.railScope,
        isDefault: paymentConnections.isDefault,
        merchantRef: paymentConnections.merchantRef,
        processor: paymentConnections.processor,
        keySealed: paymentConnections.keySealed,
      })
      .from(paymentConnections)
      .where(live(lenderId));
  },
  async insertKey(c, row) {
    await writerOf(c).insert(paymentConnections).values(row);
  },
  async updateKey(c, id, set) {
    await writerOf(c).update(paymentConnections).set(set).where(eq(paymentConnections.id, id));
  },
  async eraseKey(c, id, at) {
    await writerOf(c).update(paymentConnections).set({ keySealed: null, isDefault: false, deletedAt: at, updatedAt: at }).where(eq(paymentConnections.id, id));
  },
};
