import { expect, test } from 'bun:test';
import { contract } from './contract';
import { lenderWithSandboxPayment } from './contract-fixtures';
import { DAY_MS } from '../../src/platform/clock';

// Borrowers are read once a month here, so a borrower of an earlier test is never read and decided again.
const env = { MONITOR_READ_INTERVAL_MS: String(30 * DAY_MS) };

contract(
  'feeds',
  (t) => {
    const { ctx, store, storeCtx } = t;
    let n = 0;
    const lenderWithPayment = (aid: string) => lenderWithSandboxPayment(ctx, `sbx_feeds_contract_${++n}_0000`, aid);
    const deleteKey = async (lender: { key: string }, id: string) =>
      expect((await ctx.json('DELETE', `/v1/payment_connections/${id}`, { key: lender.key })).status).toBe(204);

    test('a page of the feed is recorded only from the cursor stored: compare and set, counts added', async () => {
      const { lender, connectionId } = await lenderWithPayment('m-cursor');
      const start = (await store.pollCursorOf(storeCtx, connectionId))!.cursor;
      const at = ctx.clock.now();
      const page = { at, error: null, reconcileDue: false, ingested: 3, matched: 2 };
      const conn = async () =>
        (await ctx.json('GET', '/v1/payment_connections', { key: lender.key })).body as { ingested: number; matched: number; last_poll_error?: string | null };
      const counted = await conn();
      expect(await t.inTx((tx) => store.recordPoll(tx, connectionId, { ...page, from: 'not-the-cursor', cursor: 'c-stale' }))).toBe(false);
      expect(await store.pollCursorOf(storeCtx, connectionId)).toEqual({ cursor: start });
      expect(await t.inTx((tx) => store.recordPoll(tx, connectionId, { ...page, from: start, cursor: 'c-1' }))).toBe(true);
      // The page before was asked from `start`: the cursor moved since, so a second page from it is discarded.
      expect(await t.inTx((tx) => store.recordPoll(tx, connectionId, { ...page, from: start, cursor: 'c-other' }))).toBe(false);
      await t.inTx(async (tx) => {
        await t.stores.matching.serializeFeed(tx, connectionId);
        expect(await store.recordPoll(tx, connectionId, { ...page, from: 'c-1', cursor: null, error: 'feed lost', ingested: 1, matched: 0 })).toBe(true);
      });
      // Back to no cursor: a page from none compares equal.
      expect(await store.pollCursorOf(storeCtx, connectionId)).toEqual({ cursor: null });
      expect(await t.inTx((tx) => store.recordPoll(tx, connectionId, { ...page, from: null, cursor: 'c-2', ingested: 0, matched: 0 }))).toBe(true);
      await expect(
        t.inTx(async (tx) => {
          await store.recordPoll(tx, connectionId, { ...page, from: 'c-2', cursor: 'c-lost' });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.pollCursorOf(storeCtx, connectionId)).toEqual({ cursor: 'c-2' });
      const [row] = await ctx.rows('SELECT last_poll_at AS at, last_poll_error AS error FROM payment_connections WHERE id = ?', connectionId);
      expect(row).toEqual({ at, error: null });
      const now = await conn();
      expect([now.ingested - counted.ingested, now.matched - counted.matched]).toEqual([4, 2]);
      await t.inTx((tx) => store.recordPollError(tx, connectionId, 'processor down'));
      const [failed] = await ctx.rows('SELECT last_poll_error AS error, poll_cursor AS cursor FROM payment_connections WHERE id = ?', connectionId);
      expect(failed).toEqual({ error: 'processor down', cursor: 'c-2' });
      await deleteKey(lender, connectionId);
      expect(await store.pollCursorOf(storeCtx, connectionId)).toBeUndefined();
      expect(await store.pollCursorOf(storeCtx, 'no-such-key')).toBeUndefined();
    });

    test('keys to poll and to reconcile are the live ones; due when asked to or not reconciled since, until marked', async () => {
      const a = await lenderWithPayment('m-keys-a');
      const b = await lenderWithPayment('m-keys-b');
      const ours = (keys: { id: string }[]) => keys.map((k) => k.id).filter((id) => id === a.connectionId || id === b.connectionId).sort();
      const both = [a.connectionId, b.connectionId].sort();
      expect(ours(await store.keysToPoll(storeCtx))).toEqual(both);
      const now = ctx.clock.now();
      // Created now: not due for a time before, due for now.
      expect(ours(await store.keysToReconcile(storeCtx, { dueBefore: now - 1 }))).toEqual([]);
      expect(ours(await store.keysToReconcile(storeCtx, { dueBefore: now }))).toEqual(both);
      const [given] = await store.keysToReconcile(storeCtx, { connectionIds: [a.connectionId, 'no-such-key'], dueBefore: 0 });
      expect(given).toEqual({ id: a.connectionId, lenderId: a.lender.id, processor: 'sandbox', keySealed: expect.any(String) });
      ctx.clock.advance(DAY_MS);
      await t.inTx((tx) => store.markReconciled(tx, a.connectionId, now + DAY_MS));
      expect(ours(await store.keysToReconcile(storeCtx, { dueBefore: now + DAY_MS - 1 }))).toEqual([b.connectionId]);
      expect(ours(await store.keysToReconcile(storeCtx, { dueBefore: now + DAY_MS }))).toEqual(both);
      // Asked to (a page lost the feed): due whenever it was reconciled.
      const from = (await store.pollCursorOf(storeCtx, a.connectionId))!.cursor;
      const asked = { from, cursor: from, at: now + DAY_MS, error: null, reconcileDue: true, ingested: 0, matched: 0 };
      expect(await t.inTx((tx) => store.recordPoll(tx, a.connectionId, asked))).toBe(true);
      expect(ours(await store.keysToReconcile(storeCtx, { dueBefore: 0 }))).toEqual([a.connectionId]);
      // A later page that does not ask keeps it due; marking it reconciled clears it.
      expect(await t.inTx((tx) => store.recordPoll(tx, a.connectionId, { ...asked, reconcileDue: false }))).toBe(true);
      expect(ours(await store.keysToReconcile(storeCtx, { dueBefore: 0 }))).toEqual([a.connectionId]);
      await t.inTx((tx) => store.markReconciled(tx, a.connectionId, now + DAY_MS));
      expect(ours(await store.keysToReconcile(storeCtx, { dueBefore: 0 }))).toEqual([]);
      // A deleted key is polled and reconciled no more, even when named.
      await deleteKey(b.lender, b.connectionId);
      expect(ours(await store.keysToPoll(storeCtx))).toEqual([a.connectionId]);
      expect(await store.keysToReconcile(storeCtx, { connectionIds: [b.connectionId], dueBefore: now + DAY_MS })).toEqual([]);
    });
  },
  { env },
);
