import { expect, test } from 'bun:test';
import { contract } from './contract';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { processBalances, startPendingBatches } from '../../src/modules/balance-requests/processing';
import { openSensitive, packBatch, unpackItems } from '../../src/modules/balance-requests/payload';
import { ITEM_LEASE_MS, type ClaimedItem, type NewBatch, type ResultRow, type StoredPayload } from '../../src/modules/balance-requests/store';
import { validateAuthorizerList } from '../../src/modules/authorizers/rules';
import { DAY_MS } from '../../src/platform/clock';
import { newId } from '../../src/platform/ids';
import { replicaPrefix } from '../../src/platform/lease-token';
import type { StoreCtx, TxCtx } from '../../src/platform/store';

/** Thrown to roll a transaction back. */
class Undo extends Error {}

/** A read's result as a flush records it: a successful one unless `over` says otherwise. */
const resultRow = (c: ClaimedItem, lenderId: string, now: number, over: Partial<ResultRow> = {}): ResultRow => ({
  itemId: c.id,
  batchId: c.batchId,
  lenderId,
  aid: c.authorizerUniqueId,
  cents: null,
  code: 0,
  exportStatus: 'SUCCESS',
  institution: null,
  at: now,
  kind: null,
  asOf: null,
  detail: null,
  ...over,
});

contract('balances', (t) => {
  const { ctx, store, storeCtx } = t;

  async function rolledBack(fn: (tx: TxCtx) => Promise<void>): Promise<void> {
    const run = t.inTx(async (tx) => {
      await fn(tx);
      throw new Undo();
    });
    await expect(run).rejects.toBeInstanceOf(Undo);
  }

  async function submit(authorizers: unknown[], key: string): Promise<string> {
    const sent = await ctx.json('POST', '/v1/balance_requests', { key, body: { authorizers } });
    expect(sent.status).toBe(201);
    return sent.body.batch_id as string;
  }

  /** A batch as the service builds one: sandbox authorizers validated, packed and sealed. */
  function newBatch(lenderId: string, aids: string[], over: Partial<NewBatch> = {}): { batch: NewBatch; payload: StoredPayload } {
    const { accepted } = validateAuthorizerList(
      aids.map((aid) => bankAuthorizer(aid)),
      { debitCardsApproved: false, now: ctx.clock.now() },
    );
    const packed = packBatch(accepted, (plaintext) => ctx.rt.vault.sealBytes(plaintext));
    const batch: NewBatch = {
      id: newId(),
      lenderId,
      source: 'api',
      scheduleId: null,
      webhookUrl: null,
      creator: null,
      now: ctx.clock.now(),
      total: packed.count,
      ...over,
    };
    return { batch, payload: { sealed: packed.sealed, items: packed.items } };
  }

  /** acceptBatch of a built batch, with a replay entry when a hash is given. */
  const accept = (c: StoreCtx, b: ReturnType<typeof newBatch>, maxPending: number, replay?: [hash: string, since: number, body: string]) =>
    store.acceptBatch(c, { ...b, replay: replay ? { bodyHash: replay[0], since: replay[1], responseBody: replay[2] } : null, maxPending });

  interface QueueRow {
    seq: number;
    aid: string;
    state: string;
    attempts: number;
    next: number;
    leaseUntil: number;
    token: string | null;
    phone: string | null;
    zip: string | null;
    metadata: string | null;
  }

  const queueRows = (batchId: string) =>
    ctx.rows<QueueRow>(
      `SELECT seq, authorizer_unique_id AS aid, state, attempts, next_attempt_at AS next, lease_until AS "leaseUntil",
              lease_token AS token, phone, zip, metadata
         FROM batch_items WHERE batch_id = ? ORDER BY seq`,
      batchId,
    );

  const mineOf = (ids: string[]) => (c: ClaimedItem) => ids.includes(c.batchId);

  test('a request accepted through the API: its batch, payload, backlog and replay entry read back alike', async () => {
    const lender = ctx.newLender();
    const body = {
      authorizers: [
        bankAuthorizer('acc-1', { phone_number: '2025550143', zip_code: '02139', metadata: { branch: 'north' } }),
        bankAuthorizer('acc-2', { account_number: '0000000042' }),
      ],
    };
    const sent = await ctx.json('POST', '/v1/balance_requests', { key: lender.key, body });
    expect(sent.status).toBe(201);
    const id = sent.body.batch_id as string;
    const now = ctx.clock.now();

    expect(await store.batchOf(storeCtx, lender.id, id)).toEqual({
      id,
      lenderId: lender.id,
      source: 'api',
      scheduleId: null,
      status: 'pending',
      webhookUrl: null,
      creator: null,
      submittedAt: now,
      completedAt: null,
      totalAuthorizers: 2,
      totalProcessed: 0,
    });
    // Another lender's batch is not found, whoever asks.
    expect(await store.batchOf(storeCtx, ctx.lender.id, id)).toBeUndefined();
    expect(await store.batchStatus(storeCtx, id)).toBe('pending');
    expect(await store.batchStatus(storeCtx, 'no-such-batch')).toBeNull();
    expect(await store.openBatches(storeCtx)).toContainEqual({ id, lenderId: lender.id, status: 'pending' });

    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(2);
    expect(await store.pendingAuthorizers(storeCtx, ctx.newLender().id)).toBe(0);
    const everyone = await store.pendingAuthorizers(storeCtx, null);
    expect(typeof everyone).toBe('number');
    expect(everyone).toBeGreaterThanOrEqual(2);

    const sealed = await store.sealedPayload(storeCtx, id);
    expect(openSensitive(ctx.rt.vault, sealed!).map((s) => s.accountNumber)).toEqual(['0001234567', '0000000042']);
    expect(await store.sealedPayload(storeCtx, 'no-such-batch')).toBeUndefined();
    const waiting = unpackItems((await store.waitingItems(storeCtx, id))!);
    expect(waiting.map((i) => [i.id, i.phone, i.zip, i.meta])).toEqual([
      ['acc-1', '+12025550143', '02139', { branch: 'north' }],
      ['acc-2', null, null, null],
    ]);
    expect(await store.waitingItems(storeCtx, 'no-such-batch')).toBeUndefined();

    // The replay entry: the answer as sent (its replayed flag is the sending's, not kept), found only after
    // `since` (strictly) and only for its lender.
    const [entry] = await ctx.rows<{ hash: string }>('SELECT body_hash AS hash FROM idempotency_keys WHERE lender_id = ?', lender.id);
    const hit = await store.cachedResponse(storeCtx, lender.id, entry!.hash, now - DAY_MS);
    expect(hit).toEqual({ statusCode: 201, responseBody: expect.any(String) });
    const { replayed, ...kept } = sent.body;
    expect(replayed).toBe(false);
    expect(JSON.parse(hit!.responseBody)).toEqual(kept);
    expect(await store.cachedResponse(storeCtx, lender.id, entry!.hash, now)).toBeUndefined();
    expect(await store.cachedResponse(storeCtx, ctx.lender.id, entry!.hash, now - DAY_MS)).toBeUndefined();

    const again = await ctx.json('POST', '/v1/balance_requests', { key: lender.key, body });
    expect(again.status).toBe(201);
    expect(again.res.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual({ ...kept, replayed: true });
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(2);

    // The CSV route keeps its answer the same way: replayed from the store, no second batch.
    const form = () => {
      const f = new FormData();
      f.append('file', new Blob(['authorizer_unique_id,ssn,account_number,routing_number\nacc-csv,123456789,0001234567,110000000\n'], { type: 'text/csv' }), 'a.csv');
      return f;
    };
    const csv = await ctx.json('POST', '/v1/balance_requests/csv', { key: lender.key, form: form() });
    expect(csv.body).toMatchObject({ replayed: false, warnings: [] });
    expect(await ctx.rows('SELECT body_hash FROM idempotency_keys WHERE lender_id = ?', lender.id)).toHaveLength(2);
    const csvAgain = await ctx.json('POST', '/v1/balance_requests/csv', { key: lender.key, form: form() });
    expect(csvAgain.res.headers.get('idempotent-replayed')).toBe('true');
    expect(csvAgain.body).toEqual({ ...csv.body, replayed: true });
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(3);

    await processBalances(ctx.rt);
    expect(await store.batchStatus(storeCtx, id)).toBe('completed');
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(0);
    expect(await store.openBatches(storeCtx)).not.toContainEqual(expect.objectContaining({ id }));
  });

  test('acceptBatch: stored with its answer, an identical body replays it, the bound refuses past it and not at it', async () => {
    const lender = ctx.newLender();
    const since = ctx.clock.now() - DAY_MS;
    const first = newBatch(lender.id, ['ab-1', 'ab-2']);
    expect(await accept(storeCtx, first, 3, ['hash-a', since, '{"n":1}'])).toEqual({ kind: 'accepted' });
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(2);
    expect(await store.cachedResponse(storeCtx, lender.id, 'hash-a', since)).toEqual({ statusCode: 201, responseBody: '{"n":1}' });

    // An identical body: the first answer, and nothing of the second stored.
    const twin = newBatch(lender.id, ['ab-1', 'ab-2']);
    expect(await accept(storeCtx, twin, 100, ['hash-a', since, '{"n":2}'])).toEqual({
      kind: 'replay',
      hit: { statusCode: 201, responseBody: '{"n":1}' },
    });
    expect(await store.batchOf(storeCtx, lender.id, twin.batch.id)).toBeUndefined();

    // Past the bound: refused with the count it was refused on; no batch, no answer kept.
    const over = newBatch(lender.id, ['ab-3', 'ab-4']);
    expect(await accept(storeCtx, over, 3, ['hash-b', since, '{}'])).toEqual({ kind: 'over_backlog', pending: 2 });
    expect(await store.batchOf(storeCtx, lender.id, over.batch.id)).toBeUndefined();
    expect(await store.cachedResponse(storeCtx, lender.id, 'hash-b', since)).toBeUndefined();

    // Up to the bound exactly is accepted; without a hash no answer is kept.
    const last = newBatch(lender.id, ['ab-5']);
    expect(await accept(storeCtx, last, 3)).toEqual({ kind: 'accepted' });
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(3);
    expect(await ctx.rows('SELECT body_hash AS h FROM idempotency_keys WHERE lender_id = ?', lender.id)).toEqual([{ h: 'hash-a' }]);

    // An answer older than `since` is no answer: the body is accepted again and its entry replaced.
    ctx.clock.advance(60_000);
    const later = newBatch(lender.id, ['ab-1', 'ab-2']);
    const after = ctx.clock.now() - 1;
    expect(await accept(storeCtx, later, 100, ['hash-a', after, '{"n":3}'])).toEqual({ kind: 'accepted' });
    expect(await store.cachedResponse(storeCtx, lender.id, 'hash-a', after)).toEqual({ statusCode: 201, responseBody: '{"n":3}' });
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(5);

    await processBalances(ctx.rt);
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(0);
  });

  test('a batch inserted in a rolled-back transaction is not there; one committed reads back as given', async () => {
    const lender = ctx.newLender();
    const gone = newBatch(lender.id, ['tx-1', 'tx-2']);
    await rolledBack(async (tx) => {
      await store.serializeBacklog(tx, lender.id);
      await store.insertBatch(tx, gone.batch, gone.payload);
      // The transaction sees its own batch and counts it.
      expect(await store.batchStatus(tx, gone.batch.id)).toBe('pending');
      expect(await store.pendingAuthorizers(tx, lender.id)).toBe(2);
      const joined = newBatch(lender.id, ['tx-3']);
      expect(await accept(tx, joined, 3, ['hash-tx', 0, '{}'])).toEqual({ kind: 'accepted' });
      expect(await store.pendingAuthorizers(tx, lender.id)).toBe(3);
    });
    expect(await store.batchOf(storeCtx, lender.id, gone.batch.id)).toBeUndefined();
    expect(await store.batchStatus(storeCtx, gone.batch.id)).toBeNull();
    expect(await store.sealedPayload(storeCtx, gone.batch.id)).toBeUndefined();
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(0);
    expect(await store.cachedResponse(storeCtx, lender.id, 'hash-tx', 0)).toBeUndefined();

    const kept = newBatch(lender.id, ['tx-4'], { source: 'csv', webhookUrl: 'http://127.0.0.1:9/batches', creator: 'Dana Reyes' });
    await t.inTx(async (tx) => {
      await store.serializeBacklog(tx, lender.id);
      await store.insertBatch(tx, kept.batch, kept.payload);
    });
    expect(await store.batchOf(storeCtx, lender.id, kept.batch.id)).toEqual({
      id: kept.batch.id,
      lenderId: lender.id,
      source: 'csv',
      scheduleId: null,
      status: 'pending',
      webhookUrl: 'http://127.0.0.1:9/batches',
      creator: 'Dana Reyes',
      submittedAt: kept.batch.now,
      completedAt: null,
      totalAuthorizers: 1,
      totalProcessed: 0,
    });
    expect(await store.sealedPayload(storeCtx, kept.batch.id)).toBe(kept.payload.sealed);
    expect(unpackItems((await store.waitingItems(storeCtx, kept.batch.id))!).map((i) => i.id)).toEqual(['tx-4']);
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(1);

    await processBalances(ctx.rt);
    expect(await store.batchStatus(storeCtx, kept.batch.id)).toBe('completed');
  });

  test('batchesPage: newest first (time, then id), by kind, strictly older than the position given', async () => {
    const lender = ctx.newLender();
    const t0 = ctx.clock.now();
    const made: { id: string; t: number; source: NewBatch['source'] }[] = [];
    const plan: [NewBatch['source'], number][] = [
      ['api', t0],
      ['monitoring', t0 + 1_000],
      ['csv', t0 + 2_000],
      ['api', t0 + 3_000],
      ['monitoring', t0 + 3_000],
    ];
    for (const [i, [source, at]] of plan.entries()) {
      const b = newBatch(lender.id, [`bp-${i}`], { source, now: at });
      await t.inTx((tx) => store.insertBatch(tx, b.batch, b.payload));
      made.push({ id: b.batch.id, t: at, source });
    }
    const newestFirst = [...made].sort((a, b) => b.t - a.t || (a.id < b.id ? 1 : -1));
    const start = { t: Number.MAX_SAFE_INTEGER, i: '' };
    const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

    const all = await store.batchesPage(storeCtx, lender.id, 'all', start, 10);
    expect(ids(all)).toEqual(newestFirst.map((b) => b.id));
    expect(all.map((b) => b.submittedAt)).toEqual(newestFirst.map((b) => b.t));
    const monitoring = newestFirst.filter((b) => b.source === 'monitoring').map((b) => b.id);
    const sent = newestFirst.filter((b) => b.source !== 'monitoring').map((b) => b.id);
    expect(ids(await store.batchesPage(storeCtx, lender.id, 'sent', start, 10))).toEqual(sent);
    expect(ids(await store.batchesPage(storeCtx, lender.id, 'monitoring', start, 10))).toEqual(monitoring);

    // Page by page: `take` at most, the next page strictly after the last one's (time, id), the two at t0+3s split.
    const first = await store.batchesPage(storeCtx, lender.id, 'all', start, 1);
    expect(ids(first)).toEqual([newestFirst[0]!.id]);
    const next = await store.batchesPage(storeCtx, lender.id, 'all', { t: first[0]!.submittedAt, i: first[0]!.id }, 2);
    expect(ids(next)).toEqual(newestFirst.slice(1, 3).map((b) => b.id));
    const oldest = newestFirst[newestFirst.length - 1]!;
    expect(await store.batchesPage(storeCtx, lender.id, 'all', { t: oldest.t, i: oldest.id }, 10)).toEqual([]);
    expect(await store.batchesPage(storeCtx, ctx.newLender().id, 'all', start, 10)).toEqual([]);

    await processBalances(ctx.rt);
  });

  test('starting a waiting batch: held by one starter, its queue rows in request order, its clear copy dropped', async () => {
    const lender = ctx.newLender();
    const id = await submit(
      [
        bankAuthorizer('st-0', { phone_number: '2025550100', zip_code: '02139', metadata: { branch: 'north', tier: 2 } }),
        bankAuthorizer('st-1'),
        bankAuthorizer('st-2', { zip_code: '94110' }),
      ],
      lender.key,
    );
    const listed = await store.waitingPayloads(storeCtx, lender.id);
    expect(listed.map((w) => [w.batchId, unpackItems(w.items).map((i) => i.id)])).toEqual([[id, ['st-0', 'st-1', 'st-2']]]);

    // A start rolled back leaves the batch waiting, with no queue row.
    await rolledBack(async (tx) => {
      expect(await store.lockWaitingBatch(tx, id)).toBe(true);
      await store.startBatch(tx, id, lender.id, unpackItems((await store.waitingItems(tx, id))!));
      expect(await store.batchStatus(tx, id)).toBe('processing');
    });
    expect(await store.batchStatus(storeCtx, id)).toBe('pending');
    expect(await queueRows(id)).toEqual([]);

    // Two starters at once: one starts it, the other finds it started; its rows are queued once.
    const starter = () =>
      t.inTx(async (tx) => {
        if (!(await store.lockWaitingBatch(tx, id))) return false;
        await store.startBatch(tx, id, lender.id, unpackItems((await store.waitingItems(tx, id))!));
        return true;
      });
    expect((await Promise.all([starter(), starter()])).sort()).toEqual([false, true]);

    expect(await store.batchStatus(storeCtx, id)).toBe('processing');
    expect(await store.openBatches(storeCtx)).toContainEqual({ id, lenderId: lender.id, status: 'processing' });
    const rows = await queueRows(id);
    expect(rows.map((r) => [r.seq, r.aid, r.state, r.attempts, r.leaseUntil, r.token, r.phone, r.zip])).toEqual([
      [0, 'st-0', 'pending', 0, 0, null, '+12025550100', '02139'],
      [1, 'st-1', 'pending', 0, 0, null, null, null],
      [2, 'st-2', 'pending', 0, 0, null, null, '94110'],
    ]);
    expect(JSON.parse(rows[0]!.metadata!)).toEqual({ branch: 'north', tier: 2 });
    expect(rows[1]!.metadata).toBeNull();
    // The clear copy is gone (an empty list, in whichever form the engine keeps it); the sealed part stays.
    expect(unpackItems((await store.waitingItems(storeCtx, id))!)).toEqual([]);
    expect(await store.sealedPayload(storeCtx, id)).toEqual(expect.any(String));
    expect(await store.waitingPayloads(storeCtx, lender.id)).toEqual([]);
    expect(await t.inTx((tx) => store.lockWaitingBatch(tx, id))).toBe(false);
    expect(await t.inTx((tx) => store.lockWaitingBatch(tx, 'no-such-batch'))).toBe(false);

    await processBalances(ctx.rt);
    expect(await store.batchStatus(storeCtx, id)).toBe('completed');
  });

  test('claimDueReads: a fair share per lender, request order within a batch, a leased read not due until its lease runs out', async () => {
    await processBalances(ctx.rt);
    const a = ctx.newLender();
    const b = ctx.newLender();
    const ida = await submit(['q-a0', 'q-a1', 'q-a2'].map((aid) => bankAuthorizer(aid)), a.key);
    const idb = await submit(['q-b0', 'q-b1'].map((aid) => bankAuthorizer(aid)), b.key);
    const mine = mineOf([ida, idb]);
    const now = ctx.clock.now();

    // Waiting batches are started before a claim, never by it.
    expect((await store.claimDueReads(storeCtx, 10, now)).filter(mine)).toEqual([]);
    expect(await startPendingBatches(ctx.rt)).toBeGreaterThanOrEqual(2);

    const first = await store.claimDueReads(storeCtx, 2, now);
    expect(first).toHaveLength(2);
    const token = first[0]!.leaseToken;
    expect(token.startsWith(replicaPrefix())).toBe(true);
    const byLender = [...first].sort((x, y) => (x.lenderId === a.id ? -1 : y.lenderId === a.id ? 1 : 0));
    const firstOf = (batchId: string, lenderId: string, aid: string) => ({
      id: expect.any(Number),
      batchId,
      lenderId,
      seq: 0,
      authorizerUniqueId: aid,
      paymentType: 'ACCOUNT_NUMBER' as const,
      routingNumber: '110000000',
      phone: null,
      zip: null,
      attempts: 0,
      waitingSince: null,
      leaseToken: token,
    });
    expect(byLender).toEqual([firstOf(ida, a.id, 'q-a0'), firstOf(idb, b.id, 'q-b0')]);

    const second = await store.claimDueReads(storeCtx, 10, now);
    const inOrder = (batchId: string) => second.filter((c) => c.batchId === batchId).map((c) => c.authorizerUniqueId);
    expect(inOrder(ida)).toEqual(['q-a1', 'q-a2']);
    expect(inOrder(idb)).toEqual(['q-b1']);
    expect(second.filter(mine)).toHaveLength(3);
    expect(second[0]!.leaseToken).not.toBe(token);
    const held = [...first, ...second];
    expect(new Set(held.map((c) => c.id)).size).toBe(5);

    // Leased until now + ITEM_LEASE_MS: not due a moment before, due again then.
    expect((await store.claimDueReads(storeCtx, 10, now + ITEM_LEASE_MS - 1)).filter(mine)).toEqual([]);
    const rows = await queueRows(ida);
    expect(rows.map((r) => r.leaseUntil)).toEqual([now + ITEM_LEASE_MS, now + ITEM_LEASE_MS, now + ITEM_LEASE_MS]);
    expect(rows.map((r) => r.token)).toEqual([token, second[0]!.leaseToken, second[0]!.leaseToken]);

    // Finishing: a retry under the claim's token moves the read; a finish under a token that no longer holds it does not.
    const [a0] = byLender;
    const a1 = second.find((c) => c.authorizerUniqueId === 'q-a1')!;
    await t.inTx(async (tx) => {
      await store.lockReads(tx, [a1.id, a0!.id]);
      await store.finishReads(tx, [
        {
          id: a0!.id,
          leaseToken: a0!.leaseToken,
          finish: { state: 'pending', attempts: 1, nextAttemptAt: now + 5_000, set: { waitingSince: now - 1_000 } },
        },
        { id: a1.id, leaseToken: `${replicaPrefix()}gone/1`, finish: { state: 'pending', attempts: 2, nextAttemptAt: now } },
      ]);
    });
    const after = await queueRows(ida);
    expect(after.map((r) => [r.aid, r.state, r.attempts, r.next, r.leaseUntil, r.token])).toEqual([
      ['q-a0', 'pending', 1, now + 5_000, 0, null],
      ['q-a1', 'pending', 0, 0, now + ITEM_LEASE_MS, a1.leaseToken],
      ['q-a2', 'pending', 0, 0, now + ITEM_LEASE_MS, a1.leaseToken],
    ]);
    expect((await store.claimDueReads(storeCtx, 10, now + 4_999)).filter(mine)).toEqual([]);
    const retried = (await store.claimDueReads(storeCtx, 10, now + 5_000)).filter(mine);
    expect(retried.map((c) => [c.authorizerUniqueId, c.attempts, c.waitingSince])).toEqual([['q-a0', 1, now - 1_000]]);

    // Finished twice in one call: the first finish ends the claim, the second no longer holds the read.
    await t.inTx((tx) =>
      store.finishReads(tx, [
        { id: retried[0]!.id, leaseToken: retried[0]!.leaseToken, finish: { state: 'pending', attempts: 2, nextAttemptAt: now + 6_000 } },
        { id: retried[0]!.id, leaseToken: retried[0]!.leaseToken, finish: { state: 'pending', attempts: 3, nextAttemptAt: now + 7_000 } },
      ]),
    );
    expect((await queueRows(ida))[0]).toMatchObject({ attempts: 2, next: now + 6_000, leaseUntil: 0, token: null });
    // ...and a finish under a token that does not hold it does not stand in the way of one that does.
    const once = (await store.claimDueReads(storeCtx, 10, now + 6_000)).filter(mine);
    expect(once.map((c) => c.authorizerUniqueId)).toEqual(['q-a0']);
    await t.inTx((tx) =>
      store.finishReads(tx, [
        { id: once[0]!.id, leaseToken: token, finish: { state: 'pending', attempts: 9, nextAttemptAt: now } },
        { id: once[0]!.id, leaseToken: once[0]!.leaseToken, finish: { state: 'pending', attempts: 3, nextAttemptAt: now + 6_000 } },
      ]),
    );
    expect((await queueRows(ida))[0]).toMatchObject({ attempts: 3, next: now + 6_000, leaseUntil: 0, token: null });

    // A finish rolled back changes nothing.
    await rolledBack((tx) => store.finishReads(tx, [{ id: a1.id, leaseToken: a1.leaseToken, finish: { state: 'done' } }]));
    expect((await queueRows(ida))[1]).toMatchObject({ state: 'pending', token: a1.leaseToken });

    // At start the leases of this replica are let go: every such read is due again at once.
    const leased = async () =>
      (await ctx.rows<{ n: number }>("SELECT count(*) AS n FROM batch_items WHERE state = 'pending' AND lease_until > 0"))[0]!.n;
    const before = await leased();
    expect(before).toBeGreaterThanOrEqual(4);
    expect(await t.inTx((tx) => store.releaseReadLeases(tx, replicaPrefix()))).toBe(before);
    expect(await leased()).toBe(0);
    expect((await queueRows(idb)).map((r) => [r.leaseUntil, r.token])).toEqual([
      [0, null],
      [0, null],
    ]);
    const again = (await store.claimDueReads(storeCtx, 10, now + 6_000)).filter(mine);
    expect(again.map((c) => c.authorizerUniqueId).sort()).toEqual(['q-a0', 'q-a1', 'q-a2', 'q-b0', 'q-b1']);
    // Another replica's prefix: on SQLite one process serves the file and every lease goes; on PostgreSQL none of ours.
    expect(await t.inTx((tx) => store.releaseReadLeases(tx, 'another-replica/'))).toBe(t.engine === 'sqlite' ? 5 : 0);
    await t.inTx((tx) => store.releaseReadLeases(tx, replicaPrefix()));

    ctx.clock.advance(10_000);
    await processBalances(ctx.rt);
    expect([await store.batchStatus(storeCtx, ida), await store.batchStatus(storeCtx, idb)]).toEqual(['completed', 'completed']);
  });

  // Set by the flush below and read by the test after it.
  const flushed = { lenderId: '', earlier: '', batchId: '', at: 0 };

  test('a flush: each item recorded once, reads finished, counters moved, the batch completed by its last result', async () => {
    await processBalances(ctx.rt);
    const lender = ctx.newLender();
    // An earlier read of fl-0 through the pipeline, so the history below has two.
    flushed.earlier = await submit([bankAuthorizer('fl-0')], lender.key);
    await processBalances(ctx.rt);
    ctx.clock.advance(60_000);
    const id = await submit(
      [
        bankAuthorizer('fl-0', { phone_number: '2025550100', metadata: { branch: 'north', tier: 2 } }),
        bankAuthorizer('fl-1', { zip_code: '02139' }),
        bankAuthorizer('fl-2', { metadata: { region: 'west' } }),
      ],
      lender.key,
    );
    await startPendingBatches(ctx.rt);
    const now = ctx.clock.now();
    const claimed = (await store.claimDueReads(storeCtx, 100, now)).filter(mineOf([id])).sort((x, y) => x.seq - y.seq);
    expect(claimed.map((c) => c.authorizerUniqueId)).toEqual(['fl-0', 'fl-1', 'fl-2']);
    const row = (c: ClaimedItem, over: Partial<ResultRow>): ResultRow => resultRow(c, lender.id, now, over);
    const [c0, c1, c2] = claimed as [ClaimedItem, ClaimedItem, ClaimedItem];
    const r0 = row(c0, { cents: 1_234_567, institution: 'Sandbox Bank', kind: 'available', asOf: now - 60_000 });
    const r1 = row(c1, { code: 3400, exportStatus: 'NO_MATCH', detail: 'relink_required' });
    const r2 = row(c2, { cents: 0, institution: 'Sandbox Bank', kind: 'current', asOf: now - 1 });

    // A flush rolled back records nothing and moves no counter.
    await rolledBack(async (tx) => {
      expect(await store.recordResults(tx, [r0])).toEqual([true]);
      expect(await store.countProcessed(tx, id, 1)).toMatchObject({ id, completed: 0 });
    });
    expect(await store.resultsPage(storeCtx, id, 0, 10)).toEqual([]);
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(3);

    await t.inTx(async (tx) => {
      await store.lockReads(tx, [c1.id, c0.id]);
      // An item given twice is recorded by its first row.
      expect(await store.recordResults(tx, [r0, r1, { ...r0, cents: 1 }])).toEqual([true, true, false]);
      expect(await store.recordResults(tx, [])).toEqual([]);
      await store.finishReads(tx, [c0, c1].map((c) => ({ id: c.id, leaseToken: c.leaseToken, finish: { state: 'done' } })));
      await store.lockBatches(tx, [id]);
      const counted = { id, lenderId: lender.id, source: 'api' as const, scheduleId: null, webhookUrl: null };
      expect(await store.countProcessed(tx, id, 2)).toEqual({ ...counted, completed: 0 });
    });
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(1);
    expect((await queueRows(id)).map((r) => r.state)).toEqual(['done', 'done', 'pending']);

    ctx.clock.advance(1_000);
    const completedAt = ctx.clock.now();
    await t.inTx(async (tx) => {
      await store.lockReads(tx, [c2.id, c0.id]);
      // A second flush of an item already recorded records nothing.
      expect(await store.recordResults(tx, [r2, r0])).toEqual([true, false]);
      await store.finishReads(tx, [{ id: c2.id, leaseToken: c2.leaseToken, finish: { state: 'done' } }]);
      await store.lockBatches(tx, [id]);
      const counted = { id, lenderId: lender.id, source: 'api' as const, scheduleId: null, webhookUrl: null };
      expect(await store.countProcessed(tx, id, 1)).toEqual({ ...counted, completed: 1 });
      await store.completeBatch(tx, id, completedAt);
    });
    expect(await store.batchOf(storeCtx, lender.id, id)).toMatchObject({ status: 'completed', completedAt, totalAuthorizers: 3, totalProcessed: 3 });
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(0);
    expect(await store.openBatches(storeCtx)).not.toContainEqual(expect.objectContaining({ id }));
    // Forward only: a completed batch is never completed again by its counter; no batch, no counter.
    await rolledBack(async (tx) => {
      await store.lockBatches(tx, []);
      expect(await store.countProcessed(tx, id, 0)).toMatchObject({ id, completed: 0 });
      expect(await store.countProcessed(tx, 'no-such-batch', 1)).toBeUndefined();
    });
    Object.assign(flushed, { lenderId: lender.id, batchId: id, at: now });
  });

  test('a batch’s results read back: pages in recorded order, counts, export rows, metadata keys, latest and history', async () => {
    const { lenderId, batchId: id, earlier, at: now } = flushed;
    expect(id).not.toBe('');

    const page = await store.resultsPage(storeCtx, id, 0, 2);
    expect(page).toEqual([
      { id: expect.any(Number), aid: 'fl-0', cents: 1_234_567, code: 0, at: now, kind: 'available', asOf: now - 60_000, detail: null },
      { id: expect.any(Number), aid: 'fl-1', cents: null, code: 3400, at: now, kind: null, asOf: null, detail: 'relink_required' },
    ]);
    expect(page[0]!.id).toBeLessThan(page[1]!.id);
    const rest = await store.resultsPage(storeCtx, id, page[1]!.id, 10);
    expect(rest).toEqual([{ id: expect.any(Number), aid: 'fl-2', cents: 0, code: 0, at: now, kind: 'current', asOf: now - 1, detail: null }]);
    expect(await store.resultsPage(storeCtx, id, rest[0]!.id, 10)).toEqual([]);
    const counts = await store.resultCountsByStatus(storeCtx, id);
    expect([...counts].sort((x, y) => x.status.localeCompare(y.status))).toEqual([
      { status: 'NO_MATCH', n: 1 },
      { status: 'SUCCESS', n: 2 },
    ]);
    expect(await store.resultCountsByStatus(storeCtx, 'no-such-batch')).toEqual([]);

    const exported = await store.exportPage(storeCtx, id, 0, 10);
    const of = { batchId: id, creator: null, at: now };
    expect(exported.map((r) => ({ ...r, metadata: r.metadata === null ? null : JSON.parse(r.metadata) }))).toEqual([
      { ...of, rid: page[0]!.id, aid: 'fl-0', institution: 'Sandbox Bank', phone: '+12025550100', zip: null, cents: 1_234_567, status: 'SUCCESS',
        asOf: now - 60_000, metadata: { branch: 'north', tier: 2 } },
      { ...of, rid: page[1]!.id, aid: 'fl-1', institution: null, phone: null, zip: '02139', cents: null, status: 'NO_MATCH',
        asOf: null, metadata: null },
      { ...of, rid: rest[0]!.id, aid: 'fl-2', institution: 'Sandbox Bank', phone: null, zip: null, cents: 0, status: 'SUCCESS',
        asOf: now - 1, metadata: { region: 'west' } },
    ]);
    expect((await store.exportPage(storeCtx, id, page[0]!.id, 1)).map((r) => r.aid)).toEqual(['fl-1']);

    // Metadata keys a slice at a time: the slice counts only items with metadata; null once none is left.
    const keysOf = async (afterSeq: number, limit: number) => {
      const p = await store.metadataKeysPage(storeCtx, id, afterSeq, limit);
      return { keys: [...p.keys].sort(), last: p.last };
    };
    expect(await keysOf(-1, 100)).toEqual({ keys: ['branch', 'region', 'tier'], last: 2 });
    expect(await keysOf(-1, 1)).toEqual({ keys: ['branch', 'tier'], last: 0 });
    expect(await keysOf(0, 1)).toEqual({ keys: ['region'], last: 2 });
    expect(await keysOf(2, 100)).toEqual({ keys: [], last: null });

    const other = ctx.newLender();
    const theirs = await submit([bankAuthorizer('fl-0')], other.key);
    expect((await store.ownedBatchIds(storeCtx, lenderId, [id, theirs, 'no-such-batch', earlier])).sort()).toEqual([id, earlier].sort());
    expect(await store.ownedBatchIds(storeCtx, lenderId, [])).toEqual([]);
    await processBalances(ctx.rt);

    // The latest of fl-0 is the flush's (a linked kind), not the earlier sandbox read.
    expect(await store.latestResultOf(storeCtx, lenderId, 'fl-0')).toEqual({ balanceKind: 'available', balanceAsOf: now - 60_000, detail: null });
    expect(await store.latestResultOf(storeCtx, lenderId, 'fl-1')).toEqual({ balanceKind: null, balanceAsOf: null, detail: 'relink_required' });
    expect(await store.latestResultOf(storeCtx, lenderId, 'never-read')).toBeUndefined();
    expect(await store.latestResultOf(storeCtx, other.id, 'fl-1')).toBeUndefined();
    const among = await store.latestResultsAmong(storeCtx, lenderId, ['fl-2', 'never-read', 'fl-0']);
    expect([...among].sort((x, y) => x.aid.localeCompare(y.aid))).toEqual([
      { aid: 'fl-0', balanceKind: 'available', balanceAsOf: now - 60_000, detail: null },
      { aid: 'fl-2', balanceKind: 'current', balanceAsOf: now - 1, detail: null },
    ]);
    expect(await store.latestResultsAmong(storeCtx, lenderId, [])).toEqual([]);

    // History: newest first, strictly before the position given, at most `take`, the lender's own only.
    expect(await store.historyCount(storeCtx, lenderId, 'fl-0')).toBe(2);
    expect(await store.historyCount(storeCtx, other.id, 'fl-0')).toBe(1);
    expect(await store.historyCount(storeCtx, lenderId, 'never-read')).toBe(0);
    const history = await store.historyPage(storeCtx, lenderId, 'fl-0', Number.MAX_SAFE_INTEGER, 10);
    const read = { aid: 'fl-0', cents: 1_234_567, code: 0, exportStatus: 'SUCCESS' as const, detail: null };
    expect(history).toEqual([
      { ...read, id: page[0]!.id, batchId: id, at: now, kind: 'available', asOf: now - 60_000 },
      { ...read, id: expect.any(Number), batchId: earlier, at: now - 60_000, kind: null, asOf: null },
    ]);
    expect(await store.historyPage(storeCtx, lenderId, 'fl-0', Number.MAX_SAFE_INTEGER, 1)).toEqual([history[0]!]);
    expect(await store.historyPage(storeCtx, lenderId, 'fl-0', history[0]!.id, 10)).toEqual([history[1]!]);
    expect(await store.historyPage(storeCtx, lenderId, 'fl-0', history[1]!.id, 10)).toEqual([]);
  });

  test('thresholdHits: a schedule run’s results at or over their item’s threshold, in request order', async () => {
    const made = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', {
      body: {
        name: `hits-${t.engine}`,
        interval_days: 7,
        time_of_day: '09:30',
        webhook: 'http://127.0.0.1:9/hits',
        threshold_amount: 100,
        authorizers: [
          bankAuthorizer('th-over'),
          bankAuthorizer('th-under', { account_number: '0000000050' }),
          bankAuthorizer('th-failed', { account_number: '99993400' }),
          bankAuthorizer('th-exact', { account_number: '0000010000' }),
          bankAuthorizer('th-own', { account_number: '0000000300', threshold_amount: 2 }),
        ],
      },
    });
    expect(made.status).toBe(201);
    const run = await ctx.json('POST', `/v1/monitoring/schedules/${made.body.schedule_id}/run`);
    expect(run.status).toBe(202);
    const id = run.body.batch_id as string;
    expect(await store.thresholdHits(storeCtx, id)).toEqual([]);
    await processBalances(ctx.rt);
    expect(await store.batchStatus(storeCtx, id)).toBe('completed');
    const institutionOf = new Map((await store.exportPage(storeCtx, id, 0, 10)).map((r) => [r.aid, r.institution]));
    expect(await store.thresholdHits(storeCtx, id)).toEqual([
      { aid: 'th-over', institution: institutionOf.get('th-over')!, cents: 1_234_567, threshold: 10_000 },
      { aid: 'th-exact', institution: institutionOf.get('th-exact')!, cents: 10_000, threshold: 10_000 },
      { aid: 'th-own', institution: institutionOf.get('th-own')!, cents: 300, threshold: 200 },
    ]);
    expect(await store.thresholdHits(storeCtx, 'no-such-batch')).toEqual([]);
  });

  test('erasing a borrower: its clear details overwritten in started batches and in the lists of waiting ones, others kept', async () => {
    await processBalances(ctx.rt);
    const lender = ctx.newLender();
    const enrolled = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower('er-1')] } });
    expect(enrolled.status).toBe(207);
    const details = { phone_number: '2025550111', zip_code: '02139', metadata: { officer: 'Quill' } };
    const started = await submit([bankAuthorizer('er-1', details), bankAuthorizer('er-keep', details)], lender.key);
    await startPendingBatches(ctx.rt);
    const waiting = await submit([bankAuthorizer('er-keep', details), bankAuthorizer('er-1', details)], lender.key);
    const clear = (aid: string) => [aid, '+12025550111', '02139', { officer: 'Quill' }];

    // Only the batches still waiting are listed, with their items as stored.
    const listed = await store.waitingPayloads(storeCtx, lender.id);
    expect(listed.map((w) => w.batchId)).toEqual([waiting]);
    expect(unpackItems(listed[0]!.items).map((i) => [i.id, i.phone, i.zip, i.meta])).toEqual([clear('er-keep'), clear('er-1')]);

    // Rolled back, nothing is overwritten.
    await rolledBack(async (tx) => {
      await store.eraseQueuedDetails(tx, lender.id, 'er-1');
      await store.replacePayloadItems(tx, waiting, new Uint8Array([0x5b, 0x5d]));
    });
    expect((await queueRows(started)).map((r) => r.phone)).toEqual(['+12025550111', '+12025550111']);
    expect(unpackItems((await store.waitingItems(storeCtx, waiting))!)).toHaveLength(2);

    const erased = await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['er-1'] } });
    expect(erased.body).toMatchObject({ deleted: 1 });
    const rows = await queueRows(started);
    expect(rows.map((r) => [r.aid, r.phone, r.zip, r.metadata === null ? null : JSON.parse(r.metadata)])).toEqual([
      ['er-1', null, null, null],
      clear('er-keep'),
    ]);
    const scrubbed = unpackItems((await store.waitingItems(storeCtx, waiting))!);
    expect(scrubbed.map((i) => [i.id, i.phone, i.zip, i.meta])).toEqual([clear('er-keep'), ['er-1', null, null, null]]);

    // Another lender's rows of the same identifier are not the borrower's.
    const other = ctx.newLender();
    const theirs = await submit([bankAuthorizer('er-1', details)], other.key);
    await startPendingBatches(ctx.rt);
    await t.inTx((tx) => store.eraseQueuedDetails(tx, lender.id, 'er-1'));
    expect((await queueRows(theirs)).map((r) => r.phone)).toEqual(['+12025550111']);

    await processBalances(ctx.rt);
    expect(await store.waitingPayloads(storeCtx, lender.id)).toEqual([]);
  });

  test('dropExpiredIdempotency: up to `limit` entries created before `before`, oldest first; later ones stay', async () => {
    const lender = ctx.newLender();
    const base = ctx.clock.now();
    for (const [i, at] of [base, base + 1_000, base + 2_000].entries()) {
      const b = newBatch(lender.id, [`ix-${i}`], { now: at });
      expect(await accept(storeCtx, b, 1_000, [`hash-ix-${i}`, 0, '{}'])).toEqual({ kind: 'accepted' });
    }
    const entries = () =>
      ctx.rows<{ h: string; at: number }>('SELECT body_hash AS h, created_at AS at FROM idempotency_keys ORDER BY created_at, body_hash');
    const older = (await entries()).filter((e) => e.at < base + 2_000);
    expect(older.length).toBeGreaterThanOrEqual(2);

    await rolledBack(async (tx) => {
      expect(await store.dropExpiredIdempotency(tx, base + 2_000, 1_000)).toBe(older.length);
    });
    expect((await entries()).filter((e) => e.at < base + 2_000)).toHaveLength(older.length);

    // One at a time, the oldest goes first.
    const oldestAt = older[0]!.at;
    const atOldest = older.filter((e) => e.at === oldestAt).length;
    expect(await t.inTx((tx) => store.dropExpiredIdempotency(tx, base + 2_000, 1))).toBe(1);
    expect((await entries()).filter((e) => e.at === oldestAt)).toHaveLength(atOldest - 1);
    expect(await t.inTx((tx) => store.dropExpiredIdempotency(tx, base + 2_000, 1_000))).toBe(older.length - 1);
    expect(await t.inTx((tx) => store.dropExpiredIdempotency(tx, base + 2_000, 1_000))).toBe(0);
    // Created at `before` exactly is not before it.
    const left = await entries();
    expect(left.every((e) => e.at >= base + 2_000)).toBe(true);
    expect(left.map((e) => e.h)).toContain('hash-ix-2');
    expect(await store.cachedResponse(storeCtx, lender.id, 'hash-ix-1', 0)).toBeUndefined();
    expect(await store.cachedResponse(storeCtx, lender.id, 'hash-ix-2', 0)).toEqual({ statusCode: 201, responseBody: '{}' });

    await processBalances(ctx.rt);
  });

  test('flushes of the same reads and batches at once, locked in opposite orders: both finish, each item recorded once', async () => {
    await processBalances(ctx.rt);
    const lender = ctx.newLender();
    const x = await submit(['lk-x0', 'lk-x1'].map((aid) => bankAuthorizer(aid)), lender.key);
    const y = await submit(['lk-y0', 'lk-y1'].map((aid) => bankAuthorizer(aid)), lender.key);
    await startPendingBatches(ctx.rt);
    const now = ctx.clock.now();
    const claimed = (await store.claimDueReads(storeCtx, 100, now)).filter(mineOf([x, y]));
    expect(claimed).toHaveLength(4);
    const resultOf = (c: ClaimedItem): ResultRow => resultRow(c, lender.id, now, { cents: 100 });
    const flush = (order: ClaimedItem[], batchIds: string[]) =>
      t.inTx(async (tx) => {
        await store.lockReads(tx, order.map((c) => c.id));
        const recorded = await store.recordResults(tx, order.map(resultOf));
        await store.finishReads(tx, order.map((c) => ({ id: c.id, leaseToken: c.leaseToken, finish: { state: 'done' } })));
        await store.lockBatches(tx, batchIds);
        const counted = new Map<string, number>();
        order.forEach((c, i) => recorded[i] && counted.set(c.batchId, (counted.get(c.batchId) ?? 0) + 1));
        for (const batchId of batchIds) if (counted.has(batchId)) await store.countProcessed(tx, batchId, counted.get(batchId)!);
        return recorded.filter(Boolean).length;
      });
    const [one, two] = await Promise.all([flush(claimed, [x, y]), flush([...claimed].reverse(), [y, x])]);
    expect(one + two).toBe(4);
    const totals = await Promise.all([x, y].map(async (b) => (await store.batchOf(storeCtx, lender.id, b))!.totalProcessed));
    expect(totals).toEqual([2, 2]);
    // Recorded by whichever flush came first: one result per item either way.
    expect((await store.resultsPage(storeCtx, x, 0, 10)).map((r) => r.aid).sort()).toEqual(['lk-x0', 'lk-x1']);
    expect(await store.pendingAuthorizers(storeCtx, lender.id)).toBe(0);
  });
});
