import { afterAll, expect, test } from 'bun:test';
import { contract } from './contract';
import { newId } from '../../src/platform/ids';
import { startFakePlaid } from '../fakes/plaid-server';
import { startFakeStripe } from '../fakes/stripe-server';

// Both engines' services check credentials against the same fake providers.
const plaid = startFakePlaid();
const stripe = startFakeStripe();
plaid.addClient('client_one', 'plaid-secret-00001234');
afterAll(() => {
  plaid.stop();
  stripe.stop();
});

const plaidBody = { provider: 'plaid', client_id: 'client_one', secret: 'plaid-secret-00001234', environment: 'sandbox' };
const stripeBody = { provider: 'stripe', api_key: 'rk_test_bankdata0000000000005678' };

contract(
  'bankDataConnections',
  (t) => {
    const { ctx, store, storeCtx } = t;

    test('a lender without connections has none live, and an unknown id is absent', async () => {
      const other = ctx.newLender();
      expect(await store.liveConnections(storeCtx, other.id)).toEqual([]);
      expect(await store.liveConnection(storeCtx, other.id, 'no-such-connection')).toBeUndefined();
      expect(await store.liveConnectionFor(storeCtx, other.id, 'plaid')).toBeUndefined();
      expect(await store.connectionById(storeCtx, 'no-such-connection')).toBeUndefined();
    });

    test('created through the API: stored whole, listed oldest first, found by provider and id, only to its lender', async () => {
      const lender = ctx.newLender();
      const p = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: plaidBody });
      expect(p.status).toBe(201);
      ctx.clock.advance(1000);
      const s = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: stripeBody });
      expect(s.status).toBe(201);

      const live = await store.liveConnections(storeCtx, lender.id);
      expect(live.map((c) => c.id)).toEqual([p.body.id, s.body.id]);
      const [plaidRow, stripeRow] = live;
      expect(plaidRow).toMatchObject({ lenderId: lender.id, provider: 'plaid', environment: 'sandbox', last4: '1234', lastReadAt: null, deletedAt: null });
      expect(plaidRow!.createdAt).toBe(ctx.clock.now() - 1000);
      expect(typeof plaidRow!.createdAt).toBe('number');
      expect(stripeRow).toMatchObject({ provider: 'stripe', environment: null, last4: '5678' });
      // Sealed, never the secret itself, and it opens to what was sent.
      expect(plaidRow!.credentialsSealed).not.toContain('plaid-secret');
      expect(JSON.parse(ctx.rt.vault.open(plaidRow!.credentialsSealed!))).toEqual({ client_id: 'client_one', secret: 'plaid-secret-00001234' });

      expect((await store.liveConnectionFor(storeCtx, lender.id, 'stripe'))?.id).toBe(s.body.id);
      expect(await store.liveConnection(storeCtx, lender.id, p.body.id)).toEqual(plaidRow);
      expect(await store.connectionById(storeCtx, p.body.id)).toEqual(plaidRow);
      // Another lender's connection is not its live connection, by id or by provider.
      expect(await store.liveConnection(storeCtx, ctx.lender.id, p.body.id)).toBeUndefined();
      expect(await store.liveConnectionFor(storeCtx, ctx.lender.id, 'plaid')).toBeUndefined();

      // A second one for the same provider is refused before anything is stored.
      const again = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: plaidBody });
      expect(again.status).toBe(409);
      expect((await store.liveConnections(storeCtx, lender.id)).length).toBe(2);
    });

    test('erased: credentials gone, no longer live, still found by id as deleted; a new one may follow', async () => {
      const lender = ctx.newLender();
      const p = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: plaidBody });
      expect(p.status).toBe(201);
      ctx.clock.advance(5000);
      expect((await ctx.request('DELETE', `/v1/bank_data_connections/${p.body.id}`, { key: lender.key })).status).toBe(204);

      const gone = await store.connectionById(storeCtx, p.body.id);
      expect(gone).toMatchObject({ id: p.body.id, credentialsSealed: null, deletedAt: ctx.clock.now() });
      expect(typeof gone!.deletedAt).toBe('number');
      expect(await store.liveConnection(storeCtx, lender.id, p.body.id)).toBeUndefined();
      expect(await store.liveConnectionFor(storeCtx, lender.id, 'plaid')).toBeUndefined();
      expect(await store.liveConnections(storeCtx, lender.id)).toEqual([]);
      // Deleting it again finds nothing live.
      expect((await ctx.json('DELETE', `/v1/bank_data_connections/${p.body.id}`, { key: lender.key })).status).toBe(404);

      const next = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: plaidBody });
      expect(next.status).toBe(201);
      expect((await store.liveConnectionFor(storeCtx, lender.id, 'plaid'))?.id).toBe(next.body.id);
    });

    test('one live connection per provider: a second insert is refused and a rolled-back insert leaves nothing', async () => {
      const lender = ctx.newLender();
      const row = (provider: 'plaid' | 'stripe') => ({
        id: newId(),
        lenderId: lender.id,
        provider,
        environment: provider === 'plaid' ? ('sandbox' as const) : null,
        credentialsSealed: ctx.rt.vault.seal('{}'),
        last4: '0000',
        createdAt: ctx.clock.now(),
      });
      const first = row('plaid');
      await t.inTx(async (tx) => {
        await store.serializeConnections(tx, lender.id);
        await store.insertConnection(tx, first);
      });
      expect((await store.liveConnections(storeCtx, lender.id)).map((c) => c.id)).toEqual([first.id]);

      let refused = false;
      await t.inTx((tx) => store.insertConnection(tx, row('plaid'))).catch(() => (refused = true));
      expect(refused).toBe(true);
      expect((await store.liveConnections(storeCtx, lender.id)).map((c) => c.id)).toEqual([first.id]);

      const dropped = row('stripe');
      await t
        .inTx(async (tx) => {
          await store.insertConnection(tx, dropped);
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect(await store.connectionById(storeCtx, dropped.id)).toBeUndefined();
      expect(await store.liveConnectionFor(storeCtx, lender.id, 'stripe')).toBeUndefined();

      // Erased inside a transaction that rolls back: still live, credentials kept.
      await t
        .inTx(async (tx) => {
          await store.eraseConnection(tx, first.id, ctx.clock.now());
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect(await store.liveConnection(storeCtx, lender.id, first.id)).toMatchObject({ credentialsSealed: first.credentialsSealed, deletedAt: null });
      // The lender's serialization went with its transaction: a creation through the API goes through, not waits.
      expect((await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: stripeBody })).status).toBe(201);
    });

    test('markRead sets last_read_at on the named connections only; an empty list changes nothing', async () => {
      const lender = ctx.newLender();
      const p = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: plaidBody });
      const s = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: stripeBody });
      const other = ctx.newLender();
      const o = await ctx.json('POST', '/v1/bank_data_connections', { key: other.key, body: stripeBody });
      ctx.clock.advance(60_000);
      const at = ctx.clock.now();
      await t.inTx((tx) => store.markRead(tx, [p.body.id, s.body.id], at));
      await t.inTx((tx) => store.markRead(tx, [], at + 1));
      expect((await store.liveConnections(storeCtx, lender.id)).map((c) => c.lastReadAt)).toEqual([at, at]);
      expect((await store.connectionById(storeCtx, o.body.id))!.lastReadAt).toBeNull();
      // Shown by the listing.
      const list = await ctx.json('GET', '/v1/bank_data_connections', { key: lender.key });
      expect(list.body.connections.map((c: { last_read_at: unknown }) => c.last_read_at)).toEqual([new Date(at).toISOString(), new Date(at).toISOString()]);
    });

    test('provider calls add up per connection, endpoint and day, read back by day then endpoint within the range', async () => {
      const lender = ctx.newLender();
      const p = await ctx.json('POST', '/v1/bank_data_connections', { key: lender.key, body: plaidBody });
      const id = p.body.id as string;
      const scope = { connectionId: id, lenderId: lender.id, provider: 'plaid' };
      await t.inTx((tx) =>
        store.addProviderCalls(tx, [
          { ...scope, endpoint: '/accounts/balance/get', day: '2026-11-02', calls: 3 },
          { ...scope, endpoint: '/accounts/get', day: '2026-11-02', calls: 1 },
          { ...scope, endpoint: '/accounts/balance/get', day: '2026-11-01', calls: 2 },
          { ...scope, endpoint: '/accounts/balance/get', day: '2026-12-01', calls: 9 },
        ]),
      );
      // Added to, never replaced; an empty flush writes nothing.
      await t.inTx((tx) => store.addProviderCalls(tx, [{ ...scope, endpoint: '/accounts/balance/get', day: '2026-11-02', calls: 4 }]));
      await t.inTx((tx) => store.addProviderCalls(tx, []));
      // A flush that rolls back adds nothing.
      await t
        .inTx(async (tx) => {
          await store.addProviderCalls(tx, [{ ...scope, endpoint: '/accounts/get', day: '2026-11-02', calls: 100 }]);
          throw new Error('rolled back');
        })
        .catch(() => undefined);

      const november = await store.providerCalls(storeCtx, id, '2026-11-01', '2026-12-01');
      expect(november).toEqual([
        { day: '2026-11-01', endpoint: '/accounts/balance/get', calls: 2 },
        { day: '2026-11-02', endpoint: '/accounts/balance/get', calls: 7 },
        { day: '2026-11-02', endpoint: '/accounts/get', calls: 1 },
      ]);
      for (const r of november) expect(typeof r.calls).toBe('number');
      expect(await store.providerCalls(storeCtx, 'another-connection', '2026-11-01', '2026-12-01')).toEqual([]);

      // The usage answer reads the same rows for the month (UTC).
      const usage = await ctx.json('GET', `/v1/bank_data_connections/${id}/usage?month=2026-12`, { key: lender.key });
      expect(usage.status).toBe(200);
      expect(JSON.stringify(usage.body)).toContain('2026-12-01');
      expect(JSON.stringify(usage.body)).not.toContain('2026-11-02');
      // Another lender's connection is not found.
      expect((await ctx.json('GET', `/v1/bank_data_connections/${id}/usage?month=2026-12`)).status).toBe(404);
    });
  },
  { env: { PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url } },
);
