import { expect, test } from 'bun:test';
import { contract, inTurns } from './contract';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { cycle } from '../helpers/collection';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { readDueHistories } from '../../src/modules/pay-cycles/history';
import type { TxCtx } from '../../src/platform/store';

const DAY = 86_400_000;

// Monday 16 November 2026, 09:00 UTC: the sandbox's pay-pattern account 9997 2 01500 is paid $1,500 every other
// Friday, 6 and 20 November.
contract(
  'payCycles',
  (t) => {
    const { ctx, store, storeCtx } = t;

    /** A borrower enrolled through the API, owed more than any balance holds so it stays monitored; its enrollment id. */
    async function enroll(aid: string, over: Record<string, unknown> = {}): Promise<string> {
      const r = await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower(aid, { collectable_amount: 9_000_000, ...over })] } });
      expect(r.status).toBe(207);
      const [row] = await ctx.rows<{ id: string }>('SELECT id FROM enrollments WHERE lender_id = ? AND authorizer_unique_id = ?', ctx.lender.id, aid);
      return row!.id;
    }

    /** One borrower's cadence state, as cadenceStatesOf gives it. */
    const cadenceOf = async (c: Parameters<typeof store.cadenceStatesOf>[0], id: string) => (await store.cadenceStatesOf(c, [id])).get(id);

    /** The reading of an enrollment as stored. */
    const reading = async (id: string) =>
      (
        await ctx.rows<{ wantedAt: number | null; dueAt: number | null; attempts: number; outcome: string | null; fetchedAt: number | null }>(
          'SELECT wanted_at AS "wantedAt", due_at AS "dueAt", attempts, outcome, fetched_at AS "fetchedAt" FROM pay_history WHERE enrollment_id = ?',
          id,
        )
      )[0];

    /** Two transactions that each begin with `take`: the second is seen waiting, and goes on once the first has ended. */
    const secondWaitsForFirst = (take: (tx: TxCtx) => Promise<unknown>) =>
      inTurns(t, async (tx) => void (await take(tx)), async () => undefined, async () => undefined);

    test('an enrollment wants a reading, due at once; dueHistories gives what reading the account needs', async () => {
      const id = await enroll('want-1');
      expect(await reading(id)).toEqual({ wantedAt: ctx.clock.now(), dueAt: ctx.clock.now(), attempts: 0, outcome: null, fetchedAt: null });
      const due = (await store.dueHistories(storeCtx, ctx.clock.now(), 100)).find((d) => d.enrollmentId === id);
      expect(due).toEqual({
        enrollmentId: id,
        lenderId: ctx.lender.id,
        wantedAt: ctx.clock.now(),
        attempts: 0,
        aid: 'want-1',
        routing: '110000000',
        sealed: expect.any(String),
      });
      // Not before it is due.
      expect((await store.dueHistories(storeCtx, ctx.clock.now() - 1, 100)).map((d) => d.enrollmentId)).not.toContain(id);
      expect(await store.dueHistories(storeCtx, ctx.clock.now(), 0)).toEqual([]);
      await t.inTx((tx) => store.endHistory(tx, id, ctx.clock.now(), 'no_transactions'));
    });

    test('wantHistory: due at once, its failures forgotten, for each borrower named; a rolled-back want leaves none', async () => {
      const a = await enroll('want-2');
      const b = await enroll('want-3');
      await t.inTx((tx) => store.setHistoryDue(tx, a, ctx.clock.now() + DAY, 3));
      expect(await reading(a)).toMatchObject({ dueAt: ctx.clock.now() + DAY, attempts: 3 });
      ctx.clock.advance(60_000);
      await t.inTx((tx) => store.wantHistory(tx, ctx.lender.id, [a, b], ctx.clock.now()));
      for (const id of [a, b]) expect(await reading(id)).toMatchObject({ wantedAt: ctx.clock.now(), dueAt: ctx.clock.now(), attempts: 0 });
      await t.inTx((tx) => store.wantHistory(tx, ctx.lender.id, [], ctx.clock.now() + 5));
      expect(await reading(a)).toMatchObject({ wantedAt: ctx.clock.now() });

      // A borrower that never wanted one (its reading erased): created by the want, unless it rolls back.
      await t.inTx((tx) => store.eraseHistory(tx, [b]));
      expect(await reading(b)).toBeUndefined();
      await expect(
        t.inTx(async (tx) => {
          await store.wantHistory(tx, ctx.lender.id, [b], ctx.clock.now());
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await reading(b)).toBeUndefined();
      await t.inTx((tx) => store.wantHistory(tx, ctx.lender.id, [b], ctx.clock.now()));
      expect(await reading(b)).toMatchObject({ wantedAt: ctx.clock.now(), dueAt: ctx.clock.now(), attempts: 0, outcome: null });
      // Done with: nothing left due for the tests after.
      for (const id of [a, b]) await t.inTx((tx) => store.endHistory(tx, id, ctx.clock.now(), 'no_transactions'));
    });

    test('dueHistories and claimDueHistories: oldest due first, at most `limit`; a claim is due again at `until`', async () => {
      // Due long before anything else in the database: these are the oldest.
      const ids = [await enroll('due-1'), await enroll('due-2'), await enroll('due-3')];
      await t.inTx(async (tx) => {
        await store.setHistoryDue(tx, ids[0]!, 3_000, 0);
        await store.setHistoryDue(tx, ids[1]!, 1_000, 2);
        await store.setHistoryDue(tx, ids[2]!, 2_000, 1);
      });
      const due = await store.dueHistories(storeCtx, 2_500, 10);
      expect(due.map((d) => [d.enrollmentId, d.attempts])).toEqual([
        [ids[1], 2],
        [ids[2], 1],
      ]);
      expect(typeof due[0]!.wantedAt).toBe('number');
      expect((await store.dueHistories(storeCtx, 10_000, 2)).map((d) => d.enrollmentId)).toEqual([ids[1], ids[2]]);

      // A rolled-back claim leaves them due.
      await expect(
        t.inTx(async (tx) => {
          expect((await store.claimDueHistories(tx, 10_000, 2, 50_000)).map((d) => d.enrollmentId)).toEqual([ids[1], ids[2]]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await store.dueHistories(storeCtx, 10_000, 10)).map((d) => d.enrollmentId)).toEqual([ids[1], ids[2], ids[0]]);

      const claimed = await t.inTx((tx) => store.claimDueHistories(tx, 10_000, 2, 50_000));
      expect(claimed).toEqual([
        { enrollmentId: ids[1], lenderId: ctx.lender.id, wantedAt: ctx.clock.now(), attempts: 2, aid: 'due-2', routing: '110000000', sealed: expect.any(String) },
        { enrollmentId: ids[2], lenderId: ctx.lender.id, wantedAt: ctx.clock.now(), attempts: 1, aid: 'due-3', routing: '110000000', sealed: expect.any(String) },
      ]);
      // Claimed: no longer due until `until`, their attempts kept; a second claim takes the next.
      expect(await reading(ids[1]!)).toMatchObject({ dueAt: 50_000, attempts: 2 });
      expect((await t.inTx((tx) => store.claimDueHistories(tx, 10_000, 5, 60_000))).map((d) => d.enrollmentId)).toEqual([ids[0]]);
      expect(await t.inTx((tx) => store.claimDueHistories(tx, 10_000, 5, 60_000))).toEqual([]);
      // Both due at one time: the order between them is not promised.
      expect((await store.dueHistories(storeCtx, 55_000, 10)).map((d) => d.enrollmentId).sort()).toEqual([ids[1]!, ids[2]!].sort());
      for (const id of ids) await t.inTx((tx) => store.endHistory(tx, id, ctx.clock.now(), 'no_transactions'));
      expect(await store.dueHistories(storeCtx, 100_000, 10)).toEqual([]);
    });

    test('endHistory: nothing more due when the reading ended is the one wanted; one wanted again meanwhile stays due', async () => {
      const id = await enroll('end-1');
      const wantedAt = ctx.clock.now();
      await t.inTx((tx) => store.setHistoryDue(tx, id, wantedAt + 60_000, 2));
      await t.inTx((tx) => store.endHistory(tx, id, wantedAt, 'gave_up'));
      expect(await reading(id)).toEqual({ wantedAt: null, dueAt: null, attempts: 0, outcome: 'gave_up', fetchedAt: null });

      // Wanted again while a reading ran: that reading's end (with the old want) leaves the new one due.
      ctx.clock.advance(1_000);
      await t.inTx((tx) => store.wantHistory(tx, ctx.lender.id, [id], ctx.clock.now()));
      await t.inTx((tx) => store.setHistoryDue(tx, id, ctx.clock.now() + 10, 1));
      await t.inTx((tx) => store.endHistory(tx, id, wantedAt, 'credits'));
      expect(await reading(id)).toEqual({ wantedAt: ctx.clock.now(), dueAt: ctx.clock.now() + 10, attempts: 0, outcome: 'credits', fetchedAt: null });

      // A reading with no want recorded ends one with none: null matches null.
      await t.inTx((tx) => store.endHistory(tx, id, ctx.clock.now(), 'credits'));
      await t.inTx((tx) => store.setHistoryDue(tx, id, ctx.clock.now(), 4));
      await t.inTx((tx) => store.endHistory(tx, id, null, 'relink_required'));
      expect(await reading(id)).toMatchObject({ wantedAt: null, dueAt: null, attempts: 0, outcome: 'relink_required' });
    });

    test('storeDeposits replaces the last reading’s; historyOf gives them by day with the day covered; a rollback keeps the old', async () => {
      const id = await enroll('dep-1');
      expect(await store.historyOf(storeCtx, id)).toBeNull(); // wanted, never read
      expect(await store.historyOf(storeCtx, 'no-such-enrollment')).toBeNull();
      const day0 = Date.parse('2026-10-02T00:00:00Z');
      await t.inTx((tx) =>
        store.storeDeposits(tx, id, [{ at: day0 + 14 * DAY, amountCents: 150_000 }, { at: day0, amountCents: 149_999 }, { at: day0 + 28 * DAY, amountCents: 150_001 }], ctx.clock.now(), day0 + 40 * DAY),
      );
      expect(await store.historyOf(storeCtx, id)).toEqual({
        coveredTo: day0 + 40 * DAY,
        deposits: [
          { at: day0, amountCents: 149_999 },
          { at: day0 + 14 * DAY, amountCents: 150_000 },
          { at: day0 + 28 * DAY, amountCents: 150_001 },
        ],
      });
      expect((await reading(id))!.fetchedAt).toBe(ctx.clock.now());

      await expect(
        t.inTx(async (tx) => {
          await store.storeDeposits(tx, id, [], ctx.clock.now() + 1, day0);
          expect(await store.historyOf(tx, id)).toEqual({ coveredTo: day0, deposits: [] });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await store.historyOf(storeCtx, id))!.deposits).toHaveLength(3);

      // In place of the last: none of the old days are kept.
      ctx.clock.advance(1_000);
      await t.inTx((tx) => store.storeDeposits(tx, id, [{ at: day0 + 7 * DAY, amountCents: 64_000 }], ctx.clock.now(), day0 + 41 * DAY));
      expect(await store.historyOf(storeCtx, id)).toEqual({ coveredTo: day0 + 41 * DAY, deposits: [{ at: day0 + 7 * DAY, amountCents: 64_000 }] });
      await t.inTx((tx) => store.storeDeposits(tx, id, [], ctx.clock.now(), day0 + 42 * DAY));
      expect(await store.historyOf(storeCtx, id)).toEqual({ coveredTo: day0 + 42 * DAY, deposits: [] });
      const wantedAt = (await reading(id))!.wantedAt;
      await t.inTx((tx) => store.endHistory(tx, id, wantedAt, 'credits'));
    });

    test('eraseHistory removes these borrowers’ deposits and readings only; erasure through the API does the same', async () => {
      const [a, b, c] = [await enroll('erase-1'), await enroll('erase-2'), await enroll('erase-3')];
      await t.inTx(async (tx) => {
        for (const id of [a, b, c]) await store.storeDeposits(tx, id, [{ at: 0, amountCents: 100 }], ctx.clock.now(), DAY);
      });
      await t.inTx((tx) => store.eraseHistory(tx, [a, b]));
      expect(await store.historyOf(storeCtx, a)).toBeNull();
      expect(await store.historyOf(storeCtx, b)).toBeNull();
      expect(await reading(a)).toBeUndefined();
      expect(await ctx.rows('SELECT day FROM pay_history_deposits WHERE enrollment_id IN (?, ?)', a, b)).toEqual([]);
      expect(await store.historyOf(storeCtx, c)).toEqual({ coveredTo: DAY, deposits: [{ at: 0, amountCents: 100 }] });
      await t.inTx((tx) => store.eraseHistory(tx, []));
      expect(await store.historyOf(storeCtx, c)).not.toBeNull();
      const erased = await ctx.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['erase-3'] } });
      expect(erased.status).toBe(200);
      expect(await store.historyOf(storeCtx, c)).toBeNull();
      expect(await reading(c)).toBeUndefined();
    });

    test('serializeReading: two recordings of one borrower’s reading run one after the other', async () => {
      const id = await enroll('serial-1');
      await secondWaitsForFirst((tx) => store.serializeReading(tx, id));
      // It writes nothing itself.
      expect(await reading(id)).toMatchObject({ dueAt: ctx.clock.now(), attempts: 0, outcome: null });
      await t.inTx((tx) => store.endHistory(tx, id, ctx.clock.now(), 'no_transactions'));
    });

    test('a reading through the job: claimed, the deposits stored, the reading ended and the cycle learned from them', async () => {
      const id = await enroll('pattern-1', { account_number: '9997201500' });
      expect((await readDueHistories(ctx.rt)).read).toBe(1);
      expect(await reading(id)).toMatchObject({ wantedAt: null, dueAt: null, outcome: 'credits', fetchedAt: ctx.clock.now() });
      const history = (await store.historyOf(storeCtx, id))!;
      const today = Date.parse('2026-11-16T00:00:00Z');
      expect(history.coveredTo).toBe(today);
      expect(history.deposits.length).toBeGreaterThanOrEqual(6);
      expect(history.deposits.every((d) => d.amountCents === 150_000 && typeof d.at === 'number')).toBe(true);
      expect(history.deposits.map((d) => d.at)).toEqual([...history.deposits.map((d) => d.at)].sort((x, y) => x - y));
      expect(history.deposits.at(-1)!.at).toBe(Date.parse('2026-11-06T00:00:00Z'));
      // Learned from the transactions (no read yet, so no payday read is set).
      expect(await cadenceOf(storeCtx, id)).toMatchObject({ frequency: 'biweekly', nextPayday: Date.parse('2026-11-20T00:00:00Z'), learnedAt: ctx.clock.now() });
      const view = (await ctx.json('GET', '/v1/payment_enrollments/pattern-1')).body;
      expect(view.pay_cycle).toMatchObject({ frequency: 'biweekly', next_payday: '2026-11-20', source: 'transactions' });
    });

    test('balanceHistory: the lender’s reads of the borrower since a time, oldest first, failed reads left out', async () => {
      const lender = ctx.newLender();
      const start = ctx.clock.now();
      const accounts = ['0000020000', '99993200', '0000010000', '0000035000'];
      const times: number[] = [];
      for (const account of accounts) {
        const r = await ctx.json('POST', '/v1/balance_requests', { key: lender.key, body: { authorizers: [bankAuthorizer('hist-1', { account_number: account })] } });
        expect(r.status).toBe(201);
        while ((await ctx.json('GET', `/v1/balance_requests/${r.body.batch_id}`, { key: lender.key })).body.status !== 'completed') await processBalances(ctx.rt);
        times.push(ctx.clock.now());
        ctx.clock.advance(DAY);
      }
      expect(await store.balanceHistory(storeCtx, lender.id, 'hist-1', start)).toEqual([
        { at: times[0], balanceCents: 20_000 },
        { at: times[2], balanceCents: 10_000 },
        { at: times[3], balanceCents: 35_000 },
      ]);
      expect(await store.balanceHistory(storeCtx, lender.id, 'hist-1', times[1]! + 1)).toEqual([
        { at: times[2], balanceCents: 10_000 },
        { at: times[3], balanceCents: 35_000 },
      ]);
      expect(await store.balanceHistory(storeCtx, ctx.lender.id, 'hist-1', start)).toEqual([]);
      expect(await store.balanceHistory(storeCtx, lender.id, 'hist-2', start)).toEqual([]);
    });

    test('cadenceStatesOf after a monitoring read; lastReadOf the read’s time; setNextReadEach and readNoLaterThan only while monitored', async () => {
      const id = await enroll('cad-1', { account_number: '0000010000' });
      expect(await store.lastReadOf(storeCtx, id)).toBeNull();
      expect(await store.lastReadOf(storeCtx, 'no-such-enrollment')).toBeNull();
      expect(await cadenceOf(storeCtx, 'no-such-enrollment')).toBeUndefined();
      await cycle(ctx);
      const readAt = ctx.clock.now();
      expect(await store.lastReadOf(storeCtx, id)).toBe(readAt);
      const state = (await cadenceOf(storeCtx, id))!;
      expect(state).toMatchObject({ lenderId: ctx.lender.id, state: 'monitored', blockedReason: null, learnedAt: readAt, altFrequency: null, altNextPayday: null });
      expect(typeof state.nextReadAt).toBe('number');
      expect(state.nextReadAt!).toBeGreaterThan(readAt);
      // One read is no history: a cycle learned as unknown, with no payday.
      expect(state.frequency).toBe('unknown');
      expect(state.nextPayday).toBeNull();
      expect(typeof state.confidence).toBe('number');

      const at = readAt + 3 * 3_600_000;
      await t.inTx((tx) => t.stores.enrollments.setNextReadEach(tx, [{ enrollmentId: id, at: at }]));
      expect((await cadenceOf(storeCtx, id))!.nextReadAt).toBe(at);
      await expect(
        t.inTx(async (tx) => {
          await t.stores.enrollments.setNextReadEach(tx, [{ enrollmentId: id, at: at + 1 }]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await cadenceOf(storeCtx, id))!.nextReadAt).toBe(at);
      // Brought forward, never put back.
      await t.inTx((tx) => t.stores.enrollments.readNoLaterThan(tx, id, at + 60_000));
      expect((await cadenceOf(storeCtx, id))!.nextReadAt).toBe(at);
      await t.inTx((tx) => t.stores.enrollments.readNoLaterThan(tx, id, at - 60_000));
      expect((await cadenceOf(storeCtx, id))!.nextReadAt).toBe(at - 60_000);
      await t.inTx((tx) => t.stores.enrollments.setNextReadEach(tx, [{ enrollmentId: id, at: at }]));

      // Removed: no longer monitored, so it keeps no next read whatever is set.
      expect((await ctx.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['cad-1'] } })).status).toBe(200);
      const removed = (await cadenceOf(storeCtx, id))!;
      expect(removed.state).not.toBe('monitored');
      await t.inTx((tx) => t.stores.enrollments.setNextReadEach(tx, [{ enrollmentId: id, at: at + 5 }]));
      await t.inTx((tx) => t.stores.enrollments.readNoLaterThan(tx, id, 1));
      expect((await cadenceOf(storeCtx, id))!.nextReadAt).toBe(removed.nextReadAt);
      expect(removed.nextReadAt).not.toBe(at + 5);
    });

    test('cadenceStatesOf several borrowers at once: each by its id, one with no enrollment left out', async () => {
      const a = await enroll('many-1');
      const b = await enroll('many-2');
      await t.inTx((tx) => t.stores.enrollments.setNextReadEach(tx, [{ enrollmentId: a, at: 1_000 }, { enrollmentId: b, at: 2_000 }]));
      const states = await store.cadenceStatesOf(storeCtx, [b, 'no-such-enrollment', a]);
      expect([...states.keys()].sort()).toEqual([a, b].sort());
      expect([states.get(a)!.nextReadAt, states.get(b)!.nextReadAt]).toEqual([1_000, 2_000]);
      expect(states.get(a)).toMatchObject({ lenderId: ctx.lender.id, state: 'monitored' });
      expect((await store.cadenceStatesOf(storeCtx, [])).size).toBe(0);
    });

    test('setPayCycle stores the cycle whole, its flag read as 0 or 1 and absent parts as null', async () => {
      const id = await enroll('cyc-1');
      const payday = Date.parse('2026-11-20T00:00:00Z');
      await t.inTx((tx) =>
        t.stores.enrollments.setPayCycle(tx, id, {
          frequency: 'biweekly',
          nextPayday: payday,
          confidence: 0.8125,
          alternative: { frequency: 'semimonthly', nextPayday: payday + 3 * DAY },
          landsEarly: true,
          source: 'transactions',
          at: ctx.clock.now(),
        }),
      );
      expect(await cadenceOf(storeCtx, id)).toMatchObject({
        frequency: 'biweekly',
        nextPayday: payday,
        confidence: 0.8125,
        learnedAt: ctx.clock.now(),
        altFrequency: 'semimonthly',
        altNextPayday: payday + 3 * DAY,
        landsEarly: 1,
      });
      const [row] = await ctx.rows<{ source: string }>('SELECT pay_cycle_source AS source FROM enrollments WHERE id = ?', id);
      expect(row!.source).toBe('transactions');

      await t.inTx((tx) => t.stores.enrollments.setPayCycle(tx, id, { frequency: 'weekly', nextPayday: payday - DAY, confidence: 0.5, landsEarly: false, source: 'balances', at: ctx.clock.now() + 1 }));
      expect(await cadenceOf(storeCtx, id)).toMatchObject({ frequency: 'weekly', confidence: 0.5, altFrequency: null, altNextPayday: null, landsEarly: 0, learnedAt: ctx.clock.now() + 1 });
      await t.inTx((tx) => t.stores.enrollments.setPayCycle(tx, id, { frequency: 'irregular', nextPayday: null, confidence: 0, source: 'balances', at: ctx.clock.now() + 2 }));
      expect(await cadenceOf(storeCtx, id)).toMatchObject({ frequency: 'irregular', nextPayday: null, confidence: 0, landsEarly: null });
      expect((await ctx.json('GET', '/v1/payment_enrollments/cyc-1')).body.pay_cycle).toMatchObject({ frequency: 'irregular', next_payday: null, source: 'balances' });
    });

    test('cadenceStatesOf in a transaction holds the borrowers until it ends', async () => {
      const id = await enroll('hold-1');
      await secondWaitsForFirst(async (tx) => expect(await cadenceOf(tx, id)).toMatchObject({ state: 'monitored', lenderId: ctx.lender.id }));
    });
  },
  { clockAt: '2026-11-16T09:00:00.000Z' },
);
