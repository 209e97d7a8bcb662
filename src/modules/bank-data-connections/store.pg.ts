import { and, asc, eq, inArray, isNull } from 'drizzle-orm';
import { bankDataConnections } from '../../../db/schema-pg';
import { lockFor, pgReaderOf, pgWriterOf } from '../../platform/store.pg';
import type { BankDataConnectionStore } from './store';

const live = (lenderId: string) => and(eq(bankDataConnections.lenderId, lenderId), isNull(bankDataConnections.deletedAt));

export const pgBankDataConnectionStore: BankDataConnectionStore = {
  async liveConnections(c, lenderId) {
    return pgReaderOf(c).select().from(bankDataConnections).where(live(lenderId)).orderBy(asc(bankDataConnections.createdAt), asc(bankDataConnections.id));
  },
  async liveConnection(c, lenderId, id) {
    return (
      await pgReaderOf(c)
        .select()
        .from(bankDataConnections)
        .where(and(eq(bankDataConnections.id, id), live(lenderId)))
    )[0];
  },
  async liveConnectionFor(c, lenderId, provider) {
    return (
      await pgReaderOf(c)
        .select()
        .from(bankDataConnections)
        .where(and(live(lenderId), eq(bankDataConnections.provider, provider)))
    )[0];
  },
  async connectionById(c, id) {
    return (await pgReaderOf(c).select().from(bankDataConnections).where(eq(bankDataConnections.id, id)))[0];
  },
  async serializeConnections(c, lenderId) {
    await lockFor(c, 'bank-data-connections', lenderId);
  },
  async insertConnection(c, row) {
    await pgWriterOf(c).insert(bankDataConnections).values(row);
  },
  async eraseConnection(c, id, at) {
    await pgWriterOf(c).update(bankDataConnections).set({ credentialsSealed: null, deletedAt: at }).where(eq(bankDataConnections.id, id));
  },
  async markRead(c, ids, at) {
    if (ids.length === 0) return;
    await pgWriterOf(c).update(bankDataConnections).set({ lastReadAt: at }).where(inArray(bankDataConnections.id, ids));
  },
};
