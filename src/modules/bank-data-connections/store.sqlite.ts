import { and, asc, eq, gte, inArray, isNull, lt, sql } from 'drizzle-orm';
import { bankDataConnections, providerCalls } from '../../../db/schema';
import type { BankDataProvider } from '../../../db/schema/enums';
import type { Db, Orm } from '../../platform/db';
import { lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { BankDataConnectionRow, BankDataConnectionStore } from './store';

const live = (lenderId: string) => and(eq(bankDataConnections.lenderId, lenderId), isNull(bankDataConnections.deletedAt));

const liveConnections = (db: Db, lenderId: string): BankDataConnectionRow[] =>
  db.select().from(bankDataConnections).where(live(lenderId)).orderBy(asc(bankDataConnections.createdAt), asc(bankDataConnections.id)).all();

const liveConnectionFor = (db: Db, lenderId: string, provider: BankDataProvider): BankDataConnectionRow | undefined =>
  db
    .select()
    .from(bankDataConnections)
    .where(and(live(lenderId), eq(bankDataConnections.provider, provider)))
    .get();

function markRead(tx: Orm, ids: string[], at: number): void {
  if (ids.length === 0) return;
  tx.update(bankDataConnections).set({ lastReadAt: at }).where(inArray(bankDataConnections.id, ids)).run();
}

export const sqliteBankDataConnectionStore: BankDataConnectionStore = {
  async liveConnections(c, lenderId) {
    return liveConnections(readerOf(c), lenderId);
  },
  async liveConnection(c, lenderId, id) {
    return readerOf(c)
      .select()
      .from(bankDataConnections)
      .where(and(eq(bankDataConnections.id, id), live(lenderId)))
      .get();
  },
  async liveConnectionFor(c, lenderId, provider) {
    return liveConnectionFor(readerOf(c), lenderId, provider);
  },
  async connectionById(c, id) {
    return readerOf(c).select().from(bankDataConnections).where(eq(bankDataConnections.id, id)).get();
  },
  // One writer at a time: the check and the insert already run alone.
  async serializeConnections(c, lenderId) {
    await lockFor(c, 'bank-data-connections', lenderId);
  },
  async insertConnection(c, row) {
    writerOf(c).insert(bankDataConnections).values(row).run();
  },
  async eraseConnection(c, id, at) {
    writerOf(c).update(bankDataConnections).set({ credentialsSealed: null, deletedAt: at }).where(eq(bankDataConnections.id, id)).run();
  },
  async markRead(c, ids, at) {
    markRead(writerOf(c), ids, at);
  },
  async addProviderCalls(c, rows) {
    if (rows.length === 0) return;
    writerOf(c)
      .insert(providerCalls)
      .values(rows.map((r) => ({ connectionId: r.connectionId, endpoint: r.endpoint, day: r.day, lenderId: r.lenderId, provider: r.provider as 'plaid' | 'stripe', calls: r.calls })))
      .onConflictDoUpdate({ target: [providerCalls.connectionId, providerCalls.endpoint, providerCalls.day], set: { calls: sql`${providerCalls.calls} + excluded.calls` } })
      .run();
  },
  async providerCalls(c, connectionId, fromDay, toDay) {
    return readerOf(c)
      .select({ day: providerCalls.day, endpoint: providerCalls.endpoint, calls: providerCalls.calls })
      .from(providerCalls)
      .where(and(eq(providerCalls.connectionId, connectionId), gte(providerCalls.day, fromDay), lt(providerCalls.day, toDay)))
      .orderBy(asc(providerCalls.day), asc(providerCalls.endpoint))
      .all();
  },
};
