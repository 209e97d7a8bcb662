// engine: postgres
// The balance pipeline's rules that SQLite's single writer kept for free, held on PostgreSQL by transactions
// running side by side under READ COMMITTED: 20 callers at once for each, on a database of their own.
//   - a lender never has more authorizers waiting than its bound, whichever path accepts them (a request, or
//     an on-demand run or read that counts and then inserts in its own transaction);
//   - an identical body sent 20 times at once makes one batch; the others replay its answer;
//   - no due read is leased by two claims, and each claim still takes its fair share per lender;
//   - a waiting batch is started once, and an erasure running at the same moment misses none of its rows;
//   - results are recorded once per item, and flushes counting the same batches do not deadlock.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { transaction } from '../../../src/platform/context';
import { replicaPrefix } from '../../../src/platform/lease-token';
import { openPg, type PgHandle } from '../../../src/platform/pg';
import type { StoreCtx, TxCtx } from '../../../src/platform/store';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';
import { ITEM_LEASE_MS, type Acceptance, type ClaimedItem, type ResultRow } from '../../../src/modules/balance-requests/store';
import { insertBatch, refuseOverBacklog } from '../../../src/modules/balance-requests/service';
import { startPendingBatches } from '../../../src/modules/balance-requests/processing';
import { eraseBorrowerDetails } from '../../../src/modules/balance-requests/erase';
import { compressPacked, packItems, type PackedBatch, type QueuedAuthorizer } from '../../../src/modules/balance-requests/payload';
import { RateLimited } from '../../../src/platform/errors';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;
const NOW = 1_764_000_000_000;

if (!onPostgres) {
  test('PostgreSQL: not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  describe('the balance store on PostgreSQL, 20 callers at once', () => {
    let db: ReturnType<typeof freshPgDatabase>;
    let pg: PgHandle;
    let ctx: StoreCtx;
    let seq = 0;
    const newId = (p: string) => `${p}-${String(++seq).padStart(6, '0')}`;

    /** One query's rows, on the pool. */
    const q = async <T>(query: ReturnType<typeof sql>) => (await pg.db.execute(query)) as unknown as T[];
    const one = async (query: ReturnType<typeof sql>) => Number(((await q<{ n: unknown }>(query))[0] as { n: unknown }).n);

    async function newLender(): Promise<string> {
      const id = newId('lender');
      await pg.db.execute(sql`INSERT INTO lenders (id, name, created_at) VALUES (${id}, ${id}, ${NOW})`);
      return id;
    }

    const authorizer = (id: string, phone: string | null = '5550100'): QueuedAuthorizer => ({
      id,
      type: 'ACCOUNT_NUMBER',
      routing: '021000021',
      phone,
      zip: '10001',
      meta: { ref: id },
      threshold: null,
    });

    const packed = (items: QueuedAuthorizer[]): PackedBatch => ({ count: items.length, sealed: 'sealed', items: compressPacked(packItems(items)) });

    const acceptance = (lenderId: string, total: number, maxPending: number, bodyHash: string | null): Acceptance => {
      const id = newId('batch');
      return {
        batch: { id, lenderId, source: 'api', scheduleId: null, webhookUrl: null, creator: null, now: NOW, total },
        payload: { sealed: 'sealed', items: packed(Array.from({ length: total }, (_, i) => authorizer(`${id}-a${i}`))).items },
        replay: bodyHash ? { bodyHash, since: NOW - 86_400_000, responseBody: JSON.stringify({ batch_id: id }) } : null,
        maxPending,
      };
    };

    /** A processing batch of `n` items of one lender, started through the store. */
    async function processingBatch(lenderId: string, n: number, prefix = 'aid'): Promise<string> {
      const items = Array.from({ length: n }, (_, i) => authorizer(`${prefix}-${i}`));
      const id = await transaction(ctx, (tx) => insertBatch({ ctx: tx as never, input: { lenderId, source: 'api', authorizers: packed(items), now: NOW } }));
      await transaction(ctx, async (tx) => {
        expect(await tx.deps.stores.balances.lockWaitingBatch(tx, id)).toBe(true);
        await tx.deps.stores.balances.startBatch(tx, id, lenderId, items);
      });
      return id;
    }

    beforeAll(() => {
      db = freshPgDatabase();
      pg = openPg(db.url, { max: CALLERS + 5 });
      ctx = { deps: pgStoreDeps(pg) };
    });

    afterAll(async () => {
      await pg?.close();
      db?.drop();
    });

    test('the per-lender bound on the accept path: 20 requests of 1 under a bound of 10 make exactly 10 batches', async () => {
      const lenderId = await newLender();
      const outcomes = await Promise.all(Array.from({ length: CALLERS }, () => ctx.deps.stores.balances.acceptBatch(ctx, acceptance(lenderId, 1, 10, null))));
      expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(10);
      const refused = outcomes.filter((o) => o.kind === 'over_backlog');
      expect(refused).toHaveLength(10);
      for (const o of refused) expect(o).toEqual({ kind: 'over_backlog', pending: 10 });
      expect(await one(sql`SELECT count(*)::int AS n FROM batches WHERE lender_id = ${lenderId}`)).toBe(10);
      expect(await ctx.deps.stores.balances.pendingAuthorizers(ctx, lenderId)).toBe(10);
    });

    test('the per-lender bound where the service counts then inserts (on-demand runs and reads), mixed with requests', async () => {
      const lenderId = await newLender();
      const deps = { ...ctx.deps, config: { maxPendingAuthorizersPerLender: 30 } };
      // Ten transactions that count with refuseOverBacklog and insert a batch of 2 after it, ten requests of 2.
      const viaService = (i: number) =>
        transaction({ deps }, async (tx) => {
          await refuseOverBacklog(tx as never, lenderId, 2, `run ${i}`);
          await insertBatch({ ctx: tx as never, input: { lenderId, source: 'schedule', authorizers: packed([authorizer(`r${i}-0`), authorizer(`r${i}-1`)]), now: NOW } });
          return 'accepted' as const;
        }).catch((e) => {
          if (e instanceof RateLimited) return 'over_backlog' as const;
          throw e;
        });
      const viaRequest = async () => (await ctx.deps.stores.balances.acceptBatch(ctx, acceptance(lenderId, 2, 30, null))).kind;
      const outcomes = await Promise.all(Array.from({ length: CALLERS }, (_, i) => (i % 2 === 0 ? viaService(i) : viaRequest())));
      expect(outcomes.filter((o) => o === 'accepted')).toHaveLength(15);
      expect(outcomes.filter((o) => o === 'over_backlog')).toHaveLength(5);
      expect(await ctx.deps.stores.balances.pendingAuthorizers(ctx, lenderId)).toBe(30);
      expect(await one(sql`SELECT COALESCE(SUM(total_authorizers), 0)::int AS n FROM batches WHERE lender_id = ${lenderId}`)).toBe(30);
    });

    test('an identical body sent 20 times at once: one batch, the other 19 replay its answer', async () => {
      const lenderId = await newLender();
      const attempts = Array.from({ length: CALLERS }, () => acceptance(lenderId, 3, 1000, 'same-body-hash'));
      const outcomes = await Promise.all(attempts.map((a) => ctx.deps.stores.balances.acceptBatch(ctx, a)));
      const accepted = outcomes.flatMap((o, i) => (o.kind === 'accepted' ? [attempts[i]!] : []));
      expect(accepted).toHaveLength(1);
      const answer = accepted[0]!.replay!.responseBody;
      const replays = outcomes.filter((o) => o.kind === 'replay');
      expect(replays).toHaveLength(CALLERS - 1);
      for (const o of replays) expect(o).toEqual({ kind: 'replay', hit: { statusCode: 201, responseBody: answer } });
      expect(await q(sql`SELECT id FROM batches WHERE lender_id = ${lenderId}`)).toEqual([{ id: accepted[0]!.batch.id }]);
      expect(await one(sql`SELECT count(*)::int AS n FROM idempotency_keys WHERE lender_id = ${lenderId}`)).toBe(1);
      expect(await ctx.deps.stores.balances.pendingAuthorizers(ctx, lenderId)).toBe(3);
      // The payload is stored as given; past its 24 hours the entry is no answer, and the next batch replaces it.
      const [payload] = await q<{ items: Uint8Array }>(sql`SELECT items FROM batch_payloads WHERE batch_id = ${accepted[0]!.batch.id}`);
      expect([...new Uint8Array(payload!.items)]).toEqual([...accepted[0]!.payload.items]);
      const later = acceptance(lenderId, 1, 1000, 'same-body-hash');
      later.replay!.since = NOW + 1;
      later.batch.now = NOW + 86_400_001;
      expect(await ctx.deps.stores.balances.acceptBatch(ctx, later)).toEqual({ kind: 'accepted' });
      expect(await ctx.deps.stores.balances.cachedResponse(ctx, lenderId, 'same-body-hash', NOW + 1)).toEqual({ statusCode: 201, responseBody: later.replay!.responseBody });
    });

    test('claims: 20 claims at once lease 240 distinct reads, each claim 4 per lender in request order', async () => {
      // Fresh lenders; earlier tests' batches are pending (never started), so claims see only these.
      const a = await newLender();
      const b = await newLender();
      const c = await newLender();
      await processingBatch(a, 300, 'a');
      await processingBatch(b, 150, 'b1');
      await processingBatch(b, 150, 'b2');
      for (const p of ['c1', 'c2', 'c3']) await processingBatch(c, 100, p);
      const claims = await Promise.all(Array.from({ length: CALLERS }, () => ctx.deps.stores.balances.claimDueReads(ctx, 12, NOW)));
      const ids = claims.flat().map((i) => i.id);
      expect(ids).toHaveLength(CALLERS * 12);
      expect(new Set(ids).size).toBe(ids.length);
      for (const claim of claims) {
        const per = new Map<string, number>();
        for (const i of claim) per.set(i.lenderId, (per.get(i.lenderId) ?? 0) + 1);
        expect([...per.entries()].sort()).toEqual([a, b, c].map((l) => [l, 4] as [string, number]).sort());
        // Within a batch, in request order.
        for (const batchId of new Set(claim.map((i) => i.batchId))) {
          const seqs = claim.filter((i) => i.batchId === batchId).map((i) => i.seq);
          expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
        }
      }
      expect(await one(sql`SELECT count(*)::int AS n FROM batch_items WHERE lease_until = ${NOW + ITEM_LEASE_MS}`)).toBe(ids.length);
      // Leased rows are not due again until their lease has passed; then they are.
      expect(await ctx.deps.stores.balances.claimDueReads(ctx, 10_000, NOW)).toHaveLength(900 - ids.length);
      expect(await ctx.deps.stores.balances.claimDueReads(ctx, 10, NOW + 1)).toEqual([]);
      expect(await ctx.deps.stores.balances.claimDueReads(ctx, 5, NOW + ITEM_LEASE_MS + 1)).toHaveLength(5);
      // Released at start: a restarted replica lets its own pending leases go, never another's.
      expect(await transaction(ctx, (tx) => tx.deps.stores.balances.releaseReadLeases(tx, 'another-replica/'))).toBe(0);
      expect(await transaction(ctx, (tx) => tx.deps.stores.balances.releaseReadLeases(tx, replicaPrefix()))).toBe(900);
      await pg.db.execute(sql`UPDATE batch_items SET state = 'done'`);
    });

    test('a batch waiting to start is started once by 20 starters at once, its rows queued once', async () => {
      const lenderId = await newLender();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const items = Array.from({ length: 40 }, (_, k) => authorizer(`s${i}-${k}`));
        ids.push(await transaction(ctx, (tx) => insertBatch({ ctx: tx as never, input: { lenderId, source: 'api', authorizers: packed(items), now: NOW } })));
      }
      const deps = ctx.deps as never;
      await Promise.all(Array.from({ length: CALLERS }, () => startPendingBatches(deps)));
      for (const id of ids) {
        expect(await q(sql`SELECT status FROM batches WHERE id = ${id}`)).toEqual([{ status: 'processing' }]);
        expect(await one(sql`SELECT count(*)::int AS n FROM batch_items WHERE batch_id = ${id}`)).toBe(40);
      }
      expect(await ctx.deps.stores.balances.waitingItems(ctx, ids[0]!)).toEqual(new Uint8Array(Buffer.from('[]')));
      await pg.db.execute(sql`UPDATE batch_items SET state = 'done'`);
    });

    test('erasing a borrower while 20 starters start the batches that name them: no clear detail is left anywhere', async () => {
      const lenderId = await newLender();
      for (let round = 0; round < 4; round++) {
        const aid = `erased-${round}`;
        for (let i = 0; i < 5; i++) {
          const items = [authorizer(`keep-${round}-${i}`), authorizer(aid, '5550199'), authorizer(`keep2-${round}-${i}`)];
          await transaction(ctx, (tx) => insertBatch({ ctx: tx as never, input: { lenderId, source: 'api', authorizers: packed(items), now: NOW } }));
        }
        const deps = ctx.deps as never;
        await Promise.all([
          ...Array.from({ length: CALLERS / 2 }, () => startPendingBatches(deps)),
          transaction(ctx, (tx) => eraseBorrowerDetails(tx, lenderId, aid)),
          ...Array.from({ length: CALLERS / 2 }, () => startPendingBatches(deps)),
        ]);
        await startPendingBatches(deps);
        const rowsOf = await q<{ phone: string | null; zip: string | null; metadata: string | null }>(
          sql`SELECT phone, zip, metadata FROM batch_items WHERE lender_id = ${lenderId} AND authorizer_unique_id = ${aid}`,
        );
        expect(rowsOf).toHaveLength(5);
        for (const r of rowsOf) expect(r).toEqual({ phone: null, zip: null, metadata: null });
        expect(await one(sql`SELECT count(*)::int AS n FROM batch_items WHERE lender_id = ${lenderId} AND authorizer_unique_id LIKE 'keep%' AND phone IS NOT NULL`)).toBe(10 * (round + 1));
      }
      await pg.db.execute(sql`UPDATE batch_items SET state = 'done'`);
    });

    /** A flush as recordOutcomes makes it: results, finishes, then the batches' counters, in the order given. */
    const flush = (items: ClaimedItem[], cents: number) =>
      transaction(ctx, async (tx: TxCtx) => {
        await tx.deps.stores.balances.lockReads(tx, items.map((i) => i.id));
        const inserted = await tx.deps.stores.balances.recordResults(
          tx,
          items.map((i): ResultRow => ({ itemId: i.id, batchId: i.batchId, lenderId: i.lenderId, aid: i.authorizerUniqueId, cents, code: 0, exportStatus: 'SUCCESS', institution: null, at: NOW, kind: null, asOf: null, detail: null })),
        );
        await tx.deps.stores.balances.finishReads(tx, items.map((i) => ({ id: i.id, leaseToken: i.leaseToken, finish: { state: 'done' } })));
        const added = new Map<string, number>();
        items.forEach((i, n) => inserted[n] && added.set(i.batchId, (added.get(i.batchId) ?? 0) + 1));
        await tx.deps.stores.balances.lockBatches(tx, [...added.keys()]);
        const completed: string[] = [];
        for (const [batchId, n] of added) {
          const b = await tx.deps.stores.balances.countProcessed(tx, batchId, n);
          if (b?.completed) {
            completed.push(b.id);
            await tx.deps.stores.balances.completeBatch(tx, b.id, NOW);
          }
        }
        return { recorded: inserted.filter(Boolean).length, completed };
      });

    /** Two lenders with three processing batches of 20 each, every read claimed. */
    async function claimedBatches(tag: string) {
      const lenders = [await newLender(), await newLender()];
      const batchIds: string[] = [];
      for (const l of lenders) for (let i = 0; i < 3; i++) batchIds.push(await processingBatch(l, 20, `${tag}-${l}-${i}`));
      const items = await ctx.deps.stores.balances.claimDueReads(ctx, 1000, NOW);
      expect(items).toHaveLength(120);
      return { lenders, batchIds, items };
    }

    async function expectAllCounted(lenders: string[], batchIds: string[], outcomes: { recorded: number; completed: string[] }[]) {
      expect(outcomes.reduce((s, o) => s + o.recorded, 0)).toBe(120);
      expect(outcomes.flatMap((o) => o.completed).sort()).toEqual([...batchIds].sort());
      expect(await one(sql`SELECT count(*)::int AS n FROM balance_results WHERE batch_id = ANY(${sql.param(batchIds)}::text[])`)).toBe(120);
      for (const id of batchIds) {
        expect(await q(sql`SELECT status, total_processed AS n FROM batches WHERE id = ${id}`)).toEqual([{ status: 'completed', n: 20 }]);
      }
      for (const l of lenders) expect(await ctx.deps.stores.balances.pendingAuthorizers(ctx, l)).toBe(0);
      expect(await one(sql`SELECT count(*)::int AS n FROM batch_items WHERE batch_id = ANY(${sql.param(batchIds)}::text[]) AND (state <> 'done' OR lease_until <> 0)`)).toBe(0);
    }

    test('20 flushes of the same reads at once (claims that lapsed): each result recorded once, counters exact, no deadlock', async () => {
      const { lenders, batchIds, items } = await claimedBatches('same');
      // Each flush has the 120 reads in an order of its own.
      const outcomes = await Promise.all(
        Array.from({ length: CALLERS }, (_, k) => flush([...items].sort((x, y) => ((x.id * (k + 7)) % 101) - ((y.id * (k + 7)) % 101)), 12_345_678_901)),
      );
      await expectAllCounted(lenders, batchIds, outcomes);
      const page = await ctx.deps.stores.balances.resultsPage(ctx, batchIds[0]!, 0, 100);
      expect(page).toHaveLength(20);
      expect(page[0]!.cents).toBe(12_345_678_901);
    });

    test('20 flushes of different reads of the same batches at once, counting them in opposite orders: no deadlock', async () => {
      const { lenders, batchIds, items } = await claimedBatches('apart');
      // Flush k has the k-th read of every batch of 6 (one each), half of them the batches in reverse.
      const outcomes = await Promise.all(
        Array.from({ length: CALLERS }, (_, k) => {
          const mine = batchIds.map((b) => items.filter((i) => i.batchId === b)[k]!);
          return flush(k % 2 === 0 ? mine : mine.reverse(), 100);
        }),
      );
      await expectAllCounted(lenders, batchIds, outcomes);
    });
  });
}
