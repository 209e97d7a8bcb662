// engine: postgres
// Lenders and their API keys on PostgreSQL, where transactions run side by side: a name is taken once, the
// live-key limit holds, and a bootstrap key is registered once, however many callers arrive at the same moment.
// Each case sends 20 callers at once on a pool with room for all of them.
import { afterAll, describe, expect, test } from 'bun:test';
import { hashApiKey } from '../../../src/platform/api-keys';
import { transaction } from '../../../src/platform/context';
import { openPg } from '../../../src/platform/pg';
import { rows } from '../../../src/platform/sql/pg';
import { sql } from 'drizzle-orm';
import {
  createLender,
  createLenderKey,
  ensureBootstrapLender,
  LenderError,
  listKeys,
  listLenders,
  MAX_LIVE_API_KEYS,
  TooManyApiKeys,
} from '../../../src/modules/lenders/service';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;
const NOW = Date.UTC(2026, 0, 5, 12);

if (!onPostgres) {
  test('lenders under concurrent callers: not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const database = freshPgDatabase();
  const pg = openPg(database.url, { max: CALLERS + 5 });
  const deps = pgStoreDeps(pg);
  afterAll(async () => {
    await pg.close();
    database.drop();
  });

  const settle = <T>(n: number, call: (i: number) => Promise<T>) => Promise.allSettled(Array.from({ length: n }, (_, i) => call(i)));
  const count = async (query: ReturnType<typeof sql>) => (await rows<{ n: number }>(pg.db, query))[0]!.n;

  describe('lenders on PostgreSQL, 20 callers at once', () => {
    test('the same name: one lender is created, every other caller is told the name is taken', async () => {
      const results = await settle(CALLERS, () => createLender(deps, 'Same Name', NOW));
      const made = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(made).toHaveLength(1);
      expect(refused).toHaveLength(CALLERS - 1);
      for (const r of refused) {
        expect(r.reason).toBeInstanceOf(LenderError);
        expect((r.reason as Error).message).toBe('A lender named Same Name already exists');
      }
      expect(await count(sql`SELECT count(*)::int AS n FROM lenders WHERE name = 'Same Name'`)).toBe(1);
      // The one lender has its first key, and no refused caller left a key behind.
      const [lender] = (await listLenders(deps)).filter((l) => l.name === 'Same Name');
      expect(await listKeys(deps, lender!.id)).toHaveLength(1);
      expect(await count(sql`SELECT count(*)::int AS n FROM api_keys WHERE lender_id NOT IN (SELECT id FROM lenders)`)).toBe(0);
    });

    test('different names: every one is created, each with its key', async () => {
      const results = await settle(CALLERS, (i) => createLender(deps, `Lender ${i}`, NOW));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await count(sql`SELECT count(*)::int AS n FROM lenders WHERE name LIKE 'Lender %'`)).toBe(CALLERS);
      expect(await count(sql`SELECT count(*)::int AS n FROM api_keys k JOIN lenders l ON l.id = k.lender_id WHERE l.name LIKE 'Lender %'`)).toBe(CALLERS);
    });

    test('a name stored by a writer that skipped the check is refused with the same error', async () => {
      await createLender(deps, 'Raced', NOW);
      const attempt = transaction({ deps }, (tx) => tx.deps.stores.lenders.addLender(tx, { id: crypto.randomUUID(), name: 'Raced', debitCardApproved: false, createdAt: NOW }));
      expect(attempt).rejects.toThrow(new LenderError('A lender named Raced already exists'));
      await attempt.catch(() => undefined);
    });

    test('the live-key limit: with one place left, exactly one of 20 new keys is issued', async () => {
      const { lender } = await createLender(deps, 'Key Limit', NOW);
      for (let i = 1; i < MAX_LIVE_API_KEYS - 1; i++) await createLenderKey(deps, lender.id, NOW);
      expect(await listKeys(deps, lender.id)).toHaveLength(MAX_LIVE_API_KEYS - 1);
      const results = await settle(CALLERS, () => createLenderKey(deps, lender.id, NOW));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect(r.reason).toBeInstanceOf(TooManyApiKeys);
      expect(await count(sql`SELECT count(*)::int AS n FROM api_keys WHERE lender_id = ${lender.id} AND revoked_at IS NULL`)).toBe(MAX_LIVE_API_KEYS);
    });

    test('the bootstrap key of replicas starting at once: registered once, to one lender `default`', async () => {
      const key = `drs_live_${'b'.repeat(32)}`;
      const results = await settle(CALLERS, () => ensureBootstrapLender(deps, key, NOW));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await count(sql`SELECT count(*)::int AS n FROM lenders WHERE name = 'default'`)).toBe(1);
      expect(await count(sql`SELECT count(*)::int AS n FROM api_keys WHERE key_hash = ${hashApiKey(key)}`)).toBe(1);
    });
  });
}
