// engine: postgres
// Several replicas of the service on one PostgreSQL database, requests spread over them, kill -9 of a random
// replica at random (seeded) moments and its restart, with the processor answering in 50 ms and in 1 to 3 s:
// the invariants of the collection rules and of the forward-only recorder hold at rest (one processor payment
// per service payment, recorded with the processor's status, at most three per enrollment, not_attempted only
// for payments the processor does not hold; events in the order of statuses; chains of presentments within
// their limit), every webhook reaches a real receiver at least once under one id, every balance batch
// completes, and nothing is claimed twice at once (the processor's idempotency keys are unique; no delivery
// is on the wire twice at the same moment). Then a removal through one replica while another holds a claimed
// send: a send claimed before the removal committed may go out, none claimed after it does.
// On SQLite one process serves a database file (a second is refused by its lock): there this file only says so.
import { afterAll, describe, expect, test } from 'bun:test';
import { onPostgres } from '../helpers/pg';
import { ServiceHarness, waitFor, type ServiceProcess } from '../helpers/server';
import { bankAuthorizer, enrollBorrower, ownAccount } from '../helpers/fixtures';
import { atRest, checkForwardOnlyInvariants, checkInvariants, forwardOnlyAtRest, read, rng } from '../helpers/collection-crash';

if (!onPostgres) {
  test('several replicas on one database: not applicable without DATABASE_URL=postgres://… (on SQLite a second process is refused by the file lock)', () => {});
} else {
  const harnesses: ServiceHarness[] = [];

  /** A webhook receiver on 127.0.0.1 that notes every arrival and any id arriving while it is still on the wire. */
  const arrivals = new Map<string, string[]>();
  const onTheWire = new Set<string>();
  const overlapping: string[] = [];
  const receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const id = req.headers.get('webhook-id') ?? '';
      const body = await req.text();
      if (onTheWire.has(id)) overlapping.push(id);
      onTheWire.add(id);
      arrivals.set(id, [...(arrivals.get(id) ?? []), body]);
      // A moment on the wire, so two senders of one delivery at once would be seen here.
      await Bun.sleep(20);
      onTheWire.delete(id);
      return new Response('ok');
    },
  });
  const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}/${path}`;

  afterAll(async () => {
    for (const h of harnesses) await h.cleanup();
    receiver.stop(true);
  });

  /** The replicas of one harness by index, each restarted under its own REPLICA_ID. */
  class Replicas {
    readonly live: (ServiceProcess | null)[];
    constructor(
      readonly h: ServiceHarness,
      readonly tag: string,
      count: number,
    ) {
      this.live = Array.from({ length: count }, () => null);
    }
    id(i: number) {
      return `${this.tag}-r${i}`;
    }
    async startAll() {
      // At once: the first to take the migration lock applies what is pending, the others wait for it.
      await Promise.all(this.live.map(async (_, i) => (this.live[i] = await this.h.start({ replicaId: this.id(i) }))));
    }
    /** A live replica other than `not` (any live one when it is the only one). */
    any(random: () => number, not = -1): ServiceProcess {
      const up = this.live.map((p, i) => (p && i !== not ? i : -1)).filter((i) => i >= 0);
      return this.live[up[Math.floor(random() * up.length)]!]!;
    }
    async kill(i: number) {
      await this.live[i]!.kill('SIGKILL');
      this.live[i] = null;
    }
    async restart(i: number) {
      this.live[i] = await this.h.start({ replicaId: this.id(i) });
    }
    async stopAll() {
      for (const p of this.live) await p?.kill('SIGTERM');
    }
  }

  const balanceBatch = (tag: string, size: number) => ({
    webhook_url: hookUrl(`batches/${tag}`),
    authorizers: Array.from({ length: size }, (_, i) => bankAuthorizer(`${tag}-${i}`, { account_number: `00${String(10_000 + i).padStart(8, '0')}` })),
  });

  for (const replicas of [2, 3]) {
    for (const [latency, jitter] of [
      [50, 0],
      [1000, 2000],
    ] as const) {
      describe(`${replicas} replicas on one database, kill -9 of a random one at random moments, processor answers in ${latency}${jitter ? `–${latency + jitter}` : ''} ms`, () => {
        test('collection and the recorder keep their invariants; webhooks delivered under one id; batches complete; no double claims', async () => {
          const tag = `rep${replicas}l${latency}`;
          const h = new ServiceHarness({
            SANDBOX_PROCESSOR_LATENCY_MS: String(latency),
            SANDBOX_PROCESSOR_LATENCY_JITTER_MS: String(jitter),
            SANDBOX_SETTLEMENT_MS: '700',
            SANDBOX_OUTAGE_MS: '500',
            SANDBOX_LATENCY_MS: '20',
            MONITOR_READ_INTERVAL_MS: '200',
            PROCESSOR_POLL_INTERVAL_MS: '150',
            PROCESSOR_RECONCILE_INTERVAL_MS: '2000',
            WEBHOOK_RETRY_BASE_MS: '200',
            WEBHOOK_TIMEOUT_MS: '5000',
          });
          harnesses.push(h);
          const set = new Replicas(h, tag, replicas);
          await set.startAll();
          const random = rng(replicas * 1000 + latency);
          const first = set.live[0]!;
          expect((await first.call('POST', '/v1/payment_connections', { api_key: `sbx_${tag}_replicas_000001`.slice(0, 40), rail_scope: 'both', is_default: true })).status).toBe(201);
          expect((await set.any(random).call('POST', '/v1/webhook_endpoints', { url: hookUrl(`payments/${tag}`), event_types: ['PAYMENT_EVENT'] })).status).toBe(201);

          // Settle, R01 and R09 (reinitiated up to the limit), late R10, a transient first attempt, late R01, a
          // lost answer; every fourth a card, which settles or declines at once. Sent in parts, each through a
          // replica of its own.
          const cents = [0, 91, 92, 95, 98, 99, 88];
          const n = jitter ? 16 : 32;
          const borrowers = Array.from({ length: n }, (_, i) =>
            enrollBorrower(`${tag}-${i}`, {
              collectable_amount: 1000 + cents[i % cents.length]!,
              account_number: ownAccount(i),
              ...(i % 4 === 3 ? { charge_instrument: { processor_token: `sbxpm_${tag}_${i}`, card_last4: '4242' } } : {}),
            }),
          );
          for (let part = 0; part < replicas; part++) {
            const some = borrowers.filter((_, i) => i % replicas === part);
            expect((await set.live[part]!.call('POST', '/v1/payment_enrollments', { borrowers: some })).status).toBe(207);
          }
          const batches: string[] = [];
          const submitBatch = async (via: ServiceProcess) => {
            const r = await via.call('POST', '/v1/balance_requests', balanceBatch(`${tag}-b${batches.length}`, 25));
            expect(r.status).toBe(201);
            batches.push(r.body.batch_id);
          };
          for (let i = 0; i < replicas; i++) await submitBatch(set.live[i]!);

          let kills = 0;
          for (let k = 0; k < 6; k++) {
            // Inside and around the window while answers are on the wire.
            await Bun.sleep(Math.round(random() * (latency + jitter + 700)) + 50);
            const victim = Math.floor(random() * replicas);
            await set.kill(victim);
            kills++;
            // While it is down the others serve: a balance batch through one of them.
            await submitBatch(set.any(random, victim));
            await set.restart(victim);
          }
          expect(kills).toBe(6);

          // At rest: collection, the recorder, the balance batches and the webhooks.
          const s = await atRest(h, n, 120_000);
          const forward = await forwardOnlyAtRest(h, 60_000);
          // Checked at once, so a failure further on does not hide them.
          checkInvariants(s);
          checkForwardOnlyInvariants(h, forward);
          expect(s.atProcessor.size).toBeGreaterThan(0);
          // The processor's idempotency keys are unique: no payment was sent twice under two keys or created twice.
          const twice = read(h, (db) => db.query('SELECT idempotency_key AS key FROM sandbox_payments GROUP BY idempotency_key HAVING COUNT(*) > 1').all());
          expect(twice).toEqual([]);
          // The balance requests' batches (monitoring reads run in batches of their own, all the time).
          const ofOurs = `id IN (${batches.map((b) => `'${b}'`).join(', ')})`;
          await waitFor(
            'every balance batch to complete',
            async () => read(h, (db) => Number((db.query(`SELECT COUNT(*) AS n FROM batches WHERE ${ofOurs} AND status <> 'completed'`).get() as { n: number }).n) === 0),
            60_000,
          ).catch((e: Error) => {
            // What was left: the items not done, by state and lease.
            const left = read(h, (db) =>
              db.query(`SELECT state, attempts, lease_until - ${Date.now()} AS lease_left, next_attempt_at - ${Date.now()} AS due_in, COUNT(*) AS n FROM batch_items WHERE batch_${ofOurs} AND state = 'pending' GROUP BY 1, 2, 3, 4`).all(),
            );
            const open = read(h, (db) => db.query(`SELECT id, status, total_authorizers, total_processed FROM batches WHERE ${ofOurs} AND status <> 'completed'`).all());
            throw new Error(`${e.message}: batches ${JSON.stringify(open)}, items ${JSON.stringify(left)}`);
          });
          const deliveries = await waitFor(
            'every webhook to be delivered',
            async () => {
              const rows = read(h, (db) => db.query('SELECT id, state FROM webhook_deliveries').all() as { id: string; state: string }[]);
              return rows.every((d) => d.state === 'delivered') && rows.every((d) => arrivals.has(d.id)) ? rows : null;
            },
            90_000,
          );
          await set.stopAll();

          // Every batch complete: each authorizer has its one result, and each batch counted each once.
          const items = read(h, (db) => db.query(`SELECT COUNT(*) AS n, SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END) AS pending FROM batch_items WHERE batch_${ofOurs}`).get() as { n: number; pending: number });
          expect(Number(items.n)).toBe(batches.length * 25);
          expect(Number(items.pending)).toBe(0);
          expect(Number(read(h, (db) => (db.query(`SELECT COUNT(*) AS n FROM balance_results WHERE batch_${ofOurs}`).get() as { n: number }).n))).toBe(batches.length * 25);
          expect(read(h, (db) => db.query(`SELECT id FROM batches WHERE ${ofOurs} AND total_processed <> total_authorizers`).all())).toEqual([]);
          // Webhooks: each delivery arrived, always with the same body under its id, never twice at once.
          const ours = deliveries.filter((d) => arrivals.has(d.id));
          expect(ours.length).toBe(deliveries.length);
          // At least each batch's completion and a payment event.
          expect(deliveries.length).toBeGreaterThan(batches.length);
          for (const d of deliveries) {
            const bodies = arrivals.get(d.id)!;
            expect(new Set(bodies).size).toBe(1);
            expect(JSON.parse(bodies[0]!).event_uuid ?? d.id).toBe(d.id);
          }
          expect(overlapping.filter((id) => deliveries.some((d) => d.id === id))).toEqual([]);
        }, 240_000);
      });
    }
  }

  describe('a removal through one replica while another holds a claimed send', () => {
    test('a send claimed before the removal committed may go out; none claimed after it does, and no payment is created after it', async () => {
      const h = new ServiceHarness({
        // Answers on the wire for 8 s: the claims are held while the removal runs; nothing settles before it.
        // Replica A starts while they are on the wire, so the removal follows the failed first attempts at once,
        // well within their 5 s backoff, however slowly a process starts on a loaded machine.
        SANDBOX_PROCESSOR_LATENCY_MS: '8000',
        SANDBOX_SETTLEMENT_MS: '8000',
        // A payment whose answer was not seen is looked up, never sent, once its borrower is removed; one the
        // processor still does not hold past this age is recorded not_attempted (23 h in production).
        PROCESSOR_IDEMPOTENCY_HORIZON_MS: '20000',
        MONITOR_READ_INTERVAL_MS: '200',
        PROCESSOR_POLL_INTERVAL_MS: '150',
      });
      harnesses.push(h);
      // Replica B alone at first, so the sends are its claims.
      const b = await h.start({ replicaId: 'removal-b' });
      expect((await b.call('POST', '/v1/payment_connections', { api_key: 'sbx_removal_replicas_0001', rail_scope: 'both', is_default: true })).status).toBe(201);
      // Three that go through, and three whose first attempt fails transiently (cents 98): each of those is sent
      // again after its backoff, which needs a claim of its own, after the removal.
      const borrowers = Array.from({ length: 6 }, (_, i) => enrollBorrower(`rm-${i}`, { collectable_amount: 1000 + (i % 2 ? 98 : 0), account_number: ownAccount(i) }));
      const aids = borrowers.map((x) => x.authorizer_unique_id);
      expect((await b.call('POST', '/v1/payment_enrollments', { borrowers })).status).toBe(207);
      // About 1.3 s on a quiet machine; once past 30 s on a loaded one (enrolled, read, decided, sent).
      await waitFor(
        'replica B to claim the six sends',
        async () => read(h, (db) => Number((db.query('SELECT COUNT(*) AS n FROM payments WHERE first_attempt_at IS NOT NULL').get() as { n: number }).n) === 6),
        90_000,
      );
      const a = await h.start({ replicaId: 'removal-a' });
      await waitFor(
        'replica B to hold the claimed sends, the processor to hold three and to have failed three first attempts',
        async () =>
          read(h, (db) => {
            const held = (db.query('SELECT COUNT(*) AS n FROM sandbox_payments').get() as { n: number }).n;
            const failed = (db.query('SELECT COUNT(*) AS n FROM sandbox_idempotency WHERE failed_attempts > 0').get() as { n: number }).n;
            return Number(held) === 3 && Number(failed) === 3;
          }),
        30_000,
      );
      const removal = await a.call('DELETE', '/v1/payment_enrollments', { authorizer_unique_ids: aids });
      const answered = Date.now();
      expect(removal.status).toBe(200);
      // Those whose transient first attempt is behind them are still monitored; on a slow machine a payment that
      // went out may have settled (and its borrower been collected) before the removal came.
      expect(removal.body.removed + removal.body.not_monitored).toBe(aids.length);
      expect(removal.body.removed).toBeGreaterThanOrEqual(3);

      // Whatever was on the wire comes back and is recorded, and what went out settles; each failed first
      // attempt is due again after its backoff meanwhile (and would be sent then were a claim allowed after the
      // removal): it is looked up instead, and recorded not_attempted once past the horizon unfound.
      const s = await atRest(h, aids.length, 90_000);
      const payments = read(h, (db) => db.query('SELECT id, status, amount_cents AS cents, created_at AS created FROM payments').all() as { id: string; status: string; cents: number; created: number }[]);
      const sent = new Set(read(h, (db) => db.query('SELECT idempotency_key AS key FROM sandbox_payments').all() as { key: string }[]).map((x) => x.key));
      await a.kill('SIGTERM');
      await b.kill('SIGTERM');

      checkInvariants(s);
      // No payment created after the removal's response.
      expect(payments.length).toBe(aids.length);
      for (const p of payments) expect(Number(p.created)).toBeLessThanOrEqual(answered);
      // The sends claimed before the removal went out and are recorded with their outcome; those whose next
      // attempt needed a claim after it never went out.
      const outcome = (p: (typeof payments)[number]) => `${Number(p.cents)} ${sent.has(p.id) ? 'sent' : 'never sent'} ${p.status}`;
      expect(payments.map(outcome).sort()).toEqual(['1000 sent settled', '1000 sent settled', '1000 sent settled', '1098 never sent not_attempted', '1098 never sent not_attempted', '1098 never sent not_attempted']);
    }, 150_000);
  });
}
