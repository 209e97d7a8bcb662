import { expect, test } from 'bun:test';
import { contract, waiting } from './contract';
import { lenderWithSandboxPayment } from './contract-fixtures';
import { pollProcessors } from '../../src/modules/collection/poll';
import { reconcileKeys } from '../../src/modules/collection/reconcile';
import { DAY_MS } from '../../src/platform/clock';

const SETTLE = 60_000;
// Borrowers are read once a month here, so a borrower of an earlier test is never read and decided again.
const env = { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(30 * DAY_MS) };

contract(
  'matching',
  (t) => {
    const { ctx, store, storeCtx } = t;
    let n = 0;

    const lenderWithPayment = (aid: string, opts: { send?: boolean } = {}) => lenderWithSandboxPayment(ctx, `sbx_matching_contract_${++n}_0000`, aid, opts);

    /** A transaction of the test's database waiting for another's lock now (PostgreSQL). */
    const rowLockWaited = async () => (await waiting(t)) > 0;

    // First: the only test that sends and polls, so the payments the others leave in the queue are never sent.
    test('a sent payment is matched by the poll: its processor id ingested as matched, the cursor moved', async () => {
      const { lender, connectionId, payment } = await lenderWithPayment('m-polled', { send: true });
      expect(typeof payment.pid).toBe('string');
      const before = await t.stores.feeds.pollCursorOf(storeCtx, connectionId);
      expect(before).toBeDefined();
      ctx.clock.advance(SETTLE);
      await pollProcessors(ctx.rt);
      expect(await store.ingestedAmong(storeCtx, connectionId, [payment.pid!])).toEqual([{ id: payment.pid!, matched: true }]);
      const after = await t.stores.feeds.pollCursorOf(storeCtx, connectionId);
      expect(after!.cursor).not.toBe(before!.cursor);
      const [polled] = (await t.stores.feeds.keysToPoll(storeCtx)).filter((k) => k.lenderId === lender.id);
      expect(polled).toEqual({ id: connectionId, lenderId: lender.id, processor: 'sandbox', accountId: expect.anything(), keySealed: expect.any(String), cursor: after!.cursor });
      expect((await ctx.rows('SELECT status FROM payments WHERE id = ?', payment.id))[0]).toEqual({ status: 'settled' });
      // Reconciling the key through the job: it is found due, listed, and marked reconciled now.
      const result = await reconcileKeys(ctx.rt, { connectionIds: [connectionId] });
      expect(result.keys).toBe(1);
      const [row] = await ctx.rows<{ at: number }>('SELECT reconciled_at AS at FROM payment_connections WHERE id = ?', connectionId);
      expect(row!.at).toBe(ctx.clock.now());
    });

    test('own payments among references (through any key) and processor ids (through the key), each once, the lender’s only', async () => {
      const { lender, connectionId, payment } = await lenderWithPayment('m-own');
      const other = await lenderWithPayment('m-other');
      await t.inTx((tx) => store.keepProcessorPaymentId(tx, payment.id, 'pp-own'));
      const own = { id: payment.id, enrollmentId: payment.enrollmentId, aid: 'm-own', amount: 42500, pid: 'pp-own' };
      const found = await store.ownPaymentsAmong(storeCtx, lender.id, connectionId, [payment.reference, 'DRS-none', payment.reference, other.payment.reference], [
        'pp-own',
        'pp-none',
      ]);
      expect([...found.byReference.entries()]).toEqual([[payment.reference, own]]);
      expect([...found.byProcessorId.entries()]).toEqual([['pp-own', own]]);
      expect(typeof found.byReference.get(payment.reference)!.amount).toBe('number');
      // By reference through any key; by processor id only through the key it went through.
      const viaOther = await store.ownPaymentsAmong(storeCtx, lender.id, other.connectionId, [payment.reference], ['pp-own']);
      expect([...viaOther.byReference.keys()]).toEqual([payment.reference]);
      expect(viaOther.byProcessorId.size).toBe(0);
      // Another lender finds none of it.
      const theirs = await store.ownPaymentsAmong(storeCtx, other.lender.id, connectionId, [payment.reference], ['pp-own']);
      expect([theirs.byReference.size, theirs.byProcessorId.size]).toEqual([0, 0]);
      const none = await store.ownPaymentsAmong(storeCtx, lender.id, connectionId, [], []);
      expect([none.byReference.size, none.byProcessorId.size]).toEqual([0, 0]);
      // An unsent payment's processor id is null, not undefined.
      const unsent = await store.ownPaymentsAmong(storeCtx, other.lender.id, other.connectionId, [other.payment.reference], []);
      expect(unsent.byReference.get(other.payment.reference)!.pid).toBeNull();
    });

    test('a payment by its id: whichever lender made it, and through a key only when sent through it', async () => {
      const { lender, connectionId, payment } = await lenderWithPayment('m-by-id');
      expect(await store.paymentById(storeCtx, payment.id)).toEqual({ lenderId: lender.id, reference: payment.reference });
      expect(await store.paymentById(storeCtx, 'no-such-payment')).toBeNull();
      expect(await store.ownPaymentById(storeCtx, payment.id, connectionId)).toEqual({
        id: payment.id,
        lenderId: lender.id,
        enrollmentId: payment.enrollmentId,
        aid: 'm-by-id',
        amount: 42500,
        reference: payment.reference,
      });
      const other = await lenderWithPayment('m-by-id-other');
      expect(await store.ownPaymentById(storeCtx, payment.id, other.connectionId)).toBeNull();
      expect(await store.ownPaymentById(storeCtx, 'no-such-payment', connectionId)).toBeNull();
    });

    test('the processor id of a payment is kept the first time only; rolled back, not at all', async () => {
      const { payment } = await lenderWithPayment('m-keep');
      const pid = async () => (await ctx.rows<{ pid: string | null }>('SELECT processor_payment_id AS pid FROM payments WHERE id = ?', payment.id))[0]!.pid;
      await expect(
        t.inTx(async (tx) => {
          await store.keepProcessorPaymentId(tx, payment.id, 'pp-lost');
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await pid()).toBeNull();
      await t.inTx((tx) => store.keepProcessorPaymentId(tx, payment.id, 'pp-first'));
      await t.inTx((tx) => store.keepProcessorPaymentId(tx, payment.id, 'pp-second'));
      expect(await pid()).toBe('pp-first');
    });

    test('ingested processor payments: per key, and one ingested before is only ever marked matched', async () => {
      const { connectionId } = await lenderWithPayment('m-ingest');
      const other = await lenderWithPayment('m-ingest-other');
      await t.inTx((tx) =>
        store.saveIngested(tx, connectionId, [
          { id: 'ing-a', matched: false },
          { id: 'ing-b', matched: true },
        ]),
      );
      await t.inTx((tx) => store.saveIngested(tx, connectionId, []));
      const byId = (r: { id: string; matched: boolean }[]) => [...r].sort((x, y) => x.id.localeCompare(y.id));
      expect(byId(await store.ingestedAmong(storeCtx, connectionId, ['ing-b', 'ing-none', 'ing-a']))).toEqual([
        { id: 'ing-a', matched: false },
        { id: 'ing-b', matched: true },
      ]);
      await t.inTx((tx) =>
        store.saveIngested(tx, connectionId, [
          { id: 'ing-a', matched: true },
          { id: 'ing-b', matched: false },
        ]),
      );
      expect(byId(await store.ingestedAmong(storeCtx, connectionId, ['ing-a', 'ing-b']))).toEqual([
        { id: 'ing-a', matched: true },
        { id: 'ing-b', matched: true },
      ]);
      expect(await store.ingestedAmong(storeCtx, other.connectionId, ['ing-a'])).toEqual([]);
      expect(await store.ingestedAmong(storeCtx, connectionId, [])).toEqual([]);
      await expect(
        t.inTx(async (tx) => {
          await store.saveIngested(tx, other.connectionId, [{ id: 'ing-a', matched: true }]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.ingestedAmong(storeCtx, other.connectionId, ['ing-a'])).toEqual([]);
    });

    test('the oldest unsettled payment of a key: sent and in flight, or settled since; null when none', async () => {
      const { connectionId, payment } = await lenderWithPayment('m-oldest');
      // Not sent yet: nothing to reconcile.
      expect(await store.oldestUnsettled(storeCtx, connectionId, 0)).toBeNull();
      const dispatch = t.stores.dispatch;
      const claim = (await dispatch.claimDuePayments(storeCtx, 1000, ctx.clock.now())).find((p) => p.id === payment.id)!;
      const sentAt = ctx.clock.now() - 5_000;
      expect(await t.inTx((tx) => dispatch.claimSend(tx, claim, sentAt))).toBe(true);
      await t.inTx((tx) => dispatch.finishDue(tx, claim, { state: 'done' }));
      const oldest = await store.oldestUnsettled(storeCtx, connectionId, 0);
      expect(oldest).toBe(sentAt);
      expect(typeof oldest).toBe('number');
      const settledAt = ctx.clock.now();
      const move = { id: payment.id, returnCode: null, message: null, now: settledAt, reportHold: '' };
      await t.inTx((tx) => t.stores.outcomes.movePaymentStatus(tx, { ...move, from: 'initiating', status: 'settled', settledAt }));
      expect(await store.oldestUnsettled(storeCtx, connectionId, settledAt)).toBe(sentAt);
      expect(await store.oldestUnsettled(storeCtx, connectionId, settledAt + 1)).toBeNull();
      await t.inTx((tx) => t.stores.outcomes.movePaymentStatus(tx, { ...move, from: 'settled', status: 'late_returned', settledAt: null }));
      expect(await store.oldestUnsettled(storeCtx, connectionId, 0)).toBeNull();
      expect(await store.oldestUnsettled(storeCtx, 'no-such-key', 0)).toBeNull();
    });

    test('a second page of a key waits for the first, then reads what it ingested', async () => {
      const { connectionId } = await lenderWithPayment('m-feed-wait');
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let taken!: () => void;
      const took = new Promise<void>((r) => (taken = r));
      const one = t.inTx(async (tx) => {
        await store.serializeFeed(tx, connectionId);
        taken();
        await held;
        await store.saveIngested(tx, connectionId, [{ id: 'feed-1', matched: true }]);
      });
      await took;
      let secondIn = false;
      const two = t.inTx(async (tx) => {
        await store.serializeFeed(tx, connectionId);
        secondIn = true;
        return store.ingestedAmong(tx, connectionId, ['feed-1']);
      });
      // PostgreSQL: the second waits on the key's row (SQLite: on the one writer, before it begins).
      if (t.engine === 'postgres') for (let i = 0; !(await rowLockWaited()); i++) expect(i).toBeLessThan(10_000);
      expect(secondIn).toBe(false);
      release();
      await one;
      expect(await two).toEqual([{ id: 'feed-1', matched: true }]);
    });
  },
  { env },
);
