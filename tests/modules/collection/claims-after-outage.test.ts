// engine: postgres
// A replica that stayed up through a PostgreSQL outage lets go of its own unfinished claims when the database
// answers again, before it claims anything else, as a restart would: a payment whose send was claimed when the
// connection went does not wait for its lease to run out, and none is sent twice. The service's clock is held
// still (moved only past the dispatch's retry delay, far short of a lease), so a claim can only come free by
// being let go.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { onPostgres, PsqlDatabase } from '../../helpers/pg';
import { pgBehindProxy } from '../../helpers/tcp-proxy';
import { waitFor } from '../../helpers/server';
import { enrollBorrower } from '../../helpers/fixtures';
import { JobRunner } from '../../../src/platform/jobs';
import { featureJobs, releaseStaleClaims } from '../../../src/modules';
import type { Deps } from '../../../src/deps';

if (!onPostgres) {
  test('a PostgreSQL outage while payments are claimed: not applicable without DATABASE_URL=postgres://…', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const { db, proxy, url, stop } = await pgBehindProxy();
  // Processor calls take seconds, so that sends are still in flight when the test has seen them, however busy
  // the machine (a shorter answer could come and go between two of the test's reads).
  const c = createTestContext({ DATABASE_URL: url, DATABASE_POOL_MAX: '6', SANDBOX_PROCESSOR_LATENCY_MS: '3000', MONITOR_READ_INTERVAL_MS: '3600000' });
  const runner = new JobRunner<Deps>(c.rt, featureJobs(c.rt), { afterOutage: () => releaseStaleClaims(c.rt) });
  afterAll(async () => {
    await runner.stop();
    c.close();
    stop();
  });

  /** Read past the proxy, straight from the server, on a connection the test keeps (no process per read). */
  const server = new PsqlDatabase(db.url);
  const direct = (sql: string) => server.query(sql).values().map((row) => row.map((v) => (v === null ? '' : String(v))));

  describe('a PostgreSQL outage while payments are claimed', () => {
    test('the claims are let go when the database is back, every payment reaches the processor once, none waits for its lease', async () => {
      expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_outage_claims_0000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
      const borrowers = Array.from({ length: 8 }, (_, i) => enrollBorrower(`claimed-${i}`, { collectable_amount: 1000 + i * 100 }));
      expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
      runner.start();
      // Sends in flight: claimed, their first attempt recorded, the processor not answered yet.
      await waitFor(
        'sends in flight',
        async () => Number(direct("SELECT COUNT(*) FROM payments WHERE status = 'initiating' AND first_attempt_at IS NOT NULL AND lease_until > 0")[0]?.[0] ?? 0) >= 2,
        60_000,
      );
      await proxy.cut();
      const held = direct('SELECT id, lease_token, lease_until FROM payments WHERE lease_until > 0');
      expect(held.length).toBeGreaterThan(0);
      const leaseEnds = Math.min(...held.map((r) => Number(r[2])));
      // The jobs meet the outage (their statements fail), then the database comes back.
      const failures = () => (c.rt.metrics.jobRuns as unknown as { hashMap: Record<string, { value: number; labels: { outcome: string } }> }).hashMap;
      await waitFor('a job to meet the outage', async () => Object.values(failures()).some((v) => v.labels.outcome === 'failure' && v.value > 0), 60_000);
      await proxy.restore();
      // Past the dispatch's retry delay, far short of any lease.
      c.clock.advance(20_000);
      expect(c.clock.now()).toBeLessThan(leaseEnds);
      await waitFor(
        'every payment answered by the processor',
        async () => Number(direct("SELECT COUNT(*) FROM payments WHERE status = 'initiating'")[0]?.[0] ?? 1) === 0 && Number(direct('SELECT COUNT(*) FROM payments')[0]![0]) === borrowers.length,
        60_000,
      );
      // None of the claims held when the connection went still holds its row.
      for (const [id, token] of held) expect(direct(`SELECT COALESCE(lease_token, '') FROM payments WHERE id = '${id}'`)[0]?.[0]).not.toBe(token);
      // Each payment once at the processor, under its own id.
      expect(direct('SELECT idempotency_key FROM sandbox_payments GROUP BY idempotency_key HAVING COUNT(*) > 1')).toEqual([]);
      expect(Number(direct('SELECT COUNT(*) FROM sandbox_payments')[0]![0])).toBe(borrowers.length);
      // The release ran once the ticks that met the outage had ended (it waits for them).
      await waitFor('the claims let go', async () => c.logs.join('').includes('unfinished claims were let go'));
    }, 240_000);
  });
}
