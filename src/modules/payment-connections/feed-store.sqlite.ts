import { and, eq, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import { paymentConnections } from '../../../db/schema';
import { inList, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { FeedStore } from './feed-store';

const liveKey = and(isNull(paymentConnections.deletedAt), isNotNull(paymentConnections.keySealed));

export const sqliteFeedStore: FeedStore = {
  async keysToPoll(c) {
    return readerOf(c)
      .select({
        id: paymentConnections.id,
        lenderId: paymentConnections.lenderId,
        processor: paymentConnections.processor,
        accountId: paymentConnections.accountId,
        keySealed: paymentConnections.keySealed,
        cursor: paymentConnections.pollCursor,
      })
      .from(paymentConnections)
      .where(liveKey)
      .all();
  },
  async pollCursorOf(c, connectionId) {
    return readerOf(c)
      .select({ cursor: paymentConnections.pollCursor })
      .from(paymentConnections)
      .where(and(eq(paymentConnections.id, connectionId), isNull(paymentConnections.deletedAt)))
      .get();
  },
  async recordPoll(c, connectionId, v) {
    return (
      writerOf(c)
        .$client.query(
          // Compare and set on the cursor (IS compares NULLs as equal).
          `UPDATE payment_connections SET poll_cursor = ?1, last_poll_at = ?2, last_poll_error = ?3,
             reconcile_due = CASE WHEN ?4 = 1 THEN 1 ELSE reconcile_due END, ingested = ingested + ?5, matched = matched + ?6
           WHERE id = ?7 AND poll_cursor IS ?8`,
        )
        .run(v.cursor, v.at, v.error, v.reconcileDue ? 1 : 0, v.ingested, v.matched, connectionId, v.from).changes > 0
    );
  },
  async recordPollError(c, connectionId, message) {
    writerOf(c).update(paymentConnections).set({ lastPollError: message }).where(eq(paymentConnections.id, connectionId)).run();
  },
  async keysToReconcile(c, v) {
    return readerOf(c)
      .select({ id: paymentConnections.id, lenderId: paymentConnections.lenderId, processor: paymentConnections.processor, keySealed: paymentConnections.keySealed })
      .from(paymentConnections)
      .where(
        v.connectionIds
          ? and(liveKey, inList(paymentConnections.id, v.connectionIds))
          : and(liveKey, or(eq(paymentConnections.reconcileDue, true), lte(sql`COALESCE(${paymentConnections.reconciledAt}, ${paymentConnections.createdAt})`, v.dueBefore))),
      )
      .all();
  },
  async markReconciled(c, connectionId, at) {
    writerOf(c).update(paymentConnections).set({ reconciledAt: at, reconcileDue: false }).where(eq(paymentConnections.id, connectionId)).run();
  },
};
