// engine: both
// kill -9 at random moments with the processor answering in 50 ms, and in 1 to 3 s, while borrowers are
// removed and sent again and payments made elsewhere arrive, then a restart and rest: the four invariants of
// money records that only move forward hold.
//   1. Every payment is recorded with the processor's latest status, its events in the order of its statuses.
//   2. Presentments of one debt (no new authorization is sent) are at most 1 + max_reinitiations (3).
//   3. A monitored borrower that can no longer be debited has a blocked_reason that says why.
//   4. No payment made elsewhere is credited to two lenders.
import { afterAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { ServiceHarness, waitFor, type ServiceProcess } from '../helpers/server';
import { enrollBorrower, ownAccount } from '../helpers/fixtures';
import { checkForwardOnlyInvariants, forwardOnlyAtRest, read, rng } from '../helpers/collection-crash';
import { runCli } from '../../scripts/cli';

const harnesses: ServiceHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.cleanup();
});

/** What the kill runs did, for the closing figures. */
export const kills = { count: 0 };

async function callAs(svc: ServiceProcess, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(svc.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

for (const [latency, jitter] of [
  [50, 0],
  [1000, 2000],
] as const) {
  describe(`forward-only records under kill -9, processor answers in ${latency}${jitter ? `–${latency + jitter}` : ''} ms`, () => {
    test.concurrent('the four invariants hold at rest', async () => {
      const KEY = `sbx_forward_crash_${latency}_0001`;
      const h = new ServiceHarness({
        SANDBOX_PROCESSOR_LATENCY_MS: String(latency),
        SANDBOX_PROCESSOR_LATENCY_JITTER_MS: String(jitter),
        SANDBOX_SETTLEMENT_MS: '700',
        SANDBOX_OUTAGE_MS: '500',
        MONITOR_READ_INTERVAL_MS: '200',
        PROCESSOR_POLL_INTERVAL_MS: '150',
        PROCESSOR_RECONCILE_INTERVAL_MS: '2000',
      });
      harnesses.push(h);
      // The CLI's sandbox charges settle on the service's schedule.
      const env = { DATABASE_PATH: h.dbPath, ...(h.pg ? { DATABASE_URL: h.pg.url } : {}), VAULT_KEY_FILE: join(h.dir, 'vault.key'), SANDBOX_SETTLEMENT_MS: '700' };
      let svc: ServiceProcess = await h.start();
      const lenderB = /drs_live_[0-9A-Za-z]{32}/.exec(await runCli(['lender', 'create', `other-${latency}`], env))![0];
      expect((await svc.call('POST', '/v1/payment_connections', { api_key: KEY, rail_scope: 'both', is_default: true })).status).toBe(201);
      // Another lender may not register the account: it would read (and be credited with) the first one's payments.
      expect((await callAs(svc, lenderB, 'POST', '/v1/payment_connections', { api_key: KEY, rail_scope: 'both', is_default: true })).status).toBe(409);
      // Both lenders have a borrower "shared" whose balance covers nothing the service would debit.
      for (const key of [null, lenderB]) {
        const body = { borrowers: [enrollBorrower('shared', { account_number: '0000000001' })] };
        expect((key ? await callAs(svc, key, 'POST', '/v1/payment_enrollments', body) : await svc.call('POST', '/v1/payment_enrollments', body)).status).toBe(207);
      }
      // R01 and R09 (reinitiated up to the limit), settle, late R01, a lost answer, a failed first attempt.
      const cents = [91, 91, 92, 0, 99, 88, 98];
      const borrowers = Array.from({ length: 14 }, (_, i) => enrollBorrower(`fo-${i}`, { collectable_amount: 1000 + cents[i % cents.length]!, account_number: ownAccount(i) }));
      expect((await svc.call('POST', '/v1/payment_enrollments', { borrowers })).status).toBe(207);
      const random = rng(latency + 7);
      for (let k = 0; k < 8; k++) {
        await Bun.sleep(Math.round(random() * (latency + jitter + 700)) + 50);
        // Between kills: a payment made elsewhere with a DRS- reference, and a borrower removed and sent again.
        if (k % 3 === 0) await runCli(['sandbox', 'charge', '--key', KEY, '--amount', '7000', '--reference', `DRS-shared-INV-${k}`], env);
        if (k % 2 === 1) {
          const aid = `fo-${Math.floor(random() * borrowers.length)}`;
          await svc.call('DELETE', '/v1/payment_enrollments', { authorizer_unique_ids: [aid] });
          await svc.call('POST', '/v1/payment_enrollments', { borrowers: [borrowers.find((b) => b.authorizer_unique_id === aid)!] });
        }
        await svc.kill('SIGKILL');
        kills.count++;
        svc = await h.start();
      }
      // Outcomes take a few settlement periods; chains of R01s run to their limit.
      await waitFor(
        'the returns for funds to reach their chains’ limit',
        async () => {
          const blocked = read(h, (db) => (db.query("SELECT COUNT(*) AS n FROM enrollments WHERE blocked_reason = 'reinitiation_limit'").get() as { n: number }).n);
          return blocked >= 2 ? true : null;
        },
        120_000,
      );
      const s = await forwardOnlyAtRest(h);
      const lenders = read(h, (db) => db.query('SELECT id, name FROM lenders ORDER BY created_at').all() as { id: string; name: string }[]);
      await svc.kill('SIGTERM');
      expect(s.atProcessor.size).toBeGreaterThan(borrowers.length);
      checkForwardOnlyInvariants(h, s, { a: lenders.find((l) => l.name === 'default')!.id, b: lenders.find((l) => l.name === `other-${latency}`)!.id });
    }, 240_000);
  });
}
