// engine: postgres
// The processor keys' rules under concurrent transactions on PostgreSQL (READ COMMITTED, side by side): one
// default per lender and rail_scope, one key per tag and rail_scope, one lender per processor account. Twenty
// callers at once: the rule holds, and every caller the rule refuses gets the 409 a later request would.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import type { Processor } from '../../../src/adapters/processors';
import type { Ctx } from '../../../src/deps';
import { Conflict } from '../../../src/platform/errors';
import { transaction } from '../../../src/platform/context';
import { rows } from '../../../src/platform/sql/pg';
import { createConnection, deleteConnection, listConnections, updateConnection } from '../../../src/modules/payment-connections/service';
import { releaseAccount } from '../../../src/modules/payment-connections/accounts';
import { onPostgres } from '../../helpers/pg';
import { pgServiceDeps, type PgServiceDeps } from '../../helpers/pg-service-deps';

const CALLERS = 20;
/** Twenty transactions at once on a shared machine: seconds, not milliseconds. */
const SLOW = 120_000;

if (!onPostgres) {
  test('not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  // The account a key belongs to: its last six characters (`acct_` + them), so a test chooses it.
  const processor: Processor = {
    name: 'sandbox',
    async verifyKey(key: string) {
      await Bun.sleep(Math.random() * 5);
      return { accountId: `acct_${key.slice(-6)}` };
    },
    tokenizeCard: () => Promise.reject(new Error('not used here')),
    createDebit: () => Promise.reject(new Error('not used here')),
    listChanges: () => Promise.reject(new Error('not used here')),
    findPayment: () => Promise.reject(new Error('not used here')),
    listPayments: () => Promise.reject(new Error('not used here')),
    cancelPayment: () => Promise.reject(new Error('not used here')),
  } as Processor;

  const envs: PgServiceDeps[] = [];
  const env = () => {
    const e = pgServiceDeps({ processor, max: 10 });
    envs.push(e);
    return e;
  };
  afterAll(async () => {
    for (const e of envs) await e.close();
  }, SLOW);

  let n = 0;
  /** A well-formed sandbox key of account `acct_<account>` (six characters). */
  const key = (account: string) => `sbx_test_${String(++n).padStart(10, '0')}${account}`;

  const create = (ctx: Ctx, body: Record<string, unknown>) => createConnection({ ctx, input: { body: body as never } });

  /** Each outcome: 'ok', 'conflict' (a 409), or the unexpected error itself. */
  async function outcomes(calls: (() => Promise<unknown>)[]): Promise<{ ok: number; conflict: number; other: unknown[] }> {
    const settled = await Promise.allSettled(calls.map((f) => f()));
    const other = settled.filter((s) => s.status === 'rejected' && !(s.reason instanceof Conflict)).map((s) => (s as PromiseRejectedResult).reason);
    return {
      ok: settled.filter((s) => s.status === 'fulfilled').length,
      conflict: settled.filter((s) => s.status === 'rejected' && s.reason instanceof Conflict).length,
      other,
    };
  }

  const liveRows = (e: PgServiceDeps, lenderId: string) =>
    rows<{ id: string; rail_scope: string; is_default: number; merchant_ref: string | null }>(
      e.pg.db,
      sql`SELECT id, rail_scope, is_default, merchant_ref FROM payment_connections WHERE lender_id = ${lenderId} AND deleted_at IS NULL ORDER BY created_at, id`,
    );

  describe('payment connections on PostgreSQL, 20 callers at once', () => {
    test('20 default keys for one rail_scope: one is stored, 19 are refused with 409', async () => {
      const e = env();
      const ctx = await e.newLender();
      const r = await outcomes(Array.from({ length: CALLERS }, () => () => create(ctx, { api_key: key('aaaaaa'), rail_scope: 'ach', is_default: true })));
      expect(r.other).toEqual([]);
      expect(r.ok).toBe(1);
      expect(r.conflict).toBe(CALLERS - 1);
      const live = await liveRows(e, ctx.lender.id);
      expect(live.length).toBe(1);
      expect(live[0]).toMatchObject({ rail_scope: 'ach', is_default: 1 });
    }, SLOW);

    test('20 keys with one tag and rail_scope: one is stored, 19 are refused with 409', async () => {
      const e = env();
      const ctx = await e.newLender();
      const r = await outcomes(Array.from({ length: CALLERS }, () => () => create(ctx, { api_key: key('bbbbbb'), rail_scope: 'card', merchant_ref: 'shop-1' })));
      expect(r.other).toEqual([]);
      expect(r.ok).toBe(1);
      expect(r.conflict).toBe(CALLERS - 1);
      expect((await liveRows(e, ctx.lender.id)).map((k) => k.merchant_ref)).toEqual(['shop-1']);
    }, SLOW);

    test('20 keys with different tags at once: all stored (the lock refuses nothing the rules allow)', async () => {
      const e = env();
      const ctx = await e.newLender();
      const r = await outcomes(Array.from({ length: CALLERS }, (_, i) => () => create(ctx, { api_key: key('cccccc'), rail_scope: 'both', merchant_ref: `tag-${i}` })));
      expect(r.other).toEqual([]);
      expect(r.ok).toBe(CALLERS);
      expect((await liveRows(e, ctx.lender.id)).length).toBe(CALLERS);
    }, SLOW);

    test('20 lenders registering keys of one processor account: one lender holds it, 19 are refused with 409', async () => {
      const e = env();
      const ctxs: Ctx[] = [];
      for (let i = 0; i < CALLERS; i++) ctxs.push(await e.newLender());
      const r = await outcomes(ctxs.map((ctx) => () => create(ctx, { api_key: key('dddddd'), rail_scope: 'ach', is_default: true })));
      expect(r.other).toEqual([]);
      expect(r.ok).toBe(1);
      expect(r.conflict).toBe(CALLERS - 1);
      const bindings = await rows<{ lender_id: string; n: number }>(e.pg.db, sql`SELECT lender_id, count(*) OVER ()::int AS n FROM processor_accounts WHERE account_id = 'acct_dddddd'`);
      expect(bindings.length).toBe(1);
      const keys = await rows<{ lender_id: string }>(e.pg.db, sql`SELECT lender_id FROM payment_connections WHERE account_id = 'acct_dddddd'`);
      // The one key stored is the holder's.
      expect(keys).toEqual([{ lender_id: bindings[0]!.lender_id }]);
    }, SLOW);

    test('20 promotions to default of one rail_scope at once: each swaps with the default before it, one default at the end', async () => {
      const e = env();
      const ctx = await e.newLender();
      const first = await create(ctx, { api_key: key('eeeeee'), rail_scope: 'card', is_default: true });
      const others = [];
      for (let i = 0; i < CALLERS; i++) others.push(await create(ctx, { api_key: key('eeeeee'), rail_scope: 'card' }));
      const r = await outcomes(others.map((k) => () => updateConnection({ ctx, input: { id: k.id, body: { is_default: true } as never } })));
      expect(r.other).toEqual([]);
      expect(r.ok).toBe(CALLERS);
      const defaults = (await liveRows(e, ctx.lender.id)).filter((k) => k.is_default === 1);
      expect(defaults.length).toBe(1);
      expect(defaults[0]!.id).not.toBe(first.id);
      const listed = await listConnections({ ctx });
      expect(listed.connections[0]!.is_default).toBe(true);
      expect(listed.missing_default_rails).toEqual(['ach']);
    }, SLOW);

    test('20 creates of a default while its rail_scope is freed and taken again: never two defaults', async () => {
      const e = env();
      const ctx = await e.newLender();
      const held = await create(ctx, { api_key: key('ffffff'), rail_scope: 'ach', is_default: true });
      const calls: (() => Promise<unknown>)[] = [() => deleteConnection({ ctx, input: { id: held.id } })];
      for (let i = 0; i < CALLERS - 1; i++) calls.push(() => create(ctx, { api_key: key('ffffff'), rail_scope: 'ach', is_default: true }));
      const r = await outcomes(calls);
      expect(r.other).toEqual([]);
      const defaults = (await liveRows(e, ctx.lender.id)).filter((k) => k.is_default === 1);
      expect(defaults.length).toBeLessThanOrEqual(1);
      // The delete went through; at most one create took the freed default.
      expect(r.ok).toBe(1 + defaults.length);
    }, SLOW);

    test('20 releases of an account while its holder registers keys of it: never a live key on a released account', async () => {
      const e = env();
      const ctx = await e.newLender();
      const k = await create(ctx, { api_key: key('gggggg'), rail_scope: 'ach', is_default: true });
      await deleteConnection({ ctx, input: { id: k.id } });
      const calls: (() => Promise<unknown>)[] = [];
      for (let i = 0; i < CALLERS; i++) {
        calls.push(i % 2 === 0 ? () => transaction({ deps: e.deps }, (tx) => releaseAccount(tx, 'sandbox', 'acct_gggggg')) : () => create(ctx, { api_key: key('gggggg'), rail_scope: 'card', merchant_ref: `t-${i}` }));
      }
      const r = await outcomes(calls);
      expect(r.other).toEqual([]);
      const live = await rows<{ n: number }>(e.pg.db, sql`SELECT count(*)::int AS n FROM payment_connections WHERE account_id = 'acct_gggggg' AND deleted_at IS NULL`);
      const bound = await rows<{ n: number }>(e.pg.db, sql`SELECT count(*)::int AS n FROM processor_accounts WHERE account_id = 'acct_gggggg'`);
      // A live key of the account means its binding stands.
      if (live[0]!.n > 0) expect(bound[0]!.n).toBe(1);
    }, SLOW);
  });

  describe('the pg store reads as the SQLite one', () => {
    test('listed defaults first then oldest first; totals over deleted keys too; bindings with the lender name', async () => {
      const e = env();
      const ctx = await e.newLender();
      const a = await create(ctx, { api_key: key('hhhhhh'), rail_scope: 'card', merchant_ref: 'z' });
      e.clock.advance(1000);
      const b = await create(ctx, { api_key: key('hhhhhh'), rail_scope: 'ach', is_default: true });
      const c = await create(ctx, { api_key: key('hhhhhh'), rail_scope: 'card', merchant_ref: 'y' });
      await transaction(ctx, (tx) => tx.deps.stores.paymentConnections.updateKey(tx, a.id, { ingested: 7, matched: 3, lastPollAt: 1_700_000_000_123 }));
      await transaction(ctx, (tx) => tx.deps.stores.paymentConnections.updateKey(tx, c.id, { ingested: 2, matched: 1 }));
      await deleteConnection({ ctx, input: { id: c.id } });
      const listed = await ctx.deps.stores.paymentConnections.listLiveKeys(ctx, ctx.lender.id);
      expect(listed.map((k) => k.id)).toEqual([b.id, a.id]);
      expect(typeof listed[0]!.createdAt).toBe('number');
      expect(listed[0]!.isDefault).toBe(true);
      expect(await ctx.deps.stores.paymentConnections.keyTotals(ctx, ctx.lender.id)).toEqual({ ingested: 9, matched: 4, lastPollAt: 1_700_000_000_123 });
      const other = await e.newLender();
      expect(await other.deps.stores.paymentConnections.keyTotals(other, other.lender.id)).toEqual({ ingested: 0, matched: 0, lastPollAt: null });
      expect(await ctx.deps.stores.paymentConnections.accountBinding(ctx, 'sandbox', 'acct_hhhhhh')).toEqual({ lenderId: ctx.lender.id, boundAt: e.clock.now() - 1000 });
      expect(await ctx.deps.stores.paymentConnections.listBindings(ctx)).toEqual([{ processor: 'sandbox', accountId: 'acct_hhhhhh', lender: ctx.lender.name, boundAt: expect.any(Number) }]);
      expect(await ctx.deps.stores.paymentConnections.accountInUse(ctx, { processor: 'sandbox', accountId: 'acct_hhhhhh', lenderId: ctx.lender.id })).toBe(true);
      const resolvable = await ctx.deps.stores.paymentConnections.resolvableKeys(ctx, ctx.lender.id);
      expect(resolvable.map((k) => k.id).sort()).toEqual([a.id, b.id].sort());
      expect(await ctx.deps.stores.paymentConnections.keysWithoutAccount(ctx)).toEqual([]);
      await transaction(ctx, (tx) => tx.deps.stores.paymentConnections.updateKey(tx, a.id, { accountId: null }));
      expect(await ctx.deps.stores.paymentConnections.keysWithoutAccount(ctx, 'sandbox')).toEqual([{ id: a.id, lenderId: ctx.lender.id, processor: 'sandbox', keySealed: expect.any(String) }]);
      await transaction(ctx, (tx) => tx.deps.stores.paymentConnections.recordKeyAccount(tx, a.id, 'acct_hhhhhh', 'why'));
      expect((await ctx.deps.stores.paymentConnections.liveKey(ctx, ctx.lender.id, a.id))?.lastPollError).toBe('why');
    }, SLOW);
  });
}
