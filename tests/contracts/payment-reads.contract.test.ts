import { expect, test } from 'bun:test';
import { contract } from './contract';
import { enrollBorrower } from '../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../helpers/collection';
import { DAY_MS } from '../../src/platform/clock';
import { MONITOR_STATES, PAYMENT_STATUSES } from '../../db/schema/enums';
import type { PaymentPageQuery, PaymentRow } from '../../src/modules/collection/store';

const SETTLE = 60_000;
const zeros = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;

contract(
  'paymentReads',
  (t) => {
    const { ctx, store, storeCtx } = t;
    // The sandbox's outcomes by the cents of the amount: 00 settles, 91 returned R01, 95 settles then comes back
    // late R10, 97 stays processing, 96 is refused at once.
    const lender = ctx.newLender();
    const page = (v: Partial<PaymentPageQuery>) =>
      store.paymentsPage(storeCtx, { lenderId: lender.id, from: null, to: null, sort: 'newest', after: null, take: 50, ...v });
    let createdAt = 0;

    test('a lender with nothing: every state and status counted 0, sums 0 as BigInt, nothing listed', async () => {
      const empty = ctx.newLender();
      expect(await store.borrowerCountsByState(storeCtx, empty.id)).toEqual(zeros(MONITOR_STATES));
      expect(await store.paymentCountsByStatus(storeCtx, empty.id)).toEqual(zeros(PAYMENT_STATUSES));
      expect(await store.ledgerTotals(storeCtx, empty.id, 0)).toEqual({ credited: 0n, reversed: 0n });
      expect(await store.ledgerTotalsByDay(storeCtx, empty.id, 0)).toEqual([]);
      expect(await store.inFlightTotals(storeCtx, empty.id, 0)).toEqual({ amount: 0n, count: 0 });
      expect(await store.returnedTotals(storeCtx, empty.id, 0)).toEqual({ amount: 0n, count: 0 });
      expect(await store.eventsOfBorrower(storeCtx, empty.id, 'nobody')).toEqual([]);
      expect(await store.paymentsPage(storeCtx, { lenderId: empty.id, from: null, to: null, sort: 'newest', after: null, take: 10 })).toEqual([]);
    });

    test('payments sent and not yet settled are in flight; the ones the processor refused are not', async () => {
      const body = { api_key: 'sbx_reads_contract_000001', rail_scope: 'both', is_default: true };
      const key = await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body });
      expect(key.status).toBe(201);
      const borrowers = [
        enrollBorrower('settles', { collectable_amount: 42500 }),
        enrollBorrower('returns', { collectable_amount: 42591 }),
        enrollBorrower('late', { collectable_amount: 42595 }),
        enrollBorrower('pending', { collectable_amount: 42597 }),
        enrollBorrower('invalid', { collectable_amount: 42596 }),
      ];
      expect((await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers } })).status).toBeLessThan(300);
      createdAt = ctx.clock.now();
      await cycle(ctx);
      const flight = await store.inFlightTotals(storeCtx, lender.id, 0);
      expect(flight).toEqual({ amount: 42500n + 42591n + 42595n + 42597n, count: 4 });
      expect(typeof flight.count).toBe('number');
      // `from` is on the creation time, included.
      expect(await store.inFlightTotals(storeCtx, lender.id, createdAt)).toEqual(flight);
      expect(await store.inFlightTotals(storeCtx, lender.id, createdAt + 1)).toEqual({ amount: 0n, count: 0 });
      expect(await store.paymentCountsByStatus(storeCtx, lender.id)).toEqual({ ...zeros(PAYMENT_STATUSES), processing: 4, invalid: 1 });
    });

    test('after settlement: the ledger, the returned references once each, the counts by state and status', async () => {
      await dispatchAndSettle(ctx, SETTLE);
      const settledAt = ctx.clock.now();
      // Credited: the settled one and the late one (before it came back); reversed: the late one. R01 was never credited.
      expect(await store.ledgerTotals(storeCtx, lender.id, 0)).toEqual({ credited: 42500n + 42595n, reversed: 42595n });
      expect(await store.ledgerTotals(storeCtx, lender.id, settledAt + 1)).toEqual({ credited: 0n, reversed: 0n });
      const byDay = await store.ledgerTotalsByDay(storeCtx, lender.id, 0);
      expect(byDay).toEqual([{ day: Math.floor(createdAt / DAY_MS) * DAY_MS, credited: 42500n + 42595n, reversed: 42595n }]);
      expect(typeof byDay[0]!.day).toBe('number');
      expect(await store.ledgerTotalsByDay(storeCtx, lender.id, settledAt + 1)).toEqual([]);
      expect(await store.inFlightTotals(storeCtx, lender.id, 0)).toEqual({ amount: 42597n, count: 1 });
      expect(await store.returnedTotals(storeCtx, lender.id, 0)).toEqual({ amount: 42591n + 42595n, count: 2 });
      expect(await store.returnedTotals(storeCtx, lender.id, settledAt + 1)).toEqual({ amount: 0n, count: 0 });
      expect(await store.borrowerCountsByState(storeCtx, lender.id)).toEqual({ ...zeros(MONITOR_STATES), monitored: 2, collected: 1, stopped: 2 });
      expect(await store.paymentCountsByStatus(storeCtx, lender.id)).toEqual({
        ...zeros(PAYMENT_STATUSES),
        processing: 1,
        settled: 1,
        returned: 1,
        late_returned: 1,
        invalid: 1,
      });
      // Another lender's figures hold none of these.
      expect(await store.ledgerTotals(storeCtx, ctx.lender.id, 0)).toEqual({ credited: 0n, reversed: 0n });
    });

    test('sums past 2^53 cents are exact; a reference returned twice is counted once, at its amount', async () => {
      const big = ctx.newLender();
      expect((await ctx.json('POST', '/v1/payment_enrollments', { key: big.key, body: { borrowers: [enrollBorrower('big')] } })).status).toBeLessThan(300);
      const [e] = await ctx.rows<{ id: string }>('SELECT id FROM enrollments WHERE lender_id = ?', big.id);
      const at = ctx.clock.now();
      const LARGE = 9_007_199_254_740_000;
      // A settled or returned event, and for a settlement the credit it made in the borrower's ledger.
      let n = 0;
      const event = (reference: string, status: string, cents: number, kind?: 'credit' | 'reversal') => {
        const id = `${big.id}-ev${++n}`;
        ctx.sql
          .query(
            `INSERT INTO payment_events (id, lender_id, enrollment_id, authorizer_unique_id, reference, status, amount_cents, source,
                                         source_event_id, occurred_at, recorded_at)
             VALUES (?, ?, ?, 'big', ?, ?, ?, 'upload', ?, ?, ?)`,
          )
          .run(id, big.id, e!.id, reference, status, cents, `s${n}`, at, at);
        if (kind) {
          ctx.sql
            .query('INSERT INTO ledger_entries (lender_id, enrollment_id, reference, kind, amount_cents, event_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)')
            .run(big.id, e!.id, reference, kind, cents, id, at);
        }
      };
      event('BIG-1', 'settled', LARGE, 'credit');
      event('BIG-2', 'settled', 5000, 'credit');
      event('BIG-2', 'late_returned', 5000, 'reversal');
      event('BIG-3', 'returned', LARGE);
      event('BIG-3', 'returned', LARGE);
      const credited = BigInt(LARGE) + 5000n;
      expect(credited).toBeGreaterThan(BigInt(Number.MAX_SAFE_INTEGER));
      expect(await store.ledgerTotals(storeCtx, big.id, 0)).toEqual({ credited, reversed: 5000n });
      expect(await store.ledgerTotalsByDay(storeCtx, big.id, 0)).toEqual([{ day: Math.floor(at / DAY_MS) * DAY_MS, credited, reversed: 5000n }]);
      expect(await store.returnedTotals(storeCtx, big.id, 0)).toEqual({ amount: BigInt(LARGE) + 5000n, count: 2 });
    });

    test('a borrower’s events, oldest first, with their codes; nothing for another lender', async () => {
      const events = await store.eventsOfBorrower(storeCtx, lender.id, 'late');
      expect(events.map((e) => [e.status, e.returnCode, e.amountCents])).toEqual([
        ['processing', null, 42595],
        ['settled', null, 42595],
        ['late_returned', 'R10', 42595],
      ]);
      const recorded = events.map((e) => e.recordedAt);
      expect(recorded).toEqual([...recorded].sort((a, b) => a - b));
      expect(typeof events[0]!.occurredAt).toBe('number');
      expect(new Set(events.map((e) => e.reference)).size).toBe(1);
      expect(await store.eventsOfBorrower(storeCtx, ctx.lender.id, 'late')).toEqual([]);
      // The API answers from the same read.
      const api = await ctx.json('GET', '/v1/payment_events?authorizer_unique_id=late', { key: lender.key });
      expect(api.status).toBe(200);
      expect(api.body.events.map((e: { status: string }) => e.status)).toEqual(['processing', 'settled', 'late_returned']);
    });

    test('paymentsPage: each sort, ties by id, pages after a position, the status and day filters', async () => {
      const amounts = (rows: PaymentRow[]) => rows.map((p) => p.amountCents);
      expect(amounts(await page({ sort: 'amount_asc' }))).toEqual([42500, 42591, 42595, 42596, 42597]);
      expect(amounts(await page({ sort: 'amount_desc' }))).toEqual([42597, 42596, 42595, 42591, 42500]);
      // Made in one decision round: the same creation time, so the id decides.
      const all = await page({ sort: 'oldest' });
      const ids = all.map((p) => p.id);
      expect(ids).toEqual([...ids].sort());
      expect((await page({ sort: 'newest' })).map((p) => p.id)).toEqual([...ids].reverse());
      expect(all.every((p) => typeof p.createdAt === 'number' && typeof p.amountCents === 'number' && p.createdAt === createdAt)).toBe(true);
      const settled = all.find((p) => p.status === 'settled')!;
      expect(typeof settled.settledAt).toBe('number');
      expect(all.find((p) => p.status === 'processing')!.settledAt).toBeNull();
      // A page at a time, each after the last row of the one before: every payment once, in order.
      for (const sort of ['oldest', 'newest', 'amount_asc', 'amount_desc'] as const) {
        const seen: PaymentRow[] = [];
        let after: PaymentPageQuery['after'] = null;
        for (;;) {
          const rows = await page({ sort, after, take: 2 });
          expect(rows.length).toBeLessThanOrEqual(2);
          seen.push(...rows);
          if (rows.length < 2) break;
          const last = rows[rows.length - 1]!;
          after = { k: sort.startsWith('amount') ? last.amountCents : last.createdAt, i: last.id };
        }
        expect(seen.map((p) => p.id)).toEqual((await page({ sort })).map((p) => p.id));
      }
      expect((await page({ status: 'returned' })).map((p) => [p.amountCents, p.returnCode])).toEqual([[42591, 'R01']]);
      expect(await page({ status: 'scheduled' })).toEqual([]);
      // from included, to excluded.
      expect(await page({ from: createdAt })).toHaveLength(5);
      expect(await page({ from: createdAt + 1 })).toEqual([]);
      expect(await page({ to: createdAt })).toEqual([]);
      expect(await page({ from: createdAt, to: createdAt + 1, status: 'invalid' })).toHaveLength(1);
      expect(await page({ take: 3 })).toHaveLength(3);
      expect(await store.paymentsPage(storeCtx, { lenderId: ctx.lender.id, from: null, to: null, sort: 'newest', after: null, take: 10 })).toEqual([]);
    });
  },
  { env: { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(DAY_MS) } },
);
