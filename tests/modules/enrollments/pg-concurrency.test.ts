// engine: postgres
// The enrollment and pay-cycle stores on PostgreSQL, where transactions run side by side under READ COMMITTED:
// every check-then-write SQLite's single writer made safe holds with 20 callers at once (enrollments of one
// borrower, removals, the due check, the lapse job, the readings' claims and records), the bulk enrollment
// writes every borrower, the search reads identifiers in byte order, and erasure leaves nothing of a borrower
// in the search tables or the deposits. Each test has a database of its own, cloned from the migrated template.
//
// The service's own functions run here whole, with their deps on PostgreSQL: what other modules do inside
// these transactions (the collection chain's rules on a re-send, the voiding of scheduled payments on a stop)
// runs too, on its own PostgreSQL stores.
import { afterAll, describe, expect, test } from 'bun:test';
import { onPostgres } from '../../helpers/pg';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

if (!onPostgres) {
  test('not applicable without DATABASE_URL=postgres://… (the PostgreSQL stores under concurrent transactions)', () => {});
} else {
  const { sql } = await import('drizzle-orm');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { freshPgDatabase } = await import('../../helpers/pg');
  const { openPg } = await import('../../../src/platform/pg');
  const { createTestContext } = await import('../../helpers/context');
  const { enrollBorrower } = await import('../../helpers/fixtures');
  const { transaction } = await import('../../../src/platform/context');
  const { enroll, removeEnrollments } = await import('../../../src/modules/enrollments/service');
  const { lapseDueMonitors, recheckHeld } = await import('../../../src/modules/enrollments/monitoring');
  const { pgStores } = await import('../../../src/stores');
  const { enrollments: enrollmentStore, monitors: monitorStore, payCycles: payCycleStore } = pgStores;
  const { DAY_MS } = await import('../../../src/platform/clock');
  type Deps = import('../../../src/deps').Deps;
  type Ctx = import('../../../src/deps').Ctx;

  const N = 20;
  const cleanups: (() => unknown)[] = [];
  afterAll(async () => {
    for (const f of cleanups.reverse()) await f();
  }, 120_000);

  /**
   * A service whose enrollment and pay-cycle stores run on a PostgreSQL database of its own (cloned from the
   * migrated template), with a pool for 20 transactions at once. Its runtime is a SQLite one (a file of its own):
   * the other modules' stores the enrollment reads through, on SQLite only until theirs are written, read an
   * empty database there; those that have a PostgreSQL store read this one.
   */
  function onPg() {
    const db = freshPgDatabase();
    const pg = openPg(db.url, { max: N + 5 });
    const dir = mkdtempSync(join(tmpdir(), 'drs-pg-enroll-'));
    const c = createTestContext({ DATABASE_PATH: join(dir, 'service.sqlite') });
    cleanups.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => c.close(),
      () => db.drop(),
      () => pg.close(),
    );
    const pgDeps = pgStoreDeps(pg);
    const deps = { ...c.rt, ...pgDeps, engine: { ...c.rt.engine, ...pgDeps.engine } } as Deps;
    const ctx: Ctx = { lender: { id: c.lender.id, name: 'lender', debitCardApproved: false }, deps } as Ctx;
    const q = async <T = Record<string, unknown>>(query: ReturnType<typeof sql>) => [...((await pg.db.execute(query)) as unknown as T[])];
    const addLender = (id: string) => q(sql`INSERT INTO lenders (id, name, created_at) VALUES (${id}, ${`lender ${id}`}, 0)`);
    return { c, pg, deps, ctx, q, addLender, ready: addLender(c.lender.id), now: () => c.clock.now() };
  }

  const count = async (s: ReturnType<typeof onPg>, query: ReturnType<typeof sql>) => (await s.q<{ n: number }>(query))[0]!.n;

  describe('a borrower held by its row lock', () => {
    test('the reads that hold a borrower to move it leave the rows that refer to it free to be written: an uploaded result beside the due check, a monitor change or a reading', async () => {
      // They lock FOR NO KEY UPDATE: an upload slice's rows check their borrower (FOR KEY SHARE) without waiting,
      // where FOR UPDATE made them wait, and a job that then waited on the slice's rows made a deadlock.
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: [enrollBorrower('held-1')] } } });
      const [e] = await s.q<{ id: string }>(sql`SELECT id FROM enrollments WHERE authorizer_unique_id = 'held-1'`);
      const lender = s.c.lender.id;
      const holds: [string, (c: { deps: Deps; tx: import('../../../src/platform/tx').Tx }) => Promise<unknown>][] = [
        ['currentMonitor', (tx) => monitorStore.currentMonitor(tx, e!.id)],
        ['monitorsOf', (tx) => monitorStore.monitorsOf(tx, lender, ['held-1'])],
        ['enrollmentOf', (tx) => enrollmentStore.enrollmentOf(tx, lender, 'held-1')],
        ['dueReads', (tx) => enrollmentStore.dueReads(tx, s.now() + DAY_MS * 365, 10)],
        ['serializeReading', (tx) => payCycleStore.serializeReading(tx, e!.id)],
      ];
      const waiting = async () => (await s.q<{ n: number }>(sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0]!.n;
      for (const [name, hold] of holds) {
        let letGo!: () => void;
        const held = new Promise<void>((resolve) => (letGo = resolve));
        let taken!: () => void;
        const isTaken = new Promise<void>((resolve) => (taken = resolve));
        const holder = transaction({ deps: s.deps }, async (tx) => {
          await hold(tx);
          taken();
          await held;
        });
        await isTaken;
        const write = s.q(
          sql`INSERT INTO uploaded_results (lender_id, reference, authorizer_unique_id, enrollment_id, status, amount_cents, submitted_at, matched, updated_at)
              VALUES (${lender}, ${`held-${name}`}, 'held-1', ${e!.id}, 'settled', 100, 0, 1, 0)`,
        );
        let written = false;
        const blocked = (async () => {
          while (!written) {
            if ((await waiting()) > 0) return 'waits for the lock';
            await Bun.sleep(5);
          }
          return 'written';
        })();
        const outcome = await Promise.race([write.then(() => ((written = true), 'written')), blocked]);
        letGo();
        await holder;
        await write;
        expect(`${name}: ${outcome}`).toBe(`${name}: written`);
      }
    }, 60_000);
  });

  describe('enrollment', () => {
    test('20 enrollments of one new borrower at once: one record; the first enrolls it, the others update it', async () => {
      const s = onPg();
      await s.ready;
      const rs = await Promise.all(Array.from({ length: N }, () => enroll({ ctx: s.ctx, input: { body: { borrowers: [enrollBorrower('same-1')] } } })));
      const outcomes = rs.map((r) => r.results[0]!.outcome).sort();
      expect(outcomes).toEqual(['enrolled', ...Array(N - 1).fill('updated')]);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM enrollments WHERE authorizer_unique_id = 'same-1'`)).toBe(1);
      // The reading wanted is the record's, whichever request wrote last.
      expect(await s.q(sql`SELECT h.enrollment_id = e.id AS same FROM pay_history h, enrollments e`)).toEqual([{ same: true }]);
      // One set of search entries: first name, last name, phone, the account's last four.
      expect(await count(s, sql`SELECT count(*)::int AS n FROM borrower_search WHERE authorizer_unique_id = 'same-1'`)).toBe(4);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM searchable_borrowers`)).toBe(1);
      // Re-sends of a monitored borrower keep its payments and the window it started with.
      const [e] = await s.q<{ payments_used: number; window_started_at: string }>(sql`SELECT payments_used, window_started_at FROM enrollments`);
      expect(e).toEqual({ payments_used: 0, window_started_at: String(s.now()) });
    }, 60_000);

    test('20 requests of the same 40 borrowers, each in another order: no request fails, each borrower enrolled once and updated 19 times', async () => {
      const s = onPg();
      await s.ready;
      const ids = Array.from({ length: 40 }, (_, i) => `many-${String(i).padStart(2, '0')}`);
      const shuffled = (k: number) => ids.map((id, i) => ({ id, o: (i * (2 * k + 1) + k) % ids.length })).sort((a, b) => a.o - b.o).map((x) => x.id);
      const rs = await Promise.all(Array.from({ length: N }, (_, k) => enroll({ ctx: s.ctx, input: { body: { borrowers: shuffled(k).map((id) => enrollBorrower(id)) } } })));
      const byId = new Map<string, string[]>();
      for (const r of rs) for (const x of r.results) byId.set(x.authorizer_unique_id!, [...(byId.get(x.authorizer_unique_id!) ?? []), x.outcome]);
      for (const id of ids) expect(byId.get(id)!.sort()).toEqual(['enrolled', ...Array(N - 1).fill('updated')]);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM enrollments`)).toBe(40);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM pay_history`)).toBe(40);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM borrower_search`)).toBe(160);
    }, 60_000);

    test('1000 borrowers in one request: every one stored, searchable and wanting a reading', async () => {
      const s = onPg();
      await s.ready;
      const borrowers = Array.from({ length: 1000 }, (_, i) => enrollBorrower(`bulk-${String(i).padStart(4, '0')}`, { first_name: `Name${i}`, collectable_amount: 1000 + i }));
      const r = await enroll({ ctx: s.ctx, input: { body: { borrowers } } });
      expect(r.enrolled).toBe(1000);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM enrollments WHERE state = 'monitored' AND next_read_at IS NOT NULL`)).toBe(1000);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM searchable_borrowers`)).toBe(1000);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM pay_history WHERE due_at IS NOT NULL`)).toBe(1000);
      // Sent again: the same hashes under the same key, so the entries are left as they were; the amounts refreshed.
      const before = await s.q(sql`SELECT encode(hash, 'hex') AS h, authorizer_unique_id AS a FROM borrower_search ORDER BY 1, 2`);
      const again = await enroll({ ctx: s.ctx, input: { body: { borrowers: borrowers.map((b) => ({ ...b, collectable_amount: 5 })) } } });
      expect(again.updated).toBe(1000);
      expect(await s.q(sql`SELECT encode(hash, 'hex') AS h, authorizer_unique_id AS a FROM borrower_search ORDER BY 1, 2`)).toEqual(before);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM enrollments WHERE collectable_amount_cents = 5`)).toBe(1000);
      const e = await enrollmentStore.enrollmentOf(s.ctx, s.ctx.lender.id, 'bulk-0007');
      expect(e).toMatchObject({ authorizerUniqueId: 'bulk-0007', collectableAmountCents: 5, state: 'monitored', cfpbCovered: null, paymentsUsed: 0 });
    }, 120_000);

    test('20 re-checks of held borrowers at once, once their bank is readable: each starts monitoring once, none finds it moved under it', async () => {
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: Array.from({ length: 30 }, (_, i) => enrollBorrower(`held-${i}`, { routing_number: '021000021' })) } } });
      expect(await count(s, sql`SELECT count(*)::int AS n FROM enrollments WHERE state = 'held'`)).toBe(30);
      // The operator loads a directory that knows the bank: the re-check's deps read it.
      const withDirectory = createTestContext({ DATABASE_PATH: join(mkdtempSync(join(tmpdir(), 'drs-pg-enroll-')), 'service.sqlite'), ROUTING_DIRECTORY_FILE: join(import.meta.dir, '../../fixtures/fedach-sample.txt') });
      cleanups.push(() => withDirectory.close());
      const pgDeps = pgStoreDeps(s.pg);
      const deps = { ...withDirectory.rt, ...pgDeps, engine: { ...withDirectory.rt.engine, ...pgDeps.engine }, clock: s.c.clock } as Deps;
      const rs = await Promise.all(Array.from({ length: N }, () => recheckHeld(deps, { max: 10 })));
      const started = rs.reduce((n, r) => n + r.started, 0);
      expect(started).toBe(await count(s, sql`SELECT count(*)::int AS n FROM enrollments WHERE state = 'monitored'`));
      for (let r = await recheckHeld(deps, { max: 100 }); r.checked > 0; r = await recheckHeld(deps, { max: 100 })) expect(r.started).toBe(r.checked);
      expect(await s.q(sql`SELECT state, count(*)::int AS n FROM enrollments GROUP BY state`)).toEqual([{ state: 'monitored', n: 30 }]);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM pay_history WHERE due_at IS NOT NULL`)).toBe(30);
    }, 60_000);

    test('20 removals of one monitored borrower at once: one removes it, the others find it not monitored', async () => {
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: [enrollBorrower('gone-1')] } } });
      const rs = await Promise.all(Array.from({ length: N }, () => removeEnrollments({ ctx: s.ctx, input: { body: { authorizer_unique_ids: ['gone-1'] } } })));
      expect(rs.map((r) => r.results[0]!.outcome).sort()).toEqual([...Array(N - 1).fill('not_monitored'), 'removed']);
      expect(await s.q(sql`SELECT state, next_read_at FROM enrollments`)).toEqual([{ state: 'removed', next_read_at: null }]);
    }, 60_000);
  });

  describe('the jobs claim what they work on', () => {
    test('20 due checks at once: each due borrower is claimed by one of them', async () => {
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: Array.from({ length: 100 }, (_, i) => enrollBorrower(`due-${i}`)) } } });
      const now = s.now();
      const later = now + DAY_MS;
      const claims = await Promise.all(
        Array.from({ length: N }, () =>
          transaction({ deps: s.deps }, async (tx) => {
            const due = await enrollmentStore.dueReads(tx, now, 10);
            await new Promise((r) => setTimeout(r, 5));
            await enrollmentStore.setNextReads(tx, due.map((d) => d.id), later);
            return due.map((d) => d.id);
          }),
        ),
      );
      const all = claims.flat();
      expect(new Set(all).size).toBe(all.length);
      // Those left (a check that found every due row held by others) are claimed by the next tick.
      const rest = await transaction({ deps: s.deps }, (tx) => enrollmentStore.dueReads(tx, now, 1000));
      expect(all.length + rest.length).toBe(100);
      expect(new Set([...all, ...rest.map((d) => d.id)]).size).toBe(100);
    }, 60_000);

    test('20 lapse jobs at once: each ended window lapses once, and none finds a monitor moved under it', async () => {
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: Array.from({ length: 100 }, (_, i) => enrollBorrower(`lapse-${i}`)) } } });
      s.c.clock.advance(31 * DAY_MS);
      const rs = await Promise.all(Array.from({ length: N }, () => lapseDueMonitors(s.deps, 10)));
      let lapsed = rs.reduce((n, r) => n + r.lapsed, 0);
      for (let r = await lapseDueMonitors(s.deps, 10); r.lapsed > 0; r = await lapseDueMonitors(s.deps, 10)) lapsed += r.lapsed;
      expect(lapsed).toBe(100);
      expect(await s.q(sql`SELECT state, count(*)::int AS n FROM enrollments GROUP BY state`)).toEqual([{ state: 'lapsed', n: 100 }]);
      expect(await monitorStore.dueLapses(s.ctx, s.now(), -1)).toEqual([]);
    }, 60_000);

    test('20 claims of the readings due at once: each reading is claimed once, oldest due first', async () => {
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: Array.from({ length: 100 }, (_, i) => enrollBorrower(`hist-${i}`)) } } });
      await s.q(sql`UPDATE pay_history SET due_at = due_at - (hashtext(enrollment_id) & 1023)`);
      const now = s.now();
      const claims = await Promise.all(Array.from({ length: N }, () => transaction({ deps: s.deps }, (tx) => payCycleStore.claimDueHistories(tx, now, 10, now + 600_000))));
      const all = claims.flat().map((d) => d.enrollmentId);
      expect(all.length).toBe(100);
      expect(new Set(all).size).toBe(100);
      for (const claim of claims) {
        const dues = await Promise.all(claim.map(async (d) => (await s.q<{ was: string }>(sql`SELECT ${now}::bigint - (hashtext(${d.enrollmentId}) & 1023) AS was`))[0]!.was));
        expect(dues.map(Number)).toEqual(dues.map(Number).sort((a, b) => a - b));
        for (const d of claim) expect(d).toMatchObject({ lenderId: s.ctx.lender.id, wantedAt: now, attempts: 0, routing: '110000000' });
      }
      expect(await payCycleStore.dueHistories(s.ctx, now, 10)).toEqual([]);
    }, 60_000);

    test("20 records of one borrower's reading at once: its deposits are one record's, never a mixture", async () => {
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: [enrollBorrower('dep-1')] } } });
      const [{ id }] = await s.q<{ id: string }>(sql`SELECT id FROM enrollments`);
      const day = (k: number) => Date.UTC(2026, 9, 1) + k * DAY_MS;
      await Promise.all(
        Array.from({ length: N }, (_, k) =>
          transaction({ deps: s.deps }, async (tx) => {
            await payCycleStore.serializeReading(tx, id!);
            // Each record its own days: a mixture would hold days of two of them.
            const deposits = Array.from({ length: 5 }, (_, j) => ({ at: day(k * 10 + j), amountCents: 100_000 + k }));
            await payCycleStore.storeDeposits(tx, id!, deposits, s.now(), day(200));
            await new Promise((r) => setTimeout(r, 2));
            await payCycleStore.endHistory(tx, id!, s.now(), 'credits');
          }),
        ),
      );
      const h = await payCycleStore.historyOf(s.ctx, id!);
      expect(h!.deposits).toHaveLength(5);
      expect(new Set(h!.deposits.map((d) => d.amountCents)).size).toBe(1);
      expect(h!.coveredTo).toBe(day(200));
    }, 60_000);
  });

  describe('reads as on SQLite', () => {
    test('identifiers in byte order: prefix search, pages and keyset', async () => {
      const s = onPg();
      await s.ready;
      const ids = ['ab', 'Ab', 'AB', 'aB', 'ab-1', 'abc', 'abé', 'ab\u{10FFFE}', 'ac', 'a', 'b', 'é'];
      await enroll({ ctx: s.ctx, input: { body: { borrowers: ids.map((id) => enrollBorrower(id)) } } });
      const byBytes = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      const range = (p: string) => ({ from: p, to: `${p}\u{10FFFF}` });
      expect((await enrollmentStore.borrowersByIdPrefix(s.ctx, s.ctx.lender.id, range('ab'), 50)).map((r) => r.aid)).toEqual(byBytes.filter((id) => id.startsWith('ab')));
      expect((await enrollmentStore.borrowersByIdPrefix(s.ctx, s.ctx.lender.id, range('A'), 50)).map((r) => r.aid)).toEqual(['AB', 'Ab']);
      const page = (after: string, limit: number) => enrollmentStore.enrollmentsPage(s.ctx, { lenderId: s.ctx.lender.id, after, prefix: null, limit });
      const seen: string[] = [];
      for (let p = await page('', 5); p.length > 0; p = await page(seen.at(-1)!, 5)) seen.push(...p.map((e) => e.authorizerUniqueId));
      expect(seen).toEqual(byBytes);
      const held = await enrollmentStore.enrollmentsPage(s.ctx, { lenderId: s.ctx.lender.id, after: 'ab', prefix: range('ab'), state: 'monitored', limit: 3 });
      expect(held.map((e) => e.authorizerUniqueId)).toEqual(byBytes.filter((id) => id.startsWith('ab') && id > 'ab').slice(0, 3));
    }, 60_000);

    test('the ledger totals are exact, read as BigInt; a borrower without entries has zeros', async () => {
      const s = onPg();
      await s.ready;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: [enrollBorrower('led-1')] } } });
      const [{ id }] = await s.q<{ id: string }>(sql`SELECT id FROM enrollments`);
      expect(await enrollmentStore.ledgerTotalsAmong(s.ctx, s.ctx.lender.id, [id!])).toEqual([]);
      expect(await enrollmentStore.paymentsAmong(s.ctx, s.ctx.lender.id, [id!])).toEqual([]);
      expect(await enrollmentStore.ledgerEntriesAmong(s.ctx, s.ctx.lender.id, [id!])).toEqual([]);
    }, 60_000);
  });

  describe('erasure', () => {
    test("a borrower's search entries, search row, deposits and reading go; its personal columns are null; another lender's borrower of the same id keeps its own", async () => {
      const s = onPg();
      await s.ready;
      const other = s.c.newLender();
      await s.addLender(other.id);
      const otherCtx = { ...s.ctx, lender: { ...s.ctx.lender, id: other.id } } as Ctx;
      await enroll({ ctx: s.ctx, input: { body: { borrowers: [enrollBorrower('erase-1'), enrollBorrower('keep-1')] } } });
      await enroll({ ctx: otherCtx, input: { body: { borrowers: [enrollBorrower('erase-1')] } } });
      const [{ id }] = await s.q<{ id: string }>(sql`SELECT id FROM enrollments WHERE lender_id = ${s.ctx.lender.id} AND authorizer_unique_id = 'erase-1'`);
      await transaction({ deps: s.deps }, async (tx) => {
        await payCycleStore.storeDeposits(tx, id!, [{ at: Date.UTC(2026, 9, 1), amountCents: 250_000 }], s.now(), Date.UTC(2026, 10, 1));
      });
      await transaction({ deps: s.deps }, async (tx) => {
        await enrollmentStore.serializeBorrowers(tx, s.ctx.lender.id, ['erase-1']);
        await enrollmentStore.eraseBorrowerData(tx, [id!], s.now());
        await payCycleStore.eraseHistory(tx, [id!]);
        await enrollmentStore.removeSearchEntries(tx, s.ctx.lender.id, ['erase-1'], 12);
      });
      expect(await s.q(sql`SELECT sealed, metadata, card_token_sealed, card_last4, card_brand, erased_at IS NOT NULL AS erased FROM enrollments WHERE id = ${id}`)).toEqual([
        { sealed: null, metadata: null, card_token_sealed: null, card_last4: null, card_brand: null, erased: true },
      ]);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM pay_history_deposits WHERE enrollment_id = ${id}`)).toBe(0);
      expect(await count(s, sql`SELECT count(*)::int AS n FROM pay_history WHERE enrollment_id = ${id}`)).toBe(0);
      expect(await s.q(sql`SELECT lender_id, authorizer_unique_id AS a FROM searchable_borrowers ORDER BY 2, 1`)).toEqual(
        [
          { lender_id: other.id, a: 'erase-1' },
          { lender_id: s.ctx.lender.id, a: 'keep-1' },
        ].sort((x, y) => (x.a === y.a ? 0 : x.a < y.a ? -1 : 1)),
      );
      // The other lender's borrower of the same id and the lender's other borrower keep their four entries each.
      expect(await s.q(sql`SELECT authorizer_unique_id AS a, count(*)::int AS n FROM borrower_search GROUP BY 1 ORDER BY 1`)).toEqual([
        { a: 'erase-1', n: 4 },
        { a: 'keep-1', n: 4 },
      ]);
    }, 60_000);
  });
}
