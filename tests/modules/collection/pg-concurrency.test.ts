// engine: postgres
// Collection on PostgreSQL, where transactions run side by side (READ COMMITTED): every check-then-write that
// SQLite's single writer made safe holds with 20 callers at once. The dispatch claim never leases a payment
// twice; of concurrent status movers from one status exactly one moves; observations of one reference are
// recorded one at a time (one event per status, whatever arrives together); one decision per borrower creates
// one payment; one page of a key's feed at a time counts each processor payment once; a send's claim waits for
// a removal in progress and sees its outcome. Without DATABASE_URL=postgres://… one test says it does not apply.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { and, eq, sql } from 'drizzle-orm';
import { enrollments, ingestedPayments, lenders, paymentConnections, paymentEvents, paymentObservationsSetAside, payments } from '../../../db/schema-pg';
import { onPostgres, freshPgDatabase } from '../../helpers/pg';
import { openPg, pgCode, type PgHandle } from '../../../src/platform/pg';
import { transaction } from '../../../src/platform/context';
import { replicaPrefix } from '../../../src/platform/lease-token';
import type { StoreCtx, TxCtx } from '../../../src/platform/store';
import { DISPATCH_LEASE_MS } from '../../../src/modules/collection/store';
import { referenceKey } from '../../../src/modules/collection/store.pg';
import { knownAmong, recordNotAttempted, recordObservation, recordSlice, releaseScheduled, type Observation } from '../../../src/modules/collection/record';
import { newId } from '../../../src/platform/ids';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;
const NOW = Date.UTC(2026, 0, 5, 12);

if (!onPostgres) {
  test('not applicable without DATABASE_URL=postgres://… (PostgreSQL concurrency of the collection store)', () => {});
} else {
  let db: ReturnType<typeof freshPgDatabase>;
  let pg: PgHandle;
  let ctx: StoreCtx;
  /** What recordObservation reads of its deps beside the pool: the clock and the counters it moves. */
  let jobCtx: Parameters<typeof recordObservation>[0] extends infer C ? Omit<C, 'tx'> : never;

  beforeAll(() => {
    db = freshPgDatabase();
    // Room for every caller's transaction at once, and for a removal beside each claim.
    pg = openPg(db.url, { max: 2 * CALLERS + 5 });
    ctx = { deps: pgStoreDeps(pg) };
    const counter = { inc: () => {} };
    jobCtx = {
      deps: {
        ...ctx.deps,
        clock: { now: () => NOW },
        metrics: { paymentEvents: counter, paymentObservationsStale: counter, paymentObservationsSetAside: counter },
        logger: { error: () => {} },
        config: {},
      },
    } as unknown as typeof jobCtx;
  });
  afterAll(async () => {
    await pg?.close();
    db?.drop();
  });

  const inTx = <T>(fn: (c: TxCtx) => Promise<T>) => transaction(ctx, fn);
  const all = <T>(fn: (i: number) => Promise<T>) => Promise.all(Array.from({ length: CALLERS }, (_, i) => fn(i)));

  /** A lender with a processor key. */
  async function lender(): Promise<{ lenderId: string; connectionId: string }> {
    const lenderId = newId();
    const connectionId = newId();
    await pg.db.insert(lenders).values({ id: lenderId, name: `lender ${lenderId}`, createdAt: NOW });
    await pg.db.insert(paymentConnections).values({
      id: connectionId,
      lenderId,
      processor: 'sandbox',
      label: 'key',
      railScope: 'ach',
      isDefault: true,
      keySealed: 'sealed',
      createdAt: NOW,
      updatedAt: NOW,
    });
    return { lenderId, connectionId };
  }

  /** A monitored borrower of the lender. */
  async function borrower(lenderId: string): Promise<{ id: string; aid: string }> {
    const id = newId();
    const aid = `aid-${id}`;
    await pg.db.insert(enrollments).values({
      id,
      lenderId,
      authorizerUniqueId: aid,
      state: 'monitored',
      collectableAmountCents: 10_000,
      daysPastDue: 10,
      rail: 'ach',
      sealed: 'sealed',
      paymentsUsed: 0,
      enrolledAt: NOW,
      updatedAt: NOW,
    });
    return { id, aid };
  }

  /** A payment of the borrower: initiating and due for dispatch unless told otherwise. */
  async function payment(
    k: { lenderId: string; connectionId: string },
    b: { id: string; aid: string },
    over: Partial<typeof payments.$inferInsert> = {},
  ): Promise<typeof payments.$inferInsert> {
    const id = newId();
    const row: typeof payments.$inferInsert = {
      id,
      lenderId: k.lenderId,
      enrollmentId: b.id,
      authorizerUniqueId: b.aid,
      connectionId: k.connectionId,
      rail: 'ach',
      amountCents: 5_000,
      reference: `DRS-${b.aid}-${id}`,
      status: 'initiating',
      state: 'pending',
      nextAttemptAt: NOW,
      createdAt: NOW,
      updatedAt: NOW,
      ...over,
    };
    await pg.db.insert(payments).values(row);
    return row;
  }

  describe('the dispatch queue', () => {
    test('20 concurrent claimers never lease one payment twice, and every due payment is leased', async () => {
      const k = await lender();
      const due: string[] = [];
      for (let i = 0; i < 3 * CALLERS; i++) due.push((await payment(k, await borrower(k.lenderId), { nextAttemptAt: NOW - i * 1000 })).id!);
      // Leased by another claimer already (this replica's, before a restart), and not due yet: neither is claimed.
      await payment(k, await borrower(k.lenderId), { leaseUntil: NOW + 1, leaseToken: `${replicaPrefix()}before/1` });
      // Leased by another replica: not released at this one's start either.
      await payment(k, await borrower(k.lenderId), { leaseUntil: NOW + 1, leaseToken: 'another-replica/x/1' });
      await payment(k, await borrower(k.lenderId), { nextAttemptAt: NOW + 1 });

      const claims = await all(() => ctx.deps.stores.dispatch.claimDuePayments(ctx, 5, NOW));
      const rest = await ctx.deps.stores.dispatch.claimDuePayments(ctx, 1000, NOW);
      const ids = [...claims.flat(), ...rest].map((p) => p.id);
      expect(ids.length).toBe(due.length);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(ids)).toEqual(new Set(due));
      // Each claim in the order of its rows' due times, oldest first, with what dispatch needs of a row.
      for (const claim of claims) {
        const times = claim.map((p) => due.indexOf(p.id));
        expect(times).toEqual([...times].sort((a, b) => b - a));
      }
      const one = claims.flat()[0]!;
      expect(one).toEqual({
        id: one.id,
        lenderId: k.lenderId,
        enrollmentId: expect.any(String),
        authorizerUniqueId: expect.any(String),
        connectionId: k.connectionId,
        rail: 'ach',
        amountCents: 5_000,
        reference: expect.stringMatching(/^DRS-/),
        attempts: 0,
        attempt: 1,
        leaseToken: expect.stringMatching(new RegExp(`^${replicaPrefix()}`)),
      });
      // One token per claim: no two claims share one.
      const nonEmpty = claims.filter((c) => c.length > 0);
      expect(new Set(nonEmpty.map((c) => c[0]!.leaseToken)).size).toBe(nonEmpty.length);
      for (const c of nonEmpty) expect(new Set(c.map((p) => p.leaseToken)).size).toBe(1);
      const leased = await pg.db.select({ until: payments.leaseUntil }).from(payments).where(sql`${payments.id} = ANY(${sql.param(due)}::text[])`);
      expect(leased.every((r) => r.until === NOW + DISPATCH_LEASE_MS)).toBe(true);
      expect(await ctx.deps.stores.dispatch.claimDuePayments(ctx, 1000, NOW)).toEqual([]);

      // Finished, retried and released: a retried payment is due again at its time, a released one at once.
      const held = new Map([...claims.flat(), ...rest].map((p) => [p.id, p]));
      // A finish naming another claim's token changes nothing.
      expect(await inTx((c) => c.deps.stores.dispatch.finishDue(c, { id: due[0]!, leaseToken: 'another-replica/x/1' }, { state: 'done' }))).toBe(false);
      expect(await inTx((c) => c.deps.stores.dispatch.finishDue(c, held.get(due[0]!)!, { state: 'done' }))).toBe(true);
      expect(await inTx((c) => c.deps.stores.dispatch.finishDue(c, held.get(due[1]!)!, { state: 'pending', attempts: 1, nextAttemptAt: NOW + 5_000 }))).toBe(true);
      // At start a replica lets go of its own claims only.
      expect(await inTx((c) => c.deps.stores.dispatch.releasePaymentLeases(c, 'a-third-replica/'))).toBe(0);
      expect(await inTx((c) => c.deps.stores.dispatch.releasePaymentLeases(c, replicaPrefix()))).toBe(due.length - 2 + 1);
      const again = await ctx.deps.stores.dispatch.claimDuePayments(ctx, 1000, NOW + 5_000);
      expect(again.map((p) => p.id)).not.toContain(due[0]);
      expect(again.find((p) => p.id === due[1])?.attempts).toBe(1);
      // Besides: this replica's claim from before (released), another replica's whose lease has run out (taken
      // over, never before), and the one whose time has come.
      expect(again.length).toBe(due.length - 1 + 3);
    });
  });

  describe('forward-only status moves', () => {
    test('of 20 concurrent movers from the status they read, exactly one moves the payment', async () => {
      const k = await lender();
      const p = await payment(k, await borrower(k.lenderId));
      const moved = await all((i) =>
        inTx(async (c) => {
          await c.deps.stores.outcomes.movePaymentStatus(c, { id: p.id!, from: 'initiating', status: i % 2 ? 'settled' : 'processing', returnCode: null, message: `mover ${i}`, now: NOW + i, settledAt: null, reportHold: '' });
          const [row] = await (c.tx as unknown as PgHandle['db']).select({ message: payments.message }).from(payments).where(eq(payments.id, p.id!));
          return row!.message === `mover ${i}`;
        }),
      );
      expect(moved.filter(Boolean).length).toBe(1);
      const winner = moved.indexOf(true);
      const [row] = await pg.db.select().from(payments).where(eq(payments.id, p.id!));
      expect(row).toMatchObject({ status: winner % 2 ? 'settled' : 'processing', message: `mover ${winner}`, updatedAt: NOW + winner });
    });

    const own = (p: typeof payments.$inferInsert) => ({
      id: p.id!,
      lenderId: p.lenderId!,
      reference: p.reference!,
      amountCents: p.amountCents!,
      enrollmentId: p.enrollmentId!,
      authorizerUniqueId: p.authorizerUniqueId!,
      connectionId: p.connectionId!,
    });

    test('of 20 concurrent give-ups of one payment, one moves it to not_attempted, records its event and gives its presentment back once', async () => {
      const k = await lender();
      const b = await borrower(k.lenderId);
      await pg.db.update(enrollments).set({ paymentsUsed: 3 }).where(eq(enrollments.id, b.id));
      const p = await payment(k, b);
      const moved = await all((i) =>
        transaction(jobCtx, async (c) => {
          await c.deps.stores.dispatch.finishDue(c, { id: p.id!, leaseToken: `claim ${i}` }, { state: 'done' });
          if (!(await recordNotAttempted(c, own(p), `gave up ${i}`, 'never_sent'))) return false;
          await c.deps.stores.enrollments.giveBackPresentment(c, b.id, NOW);
          return true;
        }),
      );
      expect(moved.filter(Boolean).length).toBe(1);
      const [e] = await pg.db.select({ used: enrollments.paymentsUsed }).from(enrollments).where(eq(enrollments.id, b.id));
      expect(e!.used).toBe(2);
      expect(await ctx.deps.stores.outcomes.paymentStatusOf(ctx, p.id!)).toBe('not_attempted');
      const events = await pg.db.select({ status: paymentEvents.status, source: paymentEvents.source }).from(paymentEvents).where(eq(paymentEvents.paymentId, p.id!));
      expect(events).toEqual([{ status: 'not_attempted', source: 'service' }]);
    });

    test('a give-up waits for a send claimed beside it and then ends nothing: a payment claimed may be at the processor', async () => {
      const k = await lender();
      const b = await borrower(k.lenderId);
      const p = await payment(k, b, { leaseToken: 'claim-1' });
      // The claim commits first; the give-up that read the payment before it finds a first attempt and stops.
      const claimed = await inTx((c) => c.deps.stores.dispatch.claimSend(c, { id: p.id!, leaseToken: 'claim-1' }, NOW));
      expect(claimed).toBe(true);
      expect(await transaction(jobCtx, (c) => recordNotAttempted(c, own(p), 'gave up', 'never_sent'))).toBe(false);
      expect(await ctx.deps.stores.outcomes.paymentStatusOf(ctx, p.id!)).toBe('initiating');
      // The processor's word ends it all the same.
      expect(await transaction(jobCtx, (c) => recordNotAttempted(c, own(p), 'absent', 'absent_at_processor'))).toBe(true);
      expect(await ctx.deps.stores.outcomes.paymentStatusOf(ctx, p.id!)).toBe('not_attempted');
    });

    test('of 20 concurrent releases of a scheduled payment on its day, one releases it; the rest find it released', async () => {
      const k = await lender();
      const b = await borrower(k.lenderId);
      const p = await payment(k, b, { status: 'scheduled', state: 'done', debitOn: NOW });
      const released = await all(() => transaction(jobCtx, (c) => releaseScheduled(c, own(p))));
      expect(released.filter(Boolean).length).toBe(1);
      const [row] = await pg.db.select().from(payments).where(eq(payments.id, p.id!));
      expect(row).toMatchObject({ status: 'initiating', state: 'pending', nextAttemptAt: NOW });
      expect(await ctx.deps.stores.decisions.scheduledPaymentOf(ctx, b.id)).toBeNull();
    });
  });

  describe('recording observations of one reference', () => {
    const observation = (k: { lenderId: string; connectionId: string }, p: typeof payments.$inferInsert, o: Partial<Observation>): Observation => ({
      lenderId: k.lenderId,
      reference: p.reference!,
      status: 'processing',
      amountCents: p.amountCents!,
      returnCode: null,
      message: null,
      occurredAt: NOW,
      // The processor's word: an upload of the service's own payment is the lender's report, which moves nothing.
      source: 'processor',
      sourceEventId: newId(),
      // The borrower's monitor and ledger are other stores' and other tests': the payment's own status here.
      enrollmentId: null,
      authorizerUniqueId: null,
      paymentId: p.id!,
      connectionId: null,
      ...o,
    });
    const record = (o: Observation) => transaction(jobCtx, (c) => recordObservation(c, o));
    const eventsOf = (reference: string) => pg.db.select().from(paymentEvents).where(eq(paymentEvents.reference, reference));

    test('20 concurrent observations of one status, from different source events: one event, the others stale', async () => {
      const k = await lender();
      const p = await payment(k, await borrower(k.lenderId));
      const results = await all(() => record(observation(k, p, { status: 'processing' })));
      expect(results.filter((r) => r.recorded).length).toBe(1);
      expect(results.filter((r) => !r.recorded && r.why === 'stale').length).toBe(CALLERS - 1);
      expect((await eventsOf(p.reference!)).map((e) => e.status)).toEqual(['processing']);
      expect(await ctx.deps.stores.outcomes.paymentStatusOf(ctx, p.id!)).toBe('processing');
    });

    test('20 concurrent observations moving one payment along its statuses: each status recorded at most once, in order', async () => {
      const k = await lender();
      const p = await payment(k, await borrower(k.lenderId));
      // Refunded rather than a late return: a return read from the processor also moves the lender's return rates.
      const statuses = ['processing', 'settled', 'refunded'] as const;
      await all((i) => record(observation(k, p, { status: statuses[i % 3]!, occurredAt: NOW + i })));
      const events = (await eventsOf(p.reference!)).sort((a, b) => a.recordedAt - b.recordedAt || (a.id < b.id ? -1 : 1));
      const recorded = events.map((e) => e.status);
      expect(new Set(recorded).size).toBe(recorded.length);
      // Forward only: each recorded status is ahead of the one before it, and the payment is at the last.
      expect(recorded.map((s) => statuses.indexOf(s as (typeof statuses)[number]))).toEqual(
        [...recorded.map((s) => statuses.indexOf(s as (typeof statuses)[number]))].sort((a, b) => a - b),
      );
      expect(await ctx.deps.stores.outcomes.paymentStatusOf(ctx, p.id!)).toBe(recorded.at(-1) as never);
      const last = await ctx.deps.stores.outcomes.lastEventOf(ctx, k.lenderId, p.reference!);
      expect(last?.status).toBe(recorded.at(-1) as never);
    });

    test('the same source event delivered 20 times at once is recorded once, the others seen', async () => {
      const k = await lender();
      const p = await payment(k, await borrower(k.lenderId));
      const o = observation(k, p, { status: 'settled', sourceEventId: 'evt-1' });
      const results = await all(() => record(o));
      expect(results.filter((r) => r.recorded).length).toBe(1);
      expect(results.filter((r) => !r.recorded && r.why === 'seen').length).toBe(CALLERS - 1);
      expect((await eventsOf(p.reference!)).length).toBe(1);
    });

    test('what a slice read of its references (knownAmong) stands until it is recorded: 20 slices at once, one event', async () => {
      const k = await lender();
      const p = await payment(k, await borrower(k.lenderId));
      const results = await all(() =>
        transaction(jobCtx, async (c) => {
          const o = observation(k, p, { status: 'processing' });
          const [known] = await knownAmong(c, k.lenderId, 'processor', [o]);
          return recordObservation(c, { ...o, known: known!, paymentId: null });
        }),
      );
      expect(results.filter((r) => r.recorded).length).toBe(1);
      expect((await eventsOf(p.reference!)).length).toBe(1);
    });

    test('two batches that lock one another out: one is rolled back whole (to be read again), nothing is set aside', async () => {
      const k = await lender();
      const p1 = await payment(k, await borrower(k.lenderId));
      // Two references of different lock buckets: in one bucket the second batch would wait for the first at its
      // first reference, before either held one the other wants.
      let p2 = await payment(k, await borrower(k.lenderId));
      while (referenceKey(k.lenderId, p2.reference!) === referenceKey(k.lenderId, p1.reference!)) p2 = await payment(k, await borrower(k.lenderId));
      let arrived = 0;
      let both!: () => void;
      const bothHold = new Promise<void>((r) => (both = r));
      // Each records one reference, waits until the other holds its own, then records the other's.
      const batch = (first: typeof p1, second: typeof p1) =>
        transaction(jobCtx, async (c) => {
          await recordSlice(c, [observation(k, first, { status: 'processing' })]);
          if (++arrived === 2) both();
          await bothHold;
          await recordSlice(c, [observation(k, second, { status: 'processing' })]);
        }).then(
          () => 'committed',
          (e: unknown) => pgCode(e),
        );
      const outcomes = await Promise.all([batch(p1, p2), batch(p2, p1)]);
      expect(outcomes.sort()).toEqual(['40P01', 'committed']);
      expect(await pg.db.select().from(paymentObservationsSetAside)).toEqual([]);
      expect((await eventsOf(p1.reference!)).length).toBe(1);
      expect((await eventsOf(p2.reference!)).length).toBe(1);
    });

    test('references locked many at a time, in any order of arrival, never deadlock one another', async () => {
      const k = await lender();
      const refs = Array.from({ length: 10 }, (_, i) => `REF-${i}`);
      await all((i) =>
        inTx(async (c) => {
          // Each caller holds its own shuffle of the references, some of them twice.
          const mine = refs.map((_, j) => refs[(j * (i + 1) + i) % refs.length]!);
          await c.deps.stores.outcomes.serializeReferences(c, k.lenderId, mine);
          await c.deps.stores.outcomes.serializeReferences(c, k.lenderId, [mine[0]!]);
        }),
      );
    });
  });

  describe('one decision per borrower', () => {
    test('20 concurrent decisions for one borrower create one payment and count its presentment once', async () => {
      const k = await lender();
      const b = await borrower(k.lenderId);
      // The decision's reads and writes as decideCollection makes them, behind its serializeBorrowers.
      const created = await all(() =>
        inTx(async (c) => {
          await c.deps.stores.decisions.serializeBorrowers(c, [b.id]);
          const e = await c.deps.stores.decisions.enrollmentToDecide(c, b.id);
          if (!e || e.state !== 'monitored') return false;
          if (await c.deps.stores.decisions.scheduledPaymentOf(c, b.id)) return false;
          if (await c.deps.stores.decisions.paymentInFlight(c, b.id)) return false;
          const history = await c.deps.stores.decisions.paymentHistory(c, b.id);
          const id = newId();
          const attempt = history.length + 1;
          await c.deps.stores.decisions.createPayment(c, {
            id,
            lenderId: k.lenderId,
            enrollmentId: b.id,
            authorizerUniqueId: b.aid,
            connectionId: k.connectionId,
            rail: 'ach',
            amountCents: e.collectableAmountCents,
            reference: `DRS-${b.aid}-${id}`,
            status: 'initiating',
            attempt,
            state: 'pending',
            nextAttemptAt: NOW,
            createdAt: NOW,
            updatedAt: NOW,
          });
          await c.deps.stores.enrollments.setPaymentsUsed(c, b.id, attempt, NOW);
          return true;
        }),
      );
      expect(created.filter(Boolean).length).toBe(1);
      expect((await ctx.deps.stores.decisions.paymentHistory(ctx, b.id)).length).toBe(1);
      expect((await ctx.deps.stores.decisions.chainInputsOf(ctx, b.id))?.collectableAmountCents).toBe(10_000);
      const [e] = await pg.db.select({ used: enrollments.paymentsUsed }).from(enrollments).where(eq(enrollments.id, b.id));
      expect(e!.used).toBe(1);
    });
  });

  describe("one page of a key's feed at a time", () => {
    test('20 concurrent pages carrying one processor payment ingest it once and count it once', async () => {
      const k = await lender();
      // The page's reads and writes as recordPage makes them, behind its serializeFeed; all read from the
      // same cursor, so one moves it and the others find it moved.
      let moved = 0;
      await all(() =>
        inTx(async (c) => {
          await c.deps.stores.matching.serializeFeed(c, k.connectionId);
          let ingested = 0;
          if ((await c.deps.stores.matching.ingestedAmong(c, k.connectionId, ['pi_1'])).length === 0) {
            await c.deps.stores.matching.saveIngested(c, k.connectionId, [{ id: 'pi_1', matched: false }]);
            ingested++;
          }
          if (await c.deps.stores.feeds.recordPoll(c, k.connectionId, { from: null, cursor: 'c1', at: NOW, error: null, reconcileDue: false, ingested, matched: 0 })) moved++;
        }),
      );
      expect(moved).toBe(1);
      const rows = await pg.db.select().from(ingestedPayments).where(eq(ingestedPayments.connectionId, k.connectionId));
      expect(rows).toEqual([{ connectionId: k.connectionId, processorPaymentId: 'pi_1', matched: false }]);
      const [conn] = await pg.db.select().from(paymentConnections).where(eq(paymentConnections.id, k.connectionId));
      expect(conn).toMatchObject({ ingested: 1, matched: 0, pollCursor: 'c1', lastPollAt: NOW });
    });
  });

  describe("a send's claim against a removal in progress", () => {
    test('20 claims each wait for the removal of their borrower: none claims a removed borrower, each claims one whose removal rolled back', async () => {
      const k = await lender();
      const pairs = await Promise.all(
        Array.from({ length: CALLERS }, async () => {
          const b = await borrower(k.lenderId);
          const p = await payment(k, b);
          // Held by a dispatch claim, as a send is claimed.
          await pg.db.update(payments).set({ leaseToken: `claim-${p.id}` }).where(eq(payments.id, p.id!));
          return { b, p };
        }),
      );
      const outcomes = await all(async (i) => {
        const { b, p } = pairs[i]!;
        const commits = i % 2 === 0;
        let changed!: () => void;
        const removing = new Promise<void>((r) => (changed = r));
        let finish!: () => void;
        const held = new Promise<void>((r) => (finish = r));
        const removal = inTx(async (c) => {
          await (c.tx as unknown as PgHandle['db']).update(enrollments).set({ state: 'removed' }).where(eq(enrollments.id, b.id));
          changed();
          await held;
          if (!commits) throw new Error('rolled back');
        }).catch(() => undefined);
        await removing;
        let settled = false;
        const claim = inTx((c) => c.deps.stores.dispatch.claimSend(c, { id: p.id!, leaseToken: `claim-${p.id}` }, NOW)).finally(() => (settled = true));
        await Bun.sleep(100);
        // Still waiting for the removal's row.
        const waited = !settled;
        finish();
        await removal;
        return { commits, claimed: await claim, waited };
      });
      for (const o of outcomes) {
        expect(o.waited).toBe(true);
        expect(o.claimed).toBe(!o.commits);
      }
      const claimed = await pg.db
        .select({ at: payments.firstAttemptAt })
        .from(payments)
        .where(and(eq(payments.connectionId, k.connectionId), sql`${payments.firstAttemptAt} IS NOT NULL`));
      expect(claimed.length).toBe(CALLERS / 2);
      expect(claimed.every((r) => r.at === NOW)).toBe(true);
    });
  });
}
