// engine: postgres
// Probes that stay index probes whatever the statistics say. A table analyzed while empty (a large upload rolled
// back, then vacuumed away) is taken for one of a few rows, and the per-key probes of an upload or a feed's page
// were planned as scans: the transaction's own inserts then made each probe read every row it had added, and a
// 20,000-row file that records in about 5 s on a fresh database hit the 30 s limit. The upload's and the page's
// transactions now forbid the scan (their first statement says so); what they read is counted by PostgreSQL
// itself in pg_stat_xact_user_tables.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { onPostgres, psql } from '../../helpers/pg';
import { enrollBorrower } from '../../helpers/fixtures';
import { transaction } from '../../../src/platform/context';
import { readerOf, rows } from '../../../src/platform/sql/pg';
import type { TxCtx } from '../../../src/platform/store';
import { sql } from 'drizzle-orm';

if (!onPostgres) {
  test('probes after empty statistics: not applicable without DATABASE_URL=postgres://…', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const c = createTestContext({});
  afterAll(() => c.close());
  const lenderId = c.lender.id;
  // As after a large upload rolled back and vacuumed away: the tables' statistics say empty.
  const analyzeEmpty = () => {
    for (const t of ['payment_events', 'uploaded_results', 'ledger_entries', 'payments']) psql(`VACUUM ANALYZE ${t}`, c.rt.config.databaseUrl!);
  };

  let n = 0;
  /**
   * What a transaction's probes of payment_events read, as an upload's slices do: a slice's events added, then
   * the next slice's keys probed, ten times; the sequential scans PostgreSQL counted for the transaction.
   */
  async function scansOfProbes(begin: (tx: TxCtx) => Promise<void>): Promise<number> {
    return transaction({ deps: c.rt }, async (tx) => {
      await begin(tx);
      for (let slice = 0; slice < 10; slice++) {
        const keys = Array.from({ length: 256 }, () => `REF-${++n}`);
        expect(await tx.deps.stores.outcomes.seenAmong(tx, lenderId, 'upload', keys.map((k) => `upload:${k}:settled`))).toEqual([]);
        expect(await tx.deps.stores.outcomes.lastEventsAmong(tx, lenderId, keys)).toEqual([]);
        for (const k of keys) {
          await tx.deps.stores.outcomes.recordEvent(tx, {
            id: crypto.randomUUID(),
            lenderId,
            enrollmentId: null,
            aid: null,
            paymentId: null,
            connectionId: null,
            reference: k,
            status: 'settled',
            amount: 100,
            returnCode: null,
            message: null,
            source: 'upload',
            sourceEventId: `upload:${k}:settled`,
            occurredAt: 0,
            recordedAt: 0,
          });
        }
      }
      const [r] = await rows<{ scans: string }>(readerOf(tx), sql`SELECT seq_scan AS scans FROM pg_stat_xact_user_tables WHERE relname = 'payment_events'`);
      // Rolled back: the next measurement starts from the same empty table.
      throw Object.assign(new Error('rolled back'), { scans: Number(r!.scans) });
    }).catch((e: { scans?: number }) => {
      if (e.scans === undefined) throw e;
      return e.scans;
    });
  }

  describe('payment_events analyzed while empty', () => {
    test('without the setting its probes are scans (the trap); in an upload’s or a page’s transaction they are index probes', async () => {
      analyzeEmpty();
      // The trap, as PostgreSQL plans it: a scan per key probed.
      expect(await scansOfProbes(async () => {})).toBeGreaterThanOrEqual(500);
      // The upload's transaction and a feed page's transaction: none.
      analyzeEmpty();
      expect(await scansOfProbes((tx) => tx.deps.stores.uploads.serializeUploads(tx, lenderId))).toBe(0);
      const conn = await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_stale_statistics_001', rail_scope: 'both', is_default: true } });
      analyzeEmpty();
      expect(await scansOfProbes((tx) => tx.deps.stores.matching.serializeFeed(tx, conn.body.id))).toBe(0);
    });

    test('a 20,000-row file records within the upload’s own limit after its tables were analyzed empty', async () => {
      const borrowers = Array.from({ length: 200 }, (_, i) => enrollBorrower(`stale-${i}`));
      for (let i = 0; i < borrowers.length; i += 100) expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: borrowers.slice(i, i + 100) } })).status).toBe(207);
      analyzeEmpty();
      const lines = ['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code'];
      for (let i = 0; i < 20_000; i++) lines.push(`stale-${i % 200},STALE-${i},12.34,settled,2026-11-02,2026-11-04,,`);
      const form = new FormData();
      form.append('file', new File([lines.join('\n') + '\n'], 'results.csv', { type: 'text/csv' }));
      const res = await c.app.handle(new Request('http://localhost/v1/payment_results/uploads', { method: 'POST', headers: { authorization: `Bearer ${c.lender.key}` }, body: form }));
      expect(res.status).toBe(200);
      const report = (await res.json()) as { row_count: number; matched: number; problems: unknown[] };
      expect(report).toMatchObject({ row_count: 20_000, matched: 20_000, problems: [] });
      expect(Number((await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM payment_events WHERE source = 'upload'"))[0]!.n)).toBe(20_000);
    }, 90_000);
  });
}
