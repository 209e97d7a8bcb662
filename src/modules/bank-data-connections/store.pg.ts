import { and, asc, eq, gte, inArray, isNull, lt, sql } from 'drizzle-orm';
import { bankDataConnections, providerCalls } from '../../../db/schema-pg';
import { lockFor, readerOf, writerOf } from '../../platform/sql/pg';
import type { BankDataConnectionStore } from './store';

const live = (lenderId: string) => and(eq(bankDataConnections.lenderId, lenderId), isNull(bankDataConnections.deletedAt));

export const pgBankDataConnectionStore: BankDataConnectionStore = {
  async liveConnections(c, lenderId) {
    return readerOf(c).select().from(bankDataConnections).where(live(lenderId)).orderBy(asc(bankDataConnections.createdAt), asc(bankDataConnections.id));
  },
  async liveConnection(c, lenderId, id) {
    return (
      await readerOf(c)
        .select()
        .from(bankDataConnections)
        .where(and(eq(bankDataConnections.id, id), live(lenderId)))
    )[0];
  },
  async liveConnectionFor(c, lenderId, provider) {
    return (
      await readerOf(c)
        .select()
        .from(bankDataConnections)
        .where(and(live(lenderId), eq(bankDataConnections.provider, provider)))
    )[0];
  },
  async connectionById(c, id) {
    return (await readerOf(c).select().from(bankDataConnections).where(eq(bankDataConnections.id, id)))[0];
  },
  async serializeConnections(c, lenderId) {
    await lockFor(c, 'bank-data-connections', lenderId);
  },
  async insertConnection(c, row) {
    await writerOf(c).insert(bankDataConnections).values(row);
  },
  async eraseConnection(c, id, at) {
    await writerOf(c).update(bankDataConnections).set({ credentialsSealed: null, deletedAt: at }).where(eq(bankDataConnections.id, id));
  },
  async markRead(c, ids, at) {
    if (ids.length === 0) return;
    await writerOf(c).update(bankDataConnections).set({ lastReadAt: at }).where(inArray(bankDataConnections.id, ids));
  },
  async addProviderCalls(c, rows) {
    if (rows.length === 0) return;
    // In one order on every replica: two flushes adding to the same rows wait for each other, never deadlock.
    const sorted = [...rows].sort((a, b) => (a.connectionId + '\n' + a.endpoint + '\n' + a.day < b.connectionId + '\n' + b.endpoint + '\n' + b.day ? -1 : 1));
    await writerOf(c)
      .insert(providerCalls)
      .values(sorted.map((r) => ({ connectionId: r.connectionId, endpoint: r.endpoint, day: r.day, lenderId: r.lenderId, provider: r.provider as 'plaid' | 'stripe', calls: r.calls })))
      .onConflictDoUpdate({ target: [providerCalls.connectionId, providerCalls.endpoint, providerCalls.day], set: { calls: sql`${providerCalls.calls} + excluded.calls` } });
  },
  async providerCalls(c, connectionId, fromDay, toDay) {
    return readerOf(c)
      .select({ day: providerCalls.day, endpoint: providerCalls.endpoint, calls: providerCalls.calls })
      .from(providerCalls)
      .where(and(eq(providerCalls.connectionId, connectionId), gte(providerCalls.day, fromDay), lt(providerCalls.day, toDay)))
      .orderBy(asc(providerCalls.day), asc(providerCalls.endpoint));
  },
};
