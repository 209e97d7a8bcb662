// engine: postgres
// The sandbox processor on PostgreSQL, where its writes run side by side: one idempotency key makes one
// payment however many callers send it at once, a transient first attempt (cents 98) fails once, and the change
// feed read while payments are created never skips a change. Then the same script of calls on SQLite and on
// PostgreSQL, answered alike.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { SandboxProcessor } from '../../../src/adapters/processors/sandbox';
import { ProcessorUnavailable, type DebitRequest, type ProcessorChange, type Rail } from '../../../src/adapters/processors/types';
import { FakeClock } from '../../../src/platform/clock';
import { openDatabase } from '../../../src/platform/db';
import { newId } from '../../../src/platform/ids';
import { openPg } from '../../../src/platform/pg';
import { rows } from '../../../src/platform/sql/pg';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';

const CALLERS = 20;
const SETTLE = 60_000;
const KEY = 'sbx_pgconcurrency_0123456789';

const debit = (amountCents: number, paymentId = newId(), rail: Rail = 'ach'): DebitRequest => ({
  paymentId,
  reference: `DRS-b1-${paymentId}`,
  amountCents,
  rail,
  instrument: rail === 'ach' ? { kind: 'bank_account', routingNumber: '110000000', accountNumber: '0001234567' } : { kind: 'token', token: 'sbxpm_test' },
  borrower: { name: 'Test Borrower' },
});

if (!onPostgres) {
  test('the sandbox under concurrent callers: not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const database = freshPgDatabase();
  const pg = openPg(database.url, { max: CALLERS + 5 });
  const dir = mkdtempSync(join(tmpdir(), 'drs-pg-sandbox-'));
  const sqliteHandle = openDatabase(join(dir, 'service.sqlite'));
  afterAll(async () => {
    await pg.close();
    database.drop();
    sqliteHandle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const clock = new FakeClock(Date.UTC(2026, 2, 1, 12));
  const sandbox = new SandboxProcessor({ pg, clock, settlementMs: SETTLE, outageMs: 0 });
  const paymentsWithKey = async (key: string) =>
    (await rows<{ n: number }>(pg.db, sql`SELECT count(*)::int AS n FROM sandbox_payments WHERE idempotency_key = ${key}`))[0]!.n;

  describe('the sandbox on PostgreSQL, 20 callers at once', () => {
    test('one idempotency key: one payment, and every caller is answered with it', async () => {
      const req = debit(10_00);
      const results = await Promise.all(Array.from({ length: CALLERS }, () => sandbox.createDebit(KEY, req)));
      expect(await paymentsWithKey(req.paymentId)).toBe(1);
      expect(new Set(results.map((r) => r.processorPaymentId)).size).toBe(1);
      for (const r of results) expect(r).toEqual(results[0]!);
      // One creation change in the feed for it, not one per caller.
      const [{ n }] = await rows<{ n: number }>(
        pg.db,
        sql`SELECT count(*)::int AS n FROM sandbox_events e JOIN sandbox_payments p ON p.id = e.payment_id WHERE p.idempotency_key = ${req.paymentId}`,
      );
      expect(n).toBe(1);
    });

    test('a transient first attempt (cents 98): exactly one caller is told to retry, the others get the one payment', async () => {
      const req = debit(10_98);
      const results = await Promise.allSettled(Array.from({ length: CALLERS }, () => sandbox.createDebit(KEY, req)));
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(failed).toHaveLength(1);
      expect(failed[0]!.reason).toBeInstanceOf(ProcessorUnavailable);
      const answered = results.filter((r) => r.status === 'fulfilled').map((r) => r.value.processorPaymentId);
      expect(new Set(answered).size).toBe(1);
      expect(await paymentsWithKey(req.paymentId)).toBe(1);
    });

    test('different keys on one account while the feed is read: every change is read once, in order', async () => {
      const other = 'sbx_pgfeed_0123456789abcdef';
      const reqs = Array.from({ length: CALLERS }, (_, i) => debit(20_00 + i));
      const seen: ProcessorChange[] = [];
      let cursor: string | null = null;
      let creating = true;
      const reader = (async () => {
        while (creating) {
          const page = await sandbox.listChanges(other, cursor, { limit: 3 });
          seen.push(...page.changes);
          cursor = page.nextCursor;
        }
      })();
      await Promise.all(reqs.map((r) => sandbox.createDebit(other, r)));
      creating = false;
      await reader;
      for (;;) {
        const page = await sandbox.listChanges(other, cursor, { limit: 3 });
        seen.push(...page.changes);
        cursor = page.nextCursor;
        if (!page.hasMore) break;
      }
      expect(seen.map((c) => c.reference).sort()).toEqual(reqs.map((r) => r.reference!).sort());
      const seqs = seen.map((c) => Number(c.sourceEventId.slice('sbxevt_'.length)));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    });

    test('due statuses appended by 20 readers at once: each once', async () => {
      const acct = 'sbx_pgdue_0123456789abcdef';
      const reqs = [debit(30_00), debit(30_91), debit(30_95)];
      for (const r of reqs) await sandbox.createDebit(acct, r);
      clock.advance(3 * SETTLE);
      await Promise.all(Array.from({ length: CALLERS }, () => sandbox.listChanges(acct, null)));
      const page = await sandbox.listChanges(acct, null, { limit: 100 });
      // processing + settled; processing + returned; processing + settled + late_returned.
      expect(page.changes.map((c) => `${c.reference} ${c.status}`).sort()).toEqual(
        [
          `${reqs[0]!.reference} processing`,
          `${reqs[0]!.reference} settled`,
          `${reqs[1]!.reference} processing`,
          `${reqs[1]!.reference} returned`,
          `${reqs[2]!.reference} processing`,
          `${reqs[2]!.reference} settled`,
          `${reqs[2]!.reference} late_returned`,
        ].sort(),
      );
    });
  });

  describe('the same calls on SQLite and on PostgreSQL', () => {
    test('are answered alike: creations, replays, the feed, look-ups, listings and cancellations', async () => {
      const start = Date.UTC(2026, 3, 1, 12);
      const script = async (s: SandboxProcessor, c: FakeClock) => {
        const key = 'sbx_parity_0123456789abcdef';
        const out: unknown[] = [];
        const ids = [newIdFor(0), newIdFor(1), newIdFor(2), newIdFor(3), newIdFor(4), newIdFor(5)];
        const amounts = [10_00, 10_91, 10_95, 10_96, 10_98, 10_97];
        const attempt = async (f: () => Promise<unknown>) => {
          try {
            return await f();
          } catch (e) {
            return { error: (e as Error).name, message: (e as Error).message };
          }
        };
        // A millisecond apart: a listing orders by creation time, then by the processor's (random) id.
        for (let i = 0; i < ids.length; i++) {
          out.push(await attempt(() => s.createDebit(key, debit(amounts[i]!, ids[i]!))));
          c.advance(1);
        }
        out.push(await attempt(() => s.createDebit(key, debit(10_98, ids[4]!))));
        c.advance(1);
        out.push(await attempt(() => s.createDebit(key, debit(10_00, ids[0]!))));
        out.push(await attempt(() => s.createDebit(key, debit(12_00, newIdFor(9), 'card'))));
        c.advance(SETTLE);
        out.push(await s.listChanges(key, null, { limit: 4 }));
        c.advance(SETTLE);
        out.push(await s.listChanges(key, null, { limit: 100 }));
        out.push(await s.listChanges(key, '3', { limit: 2 }));
        out.push(await s.findPayment(key, { paymentId: ids[1]!, createdFrom: start, createdTo: start + 1 }));
        out.push(await s.findPayment(key, { paymentId: ids[1]!, createdFrom: start + 2, createdTo: start + 3 }));
        const first = await s.listPayments(key, { createdFrom: start - 1, createdTo: c.now(), page: null, limit: 3 });
        out.push(first, await s.listPayments(key, { createdFrom: start - 1, createdTo: c.now(), page: first.next, limit: 3 }));
        return out;
      };
      const onSqlite = new FakeClock(start);
      const onPg = new FakeClock(start);
      // A database of its own, as the SQLite file is: the feeds number their changes from 1 alike.
      const own = freshPgDatabase();
      const ownPg = openPg(own.url);
      try {
        const a = await script(new SandboxProcessor({ sqlite: sqliteHandle.sqlite, clock: onSqlite, settlementMs: SETTLE, outageMs: 0 }), onSqlite);
        const b = await script(new SandboxProcessor({ pg: ownPg, clock: onPg, settlementMs: SETTLE, outageMs: 0 }), onPg);
        expect(normalized(b)).toEqual(normalized(a));
        expect(JSON.stringify(a)).toContain('sbxevt_');
      } finally {
        await ownPg.close();
        own.drop();
      }
    });
  });
}

/** A payment id of the parity script: the same on both engines. */
function newIdFor(i: number): string {
  return `0190a000-0000-7000-8000-${String(i).padStart(12, '0')}`;
}

/** The answers with the processor's own ids (random) named in order of appearance. */
function normalized(value: unknown): unknown {
  const names = new Map<string, string>();
  const text = JSON.stringify(value).replace(/sbxpay_[A-Za-z0-9]+/g, (id) => {
    if (!names.has(id)) names.set(id, `payment${names.size}`);
    return names.get(id)!;
  });
  return JSON.parse(text);
}
