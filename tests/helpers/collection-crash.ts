// What the crash tests of collection check once the service (one process, or several replicas on one
// database) has come to rest after kill -9 at random moments: the snapshot of the service's payments against
// the sandbox processor's, and the invariants of the collection rules and of the forward-only recorder.
import { expect } from 'bun:test';
import type { Database } from 'bun:sqlite';
import { waitFor, type ServiceHarness } from './server';

/** A small deterministic generator, so a failing run can be repeated. */
export function rng(seed: number) {
  let x = seed >>> 0;
  return () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

/** Reads the harness's database with `fn`, and closes it. */
export function read<T>(h: ServiceHarness, fn: (db: Database) => T): T {
  const db = h.database();
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

// ---- The collection rules: one processor payment per service payment, recorded with its status, ≤ 3 each.

export interface Snapshot {
  /** With each payment's place in the dispatch queue (`due`, `lease`: ms from the read), for a wait that runs out. */
  payments: { id: string; enrollment: string; aid: string; reference: string; status: string; state: string; attempts: number; due: number; lease: number }[];
  /** Per idempotency key: how many payments the sandbox holds, and the latest status of the newest one. */
  atProcessor: Map<string, { n: number; status: string }>;
}

export function snapshot(h: ServiceHarness): Snapshot {
  return read(h, (db) => {
    // The processor first, then the service: a payment row is committed before its request leaves, so every
    // payment the processor holds in this read is in the next one, even when a new one is sent between the two.
    const rows = db
      .query(
        `SELECT p.idempotency_key AS key, COUNT(*) OVER (PARTITION BY p.idempotency_key) AS n,
                (SELECT e.status FROM sandbox_events e WHERE e.payment_id = p.id ORDER BY e.seq DESC LIMIT 1) AS status
           FROM sandbox_payments p`,
      )
      .all() as { key: string; n: number; status: string }[];
    const payments = db
      .query(
        `SELECT id, enrollment_id AS enrollment, authorizer_unique_id AS aid, reference, status, state, attempts,
                next_attempt_at - ? AS due, lease_until - ? AS lease FROM payments`,
      )
      .all(Date.now(), Date.now()) as Snapshot['payments'];
    return { payments, atProcessor: new Map(rows.map((r) => [r.key, { n: Number(r.n), status: r.status }])) };
  });
}

/** The invariants, checked on a service at rest. */
export function checkInvariants(s: Snapshot): void {
  const ours = new Map(s.payments.map((p) => [p.id, p]));
  for (const [key, at] of s.atProcessor) {
    // Exactly one processor payment per service payment, and none the service does not account for.
    expect(at.n).toBe(1);
    const p = ours.get(key);
    expect(p).toBeDefined();
    // Recorded with the processor's status (a not_attempted payment would be a debit the service lost).
    expect(p!.status).toBe(at.status);
  }
  for (const p of s.payments) {
    if (p.status === 'not_attempted') expect(s.atProcessor.has(p.id)).toBe(false);
    expect(p.status).not.toBe('initiating');
  }
  // Never more than three payments at the processor for one enrollment.
  const perEnrollment = new Map<string, number>();
  for (const p of s.payments) if (s.atProcessor.has(p.id)) perEnrollment.set(p.enrollment, (perEnrollment.get(p.enrollment) ?? 0) + 1);
  for (const n of perEnrollment.values()) expect(n).toBeLessThanOrEqual(3);
}

/** At rest: at least `least` payments made, none in flight, each the processor holds recorded with its status. */
export async function atRest(h: ServiceHarness, least: number, timeoutMs: number): Promise<Snapshot> {
  let last: Snapshot | null = null;
  try {
    return await waitFor(
      'collection to come to rest',
      async () => {
        const s = (last = snapshot(h));
        if (s.payments.length < least) return null;
        const busy = s.payments.some((p) => p.status === 'initiating' || p.status === 'processing');
        const unrecorded = s.payments.some((p) => s.atProcessor.has(p.id) && s.atProcessor.get(p.id)!.status !== p.status);
        return !busy && !unrecorded ? s : null;
      },
      timeoutMs,
    );
  } catch (e) {
    // What it was waiting on, so a failure says which part never came to rest.
    const s = last as Snapshot | null;
    const statuses: Record<string, number> = {};
    for (const p of s?.payments ?? []) statuses[p.status] = (statuses[p.status] ?? 0) + 1;
    const unrecorded = (s?.payments ?? []).filter((p) => s!.atProcessor.has(p.id) && s!.atProcessor.get(p.id)!.status !== p.status);
    const enrollments = new Set((s?.payments ?? []).map((p) => p.enrollment)).size;
    // Those in flight with their place in the dispatch queue: a retry put off (attempts, due in ms) or a claim held (lease).
    const inFlight = (s?.payments ?? []).filter((p) => p.status === 'initiating' || p.status === 'processing').map((p) => `${p.status}/${p.state} attempts ${p.attempts} due ${p.due} lease ${p.lease}`);
    throw new Error(
      `${(e as Error).message}: ${s?.payments.length ?? 0} payments of ${enrollments} enrollments (at least ${least} wanted), ` +
        `statuses ${JSON.stringify(statuses)}, unrecorded ${JSON.stringify(unrecorded.map((p) => [p.status, s!.atProcessor.get(p.id)!.status]))}, in flight ${JSON.stringify(inFlight)}`,
    );
  }
}

// ---- The forward-only recorder.
//   1. Every payment is recorded with the processor's latest status, its events in the order of its statuses.
//   2. Presentments of one debt (no new authorization is sent) are at most 1 + max_reinitiations (3).
//   3. A monitored borrower that can no longer be debited has a blocked_reason that says why.
//   4. No payment made elsewhere is credited to two lenders.

const RANK: Record<string, number> = { scheduled: 0, initiating: 1, processing: 2, settled: 3, returned: 4, invalid: 4, voided: 4, not_attempted: 4, late_returned: 5, refunded: 5 };
const RETRYABLE = new Set(['R01', 'R09']);
const forFunds = (p: { status: string; code: string | null }) => (p.status === 'returned' || p.status === 'late_returned') && RETRYABLE.has(p.code ?? '');

export interface Rest {
  payments: { id: string; enrollment: string; status: string; code: string | null }[];
  atProcessor: Map<string, string>;
}

export function rest(h: ServiceHarness): Rest {
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

/** At rest for the recorder: nothing scheduled or in flight, each payment the processor holds recorded with its status. */
export async function forwardOnlyAtRest(h: ServiceHarness, timeoutMs = 120_000): Promise<Rest> {
  return waitFor(
    'collection to come to rest',
    async () => {
      const s = rest(h);
      const busy = s.payments.some((p) => p.status === 'initiating' || p.status === 'processing' || p.status === 'scheduled');
      const unrecorded = s.payments.some((p) => s.atProcessor.has(p.id) && s.atProcessor.get(p.id) !== p.status);
      return !busy && !unrecorded ? s : null;
    },
    timeoutMs,
  );
}

/** Invariants 1 to 3, and 4 when the two lenders of payments made elsewhere are given. */
export function checkForwardOnlyInvariants(h: ServiceHarness, s: Rest, lenders?: { a: string; b: string }): void {
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
      expect(Number(e.at)).toBeGreaterThanOrEqual(before.at);
    }
    last.set(e.pid, { rank: RANK[e.status]!, at: Number(e.at) });
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
  const created = new Map(read(h, (db) => db.query('SELECT id, created_at AS at FROM payments').all() as { id: string; at: number }[]).map((p) => [p.id, Number(p.at)]));
  const statusAt = (pid: string, at: number) => {
    let st = { status: 'initiating', code: null as string | null };
    for (const ev of history) if (ev.pid === pid && Number(ev.at) <= at) st = { status: ev.status, code: ev.code };
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
  if (!lenders) return;
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
    expect(Number(c.lenders)).toBe(1);
    expect(c.lender).toBe(lenders.a);
  }
  expect(lenders.b).not.toBe(lenders.a);
}
