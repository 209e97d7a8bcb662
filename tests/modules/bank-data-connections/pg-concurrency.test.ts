// engine: postgres
// Bank-data connections on PostgreSQL: one live connection per provider and lender however many creations run
// at once (20 here; the provider's check is stubbed), and a connection deleted by two callers at once is
// deleted once, the other told it is not found.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import type { Ctx } from '../../../src/deps';
import { createBankDataConnection, deleteBankDataConnection, listBankDataConnections } from '../../../src/modules/bank-data-connections/service';
import { createLender } from '../../../src/modules/lenders/service';
import { FakeClock } from '../../../src/platform/clock';
import { Conflict, NotFound } from '../../../src/platform/errors';
import { openPg } from '../../../src/platform/pg';
import { rows } from '../../../src/platform/sql/pg';
import { generateVaultKey, Vault } from '../../../src/platform/vault';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;
const NOW = Date.UTC(2026, 0, 5, 12);

if (!onPostgres) {
  test('bank-data connections under concurrent callers: not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const database = freshPgDatabase();
  const pg = openPg(database.url, { max: CALLERS + 5 });
  const accepted = { verify: async () => {} };
  const deps = { ...pgStoreDeps(pg), clock: new FakeClock(NOW), vault: new Vault(generateVaultKey()), linked: { plaid: accepted, stripe: accepted } };
  afterAll(async () => {
    await pg.close();
    database.drop();
  });

  const body = { provider: 'stripe' as const, api_key: 'rk_test_bankdata0000000000005678' };

  describe('bank-data connections on PostgreSQL, 20 callers at once', () => {
    test('creations for one provider: one connection, every other caller told it exists', async () => {
      const { lender } = await createLender(deps, 'Bank Data Lender', NOW);
      const ctx = { lender: { id: lender.id, name: lender.name, debitCardApproved: false }, deps } as unknown as Ctx;
      const results = await Promise.allSettled(Array.from({ length: CALLERS }, () => createBankDataConnection({ ctx, input: { body } })));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect(r.reason).toBeInstanceOf(Conflict);
      const [{ n }] = await rows<{ n: number }>(pg.db, sql`SELECT count(*)::int AS n FROM bank_data_connections WHERE lender_id = ${lender.id}`);
      expect(n).toBe(1);

      const [made] = (await listBankDataConnections({ ctx })).connections;
      expect(made).toMatchObject({ provider: 'stripe', key_last4: '5678', created_at: new Date(NOW).toISOString() });
      const deletions = await Promise.allSettled(Array.from({ length: CALLERS }, () => deleteBankDataConnection({ ctx, input: { id: made!.id } })));
      expect(deletions.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of deletions.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect(r.reason).toBeInstanceOf(NotFound);
      expect((await listBankDataConnections({ ctx })).connections).toEqual([]);
      // Deleted, its credentials erased: a new one for the provider may be stored.
      await createBankDataConnection({ ctx, input: { body } });
      expect((await listBankDataConnections({ ctx })).connections).toHaveLength(1);
    });
  });
}
