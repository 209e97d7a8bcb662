import { expect, test } from 'bun:test';
import { contract } from './contract';
import { bankAuthorizer, enrollBorrower, SANDBOX_TESTING_BANK, SANDBOX_UNSUPPORTED_BANK } from '../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../helpers/collection';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { pollProcessors } from '../../src/modules/collection/poll';
import { searchBorrowers } from '../../src/modules/enrollments/search';
import { MONITOR_WINDOW_MS } from '../../src/modules/enrollments/monitor-store';
import { openBorrower, sealBorrower } from '../../src/modules/enrollments/borrower';
import type { Ctx } from '../../src/deps';

const SETTLE = 60_000;
const DAY = 86_400_000;
const READ_EVERY = 3_600_000;
const HASH_BYTES = 12;

/** A search hash as the store keeps it: 12 bytes, here made from a label. */
const hash = (label: string) => new Uint8Array(new Bun.CryptoHasher('sha256').update(label).digest().subarray(0, HASH_BYTES));
const sorted = <T>(xs: T[]) => [...xs].sort();
const aids = (rows: { aid: string }[]) => rows.map((r) => r.aid);

/** Each column's JavaScript type as read, null where null: what both engines must hand back alike. */
const typesOf = (e: Record<string, unknown>) => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === null ? 'null' : typeof v]));

contract(
  'enrollments',
  (t) => {
    const { ctx, store, storeCtx } = t;
    const enroll = (borrowers: unknown[], key: string) => ctx.json('POST', '/v1/payment_enrollments', { key, body: { borrowers } });
    const asLender = (id: string): Ctx => ({ lender: { id, name: 'contract', debitCardApproved: false }, deps: ctx.rt });
    const idOf = async (lenderId: string, aid: string) => (await store.enrollmentOf(storeCtx, lenderId, aid))!.id;

    test('enrollmentOf: the borrower as stored, with numbers as numbers and nulls as null; another lender’s is absent', async () => {
      const lender = ctx.newLender();
      const now = ctx.clock.now();
      await enroll([enrollBorrower('read-1', { collectable_amount: 12345, days_past_due: 7, metadata: { loan: 'L-1' } })], lender.key);
      const e = await store.enrollmentOf(storeCtx, lender.id, 'read-1');
      expect(e).toMatchObject({
        lenderId: lender.id,
        authorizerUniqueId: 'read-1',
        state: 'monitored',
        reason: null,
        blockedReason: null,
        windowStartedAt: now,
        windowEndsAt: now + MONITOR_WINDOW_MS,
        collectableAmountCents: 12345,
        daysPastDue: 7,
        rail: 'ach',
        routingNumber: '110000000',
        bankName: 'Sandbox Bank',
        metadata: JSON.stringify({ loan: 'L-1' }),
        cardLast4: null,
        lastReadCents: null,
        lastReadAt: null,
        nextReadAt: now,
        paymentsUsed: 0,
        enrolledAt: now,
        updatedAt: now,
        erasedAt: null,
        cfpbCovered: null,
        authorizationAt: null,
      });
      expect(typeof e!.sealed).toBe('string');
      expect(typesOf(e!)).toEqual({
        id: 'string',
        lenderId: 'string',
        authorizerUniqueId: 'string',
        state: 'string',
        reason: 'null',
        blockedReason: 'null',
        windowStartedAt: 'number',
        windowEndsAt: 'number',
        collectableAmountCents: 'number',
        daysPastDue: 'number',
        merchantRef: 'null',
        rail: 'string',
        routingNumber: 'string',
        bankName: 'string',
        sealed: 'string',
        metadata: 'string',
        cardTokenSealed: 'null',
        cardLast4: 'null',
        cardBrand: 'null',
        lastReadCents: 'null',
        lastReadAt: 'null',
        nextReadAt: 'number',
        payCycleFrequency: 'null',
        payCycleNextPayday: 'null',
        payCycleConfidence: 'null',
        payCycleSource: 'null',
        payCycleAt: 'null',
        payCycleAlternativeFrequency: 'null',
        payCycleAlternativeNextPayday: 'null',
        payCycleLandsEarly: 'null',
        cfpbCovered: 'null',
        authorizationAt: 'null',
        authorizationRef: 'null',
        revokedAt: 'null',
        revocationChannel: 'null',
        revocationRef: 'null',
        reauthorizedAt: 'null',
        reauthorization: 'null',
        regEElection: 'null',
        paymentsUsed: 'number',
        enrolledAt: 'number',
        updatedAt: 'number',
        erasedAt: 'null',
        bankAccountId: 'string',
      });
      expect(await store.enrollmentOf(storeCtx, lender.id, 'nobody')).toBeUndefined();
      expect(await store.enrollmentOf(storeCtx, ctx.lender.id, 'read-1')).toBeUndefined();
      // A boolean choice reads back as a boolean.
      await enroll([enrollBorrower('read-2', { cfpb_covered: true })], lender.key);
      expect((await store.enrollmentOf(storeCtx, lender.id, 'read-2'))!.cfpbCovered).toBe(true);
    });

    test('enrollmentsPage: by identifier in byte order, after a key, within a prefix, by state and blocked reason, at most `limit`', async () => {
      const lender = ctx.newLender();
      // Upper case before lower, '-' before '_', digits by character, accented letters after ASCII: byte order.
      const ids = ['alpha-2', 'émile', 'alpha-10', 'Zeta-1', 'alpha_x', 'alpha-1', 'beta-1'];
      await enroll(ids.map((id) => enrollBorrower(id)), lender.key);
      await enroll([enrollBorrower('alpha-held', { routing_number: SANDBOX_UNSUPPORTED_BANK })], lender.key);
      const page = (over: Partial<Parameters<typeof store.enrollmentsPage>[1]> = {}) =>
        store.enrollmentsPage(storeCtx, { lenderId: lender.id, after: '', prefix: null, limit: 100, ...over }).then((es) => es.map((e) => e.authorizerUniqueId));
      const order = ['Zeta-1', 'alpha-1', 'alpha-10', 'alpha-2', 'alpha-held', 'alpha_x', 'beta-1', 'émile'];
      expect(await page()).toEqual(order);
      expect(await page({ limit: 3 })).toEqual(order.slice(0, 3));
      expect(await page({ after: 'alpha-10', limit: 3 })).toEqual(order.slice(3, 6));
      expect(await page({ after: 'émile' })).toEqual([]);
      expect(await page({ prefix: { from: 'alpha', to: 'alpha\u{10FFFF}' } })).toEqual(['alpha-1', 'alpha-10', 'alpha-2', 'alpha-held', 'alpha_x']);
      expect(await page({ prefix: { from: 'alpha-1', to: 'alpha-1\u{10FFFF}' }, after: 'alpha-1' })).toEqual(['alpha-10']);
      expect(await page({ state: 'held' })).toEqual(['alpha-held']);
      expect(await page({ state: 'lapsed' })).toEqual([]);
      // A block set through the monitor store, as collection sets one.
      const blocked = await idOf(lender.id, 'beta-1');
      await t.inTx((tx) =>
        t.stores.monitors.writeMonitorChange(tx, {
          enrollmentId: blocked,
          change: { state: 'monitored', reason: null, blockedReason: 'no_processor_key', window: 'keep', nextRead: 'keep', payments: 'keep' },
          now: ctx.clock.now(),
          windowMs: MONITOR_WINDOW_MS,
          readIntervalMs: READ_EVERY,
        }),
      );
      expect(await page({ blockedReason: 'no_processor_key' })).toEqual(['beta-1']);
      expect(await page({ state: 'monitored', blockedReason: 'verification_required' })).toEqual([]);
      // The rows are the borrowers as enrollmentOf reads them.
      const [first] = await store.enrollmentsPage(storeCtx, { lenderId: lender.id, after: '', prefix: null, limit: 1 });
      expect(first).toEqual((await store.enrollmentOf(storeCtx, lender.id, 'Zeta-1'))!);
      // Another lender's page holds none of these.
      expect(await store.enrollmentsPage(storeCtx, { lenderId: ctx.lender.id, after: '', prefix: { from: 'alpha', to: 'alpha\u{10FFFF}' }, limit: 100 })).toEqual([]);
      // The API lists the same order.
      const listed = await ctx.json('GET', '/v1/payment_enrollments?limit=100', { key: lender.key });
      expect(listed.body.enrollments.map((e: { authorizer_unique_id: string }) => e.authorizer_unique_id)).toEqual(order);
    });

    test('borrowersAmong and borrowersByIdPrefix: the lender’s own borrowers only, unknown ones left out, the prefix in byte order', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('among-1'), enrollBorrower('among-2'), enrollBorrower('Among-3')], lender.key);
      await enroll([enrollBorrower('among-1')], ctx.lender.key);
      const found = await store.borrowersAmong(storeCtx, lender.id, ['among-2', 'among-1', 'nobody']);
      expect(found.sort((a, b) => (a.aid < b.aid ? -1 : 1))).toEqual([
        { id: await idOf(lender.id, 'among-1'), aid: 'among-1' },
        { id: await idOf(lender.id, 'among-2'), aid: 'among-2' },
      ]);
      expect(await store.borrowersAmong(storeCtx, lender.id, [])).toEqual([]);
      expect(await store.borrowersByIdPrefix(storeCtx, lender.id, { from: 'among', to: 'among\u{10FFFF}' }, 10)).toEqual([{ aid: 'among-1' }, { aid: 'among-2' }]);
      expect(await store.borrowersByIdPrefix(storeCtx, lender.id, { from: 'among', to: 'among\u{10FFFF}' }, 1)).toEqual([{ aid: 'among-1' }]);
      expect(await store.borrowersByIdPrefix(storeCtx, lender.id, { from: 'A', to: 'A\u{10FFFF}' }, 10)).toEqual([{ aid: 'Among-3' }]);
    });

    test('dueReads: monitored borrowers due by `now`, oldest due first, at most `limit`; setNextReads moves them; enrollmentsOfReads finds their borrowers and setLastReads sets the reads', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('due-a', { metadata: { n: '1' } }), enrollBorrower('due-held', { routing_number: SANDBOX_UNSUPPORTED_BANK })], lender.key);
      const t0 = ctx.clock.now();
      ctx.clock.advance(1000);
      await enroll([enrollBorrower('due-b')], lender.key);
      const mineOf = async (now: number, limit = 10_000) =>
        (await store.dueReads(storeCtx, now, limit)).filter((d) => d.lenderId === lender.id);

      expect(await mineOf(t0 - 1)).toEqual([]);
      expect((await mineOf(t0)).map((d) => d.aid)).toEqual(['due-a']);
      const due = await mineOf(ctx.clock.now());
      expect(due.map((d) => d.aid)).toEqual(['due-a', 'due-b']);
      expect(due[0]).toEqual({
        id: await idOf(lender.id, 'due-a'),
        lenderId: lender.id,
        aid: 'due-a',
        routing: '110000000',
        sealed: (await store.enrollmentOf(storeCtx, lender.id, 'due-a'))!.sealed!,
        metadata: JSON.stringify({ n: '1' }),
      });
      // Oldest due first across lenders too, and no more than asked for.
      const all = await store.dueReads(storeCtx, ctx.clock.now(), 10_000);
      const when = new Map<string, number>();
      for (const d of all) when.set(d.id, (await store.enrollmentOf(storeCtx, d.lenderId, d.aid))!.nextReadAt!);
      expect(all.map((d) => when.get(d.id)!)).toEqual([...all.map((d) => when.get(d.id)!)].sort((a, b) => a - b));
      expect((await store.dueReads(storeCtx, ctx.clock.now(), 1)).length).toBe(1);

      // Moved on: not due before then, due again at then. An empty list moves nothing.
      const a = await idOf(lender.id, 'due-a');
      await t.inTx((tx) => store.setNextReads(tx, [a], ctx.clock.now() + 5000));
      await t.inTx((tx) => store.setNextReads(tx, [], 0));
      expect((await mineOf(ctx.clock.now())).map((d) => d.aid)).toEqual(['due-b']);
      expect((await mineOf(ctx.clock.now() + 5000)).map((d) => d.aid)).toEqual(['due-b', 'due-a']);
      // Rolled back, the move is not there.
      await t
        .inTx(async (tx) => {
          await store.setNextReads(tx, [a], ctx.clock.now());
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect((await store.enrollmentOf(storeCtx, lender.id, 'due-a'))!.nextReadAt).toBe(ctx.clock.now() + 5000);

      // The borrowers of reads, in their order: each one's enrollment id, or null for a borrower with none
      // (another lender's of the same id included).
      const at = ctx.clock.now();
      const read = (aid: string, balanceCents: number | null, when = at, lenderId = lender.id) => ({ lenderId, authorizerUniqueId: aid, balanceCents, at: when });
      const b = await idOf(lender.id, 'due-b');
      const found = await t.inTx((tx) => store.enrollmentsOfReads(tx, [read('due-b', 1), read('nobody', 1), read('due-a', 777), read('due-b', 1, at, ctx.lender.id), read('due-b', 4321, at + 2)]));
      expect(found).toEqual([b, null, a, null, b]);
      expect(await t.inTx((tx) => store.enrollmentsOfReads(tx, []))).toEqual([]);
      // Reads set on them, a borrower given twice keeping the later; with no next read, the next read stays.
      const nextOf = async (aid: string) => (await store.enrollmentOf(storeCtx, lender.id, aid))!.nextReadAt;
      const nextB = await nextOf('due-b');
      await t.inTx((tx) =>
        store.setLastReads(tx, [
          { enrollmentId: b, balanceCents: 1, at, next: null },
          { enrollmentId: a, balanceCents: 777, at, next: null },
          { enrollmentId: b, balanceCents: 4321, at: at + 2, next: null },
        ]),
      );
      expect(await store.enrollmentOf(storeCtx, lender.id, 'due-b')).toMatchObject({ lastReadCents: 4321, lastReadAt: at + 2, nextReadAt: nextB });
      expect(await store.enrollmentOf(storeCtx, lender.id, 'due-a')).toMatchObject({ lastReadCents: 777, lastReadAt: at, nextReadAt: ctx.clock.now() + 5000 });
      await t.inTx((tx) => store.setLastReads(tx, []));
      // A read without a balance clears the amount; a next read given is set with it.
      await t.inTx((tx) => store.setLastReads(tx, [{ enrollmentId: b, balanceCents: null, at: at + 3, next: at + 60_000 }]));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'due-b')).toMatchObject({ lastReadCents: null, lastReadAt: at + 3, nextReadAt: at + 60_000 });
      // Rolled back, the read is not there.
      await t
        .inTx(async (tx) => {
          await store.setLastReads(tx, [{ enrollmentId: a, balanceCents: 5, at: at + 4, next: at + 1 }]);
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect(await store.enrollmentOf(storeCtx, lender.id, 'due-a')).toMatchObject({ lastReadCents: 777, lastReadAt: at, nextReadAt: ctx.clock.now() + 5000 });
      // No longer monitored: the read is set, the next read is not.
      expect((await ctx.json('DELETE', '/v1/payment_enrollments', { key: lender.key, body: { authorizer_unique_ids: ['due-a'] } })).status).toBe(200);
      const removed = await nextOf('due-a');
      await t.inTx((tx) => store.setLastReads(tx, [{ enrollmentId: a, balanceCents: 6, at: at + 5, next: at + 90_000 }]));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'due-a')).toMatchObject({ lastReadCents: 6, lastReadAt: at + 5, nextReadAt: removed });
    });

    test('what the features above keep on an enrollment: the next read while monitored, the pay cycle, the presentments', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('kept-1')], lender.key);
      const id = await idOf(lender.id, 'kept-1');
      const kept = async () =>
        (
          await ctx.rows<Record<string, unknown>>(
            `SELECT next_read_at AS "next", payments_used AS "used", updated_at AS "updated", pay_cycle_frequency AS "frequency", pay_cycle_next_payday AS "payday",
                    pay_cycle_confidence AS "confidence", pay_cycle_source AS "source", pay_cycle_at AS "learnedAt", pay_cycle_alternative_frequency AS "altFrequency",
                    pay_cycle_alternative_next_payday AS "altPayday", pay_cycle_lands_early AS "landsEarly"
               FROM enrollments WHERE id = ?`,
            id,
          )
        )[0]!;
      const now = ctx.clock.now();
      // The next read: set (each borrower its own, the later of one given twice), brought forward only, and
      // rolled back with its transaction.
      await enroll([enrollBorrower('kept-2')], lender.key);
      const other = await idOf(lender.id, 'kept-2');
      await t.inTx((tx) => store.setNextReadEach(tx, [{ enrollmentId: id, at: now + 9_000 }, { enrollmentId: other, at: now + 3_000 }, { enrollmentId: id, at: now + 10_000 }]));
      await t.inTx((tx) => store.setNextReadEach(tx, []));
      expect(Number((await kept()).next)).toBe(now + 10_000);
      expect((await store.enrollmentOf(storeCtx, lender.id, 'kept-2'))!.nextReadAt).toBe(now + 3_000);
      expect(Number((await kept()).next)).toBe(now + 10_000);
      await t.inTx((tx) => store.readNoLaterThan(tx, id, now + 20_000));
      expect(Number((await kept()).next)).toBe(now + 10_000);
      await t.inTx((tx) => store.readNoLaterThan(tx, id, now + 5_000));
      expect(Number((await kept()).next)).toBe(now + 5_000);
      await t
        .inTx(async (tx) => {
          await store.setNextReadEach(tx, [{ enrollmentId: id, at: now + 1 }]);
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect(Number((await kept()).next)).toBe(now + 5_000);

      // The pay cycle, whole; its flag as 0 or 1 and absent parts as null.
      await t.inTx((tx) =>
        store.setPayCycle(tx, id, { frequency: 'biweekly', nextPayday: now + DAY, confidence: 0.75, alternative: { frequency: 'semimonthly', nextPayday: now + 2 * DAY }, landsEarly: true, source: 'transactions', at: now }),
      );
      expect(await kept()).toMatchObject({ frequency: 'biweekly', confidence: 0.75, source: 'transactions', altFrequency: 'semimonthly' });
      expect([Number((await kept()).payday), Number((await kept()).altPayday), Number((await kept()).landsEarly), Number((await kept()).learnedAt)]).toEqual([now + DAY, now + 2 * DAY, 1, now]);
      await t.inTx((tx) => store.setPayCycle(tx, id, { frequency: 'irregular', nextPayday: null, confidence: 0, source: 'balances', at: now + 1 }));
      expect(await kept()).toMatchObject({ frequency: 'irregular', payday: null, altFrequency: null, altPayday: null, landsEarly: null, source: 'balances' });

      // Presentments: set as given, given back one at a time and never below 0, the row's time moved.
      await t.inTx((tx) => store.setPaymentsUsed(tx, id, 2, now + 7));
      expect([Number((await kept()).used), Number((await kept()).updated)]).toEqual([2, now + 7]);
      for (const left of [1, 0, 0]) {
        await t.inTx((tx) => store.giveBackPresentment(tx, id, now + 8));
        expect(Number((await kept()).used)).toBe(left);
      }

      // No longer monitored: the cadence keeps no next read for it, whatever is set.
      expect((await ctx.json('DELETE', '/v1/payment_enrollments', { key: lender.key, body: { authorizer_unique_ids: ['kept-1'] } })).status).toBe(200);
      const removed = (await kept()).next;
      await t.inTx((tx) => store.setNextReadEach(tx, [{ enrollmentId: id, at: now + 30_000 }]));
      await t.inTx((tx) => store.readNoLaterThan(tx, id, 1));
      expect((await kept()).next).toEqual(removed);
    });

    test('the monitoring reads go through the pipeline: monitoring batches told from requested ones, the read set on the borrower', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('pipe-1', { account_number: '0000012345' })], lender.key);
      const requested = await ctx.json('POST', '/v1/balance_requests', { key: lender.key, body: { authorizers: [bankAuthorizer('asked-1')] } });
      expect(requested.status).toBeLessThan(300);
      const queued = await queueDueReads(ctx.rt, 10_000);
      expect(queued.queued).toBeGreaterThanOrEqual(1);
      // Queued once: its next read is an interval on.
      expect((await store.enrollmentOf(storeCtx, lender.id, 'pipe-1'))!.nextReadAt).toBe(ctx.clock.now() + READ_EVERY);
      await processBalances(ctx.rt);
      expect(await store.enrollmentOf(storeCtx, lender.id, 'pipe-1')).toMatchObject({ lastReadCents: 12345, lastReadAt: ctx.clock.now() });

      const batches = await ctx.rows<{ id: string; source: string }>('SELECT id, source FROM batches WHERE lender_id = ?', lender.id);
      const monitoring = batches.filter((b) => b.source === 'monitoring').map((b) => b.id);
      expect(monitoring.length).toBe(1);
      expect(batches.map((b) => b.id)).toContain(requested.body.batch_id);
      expect(sorted(await store.monitoringBatchesAmong(storeCtx, [...batches.map((b) => b.id), 'no-such-batch']))).toEqual(sorted(monitoring));
      expect(await store.monitoringBatchesAmong(storeCtx, [requested.body.batch_id])).toEqual([]);
      expect(await store.monitoringBatchesAmong(storeCtx, [])).toEqual([]);
    });

    test('heldBorrowers: held borrowers with personal data after an id, in id order, at most `limit`; setBankName names the bank', async () => {
      const lender = ctx.newLender();
      await enroll(
        [
          enrollBorrower('held-1', { routing_number: SANDBOX_UNSUPPORTED_BANK }),
          enrollBorrower('held-2', { routing_number: '021000021' }),
          enrollBorrower('held-3', { routing_number: SANDBOX_UNSUPPORTED_BANK }),
          enrollBorrower('not-held'),
        ],
        lender.key,
      );
      const all = await store.heldBorrowers(storeCtx, '', 10_000);
      const ids = all.map((h) => h.id);
      expect(ids).toEqual([...ids].sort());
      const mine = all.filter((h) => h.lenderId === lender.id);
      expect(sorted(mine.map((h) => h.id))).toEqual(sorted([await idOf(lender.id, 'held-1'), await idOf(lender.id, 'held-2'), await idOf(lender.id, 'held-3')]));
      const routingOf = async (aid: string) => {
        const id = await idOf(lender.id, aid);
        return mine.find((h) => h.id === id)!.routing;
      };
      expect(await routingOf('held-1')).toBe(SANDBOX_UNSUPPORTED_BANK);
      expect(await routingOf('held-2')).toBe('021000021');
      expect((await store.heldBorrowers(storeCtx, ids[0]!, 10_000)).map((h) => h.id)).toEqual(ids.slice(1));
      expect((await store.heldBorrowers(storeCtx, '', 2)).map((h) => h.id)).toEqual(ids.slice(0, 2));
      // Erased, it has no personal data left: no longer listed.
      await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['held-2'] } });
      const gone = await idOf(lender.id, 'held-2');
      expect((await store.heldBorrowers(storeCtx, '', 10_000)).map((h) => h.id)).not.toContain(gone);

      const one = await idOf(lender.id, 'held-1');
      await t.inTx((tx) => store.setBankName(tx, one, 'Readable Bank'));
      expect((await store.enrollmentOf(storeCtx, lender.id, 'held-1'))!.bankName).toBe('Readable Bank');
      await t.inTx((tx) => store.setBankName(tx, one, null));
      expect((await store.enrollmentOf(storeCtx, lender.id, 'held-1'))!.bankName).toBeNull();
    });

    test('eraseBorrowerData: personal data and card details overwritten, the record kept; a rollback erases nothing', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('erase-1', { metadata: { k: 'v' } }), enrollBorrower('erase-2')], lender.key);
      const one = await idOf(lender.id, 'erase-1');
      await t
        .inTx(async (tx) => {
          await store.eraseBorrowerData(tx, [one], ctx.clock.now());
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect((await store.enrollmentOf(storeCtx, lender.id, 'erase-1'))!.sealed).not.toBeNull();

      ctx.clock.advance(1000);
      const r = await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['erase-1'] } });
      expect(r.body).toMatchObject({ deleted: 1 });
      expect(await store.enrollmentOf(storeCtx, lender.id, 'erase-1')).toMatchObject({
        id: one,
        state: 'removed',
        sealed: null,
        metadata: null,
        cardTokenSealed: null,
        cardLast4: null,
        cardBrand: null,
        erasedAt: ctx.clock.now(),
        updatedAt: ctx.clock.now(),
        collectableAmountCents: 42500,
      });
      expect((await store.enrollmentOf(storeCtx, lender.id, 'erase-2'))!.sealed).not.toBeNull();
      // Nothing for no ids.
      await t.inTx((tx) => store.eraseBorrowerData(tx, [], ctx.clock.now()));
      expect((await store.enrollmentOf(storeCtx, lender.id, 'erase-2'))!.erasedAt).toBeNull();
    });

    test('search entries: replaced per borrower, found by hash and by two names, only the lender’s, removed; a rollback writes none', async () => {
      const lender = ctx.newLender();
      const other = ctx.newLender();
      const key = 'contract-key';
      const [h1, h2, h3, h4] = [hash(`${lender.id}-1`), hash(`${lender.id}-2`), hash(`${lender.id}-3`), hash(`${lender.id}-4`)];
      await t.inTx((tx) =>
        store.replaceSearchEntries(
          tx,
          [
            { lenderId: lender.id, aid: 's-1', keyId: key, hashes: [h1, h2], fresh: true },
            { lenderId: lender.id, aid: 's-2', keyId: key, hashes: [h1, h3], fresh: true },
            { lenderId: other.id, aid: 's-9', keyId: key, hashes: [h1], fresh: true },
          ],
          HASH_BYTES,
        ),
      );
      expect(sorted(aids(await store.borrowersWith(storeCtx, lender.id, h1, 10)))).toEqual(['s-1', 's-2']);
      expect((await store.borrowersWith(storeCtx, lender.id, h1, 1)).length).toBe(1);
      expect(aids(await store.borrowersWith(storeCtx, other.id, h1, 10))).toEqual(['s-9']);
      expect(aids(await store.borrowersNamed(storeCtx, lender.id, h1, h2, 10))).toEqual(['s-1']);
      expect(aids(await store.borrowersNamed(storeCtx, lender.id, h3, h1, 10))).toEqual(['s-2']);
      expect(await store.borrowersNamed(storeCtx, lender.id, h2, h3, 10)).toEqual([]);
      expect(await store.borrowersWith(storeCtx, lender.id, h4, 10)).toEqual([]);

      // A re-send replaces the borrower's entries; the same ones again change nothing.
      const resend = () =>
        t.inTx((tx) => store.replaceSearchEntries(tx, [{ lenderId: lender.id, aid: 's-1', keyId: key, hashes: [h4], fresh: false }], HASH_BYTES));
      await resend();
      await resend();
      expect(aids(await store.borrowersWith(storeCtx, lender.id, h1, 10))).toEqual(['s-2']);
      expect(await store.borrowersWith(storeCtx, lender.id, h2, 10)).toEqual([]);
      expect(aids(await store.borrowersWith(storeCtx, lender.id, h4, 10))).toEqual(['s-1']);
      // A borrower said to be new whose entries are there already has them replaced.
      await t.inTx((tx) => store.replaceSearchEntries(tx, [{ lenderId: lender.id, aid: 's-2', keyId: key, hashes: [h2], fresh: true }], HASH_BYTES));
      expect(await store.borrowersWith(storeCtx, lender.id, h1, 10)).toEqual([]);
      expect(aids(await store.borrowersWith(storeCtx, lender.id, h2, 10))).toEqual(['s-2']);

      await t
        .inTx(async (tx) => {
          await store.replaceSearchEntries(tx, [{ lenderId: lender.id, aid: 's-3', keyId: key, hashes: [h3], fresh: true }], HASH_BYTES);
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect(await store.borrowersWith(storeCtx, lender.id, h3, 10)).toEqual([]);

      // Removed: the borrower's entries only, and only the lender's borrower of that id.
      await t.inTx((tx) => store.removeSearchEntries(tx, lender.id, ['s-1', 'nobody'], HASH_BYTES));
      expect(await store.borrowersWith(storeCtx, lender.id, h4, 10)).toEqual([]);
      expect(aids(await store.borrowersWith(storeCtx, lender.id, h2, 10))).toEqual(['s-2']);
      await t.inTx((tx) => store.removeSearchEntries(tx, lender.id, [], HASH_BYTES));
      await t.inTx((tx) => store.removeSearchEntries(tx, lender.id, ['s-9'], HASH_BYTES));
      expect(aids(await store.borrowersWith(storeCtx, other.id, h1, 10))).toEqual(['s-9']);
    });

    test('search through the service: an enrolled borrower is found by name and phone, a re-send by its new values, an erased one not at all', async () => {
      const lender = ctx.newLender();
      const find = async (q: string) => (await searchBorrowers({ ctx: asLender(lender.id), input: { q } })).matches.map((m) => m.authorizer_unique_id);
      await enroll([enrollBorrower('find-1', { first_name: 'Quintessa', last_name: 'Marlowe', phone_number: '2025550123' })], lender.key);
      await enroll([enrollBorrower('find-2', { first_name: 'Quintessa', last_name: 'Okafor' })], lender.key);
      expect(await find('quintessa')).toEqual(['find-1', 'find-2']);
      expect(await find('Quintessa Marlowe')).toEqual(['find-1']);
      expect(await find('2025550123')).toEqual(['find-1']);
      expect(await find('find-')).toEqual(['find-1', 'find-2']);
      await enroll([enrollBorrower('find-1', { first_name: 'Amara', last_name: 'Marlowe', phone_number: '2025550123' })], lender.key);
      expect(await find('quintessa')).toEqual(['find-2']);
      expect(await find('amara marlowe')).toEqual(['find-1']);
      await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['find-1'] } });
      expect(await find('marlowe')).toEqual([]);
      expect(await find('2025550123')).toEqual([]);
      // Another lender finds none of them.
      expect((await searchBorrowers({ ctx: asLender(ctx.lender.id), input: { q: 'quintessa' } })).matches).toEqual([]);
    });

    test('unsearchedBorrowers: borrowers with personal data and no entries under a key, in id order after an id, at most `limit`', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('uns-1'), enrollBorrower('uns-2'), enrollBorrower('uns-3')], lender.key);
      const current = ctx.rt.vault.currentKeyId;
      // Indexed at enrollment under the current key: none of these is unsearched.
      expect((await store.unsearchedBorrowers(storeCtx, '', current, 10_000)).filter((u) => u.lenderId === lender.id)).toEqual([]);
      // Under another key (a rotation), every borrower with personal data is.
      const all = await store.unsearchedBorrowers(storeCtx, '', 'rotated-key', 10_000);
      const ids = all.map((u) => u.id);
      expect(ids).toEqual([...ids].sort());
      const mine = all.filter((u) => u.lenderId === lender.id);
      expect(sorted(aids(mine))).toEqual(['uns-1', 'uns-2', 'uns-3']);
      const one = mine.find((u) => u.aid === 'uns-1')!;
      const stored = (await store.enrollmentOf(storeCtx, lender.id, 'uns-1'))!;
      expect(one).toEqual({ id: stored.id, lenderId: lender.id, aid: 'uns-1', sealed: stored.sealed, cardLast4: null });
      expect((await store.unsearchedBorrowers(storeCtx, ids[0]!, 'rotated-key', 10_000)).map((u) => u.id)).toEqual(ids.slice(1));
      expect((await store.unsearchedBorrowers(storeCtx, '', 'rotated-key', 2)).map((u) => u.id)).toEqual(ids.slice(0, 2));
      // Its entries gone (as before search existed), a borrower is unsearched under the current key; erased, it is not.
      await t.inTx((tx) => store.removeSearchEntries(tx, lender.id, ['uns-2', 'uns-3'], HASH_BYTES));
      await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['uns-3'] } });
      expect(aids((await store.unsearchedBorrowers(storeCtx, '', current, 10_000)).filter((u) => u.lenderId === lender.id))).toEqual(['uns-2']);
      // Read inside a transaction as the indexing job reads it: the same borrowers.
      expect(aids((await t.inTx((tx) => store.unsearchedBorrowers(tx, '', current, 10_000))).filter((u) => u.lenderId === lender.id))).toEqual(['uns-2']);
    });

    test('unlinkedBorrowers, borrowerToLink, linkBankAccounts: ACH borrowers with personal data and no bank account, linked once', async () => {
      const lender = ctx.newLender();
      await enroll(
        [enrollBorrower('link-1'), enrollBorrower('link-2', { account_number: '0007654321' }), enrollBorrower('link-card', { charge_instrument: { processor_token: 'sbxpm_x', card_last4: '4242' } })],
        lender.key,
      );
      const [one, two, card] = [await store.enrollmentOf(storeCtx, lender.id, 'link-1'), await store.enrollmentOf(storeCtx, lender.id, 'link-2'), await store.enrollmentOf(storeCtx, lender.id, 'link-card')];
      // Linked at enrollment: none is unlinked; the card borrower has no account.
      expect(one!.bankAccountId).not.toBeNull();
      expect(card!.bankAccountId).toBeNull();
      const mine = async (rows: { lenderId: string; aid?: string; id: string }[]) => rows.filter((r) => r.lenderId === lender.id).map((r) => r.id);
      expect(await mine(await store.unlinkedBorrowers(storeCtx, '', 10_000))).toEqual([]);
      expect(await store.borrowerToLink(storeCtx, one!.id)).toEqual({ id: one!.id, lenderId: lender.id, rail: 'ach', routing: '110000000', sealed: one!.sealed, bankAccountId: one!.bankAccountId });
      expect(await store.borrowerToLink(storeCtx, card!.id)).toMatchObject({ rail: 'card', bankAccountId: null });
      expect(await store.borrowerToLink(storeCtx, 'no-such-enrollment')).toBeUndefined();
      // As an earlier version stored them: no link. Both ACH borrowers are unlinked, in id order; the card one is not.
      const unlinkAll = `UPDATE enrollments SET bank_account_id = NULL WHERE lender_id = '${lender.id}'`;
      ctx.sql.query(unlinkAll).run();
      const ids = [one!.id, two!.id].sort();
      expect(await mine(await store.unlinkedBorrowers(storeCtx, '', 10_000))).toEqual(ids);
      expect(await mine(await store.unlinkedBorrowers(storeCtx, ids[0]!, 10_000))).toEqual([ids[1]!]);
      expect(await mine(await t.inTx((tx) => store.unlinkedBorrowers(tx, '', 10_000)))).toEqual(ids);
      // A rolled-back link links nothing; a link is written once, a second leaves the first.
      await expect(
        t.inTx(async (tx) => {
          await store.linkBankAccounts(tx, [{ id: one!.id, bankAccountId: one!.bankAccountId! }]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await store.borrowerToLink(storeCtx, one!.id))!.bankAccountId).toBeNull();
      await t.inTx((tx) => store.linkBankAccounts(tx, [{ id: one!.id, bankAccountId: one!.bankAccountId! }, { id: two!.id, bankAccountId: two!.bankAccountId! }]));
      await t.inTx((tx) => store.linkBankAccounts(tx, [{ id: one!.id, bankAccountId: two!.bankAccountId! }]));
      await t.inTx((tx) => store.linkBankAccounts(tx, []));
      expect((await store.borrowerToLink(storeCtx, one!.id))!.bankAccountId).toBe(one!.bankAccountId);
      expect((await store.borrowerToLink(storeCtx, two!.id))!.bankAccountId).toBe(two!.bankAccountId);
      expect(await mine(await store.unlinkedBorrowers(storeCtx, '', 10_000))).toEqual([]);
      // Erased: unlinked, and not to be linked again (no personal data).
      await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['link-1'] } });
      expect((await store.borrowerToLink(storeCtx, one!.id))!).toMatchObject({ sealed: null, bankAccountId: null });
      expect(await mine(await store.unlinkedBorrowers(storeCtx, '', 10_000))).toEqual([]);
    });

    test('serializeBorrowers: taken again in its own transaction without waiting, and gone with it', async () => {
      const lender = ctx.newLender();
      await t.inTx(async (tx) => {
        await store.serializeBorrowers(tx, lender.id, ['ser-1', 'ser-2']);
        // The same borrowers again, and none: the transaction holds them already.
        await store.serializeBorrowers(tx, lender.id, ['ser-2', 'ser-1', 'ser-3']);
        await store.serializeBorrowers(tx, lender.id, []);
      });
      // Released with the transaction: an enrollment of the same borrowers goes through.
      const r = await enroll([enrollBorrower('ser-1'), enrollBorrower('ser-2')], lender.key);
      expect(r.body).toMatchObject({ enrolled: 2 });
      expect((await store.enrollmentOf(storeCtx, lender.id, 'ser-1'))!.state).toBe('monitored');
    });

    test('detailsOnAccount: the borrowers on an account with their sealed details, the erased left out, by identifier after one, at most `limit`', async () => {
      const lender = ctx.newLender();
      const shared = '0005554321';
      await enroll(
        [
          ...['on-c', 'on-a', 'On-z', 'on-erased', 'on-removed'].map((aid) => enrollBorrower(aid, { account_number: shared })),
          enrollBorrower('elsewhere'),
        ],
        lender.key,
      );
      const [a, elsewhere] = [(await store.enrollmentOf(storeCtx, lender.id, 'on-a'))!, (await store.enrollmentOf(storeCtx, lender.id, 'elsewhere'))!];
      const account = a.bankAccountId!;
      expect(elsewhere.bankAccountId).not.toBe(account);
      // Removed, a borrower is still on the account (its details are corrected too); erased, it has none to correct.
      expect((await ctx.json('DELETE', '/v1/payment_enrollments', { key: lender.key, body: { authorizer_unique_ids: ['on-removed'] } })).status).toBe(200);
      expect((await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['on-erased'] } })).status).toBe(200);
      // Upper case before lower: byte order.
      const details = await store.detailsOnAccount(storeCtx, account, '', 10);
      expect(aids(details)).toEqual(['On-z', 'on-a', 'on-c', 'on-removed']);
      for (const d of details) {
        const e = (await store.enrollmentOf(storeCtx, lender.id, d.aid))!;
        expect(d).toEqual({ id: e.id, lenderId: lender.id, aid: e.authorizerUniqueId, sealed: e.sealed!, routing: '110000000' });
        expect(openBorrower(ctx.rt, d.sealed).s.accountNumber).toBe(shared);
      }
      expect(aids(await store.detailsOnAccount(storeCtx, account, 'on-a', 10))).toEqual(['on-c', 'on-removed']);
      expect(aids(await store.detailsOnAccount(storeCtx, account, '', 2))).toEqual(['On-z', 'on-a']);
      expect(aids(await store.detailsOnAccount(storeCtx, account, 'on-removed', 10))).toEqual([]);
      expect(aids(await store.detailsOnAccount(storeCtx, elsewhere.bankAccountId!, '', 10))).toEqual(['elsewhere']);
      expect(await store.detailsOnAccount(storeCtx, 'no-such-account', '', 10)).toEqual([]);
    });

    test('correctDetails: one borrower’s sealed details, routing number and bank corrected, no other’s; nothing when rolled back', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('fix-1'), enrollBorrower('fix-2')], lender.key);
      const [one, two] = [(await store.enrollmentOf(storeCtx, lender.id, 'fix-1'))!, (await store.enrollmentOf(storeCtx, lender.id, 'fix-2'))!];
      const borrower = openBorrower(ctx.rt, one.sealed!);
      expect(borrower.s.accountNumber).toBe('0001234567');
      borrower.s.accountNumber = '0009998887';
      const sealed = sealBorrower(ctx.rt, borrower);
      const at = ctx.clock.now() + 1_000;
      const correction = { id: one.id, sealed, routing: SANDBOX_TESTING_BANK, bankName: 'Sandbox Testing Bank', now: at };
      await expect(
        t.inTx(async (tx) => {
          await store.correctDetails(tx, correction);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.enrollmentOf(storeCtx, lender.id, 'fix-1')).toEqual(one);
      await t.inTx((tx) => store.correctDetails(tx, correction));
      const fixed = (await store.enrollmentOf(storeCtx, lender.id, 'fix-1'))!;
      expect(fixed).toEqual({ ...one, sealed, routingNumber: SANDBOX_TESTING_BANK, bankName: 'Sandbox Testing Bank', updatedAt: at });
      expect(openBorrower(ctx.rt, fixed.sealed!).s.accountNumber).toBe('0009998887');
      expect(await store.enrollmentOf(storeCtx, lender.id, 'fix-2')).toEqual(two);
      // A correction that names no routing number leaves none, and no bank.
      await t.inTx((tx) => store.correctDetails(tx, { ...correction, routing: null, bankName: null, now: at + 1 }));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'fix-1')).toMatchObject({ sealed, routingNumber: null, bankName: null, updatedAt: at + 1 });
    });

    test('moveToAccount: every borrower on one account now on another, the others where they were', async () => {
      const lender = ctx.newLender();
      await enroll(
        [
          enrollBorrower('mv-1', { account_number: '0001110001' }),
          enrollBorrower('mv-2', { account_number: '0001110001' }),
          enrollBorrower('mv-3', { account_number: '0001110002' }),
          enrollBorrower('mv-4', { account_number: '0001110003' }),
        ],
        lender.key,
      );
      const read = async () => new Map(await Promise.all(['mv-1', 'mv-2', 'mv-3', 'mv-4'].map(async (aid) => [aid, (await store.enrollmentOf(storeCtx, lender.id, aid))!] as const)));
      const before = await read();
      const [from, to, apart] = [before.get('mv-1')!.bankAccountId!, before.get('mv-3')!.bankAccountId!, before.get('mv-4')!.bankAccountId!];
      expect(before.get('mv-2')!.bankAccountId).toBe(from);
      expect(new Set([from, to, apart]).size).toBe(3);
      const at = ctx.clock.now() + 2_000;
      await expect(
        t.inTx(async (tx) => {
          await store.moveToAccount(tx, from, to, at);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await read()).toEqual(before);
      await t.inTx((tx) => store.moveToAccount(tx, from, to, at));
      const after = await read();
      for (const aid of ['mv-1', 'mv-2']) expect(after.get(aid)).toEqual({ ...before.get(aid)!, bankAccountId: to, updatedAt: at });
      for (const aid of ['mv-3', 'mv-4']) expect(after.get(aid)).toEqual(before.get(aid)!);
      expect(aids(await store.detailsOnAccount(storeCtx, to, '', 10))).toEqual(['mv-1', 'mv-2', 'mv-3']);
      expect(await store.detailsOnAccount(storeCtx, from, '', 10)).toEqual([]);
      // Nobody is left on it: moving it again moves nobody.
      await t.inTx((tx) => store.moveToAccount(tx, from, apart, at + 1));
      expect(await read()).toEqual(after);
    });

    test('recordRevocation: kept when later than the one kept, with its channel and reference; never moved back; nothing when rolled back', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('rv-1'), enrollBorrower('rv-2')], lender.key);
      const id = (await store.enrollmentOf(storeCtx, lender.id, 'rv-1'))!.id;
      const at = ctx.clock.now() - 10_000;
      await expect(
        t.inTx(async (tx) => {
          await store.recordRevocation(tx, { id, at, channel: 'written', ref: 'r-0', now: at });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.enrollmentOf(storeCtx, lender.id, 'rv-1')).toMatchObject({ revokedAt: null, revocationChannel: null, revocationRef: null });
      await t.inTx((tx) => store.recordRevocation(tx, { id, at, channel: 'written', ref: 'r-1', now: at + 1 }));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'rv-1')).toMatchObject({ revokedAt: at, revocationChannel: 'written', revocationRef: 'r-1', updatedAt: at + 1 });
      // Earlier: the later one stands (the update time moves all the same).
      await t.inTx((tx) => store.recordRevocation(tx, { id, at: at - 5_000, channel: 'phone', ref: null, now: at + 2 }));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'rv-1')).toMatchObject({ revokedAt: at, revocationChannel: 'written', revocationRef: 'r-1' });
      // Later: it replaces it, a null reference too.
      await t.inTx((tx) => store.recordRevocation(tx, { id, at: at + 5_000, channel: 'electronic', ref: null, now: at + 3 }));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'rv-1')).toMatchObject({ revokedAt: at + 5_000, revocationChannel: 'electronic', revocationRef: null });
      expect(await store.enrollmentOf(storeCtx, lender.id, 'rv-2')).toMatchObject({ revokedAt: null });
    });

    test('recordReauthorization and recordRegEElection: kept as given, a later one replacing it on the enrollment and every one kept; nothing when rolled back', async () => {
      const lender = ctx.newLender();
      await enroll([enrollBorrower('ra-1')], lender.key);
      const id = (await store.enrollmentOf(storeCtx, lender.id, 'ra-1'))!.id;
      const at = ctx.clock.now() - 10_000;
      await expect(
        t.inTx(async (tx) => {
          await store.recordReauthorization(tx, { id, lenderId: lender.id, authorizationId: 'ra-0', at, record: '{"a":1}', now: at });
          await store.recordRegEElection(tx, { id, election: '{"type":"always"}', now: at });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.enrollmentOf(storeCtx, lender.id, 'ra-1')).toMatchObject({ reauthorizedAt: null, reauthorization: null, regEElection: null });
      expect(await store.reauthorizationsOf(storeCtx, id, 10)).toEqual([]);
      await t.inTx((tx) => store.recordReauthorization(tx, { id, lenderId: lender.id, authorizationId: 'ra-1', at, record: '{"a":1}', now: at + 1 }));
      await t.inTx((tx) => store.recordRegEElection(tx, { id, election: '{"type":"always"}', now: at + 2 }));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'ra-1')).toMatchObject({ reauthorizedAt: at, reauthorization: '{"a":1}', regEElection: '{"type":"always"}', updatedAt: at + 2 });
      await t.inTx((tx) => store.recordReauthorization(tx, { id, lenderId: lender.id, authorizationId: 'ra-2', at: at + 5, record: '{"a":2}', now: at + 3 }));
      // The enrollment holds the latest; every one is kept, latest first.
      expect(await store.reauthorizationsOf(storeCtx, id, 10)).toEqual(['{"a":2}', '{"a":1}']);
      expect(await store.reauthorizationsOf(storeCtx, id, 1)).toEqual(['{"a":2}']);
      await t.inTx((tx) => store.recordRegEElection(tx, { id, election: null, now: at + 4 }));
      expect(await store.enrollmentOf(storeCtx, lender.id, 'ra-1')).toMatchObject({ reauthorizedAt: at + 5, reauthorization: '{"a":2}', regEElection: null });
    });

    // Last: the collection cycle reads and debits every due borrower of the database, and moves the clock on.
    test('payments and the ledger: each borrower’s oldest first with reinitiations named, entries in posted order, exact totals', async () => {
      const lender = ctx.newLender();
      const connection = { api_key: 'sbx_contract_enroll_000001', rail_scope: 'both', is_default: true };
      expect((await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: connection })).status).toBe(201);
      // 00 cents settle; 91 returns R01 (reinitiated later); 95 settles and is returned late (a reversal). Each on
      // an account of its own: the late R10 blocks every borrower on its account.
      await enroll(
        [
          enrollBorrower('pay-settle', { collectable_amount: 42500 }),
          enrollBorrower('pay-r01', { collectable_amount: 10091, account_number: '0002234567' }),
          enrollBorrower('pay-late', { collectable_amount: 42595, account_number: '0003234567' }),
        ],
        lender.key,
      );
      await cycle(ctx);
      await dispatchAndSettle(ctx, SETTLE);
      ctx.clock.advance(READ_EVERY);
      await cycle(ctx);
      ctx.clock.advance(SETTLE);
      await pollProcessors(ctx.rt);

      const ids = { settle: await idOf(lender.id, 'pay-settle'), r01: await idOf(lender.id, 'pay-r01'), late: await idOf(lender.id, 'pay-late') };
      const pays = await store.paymentsAmong(storeCtx, lender.id, [ids.settle, ids.r01, ids.late, 'no-such-enrollment']);
      // Grouped by borrower, each borrower's oldest first.
      const byId = (id: string) => pays.filter((p) => p.enrollmentId === id);
      const groups = pays.map((p) => p.enrollmentId).filter((id, i, all) => all.indexOf(id) === i);
      expect(groups).toEqual([...groups].sort());
      for (const id of groups) {
        const created = byId(id).map((p) => p.createdAt);
        expect(created).toEqual([...created].sort((a, b) => a - b));
      }
      expect(byId(ids.settle).map((p) => [p.amount, p.status, p.attempt, p.reinitiationOf])).toEqual([[42500, 'settled', 1, null]]);
      const r01 = byId(ids.r01);
      expect(r01.length).toBeGreaterThanOrEqual(2);
      expect(r01[0]).toMatchObject({ amount: 10091, status: 'returned', attempt: 1, reinitiationOf: null });
      expect(r01[1]).toMatchObject({ attempt: 2, reinitiationOf: r01[0]!.reference });
      const p = byId(ids.settle)[0]!;
      expect(p.reference).toBe(`DRS-pay-settle-${(await ctx.rows<{ id: string }>('SELECT id FROM payments WHERE reference = ?', p.reference))[0]!.id}`);
      expect(typesOf(p as unknown as Record<string, unknown>)).toEqual({
        enrollmentId: 'string',
        reference: 'string',
        amount: 'number',
        status: 'string',
        attempt: 'number',
        reinitiationOf: 'null',
        createdAt: 'number',
        debitOn: 'null',
        reportedStatus: 'null',
        reportedReturnCode: 'null',
        reportedAt: 'null',
        reportHold: 'null',
        id: 'string',
        noticeClass: 'string',
        noticeNeeds: 'null',
        noticeDueFrom: 'null',
        noticeDueBy: 'null',
        noticeSentAt: 'null',
      });
      // Another lender reads none of them.
      expect(await store.paymentsAmong(storeCtx, ctx.lender.id, [ids.settle])).toEqual([]);
      expect(await store.paymentsAmong(storeCtx, lender.id, [])).toEqual([]);

      const entries = await store.ledgerEntriesAmong(storeCtx, lender.id, [ids.late, ids.settle, ids.r01]);
      const late = entries.filter((e) => e.enrollmentId === ids.late);
      expect(late.map((e) => [e.kind, e.amountCents])).toEqual([
        ['credit', 42595],
        ['reversal', 42595],
      ]);
      expect(late[0]!.at).toBeLessThanOrEqual(late[1]!.at);
      expect(typeof late[0]!.at).toBe('number');
      expect(entries.filter((e) => e.enrollmentId === ids.settle).map((e) => [e.reference, e.kind, e.amountCents])).toEqual([[p.reference, 'credit', 42500]]);
      // A payment returned before it settled posts a reversal of nothing, one a payment, in the order posted.
      const r01Entries = entries.filter((e) => e.enrollmentId === ids.r01);
      expect(r01Entries.map((e) => [e.reference, e.kind, e.amountCents])).toEqual(r01.filter((x) => x.status === 'returned').map((x) => [x.reference, 'reversal', 0]));
      const groupsOfEntries = entries.map((e) => e.enrollmentId).filter((id, i, all) => all.indexOf(id) === i);
      expect(groupsOfEntries).toEqual([...groupsOfEntries].sort());
      expect(await store.ledgerEntriesAmong(storeCtx, ctx.lender.id, [ids.late])).toEqual([]);
      expect(await store.ledgerEntriesAmong(storeCtx, lender.id, [])).toEqual([]);

      // Totals as BigInt; a borrower with no entry (enrolled after the cycles) is left out.
      await enroll([enrollBorrower('pay-none')], lender.key);
      const none = await idOf(lender.id, 'pay-none');
      const byEnrollment = (a: { enrollmentId: string }, b: { enrollmentId: string }) => (a.enrollmentId < b.enrollmentId ? -1 : 1);
      const totals = await store.ledgerTotalsAmong(storeCtx, lender.id, [ids.settle, ids.late, ids.r01, none]);
      expect(totals.sort(byEnrollment)).toEqual(
        [
          { enrollmentId: ids.settle, collected: 42500n, reversed: 0n },
          { enrollmentId: ids.late, collected: 42595n, reversed: 42595n },
          { enrollmentId: ids.r01, collected: 0n, reversed: 0n },
        ].sort(byEnrollment),
      );
      expect(await store.ledgerEntriesAmong(storeCtx, lender.id, [none])).toEqual([]);
      expect(await store.paymentsAmong(storeCtx, lender.id, [none])).toEqual([]);
      expect(await store.ledgerTotalsAmong(storeCtx, lender.id, [])).toEqual([]);
      expect(await store.ledgerTotalsAmong(storeCtx, ctx.lender.id, [ids.settle])).toEqual([]);
      const view = (await ctx.json('GET', '/v1/payment_enrollments/pay-late', { key: lender.key })).body;
      expect(view.ledger).toMatchObject({ collected: 42595, reversed: 42595, net: 0 });

      // By reference: the borrowers whose payment reference starts so, by reference.
      const byRef = await store.borrowersByReference(storeCtx, lender.id, { from: 'DRS-pay-', to: 'DRS-pay-\u{10FFFF}' }, 100);
      expect(byRef.length).toBe(pays.length);
      const aidOf = new Map([
        [ids.settle, 'pay-settle'],
        [ids.r01, 'pay-r01'],
        [ids.late, 'pay-late'],
      ]);
      const inOrder = [...pays].sort((a, b) => (a.reference < b.reference ? -1 : 1));
      expect(aids(byRef)).toEqual(inOrder.map((x) => aidOf.get(x.enrollmentId)!));
      const exact = await store.borrowersByReference(storeCtx, lender.id, { from: p.reference, to: `${p.reference}\u{10FFFF}` }, 100);
      expect(exact).toEqual([{ aid: 'pay-settle' }]);
      expect((await store.borrowersByReference(storeCtx, lender.id, { from: 'DRS-pay-', to: 'DRS-pay-\u{10FFFF}' }, 1)).length).toBe(1);
      expect(await store.borrowersByReference(storeCtx, ctx.lender.id, { from: 'DRS-pay-', to: 'DRS-pay-\u{10FFFF}' }, 100)).toEqual([]);
    });
  },
  { env: { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ_EVERY) } },
);
