import { expect, test } from 'bun:test';
import { contract, inTurns } from './contract';
import { enrollBorrower } from '../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../helpers/collection';
import { pollProcessors } from '../../src/modules/collection/poll';
import type { NewPayment } from '../../src/modules/collection/store';

const SETTLE = 60_000;
const READ_EVERY = 3_600_000;

contract(
  'decisions',
  (t) => {
    const { ctx, store, storeCtx } = t;

    // A key is one lender's: each lender gets its own.
    let keys = 0;
    async function lenderWithKey(over: Record<string, unknown> = {}) {
      const lender = ctx.newLender();
      const apiKey = `sbx_decisions_contract_00${++keys}`;
      const key = await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: apiKey, rail_scope: 'both', is_default: true } });
      expect(key.status).toBe(201);
      // The payday rule's notices are the lender's own unless a test says otherwise: a covered borrower's debit goes at once.
      expect((await ctx.json('PATCH', '/v1/collection_policy', { key: lender.key, body: { notice_channel: null, ...over } })).status).toBe(200);
      return lender;
    }
    async function enroll(lender: { id: string; key: string }, aid: string, over: Record<string, unknown>) {
      const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower(aid, over)] } });
      expect(r.status).toBeLessThan(300);
      const [row] = await ctx.rows<{ id: string }>('SELECT id FROM enrollments WHERE lender_id = ? AND authorizer_unique_id = ?', lender.id, aid);
      return row!.id;
    }
    const used = async (enrollmentId: string) => (await store.enrollmentToDecide(storeCtx, enrollmentId))!.paymentsUsed;

    let settledId = '';
    let settledLender = '';

    test('a borrower not yet decided on: its row and chain inputs, no payment; an unknown id reads as null', async () => {
      const lender = await lenderWithKey();
      const id = await enroll(lender, 'first', { collectable_amount: 42500, cfpb_covered: true, authorization: { obtained_at: '2026-11-01T10:00:00.000Z' } });
      settledId = id;
      settledLender = lender.id;
      const row = await store.enrollmentToDecide(storeCtx, id);
      expect(row).toMatchObject({
        id,
        lenderId: lender.id,
        authorizerUniqueId: 'first',
        state: 'monitored',
        collectableAmountCents: 42500,
        paymentsUsed: 0,
        rail: 'ach',
      });
      // The row as the query builder reads it: the flag a boolean, times numbers.
      expect(row!.cfpbCovered).toBe(true);
      expect(row!.authorizationAt).toBe(Date.parse('2026-11-01T10:00:00.000Z'));
      // The chain's inputs as raw SQL reads them: the flag as 1.
      expect(await store.chainInputsOf(storeCtx, id)).toEqual({
        lenderId: lender.id,
        state: 'monitored',
        blockedReason: null,
        authorizationAt: Date.parse('2026-11-01T10:00:00.000Z'),
        cfpbCovered: 1,
        collectableAmountCents: 42500,
        revokedAt: null,
        reauthorizedAt: null,
      });
      expect(await store.paymentHistory(storeCtx, id)).toEqual([]);
      expect(await store.scheduledPaymentOf(storeCtx, id)).toBeNull();
      expect(await store.paymentInFlight(storeCtx, id)).toBe(false);
      expect(await store.enrollmentToDecide(storeCtx, 'no-such-borrower')).toBeNull();
      expect(await store.chainInputsOf(storeCtx, 'no-such-borrower')).toBeNull();
      expect(await store.paymentHistory(storeCtx, 'no-such-borrower')).toEqual([]);
    });

    test('a read decides a payment: created, counted as a presentment, in flight until it settles', async () => {
      const createdAt = ctx.clock.now();
      await cycle(ctx);
      const [p] = await store.paymentHistory(storeCtx, settledId);
      expect(p).toEqual({
        id: expect.any(String),
        status: 'processing',
        returnCode: null,
        amountCents: 42500,
        attempt: 1,
        reinitiationOf: null,
        createdAt,
        updatedAt: expect.any(Number),
        firstAttemptAt: createdAt,
        reportedReturnCode: null,
        reportedAt: null,
        debitOn: null,
        noticeClass: 'first',
      });
      expect(await store.paymentInFlight(storeCtx, settledId)).toBe(true);
      expect(await used(settledId)).toBe(1);
      await dispatchAndSettle(ctx, SETTLE);
      expect((await store.paymentHistory(storeCtx, settledId)).map((x) => x.status)).toEqual(['settled']);
      expect(await store.paymentInFlight(storeCtx, settledId)).toBe(false);
      expect((await store.chainInputsOf(storeCtx, settledId))!.state).toBe('collected');
    });

    test('returned for funds: reinitiated twice, the history oldest first, each naming the one it retries', async () => {
      const lender = await lenderWithKey();
      const id = await enroll(lender, 'again', { collectable_amount: 10091 });
      for (let round = 0; round < 4; round++) {
        await cycle(ctx);
        ctx.clock.advance(SETTLE);
        await pollProcessors(ctx.rt);
        ctx.clock.advance(READ_EVERY);
      }
      const history = await store.paymentHistory(storeCtx, id);
      expect(history.map((p) => [p.status, p.returnCode, p.attempt])).toEqual([
        ['returned', 'R01', 1],
        ['returned', 'R01', 2],
        ['returned', 'R01', 3],
      ]);
      expect(history[0]!.reinitiationOf).toBeNull();
      expect(history[1]!.reinitiationOf).toBe(history[0]!.id);
      expect(history[2]!.reinitiationOf).toBe(history[0]!.id);
      const created = history.map((p) => p.createdAt);
      expect(created).toEqual([...created].sort((a, b) => a - b));
      expect(new Set(created).size).toBe(3);
      expect(await used(id)).toBe(3);
      expect(await store.paymentInFlight(storeCtx, id)).toBe(false);
    });

    test('a notice: the scheduled payment is read back whole and is not in flight; a removal voids it and gives its slot back', async () => {
      const lender = await lenderWithKey({ notice_days: 2 });
      const id = await enroll(lender, 'noticed', { collectable_amount: 1000 });
      const at = ctx.clock.now();
      await cycle(ctx);
      const scheduled = await store.scheduledPaymentOf(storeCtx, id);
      expect(scheduled).toEqual({
        id: expect.any(String),
        lenderId: lender.id,
        enrollmentId: id,
        aid: 'noticed',
        reference: expect.stringMatching(/^DRS-noticed-/),
        amountCents: 1000,
        debitOn: expect.any(Number),
        noticeNeeds: null,
        noticeDueFrom: null,
        noticeDueBy: null,
        noticeSentAt: null,
      });
      expect(scheduled!.debitOn).toBeGreaterThan(at);
      // Read for several borrowers at once, the same; one with none left out.
      const other = await enroll(lender, 'not-noticed', { collectable_amount: 9_000_000 });
      const many = await store.scheduledPaymentsOf(storeCtx, [other, id, 'no-such-enrollment']);
      expect([...many.entries()]).toEqual([[id, scheduled!]]);
      expect((await store.scheduledPaymentsOf(storeCtx, [])).size).toBe(0);
      expect(await store.paymentInFlight(storeCtx, id)).toBe(false);
      expect(await used(id)).toBe(1);
      const removed = await ctx.json('DELETE', '/v1/payment_enrollments', { key: lender.key, body: { authorizer_unique_ids: ['noticed'] } });
      expect(removed.status).toBe(200);
      expect(await store.scheduledPaymentOf(storeCtx, id)).toBeNull();
      expect((await store.paymentHistory(storeCtx, id)).map((p) => [p.id, p.status])).toEqual([[scheduled!.id, 'voided']]);
      expect(await used(id)).toBe(0);
    });

    test('a payment notice: a covered borrower’s first debit is scheduled with its window; read back whole; confirmed once, only while scheduled', async () => {
      const lender = await lenderWithKey({ cfpb_covered: true, notice_channel: 'electronic' });
      const id = await enroll(lender, 'told', { collectable_amount: 1000 });
      await cycle(ctx);
      const scheduled = (await store.scheduledPaymentOf(storeCtx, id))!;
      expect(scheduled).toMatchObject({ noticeNeeds: 'cfpb', noticeSentAt: null, noticeDueFrom: expect.any(Number), noticeDueBy: expect.any(Number) });
      expect(await store.paymentNoticeOf(storeCtx, 'another-lender', scheduled.id)).toBeNull();
      const n = (await store.paymentNoticeOf(storeCtx, lender.id, scheduled.id))!;
      expect(n).toEqual({
        id: scheduled.id,
        enrollmentId: id,
        aid: 'told',
        reference: scheduled.reference,
        status: 'scheduled',
        amountCents: 1000,
        debitOn: scheduled.debitOn,
        noticeClass: 'first',
        noticeNeeds: 'cfpb',
        noticeChannel: 'electronic',
        noticeDueFrom: scheduled.noticeDueFrom,
        noticeDueBy: scheduled.noticeDueBy,
        noticeSentAt: null,
        noticeSentChannel: null,
        noticeEvidenceRef: null,
        createdAt: expect.any(Number),
      });
      const v = { id: scheduled.id, sentAt: n.createdAt + 1, channel: 'mail' as const, ref: 'ev-1', dueFrom: n.createdAt, dueBy: n.noticeDueBy! - 1, now: n.createdAt + 2 };
      await expect(
        t.inTx(async (tx) => {
          expect(await store.confirmNotice(tx, v)).toBe(true);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await store.paymentNoticeOf(storeCtx, lender.id, scheduled.id))!.noticeSentAt).toBeNull();
      expect(await t.inTx((tx) => store.confirmNotice(tx, v))).toBe(true);
      expect(await store.paymentNoticeOf(storeCtx, lender.id, scheduled.id)).toMatchObject({ noticeSentAt: v.sentAt, noticeSentChannel: 'mail', noticeEvidenceRef: 'ev-1', noticeDueFrom: v.dueFrom, noticeDueBy: v.dueBy });
      // Once: a second changes nothing.
      expect(await t.inTx((tx) => store.confirmNotice(tx, { ...v, sentAt: v.sentAt + 5, ref: 'ev-2' }))).toBe(false);
      expect((await store.paymentNoticeOf(storeCtx, lender.id, scheduled.id))!.noticeEvidenceRef).toBe('ev-1');
    });

    test('decisionInputsOf: for several borrowers at once, what the one-borrower reads answer for each; an unknown one left out', async () => {
      const lender = await lenderWithKey({ notice_days: 2 });
      const waiting = await enroll(lender, 'many-a', { collectable_amount: 1000 });
      const idle = await enroll(lender, 'many-b', { collectable_amount: 2_000_000 });
      await cycle(ctx);
      const ids = [waiting, idle, settledId, 'no-such-borrower'];
      const many = await store.decisionInputsOf(storeCtx, ids);
      expect([...many.keys()].sort()).toEqual([waiting, idle, settledId].sort());
      for (const id of [waiting, idle, settledId]) {
        expect(many.get(id)).toEqual({
          enrollment: (await store.enrollmentToDecide(storeCtx, id))!,
          history: await store.paymentHistory(storeCtx, id),
          scheduled: await store.scheduledPaymentOf(storeCtx, id),
        });
      }
      // Something to compare: one waits on its notice, one was collected, one has nothing.
      expect(many.get(waiting)!.scheduled).not.toBeNull();
      expect(many.get(settledId)!.history.map((p) => p.status)).toEqual(['settled']);
      expect(many.get(idle)!.history).toEqual([]);
      expect((await store.decisionInputsOf(storeCtx, [])).size).toBe(0);
    });

    test('the bank account beside the borrower: its standing in enrollmentToDecide, decisionInputsOf and accountStandingOf; a payment made for it', async () => {
      const lender = await lenderWithKey();
      const ach = await enroll(lender, 'acct-ach', { collectable_amount: 42500 });
      const card = await enroll(lender, 'acct-card', { collectable_amount: 42500, charge_instrument: { processor_token: 'sbxpm_decisions', card_last4: '4242' } });
      const row = (await store.enrollmentToDecide(storeCtx, ach))!;
      expect(row.bankAccountId).toEqual(expect.any(String));
      expect(row.account).toMatchObject({ state: 'ok', lastReturnAt: null, pendingChangeId: null });
      expect(await store.accountStandingOf(storeCtx, ach)).toMatchObject({ state: 'ok', lastReturnAt: null, pendingChangeId: null });
      expect((await store.enrollmentToDecide(storeCtx, card))!).toMatchObject({ bankAccountId: null, account: null });
      expect(await store.accountStandingOf(storeCtx, card)).toBeNull();
      expect(await store.accountStandingOf(storeCtx, 'no-such-borrower')).toBeNull();
      await t.inTx((tx) => t.stores.bankAccounts.recordReturn(tx, { id: row.bankAccountId!, state: 'unauthorized', code: 'R10', reference: 'DRS-x', at: 5_000 }));
      expect(await store.accountStandingOf(storeCtx, ach)).toMatchObject({ state: 'unauthorized', lastReturnAt: 5_000, pendingChangeId: null });
      expect((await store.enrollmentToDecide(storeCtx, ach))!.account).toMatchObject({ state: 'unauthorized', lastReturnAt: 5_000, pendingChangeId: null });
      const many = await store.decisionInputsOf(storeCtx, [ach, card]);
      expect(many.get(ach)!.enrollment.account).toMatchObject({ state: 'unauthorized', lastReturnAt: 5_000, pendingChangeId: null });
      expect(many.get(card)!.enrollment.account).toBeNull();
      // A payment is made with the account it is for (a card payment with none).
      const [key] = await ctx.rows<{ id: string }>('SELECT id FROM payment_connections WHERE lender_id = ?', lender.id);
      const now = ctx.clock.now();
      const base = { lenderId: lender.id, connectionId: key!.id, amountCents: 100, status: 'scheduled' as const, attempt: 1, reinitiationOf: null, debitOn: now, state: 'done' as const, nextAttemptAt: now, createdAt: now, updatedAt: now };
      await t.inTx(async (tx) => {
        await store.createPayment(tx, { ...base, id: 'acct-pay-1', enrollmentId: ach, authorizerUniqueId: 'acct-ach', rail: 'ach', reference: 'DRS-acct-ach-1', bankAccountId: row.bankAccountId });
        await store.createPayment(tx, { ...base, id: 'acct-pay-2', enrollmentId: card, authorizerUniqueId: 'acct-card', rail: 'card', reference: 'DRS-acct-card-1', bankAccountId: null });
      });
      expect(await ctx.rows('SELECT id, bank_account_id AS account FROM payments WHERE id IN (?, ?) ORDER BY id', 'acct-pay-1', 'acct-pay-2')).toEqual([
        { id: 'acct-pay-1', account: row.bankAccountId },
        { id: 'acct-pay-2', account: null },
      ]);
    });

    test('presentments: set as given, given back one at a time and never below 0', async () => {
      const now = ctx.clock.now();
      await t.inTx(async (tx) => {
        await store.serializeBorrowers(tx, [settledId]);
        await t.stores.enrollments.setPaymentsUsed(tx, settledId, 2, now);
      });
      expect(await used(settledId)).toBe(2);
      for (const expected of [1, 0, 0]) {
        await t.inTx((tx) => t.stores.enrollments.giveBackPresentment(tx, settledId, now));
        expect(await used(settledId)).toBe(expected);
      }
      // Written in a transaction that rolls back: not there.
      await expect(
        t.inTx(async (tx) => {
          await t.stores.enrollments.setPaymentsUsed(tx, settledId, 3, now);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await used(settledId)).toBe(0);
    });

    test('serializeBorrowers: a second transaction about one of the borrowers waits for the first, then reads what it committed', async () => {
      const now = ctx.clock.now();
      const otherId = await enroll(await lenderWithKey(), 'serialized-other', { collectable_amount: 1000 });
      for (const id of [settledId, otherId]) {
        const seen = await inTurns(
          t,
          (tx) => store.serializeBorrowers(tx, [settledId, otherId]),
          (tx) => t.stores.enrollments.setPaymentsUsed(tx, id, 2, now),
          async (tx) => (await store.enrollmentToDecide(tx, id))!.paymentsUsed,
          // The second takes only the borrower it reads: each of the list was locked.
          (tx) => store.serializeBorrowers(tx, [id]),
        );
        expect(seen).toBe(2);
        await t.inTx((tx) => t.stores.enrollments.setPaymentsUsed(tx, id, 0, now));
      }
      // An empty list takes nothing.
      await t.inTx((tx) => store.serializeBorrowers(tx, []));
    });

    test('createPayment: seen in its transaction, gone when it rolls back; a second row of the same id is refused', async () => {
      const [key] = await ctx.rows<{ id: string }>('SELECT id FROM payment_connections WHERE lender_id = ?', settledLender);
      const now = ctx.clock.now();
      const payment: NewPayment = {
        id: 'contract-payment-1',
        lenderId: settledLender,
        enrollmentId: settledId,
        authorizerUniqueId: 'first',
        connectionId: key!.id,
        rail: 'ach',
        amountCents: 777,
        reference: 'DRS-first-contract-payment-1',
        status: 'initiating',
        attempt: 1,
        reinitiationOf: null,
        debitOn: null,
        state: 'pending',
        nextAttemptAt: now,
        createdAt: now,
        updatedAt: now,
      };
      await expect(
        t.inTx(async (tx) => {
          await store.serializeBorrowers(tx, [settledId]);
          await store.createPayment(tx, payment);
          const history = await store.paymentHistory(tx, settledId);
          expect(history.map((p) => [p.id, p.status, p.amountCents, p.firstAttemptAt])).toEqual([
            [history[0]!.id, 'settled', 42500, history[0]!.firstAttemptAt],
            ['contract-payment-1', 'initiating', 777, null],
          ]);
          expect(await store.paymentInFlight(tx, settledId)).toBe(true);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await store.paymentHistory(storeCtx, settledId)).map((p) => p.id)).not.toContain('contract-payment-1');
      expect(await store.paymentInFlight(storeCtx, settledId)).toBe(false);
      await expect(
        t.inTx(async (tx) => {
          await store.createPayment(tx, payment);
          await store.createPayment(tx, { ...payment, reference: 'DRS-first-contract-payment-2' });
        }),
      ).rejects.toThrow();
      expect(await ctx.rows('SELECT id FROM payments WHERE id = ?', 'contract-payment-1')).toEqual([]);
    });
  },
  { env: { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ_EVERY) } },
);
