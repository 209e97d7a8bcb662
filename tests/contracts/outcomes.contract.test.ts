import { expect, test } from 'bun:test';
import { contract, waiting } from './contract';
import { enrollBorrower } from '../helpers/fixtures';
import { cycle } from '../helpers/collection';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { pollProcessors } from '../../src/modules/collection/poll';
import { newId } from '../../src/platform/ids';
import type { EventRecord } from '../../src/modules/collection/store';
import { waitingForLocks } from '../helpers/upload-hold';

const SETTLE = 60_000;
// Borrowers are read once a month here, so a borrower of an earlier test is never read and decided again.
const env = { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(30 * 86_400_000) };

contract(
  'outcomes',
  (t) => {
    const { ctx, store, storeCtx } = t;
    let n = 0;

    /** A lender with a default sandbox key and one borrower enrolled, read and decided: its payment, not sent. */
    async function decided(aid: string, opts: { noticeDays?: number } = {}) {
      const lender = ctx.newLender();
      const key = await ctx.json('POST', '/v1/payment_connections', {
        key: lender.key,
        body: { api_key: `sbx_outcomes_contract_${++n}_0000`, rail_scope: 'both', is_default: true },
      });
      expect(key.status).toBe(201);
      if (opts.noticeDays) {
        expect((await ctx.json('PATCH', '/v1/collection_policy', { key: lender.key, body: { notice_days: opts.noticeDays } })).status).toBe(200);
      }
      const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower(aid, { collectable_amount: 42500 })] } });
      expect(r.status).toBeLessThan(300);
      await queueDueReads(ctx.rt);
      await processBalances(ctx.rt);
      const [p] = await ctx.rows<{ id: string; enrollmentId: string; reference: string; status: string }>(
        'SELECT id, enrollment_id AS enrollmentId, reference, status FROM payments WHERE lender_id = ?',
        lender.id,
      );
      expect(p).toBeDefined();
      return { lender, connectionId: key.body.id as string, payment: p! };
    }

    /** A transaction of the test's database waiting for another's lock now (PostgreSQL). */
    const rowLockWaited = async () => (await waiting(t)) > 0;

    const event = (lenderId: string, over: Partial<EventRecord>): EventRecord => ({
      id: newId(),
      lenderId,
      enrollmentId: null,
      aid: null,
      paymentId: null,
      connectionId: null,
      reference: 'REF',
      status: 'processing',
      amount: 1000,
      returnCode: null,
      message: null,
      source: 'upload',
      sourceEventId: newId(),
      occurredAt: ctx.clock.now(),
      recordedAt: ctx.clock.now(),
      ...over,
    });

    // First: the only test that sends, so the payments the others leave in the queue are never sent.
    test('a payment sent and settled through the jobs reads back as recorded: seen, latest event, credited, status', async () => {
      const { lender, payment } = await decided('o-settled');
      await cycle(ctx);
      const sentAt = ctx.clock.now();
      ctx.clock.advance(SETTLE);
      await pollProcessors(ctx.rt);
      const evs = await ctx.rows<{ source: 'processor'; sourceEventId: string; status: string }>(
        'SELECT source, source_event_id AS sourceEventId, status FROM payment_events WHERE reference = ? ORDER BY recorded_at, id',
        payment.reference,
      );
      expect(evs.map((e) => e.status)).toEqual(['processing', 'settled']);
      for (const e of evs) expect(await store.eventSeen(storeCtx, lender.id, e.source, e.sourceEventId)).toBe(true);
      // Another lender's, or another source's, is not seen.
      expect(await store.eventSeen(storeCtx, ctx.lender.id, evs[0]!.source, evs[0]!.sourceEventId)).toBe(false);
      expect(await store.eventSeen(storeCtx, lender.id, 'upload', evs[0]!.sourceEventId)).toBe(false);
      const last = await store.lastEventOf(storeCtx, lender.id, payment.reference);
      expect(last).toEqual({ status: 'settled', occurredAt: expect.any(Number) });
      expect(last!.occurredAt).toBeGreaterThanOrEqual(sentAt);
      expect(await store.lastEventOf(storeCtx, lender.id, 'DRS-nobody')).toBeNull();
      expect(await store.creditedFor(storeCtx, lender.id, payment.reference)).toBe(42500);
      expect(await store.creditedFor(storeCtx, ctx.lender.id, payment.reference)).toBe(0);
      expect(await store.paymentStatusOf(storeCtx, payment.id)).toBe('settled');
      expect(await store.paymentStatusOf(storeCtx, 'no-such-payment')).toBeNull();
      // The account the payment was made for: its borrower's bank account.
      const [{ account }] = await ctx.rows<{ account: string }>('SELECT bank_account_id AS account FROM enrollments WHERE id = ?', payment.enrollmentId);
      expect(account).toEqual(expect.any(String));
      expect(await store.paymentAccountOf(storeCtx, payment.id)).toEqual({ rail: 'ach', bankAccountId: account });
      expect(await store.paymentAccountOf(storeCtx, 'no-such-payment')).toBeNull();
    });

    test('recorded events: seen by source event, the latest of each reference by recording time, in the order asked', async () => {
      const lender = ctx.newLender();
      const t0 = ctx.clock.now();
      const a1 = event(lender.id, { reference: 'REF-A', status: 'processing', occurredAt: t0 - 5_000, recordedAt: t0 });
      // Occurred before the first and recorded after it: the latest recorded is the reference's status.
      const a2 = event(lender.id, { reference: 'REF-A', status: 'settled', occurredAt: t0 - 9_000, recordedAt: t0 + 1_000 });
      const b1 = event(lender.id, { reference: 'REF-B', status: 'returned', returnCode: 'R01', source: 'processor', recordedAt: t0 + 2_000 });
      await t.inTx(async (tx) => {
        for (const e of [a1, a2, b1]) await store.recordEvent(tx, e);
      });
      expect(await store.lastEventOf(storeCtx, lender.id, 'REF-A')).toEqual({ status: 'settled', occurredAt: t0 - 9_000 });
      expect(await store.lastEventsAmong(storeCtx, lender.id, ['REF-B', 'REF-missing', 'REF-A'])).toEqual([
        { reference: 'REF-B', status: 'returned', occurredAt: t0 },
        { reference: 'REF-A', status: 'settled', occurredAt: t0 - 9_000 },
      ]);
      expect(await store.lastEventsAmong(storeCtx, lender.id, [])).toEqual([]);
      const seen = await store.seenAmong(storeCtx, lender.id, 'upload', [a2.sourceEventId, b1.sourceEventId, 'never', a1.sourceEventId]);
      expect(seen.sort()).toEqual([a1.sourceEventId, a2.sourceEventId].sort());
      expect(await store.seenAmong(storeCtx, lender.id, 'processor', [b1.sourceEventId])).toEqual([b1.sourceEventId]);
      expect(await store.seenAmong(storeCtx, ctx.lender.id, 'upload', [a1.sourceEventId])).toEqual([]);
      expect(await store.seenAmong(storeCtx, lender.id, 'upload', [])).toEqual([]);
      // Read back whole: numbers as numbers, absent as null.
      const [row] = await ctx.rows('SELECT * FROM payment_events WHERE id = ?', b1.id);
      expect(row).toMatchObject({ reference: 'REF-B', status: 'returned', return_code: 'R01', amount_cents: 1000, message: null, payment_id: null, recorded_at: t0 + 2_000 });
    });

    test('a source event is recorded once; one written in a rolled-back transaction is not there', async () => {
      const lender = ctx.newLender();
      const e = event(lender.id, { reference: 'REF-ONCE' });
      await t.inTx((tx) => store.recordEvent(tx, e));
      await expect(t.inTx((tx) => store.recordEvent(tx, { ...e, id: newId() }))).rejects.toThrow();
      const lost = event(lender.id, { reference: 'REF-LOST' });
      await expect(
        t.inTx(async (tx) => {
          await store.recordEvent(tx, lost);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.eventSeen(storeCtx, lender.id, 'upload', lost.sourceEventId)).toBe(false);
      expect(await store.lastEventOf(storeCtx, lender.id, 'REF-LOST')).toBeNull();
      expect(await store.lastEventsAmong(storeCtx, lender.id, ['REF-ONCE', 'REF-LOST'])).toEqual([{ reference: 'REF-ONCE', status: 'processing', occurredAt: e.occurredAt }]);
    });

    test('the ledger: what is credited for a reference is its credits net of reversals', async () => {
      const { lender, payment } = await decided('o-ledger');
      const credit = event(lender.id, { reference: payment.reference, status: 'settled' });
      const reversal = event(lender.id, { reference: payment.reference, status: 'late_returned', recordedAt: ctx.clock.now() + 1 });
      const entry = { lenderId: lender.id, enrollmentId: payment.enrollmentId, reference: payment.reference, at: ctx.clock.now() };
      await t.inTx(async (tx) => {
        await store.recordEvent(tx, credit);
        await store.recordEvent(tx, reversal);
        await store.postLedgerEntry(tx, { ...entry, kind: 'credit', amount: 42500, eventId: credit.id });
      });
      expect(await store.creditedFor(storeCtx, lender.id, payment.reference)).toBe(42500);
      await expect(
        t.inTx(async (tx) => {
          await store.postLedgerEntry(tx, { ...entry, kind: 'reversal', amount: 42500, eventId: reversal.id });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.creditedFor(storeCtx, lender.id, payment.reference)).toBe(42500);
      await t.inTx((tx) => store.postLedgerEntry(tx, { ...entry, kind: 'reversal', amount: 40000, eventId: reversal.id }));
      const net = await store.creditedFor(storeCtx, lender.id, payment.reference);
      expect(net).toBe(2500);
      expect(typeof net).toBe('number');
      expect(await store.creditedFor(storeCtx, lender.id, 'DRS-other')).toBe(0);
    });

    test('a status move is compare and set; a lender report stands until a status confirms it, held for why', async () => {
      const { payment } = await decided('o-move');
      expect(payment.status).toBe('initiating');
      const at = ctx.clock.now();
      const reportOf = async () =>
        (
          await ctx.rows<Record<string, unknown>>(
            `SELECT status, return_code AS returnCode, settled_at AS settledAt, updated_at AS updatedAt, reported_status AS reportedStatus,
                    reported_return_code AS reportedReturnCode, reported_at AS reportedAt, report_hold AS reportHold
               FROM payments WHERE id = ?`,
            payment.id,
          )
        )[0];
      // Without a report there is nothing to hold.
      await t.inTx((tx) => store.holdPaymentReport(tx, payment.id, 'no report'));
      expect(await reportOf()).toMatchObject({ reportedStatus: null, reportHold: null });
      await t.inTx((tx) => store.notePaymentReport(tx, { id: payment.id, status: 'returned', returnCode: 'R01', at, hold: null, lookUp: false }));
      expect(await reportOf()).toMatchObject({ reportedStatus: 'returned', reportedReturnCode: 'R01', reportedAt: at, reportHold: null });
      await t.inTx((tx) => store.holdPaymentReport(tx, payment.id, 'asking the processor'));
      expect((await reportOf())!.reportHold).toBe('asking the processor');
      const move = { id: payment.id, returnCode: null, message: null, settledAt: null, reportHold: 'not confirmed' };
      // Read in another status: left alone.
      await t.inTx((tx) => store.movePaymentStatus(tx, { ...move, from: 'processing', status: 'settled', now: at + 1 }));
      await t.inTx((tx) => store.movePaymentStatus(tx, { ...move, from: null, status: 'settled', now: at + 1 }));
      expect(await store.paymentStatusOf(storeCtx, payment.id)).toBe('initiating');
      // A status the report does not confirm: the report stands, held for why.
      await t.inTx((tx) => store.movePaymentStatus(tx, { ...move, from: 'initiating', status: 'processing', now: at + 2 }));
      expect(await reportOf()).toEqual({
        status: 'processing',
        returnCode: null,
        settledAt: null,
        updatedAt: at + 2,
        reportedStatus: 'returned',
        reportedReturnCode: 'R01',
        reportedAt: at,
        reportHold: 'not confirmed',
      });
      // The status it reported: cleared.
      await t.inTx((tx) => store.movePaymentStatus(tx, { ...move, from: 'processing', status: 'returned', returnCode: 'R01', now: at + 3 }));
      expect(await reportOf()).toEqual({
        status: 'returned',
        returnCode: 'R01',
        settledAt: null,
        updatedAt: at + 3,
        reportedStatus: null,
        reportedReturnCode: null,
        reportedAt: null,
        reportHold: null,
      });
      // A settled time is kept when a later move names none.
      await t.inTx((tx) => store.movePaymentStatus(tx, { ...move, from: 'returned', status: 'settled', settledAt: at + 4, now: at + 4 }));
      await t.inTx((tx) => store.movePaymentStatus(tx, { ...move, from: 'settled', status: 'late_returned', returnCode: 'R10', now: at + 5 }));
      expect(await reportOf()).toMatchObject({ status: 'late_returned', returnCode: 'R10', settledAt: at + 4, reportHold: null });
      // Rolled back: not moved.
      await expect(
        t.inTx(async (tx) => {
          await store.movePaymentStatus(tx, { ...move, from: 'late_returned', status: 'refunded', now: at + 6 });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.paymentStatusOf(storeCtx, payment.id)).toBe('late_returned');
    });

    test('a report queued for a look-up makes the payment due at once, its lease and attempts reset; a second report replaces it', async () => {
      const { payment } = await decided('o-lookup');
      const at = ctx.clock.now() + 7_000;
      await t.inTx((tx) => store.notePaymentReport(tx, { id: payment.id, status: 'settled', returnCode: null, at: at - 1, hold: 'first', lookUp: false }));
      // Held by a dispatch claim on its third attempt.
      const dispatch = t.stores.dispatch;
      const claimOurs = async (now: number) => (await dispatch.claimDuePayments(storeCtx, 1000, now)).find((p) => p.id === payment.id)!;
      const first = await claimOurs(ctx.clock.now());
      expect(await t.inTx((tx) => dispatch.finishDue(tx, first, { state: 'pending', attempts: 2, nextAttemptAt: ctx.clock.now() }))).toBe(true);
      expect((await claimOurs(ctx.clock.now())).attempts).toBe(2);
      await t.inTx((tx) => store.notePaymentReport(tx, { id: payment.id, status: 'returned', returnCode: 'R02', at, hold: null, lookUp: true }));
      const [row] = await ctx.rows(
        `SELECT state, attempts, next_attempt_at AS nextAttemptAt, lease_until AS leaseUntil, lease_token AS leaseToken,
                reported_status AS reportedStatus, reported_return_code AS code, reported_at AS reportedAt, report_hold AS hold
           FROM payments WHERE id = ?`,
        payment.id,
      );
      expect(row).toEqual({
        state: 'pending',
        attempts: 0,
        nextAttemptAt: at,
        leaseUntil: 0,
        leaseToken: null,
        reportedStatus: 'returned',
        code: 'R02',
        reportedAt: at,
        hold: null,
      });
    });

    test('a scheduled payment is released once, only from scheduled; its send state is read in the transaction', async () => {
      const { payment } = await decided('o-scheduled', { noticeDays: 2 });
      expect(payment.status).toBe('scheduled');
      const now = ctx.clock.now();
      await expect(
        t.inTx(async (tx) => {
          expect(await store.releasePayment(tx, payment.id, now)).toBe(true);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await t.inTx((tx) => store.sendStateHeld(tx, payment.id))).toEqual({ status: 'scheduled', firstAttemptAt: null });
      expect(await t.inTx((tx) => store.releasePayment(tx, payment.id, now))).toBe(true);
      expect(await t.inTx((tx) => store.releasePayment(tx, payment.id, now + 1))).toBe(false);
      expect(await t.inTx((tx) => store.releasePayment(tx, 'no-such-payment', now))).toBe(false);
      const [row] = await ctx.rows('SELECT status, state, next_attempt_at AS due, updated_at AS updatedAt FROM payments WHERE id = ?', payment.id);
      expect(row).toEqual({ status: 'initiating', state: 'pending', due: now, updatedAt: now });
      expect(await t.inTx((tx) => store.sendStateHeld(tx, payment.id))).toEqual({ status: 'initiating', firstAttemptAt: null });
      expect(await t.inTx((tx) => store.sendStateHeld(tx, 'no-such-payment'))).toBeNull();
    });

    test('an observation set aside is kept whole with its reason; none when rolled back', async () => {
      const lender = ctx.newLender();
      const aside = {
        lenderId: lender.id,
        connectionId: null,
        source: 'upload' as const,
        sourceEventId: 'row-7',
        reference: 'DRS-unknown',
        status: 'returned' as const,
        error: 'no such payment',
        at: ctx.clock.now(),
      };
      await t.inTx((tx) => store.setObservationAside(tx, aside));
      await expect(
        t.inTx(async (tx) => {
          await store.setObservationAside(tx, { ...aside, sourceEventId: 'row-8' });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      const rows = await ctx.rows(
        `SELECT lender_id AS lenderId, connection_id AS connectionId, source, source_event_id AS sourceEventId, reference, status, error, at
           FROM payment_observations_set_aside WHERE lender_id = ?`,
        lender.id,
      );
      expect(rows).toEqual([aside]);
    });

    test('references are serialized inside the transaction that records them, any number at once, repeated or none', async () => {
      const lender = ctx.newLender();
      const e = event(lender.id, { reference: 'REF-S2' });
      await t.inTx(async (tx) => {
        await store.serializeReferences(tx, lender.id, []);
        await store.serializeReferences(tx, lender.id, ['REF-S2', 'REF-S1', 'REF-S2']);
        // Taken again by the same transaction: it holds them already.
        await store.serializeReferences(tx, lender.id, ['REF-S1']);
        await store.recordEvent(tx, e);
      });
      expect(await store.lastEventOf(storeCtx, lender.id, 'REF-S2')).toEqual({ status: 'processing', occurredAt: e.occurredAt });
      // Released at the end of the transaction: the next one takes them at once.
      await t.inTx((tx) => store.serializeReferences(tx, lender.id, ['REF-S1', 'REF-S2']));
    });

    test('a second transaction about a reference waits for the first, then reads what it recorded', async () => {
      const lender = ctx.newLender();
      const first = event(lender.id, { reference: 'REF-W', status: 'settled' });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let taken!: () => void;
      const took = new Promise<void>((r) => (taken = r));
      const one = t.inTx(async (tx) => {
        await store.serializeReferences(tx, lender.id, ['REF-W']);
        taken();
        await held;
        await store.recordEvent(tx, first);
      });
      await took;
      let secondIn = false;
      const two = t.inTx(async (tx) => {
        await store.serializeReferences(tx, lender.id, ['REF-OTHER', 'REF-W']);
        secondIn = true;
        return store.lastEventOf(tx, lender.id, 'REF-W');
      });
      // PostgreSQL: the second waits on the reference's lock (SQLite: on the one writer, before it begins).
      if (t.engine === 'postgres') for (let i = 0; (await waitingForLocks(ctx)) !== 1; i++) expect(i).toBeLessThan(10_000);
      expect(secondIn).toBe(false);
      release();
      await one;
      expect(await two).toEqual({ status: 'settled', occurredAt: first.occurredAt });
    });

    test('a payment read held by the recorder: a claim of its send waits for it, then finds the status it left', async () => {
      const { payment } = await decided('o-held');
      const dispatch = t.stores.dispatch;
      const claim = (await dispatch.claimDuePayments(storeCtx, 1000, ctx.clock.now())).find((p) => p.id === payment.id)!;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let read!: (s: unknown) => void;
      const wasRead = new Promise<unknown>((r) => (read = r));
      const now = ctx.clock.now();
      const recorder = t.inTx(async (tx) => {
        read(await store.sendStateHeld(tx, payment.id));
        await held;
        // Never attempted: ended here, so no send may follow.
        const move = { id: payment.id, from: 'initiating' as const, status: 'not_attempted' as const, returnCode: null, message: null, now, settledAt: null };
        await store.movePaymentStatus(tx, { ...move, reportHold: '' });
      });
      expect(await wasRead).toEqual({ status: 'initiating', firstAttemptAt: null });
      let claimed: boolean | undefined;
      const send = t.inTx(async (tx) => (claimed = await dispatch.claimSend(tx, claim, now)));
      // PostgreSQL: the claim waits on the payment's row (SQLite: on the one writer, before it begins).
      if (t.engine === 'postgres') for (let i = 0; !(await rowLockWaited()); i++) expect(i).toBeLessThan(10_000);
      expect(claimed).toBeUndefined();
      release();
      await recorder;
      expect(await send).toBe(false);
      expect(await dispatch.sendStateOf(storeCtx, payment.id)).toEqual({ status: 'not_attempted', firstAttemptAt: null, reportedStatus: null });
      await t.inTx((tx) => dispatch.finishDue(tx, claim, { state: 'done' }));
    });
  },
  { env },
);
