// engine: postgres
// The bound per linked account with two replicas on one PostgreSQL database (two runtimes in this process,
// each with its own REPLICA_ID): the memory of answers is each replica's, so one account is asked at most
// once per window by each replica, whatever the number of authorizers carrying it and however the replicas
// share out their reads. Every item is answered, each reuse naming one of those reads.
import { afterAll, describe, expect, test } from 'bun:test';
import { twoReplicas } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { onPostgres } from '../../helpers/pg';
import { startFakePlaid } from '../../fakes/plaid-server';
import { processBalances } from '../../../src/modules/balance-requests/processing';

if (!onPostgres) {
  test('PostgreSQL: not applicable without DATABASE_URL=postgres://… (on SQLite one process reads; link-bound.test.ts covers it)', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const plaid = startFakePlaid();
  afterAll(() => plaid.stop());
  const { a, b } = twoReplicas({ PLAID_API_URL: plaid.url });

  describe('two replicas', () => {
    test('1,000 authorizers sharing one bank_link, read by both replicas at once: at most one call each', async () => {
      plaid.addClient('client_replicas', 'secret-client_replicas');
      const conn = await a.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: 'client_replicas', secret: 'secret-client_replicas', environment: 'sandbox' } });
      expect(conn.status).toBe(201);
      const token = 'access-sandbox-replicas-shared';
      plaid.addItem(token, [{ account_id: 'acc_checking_0001', available: 64, current: 64 }]);
      const link = { provider: 'plaid', access_token: token, account_id: 'acc_checking_0001' };
      const sent = await a.json('POST', '/v1/balance_requests', { body: { authorizers: Array.from({ length: 1000 }, (_, i) => bankAuthorizer(`rep-${i}`, { bank_link: link })) } });
      expect(sent.status).toBe(201);
      const batchId = sent.body.batch_id as string;
      for (;;) {
        await Promise.all([processBalances(a.rt), processBalances(b.rt)]);
        if ((await a.json('GET', `/v1/balance_requests/${batchId}`)).body.status === 'completed') break;
      }
      const calls = plaid.requests.filter((r) => r.path === '/accounts/balance/get' && r.body.access_token === token).length;
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(calls).toBeLessThanOrEqual(2);

      const rows: { authorizer_unique_id: string; balance: number; timestamp: string; reused_from?: { authorizer_unique_id: string } }[] = [];
      let page: string | null = null;
      do {
        const r: { body: { balances: typeof rows; has_more: boolean; next_page_token: string | null } } = await a.json('GET', `/v1/balances?batchId=${batchId}${page ? `&next_page_token=${page}` : ''}`);
        rows.push(...r.body.balances);
        page = r.body.has_more ? r.body.next_page_token : null;
      } while (page);
      expect(rows).toHaveLength(1000);
      for (const r of rows) expect(r.balance).toBe(64);
      const asked = rows.filter((r) => r.reused_from === undefined).map((r) => r.authorizer_unique_id);
      expect(asked).toHaveLength(calls);
      for (const r of rows) if (r.reused_from) expect(asked).toContain(r.reused_from.authorizer_unique_id);
    });
  });
}
