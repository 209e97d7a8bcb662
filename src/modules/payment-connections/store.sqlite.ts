import { and, asc, desc, eq, isNotNull, isNull, max, sum } from 'drizzle-orm';
import { lenders, paymentConnections, processorAccounts } from '../../../db/schema';
import type { ProcessorName } from '../../../db/schema/enums';
import type { Db } from '../../platform/db';
import { lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { AccountBinding, PaymentConnectionStore, ResolvableKey } from './store';

const live = (lenderId: string) => and(eq(paymentConnections.lenderId, lenderId), isNull(paymentConnections.deletedAt));

const accountBinding = (db: Db, processor: ProcessorName, accountId: string): AccountBinding | undefined =>
  db
    .select({ lenderId: processorAccounts.lenderId, boundAt: processorAccounts.boundAt })
    .from(processorAccounts)
    .where(and(eq(processorAccounts.processor, processor), eq(processorAccounts.accountId, accountId)))
    .get();

const resolvableKeys = (db: Db, lenderId: string): ResolvableKey[] =>
  db
    .select({
      id: paymentConnections.id,
      railScope: paymentConnections.railScope,
      isDefault: paymentConnections.isDefault,
      merchantRef: paymentConnections.merchantRef,
      processor: paymentConnections.processor,
      keySealed: paymentConnections.keySealed,
    })
    .from(paymentConnections)
    .where(live(lenderId))
    .all();

export const sqlitePaymentConnectionStore: PaymentConnectionStore = {
  // One writer at a time: a transaction's reads and writes are never interleaved with another's.
  async serializeKeyChanges(c, lenderId) {
    await lockFor(c, 'payment-connections', lenderId);
  },
  async serializeAccount(c, processor, accountId) {
    await lockFor(c, 'processor-account', processor, accountId);
  },
  async accountBinding(c, processor, accountId) {
    return accountBinding(readerOf(c), processor, accountId);
  },
  async bindAccount(c, v) {
    writerOf(c).insert(processorAccounts).values({ processor: v.processor, accountId: v.accountId, lenderId: v.lenderId, boundAt: v.boundAt }).run();
  },
  async releaseAccount(c, processor, accountId) {
    writerOf(c)
      .delete(processorAccounts)
      .where(and(eq(processorAccounts.processor, processor), eq(processorAccounts.accountId, accountId)))
      .run();
  },
  async accountInUse(c, v) {
    const row = readerOf(c)
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
      .get();
    return row !== undefined;
  },
  async listBindings(c) {
    return readerOf(c)
      .select({ processor: processorAccounts.processor, accountId: processorAccounts.accountId, lender: lenders.name, boundAt: processorAccounts.boundAt })
      .from(processorAccounts)
      .innerJoin(lenders, eq(lenders.id, processorAccounts.lenderId))
      .orderBy(asc(processorAccounts.boundAt))
      .all();
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
      .orderBy(asc(paymentConnections.createdAt), asc(paymentConnections.id))
      .all();
  },
  async recordKeyAccount(c, id, accountId, lastPollError) {
    writerOf(c)
      .update(paymentConnections)
      .set({ accountId, ...(lastPollError !== undefined ? { lastPollError } : {}) })
      .where(eq(paymentConnections.id, id))
      .run();
  },

  async liveKeys(c, lenderId) {
    return readerOf(c).select().from(paymentConnections).where(live(lenderId)).all();
  },
  async listLiveKeys(c, lenderId) {
    return readerOf(c)
      .select()
      .from(paymentConnections)
      .where(live(lenderId))
      .orderBy(desc(paymentConnections.isDefault), asc(paymentConnections.createdAt), asc(paymentConnections.id))
      .all();
  },
  async liveKey(c, lenderId, id) {
    return readerOf(c)
      .select()
      .from(paymentConnections)
      .where(and(eq(paymentConnections.id, id), live(lenderId)))
      .get();
  },
  async keyTotals(c, lenderId) {
    const totals = readerOf(c)
      .select({ ingested: sum(paymentConnections.ingested), matched: sum(paymentConnections.matched), lastPollAt: max(paymentConnections.lastPollAt) })
      .from(paymentConnections)
      .where(eq(paymentConnections.lenderId, lenderId))
      .get();
    return { ingested: Number(totals?.ingested ?? 0), matched: Number(totals?.matched ?? 0), lastPollAt: totals?.lastPollAt ?? null };
  },
  async resolvableKeys(c, lenderId) {
    return resolvableKeys(readerOf(c), lenderId);
  },
  async insertKey(c, row) {
    writerOf(c).insert(paymentConnections).values(row).run();
  },
  async updateKey(c, id, set) {
    writerOf(c).update(paymentConnections).set(set).where(eq(paymentConnections.id, id)).run();
  },
  async eraseKey(c, id, at) {
    writerOf(c).update(paymentConnections).set({ keySealed: null, isDefault: false, deletedAt: at, updatedAt: at }).where(eq(paymentConnections.id, id)).run();
  },
};
