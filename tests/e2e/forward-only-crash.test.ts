// kill -9 at random moments with the processor answering in 50 ms, and in 1 to 3 s, while borrowers are
// removed and sent again and payments made elsewhere arrive, then a restart and rest: the four invariants of
// money records that only move forward hold.
//   1. Every payment is recorded with the processor's latest status, its events in the order of its statuses.
//   2. Presentments of one debt (no new authorization is sent) are at most 1 + max_reinitiations (3).
//   3. A monitored borrower that can no longer be debited has a blocked_reason that says why.
//   4. No payment made elsewhere is credited to two lenders.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { ServiceHarness, waitFor, type ServiceProcess } from '../helpers/server';
import { enrollBorrower } from '../helpers/fixtures';
import { runCli } from '../../scripts/cli';

const harnesses: ServiceHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.cleanup();
});

/** What the kill runs did, for the closing figures. */
export const kills = { count: 0 };

const RANK: Record<string, number> = { scheduled: 0, initiating: 1, processing: 2, settled: 3, returned: 4, invalid: 4, voided: 4, not_attempted: 4, late_returned: 5, refunded: 5 };
const RETRYABLE = new Set(['R01', 'R09']);
const forFunds = (p: { status: string; code: string | null }) => (p.status === 'returned' || p.status === 'late_returned') && RETRYABLE.has(p.code ?? '');

function rng(seed: number) {
  let x = seed >>> 0;
  return () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

interface Rest {
  payments: { id: string; enrollment: string; status: string; code: string | null }[];
  atProcessor: Map<string, string>;
}

function read<T>(h: ServiceHarness, fn: (db: Database) => T): T {
  const db = h.database();
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function rest(h: ServiceHarness): Rest {
  return read(h, (db) => ({
    payments: db.query('SELECT id, enrollment_id AS enrollment, status, return_code AS code FROM payments ORDER BY created_at, id').all() as Rest['payments'],
    atProcessor: new Map(
      (
        db
          .query(
            `SELECT p.idempotency_key AS key, (SELECT e.status FROM sandbox_events e WHERE e.payment_id = p.id ORDER BY e.seq DESC LIMIT 1) AS status
               FROM sandbox_payments p WHERE p.idempotency_key IS NOT NULL`,
          )
          .all() as { key: string; status: string }[]
      ).map((r) => [r.key, r.status]),
    ),
  }));
}

async function atRest(h: ServiceHarness): Promise<Rest> {
  return waitFor(
    'collection to come to rest',
    async () => {
      const s = rest(h);
      const busy = s.payments.some((p) => p.status === 'initiating' || p.status === 'processing' || p.status === 'scheduled');
      const unrecorded = s.payments.some((p) => s.atProcessor.has(p.id) && s.atProcessor.get(p.id) !== p.status);
      return !busy && !unrecorded ? s : null;
    },
    120_000,
  );
}

function checkInvariants(h: ServiceHarness, s: Rest, lenders: { a: string; b: string }): void {
  // 1. The processor's latest status, and events in the order of statuses (rank and time never go back).
  for (const p of s.payments) {
    if (s.atProcessor.has(p.id)) expect(p.status).toBe(s.atProcessor.get(p.id)!);
    else expect(p.status === 'not_attempted' || p.status === 'voided').toBe(true);
  }
  const events = read(h, (db) => db.query('SELECT payment_id AS pid, status, occurred_at AS at FROM payment_events WHERE payment_id IS NOT NULL ORDER BY recorded_at, id').all() as { pid: string; status: string; at: number }[]);
  const last = new Map<string, { rank: number; at: number }>();
  for (const e of events) {
    const before = last.get(e.pid);
    if (before) {
      expect(RANK[e.status]!).toBeGreaterThan(before.rank);
      expect(e.at).toBeGreaterThanOrEqual(before.at);
    }
    last.set(e.pid, { rank: RANK[e.status]!, at: e.at });
  }
  // 2 and 3. Chains of presentments per borrower, over its whole history.
  const byEnrollment = new Map<string, Rest['payments']>();
  for (const p of s.payments) {
    if (!s.atProcessor.has(p.id)) continue;
    byEnrollment.set(p.enrollment, [...(byEnrollment.get(p.enrollment) ?? []), p]);
  }
  const monitors = read(h, (db) => db.query('SELECT id, state, blocked_reason AS blocked FROM enrollments').all() as { id: string; state: string; blocked: string | null }[]);
  // What each payment's status was when the next one was created: a chain goes on only from a return for
  // funds already recorded then (a debt settled when the borrower was sent again is closed; its late return
  // later is that debt's, not the new one's).
  const history = read(h, (db) => db.query('SELECT payment_id AS pid, status, return_code AS code, recorded_at AS at FROM payment_events WHERE payment_id IS NOT NULL ORDER BY recorded_at, id').all() as { pid: string; status: string; code: string | null; at: number }[]);
  const created = new Map(read(h, (db) => db.query('SELECT id, created_at AS at FROM payments').all() as { id: string; at: number }[]).map((p) => [p.id, p.at]));
  const statusAt = (pid: string, at: number) => {
    let st = { status: 'initiating', code: null as string | null };
    for (const ev of history) if (ev.pid === pid && ev.at <= at) st = { status: ev.status, code: ev.code };
    return st;
  };
  for (const e of monitors) {
    const ps = (byEnrollment.get(e.id) ?? []).filter((p) => p.status !== 'invalid');
    let chain = 0;
    for (let i = 0; i < ps.length; i++) {
      chain = i > 0 && forFunds(statusAt(ps[i - 1]!.id, created.get(ps[i]!.id)!)) ? chain + 1 : 1;
      if (chain > 3) console.log(JSON.stringify(read(h, (db) => db.query('SELECT id, status, return_code, attempt, reinitiation_of, created_at, updated_at, first_attempt_at FROM payments WHERE enrollment_id = ? ORDER BY created_at').all(e.id)), null, 1), JSON.stringify(read(h, (db) => db.query('SELECT * FROM payment_events WHERE enrollment_id = ? ORDER BY recorded_at, id').all(e.id)), null, 1));
      expect(chain).toBeLessThanOrEqual(3);
    }
    const lastPaid = ps[ps.length - 1];
    if (e.state === 'monitored' && lastPaid && forFunds(lastPaid) && chain >= 3) expect(e.blocked).toBe('reinitiation_limit');
  }
  // 4. A payment made elsewhere is credited to one lender at most, the one its account is bound to.
  const credits = read(h, (db) =>
    db.query("SELECT reference, COUNT(DISTINCT lender_id) AS lenders, MIN(lender_id) AS lender FROM ledger_entries WHERE kind = 'credit' AND reference LIKE 'DRS-shared-%' GROUP BY reference").all() as {
      reference: string;
      lenders: number;
      lender: string;
    }[],
  );
  if (credits.length === 0) console.log(JSON.stringify(read(h, (db) => [db.query("SELECT * FROM sandbox_payments WHERE reference LIKE 'DRS-shared%'").all(), db.query("SELECT * FROM payment_events WHERE reference LIKE 'DRS-shared%'").all(), db.query('SELECT * FROM processor_accounts').all(), db.query('SELECT id, lender_id, account_id, last_poll_error, poll_cursor FROM payment_connections').all()]), null, 1));
  expect(credits.length).toBeGreaterThan(0);
  for (const c of credits) {
    expect(c.lenders).toBe(1);
    expect(c.lender).toBe(lenders.a);
  }
  expect(lenders.b).not.toBe(lenders.a);
}

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
      const borrowers = Array.from({ length: 14 }, (_, i) => enrollBorrower(`fo-${i}`, { collectable_amount: 1000 + cents[i % cents.length]! }));
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
      const s = await atRest(h);
      const lenders = read(h, (db) => db.query('SELECT id, name FROM lenders ORDER BY created_at').all() as { id: string; name: string }[]);
      await svc.kill('SIGTERM');
      expect(s.atProcessor.size).toBeGreaterThan(borrowers.length);
      checkInvariants(h, s, { a: lenders.find((l) => l.name === 'default')!.id, b: lenders.find((l) => l.name === `other-${latency}`)!.id });
    }, 240_000);
  });
}
