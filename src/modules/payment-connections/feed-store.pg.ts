import { and, eq, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import { paymentConnections } from '../../../db/schema-pg';
import { inList, readerOf, writerOf } from '../../platform/sql/pg';
import type { FeedStore } from './feed-store';

const liveKey = and(isNull(paymentConnections.deletedAt), isNotNull(paymentConnections.keySealed));

export const pgFeedStore: FeedStore = {
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
      .where(liveKey);
  },
  async pollCursorOf(c, connectionId) {
    const [r] = await readerOf(c)
      .select({ cursor: paymentConnections.pollCursor })
      .from(paymentConnections)
      .where(and(eq(paymentConnections.id, connectionId), isNull(paymentConnections.deletedAt)));
    return r;
  },
  async recordPoll(c, connectionId, v) {
    const moved = await writerOf(c)
      .update(paymentConnections)
      .set({
        pollCursor: v.cursor,
        lastPollAt: v.at,
        lastPollError: v.error,
        ...(v.reconcileDue ? { reconcileDue: true } : {}),
        ingested: sql`${paymentConnections.ingested} + ${v.ingested}::int`,
        matched: sql`${paymentConnections.matched} + ${v.matched}::int`,
      })
      // Compare and set: a cursor another replica moved since the page was asked for is left as it is.
      .where(and(eq(paymentConnections.id, connectionId), sql`${paymentConnections.pollCursor} IS NOT DISTINCT FROM ${v.from}::text`))
      .returning({ id: paymentConnections.id });
    return moved.length > 0;
  },
  async recordPollError(c, connectionId, message) {
    await writerOf(c).update(paymentConnections).set({ lastPollError: message }).where(eq(paymentConnections.id, connectionId));
  },
  async keysToReconcile(c, v) {
    return readerOf(c)
      .select({ id: paymentConnections.id, lenderId: paymentConnections.lenderId, processor: paymentConnections.processor, keySealed: paymentConnections.keySealed })
      .from(paymentConnections)
      .where(
        v.connectionIds
          ? and(liveKey, inList(paymentConnections.id, v.connectionIds))
          : and(liveKey, or(eq(paymentConnections.reconcileDue, true), lte(sql`COALESCE(${paymentConnections.reconciledAt}, ${paymentConnections.createdAt})`, v.dueBefore))),
      );
  },
  async markReconciled(c, connectionId, at) {
    await writerOf(c).update(paymentConnections).set({ reconciledAt: at, reconcileDue: false }).where(eq(paymentConnections.id, connectionId));
  },
};
