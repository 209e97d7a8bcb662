import { describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { drizzle } from 'drizzle-orm/bun-sqlite';
import { migrate } from 'drizzle-orm/bun-sqlite/migrator';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { processBalances } from '../../../src/modules/balance-requests/processing';

// A lender's waiting authorizers are read on every accept from balance_backlog, which triggers on batches keep
// equal to the sum over its open batches. These hold that equality through the service, through any sequence
// of writes to batches, and across the migration that creates the table for batches already stored.

const MIGRATIONS = join(import.meta.dir, '../../../db/migrations');
const LENDERS = ['lender-a', 'lender-b', 'lender-c'];

/** Each lender's backlog as the triggers keep it and as the open batches sum it, side by side. */
function both(sqlite: Database, lenders: string[]) {
  const kept = (id: string) => (sqlite.query('SELECT COALESCE(MAX(pending), 0) AS n FROM balance_backlog WHERE lender_id = ?').get(id) as { n: number }).n;
  const summed = (id: string) =>
    (
      sqlite
        .query("SELECT COALESCE(SUM(total_authorizers - total_processed), 0) AS n FROM batches WHERE lender_id = ? AND status IN ('pending', 'processing')")
        .get(id) as { n: number }
    ).n;
  return { kept: lenders.map(kept), summed: lenders.map(summed) };
}

/** A fresh file migrated up to and including migration `upTo` (its index), or every one. */
function migratedTo(upTo?: number): { sqlite: Database; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'drs-backlog-'));
  let folder = MIGRATIONS;
  if (upTo !== undefined) {
    folder = join(dir, 'migrations');
    cpSync(MIGRATIONS, folder, { recursive: true });
    const journalPath = join(folder, 'meta/_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { idx: number }[] };
    journal.entries = journal.entries.filter((e) => e.idx <= upTo);
    writeFileSync(journalPath, JSON.stringify(journal));
  }
  const sqlite = new Database(join(dir, 'db.sqlite'));
  sqlite.exec('PRAGMA foreign_keys = OFF');
  migrate(drizzle(sqlite), { migrationsFolder: folder });
  return {
    sqlite,
    close: () => {
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let seq = 0;
function insertBatch(sqlite: Database, lenderId: string, status: string, total: number, processed: number): string {
  const id = `b-${++seq}`;
  sqlite
    .query(
      `INSERT INTO batches (id, lender_id, source, status, submitted_at, total_authorizers, total_processed) VALUES (?, ?, 'api', ?, 0, ?, ?)`,
    )
    .run(id, lenderId, status, total, processed);
  return id;
}

const op = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), lender: fc.integer({ min: 0, max: 2 }), status: fc.constantFrom('pending', 'processing', 'completed'), total: fc.integer({ min: 0, max: 1000 }), processed: fc.integer({ min: 0, max: 50 }) }),
  fc.record({ kind: fc.constant('status' as const), pick: fc.nat(), status: fc.constantFrom('pending', 'processing', 'completed') }),
  fc.record({ kind: fc.constant('bump' as const), pick: fc.nat(), n: fc.integer({ min: 0, max: 400 }) }),
  fc.record({ kind: fc.constant('total' as const), pick: fc.nat(), total: fc.integer({ min: 0, max: 1000 }) }),
  fc.record({ kind: fc.constant('move' as const), pick: fc.nat(), lender: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
);

describe('balance_backlog', () => {
  test('equals the open batches’ sum after any sequence of inserts, updates and deletes of batches', () => {
    const db = migratedTo();
    try {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
          db.sqlite.exec('DELETE FROM batches; DELETE FROM balance_backlog');
          const ids: string[] = [];
          const pick = (n: number) => ids[n % ids.length]!;
          for (const o of ops) {
            if (o.kind === 'insert') ids.push(insertBatch(db.sqlite, LENDERS[o.lender]!, o.status, o.total, o.processed));
            else if (ids.length === 0) continue;
            else if (o.kind === 'status') db.sqlite.query('UPDATE batches SET status = ? WHERE id = ?').run(o.status, pick(o.pick));
            else if (o.kind === 'bump') db.sqlite.query('UPDATE batches SET total_processed = total_processed + ? WHERE id = ?').run(o.n, pick(o.pick));
            else if (o.kind === 'total') db.sqlite.query('UPDATE batches SET total_authorizers = ? WHERE id = ?').run(o.total, pick(o.pick));
            else if (o.kind === 'move') db.sqlite.query('UPDATE batches SET lender_id = ? WHERE id = ?').run(LENDERS[o.lender]!, pick(o.pick));
            else {
              const id = pick(o.pick);
              db.sqlite.query('DELETE FROM batches WHERE id = ?').run(id);
              ids.splice(ids.indexOf(id), 1);
            }
            const { kept, summed } = both(db.sqlite, LENDERS);
            expect(kept).toEqual(summed);
          }
        }),
        { numRuns: 150 },
      );
    } finally {
      db.close();
    }
  });

  test('the migration fills it from the batches already stored', () => {
    const db = migratedTo(17);
    try {
      insertBatch(db.sqlite, 'lender-a', 'pending', 1000, 0);
      insertBatch(db.sqlite, 'lender-a', 'processing', 500, 120);
      insertBatch(db.sqlite, 'lender-a', 'completed', 700, 700);
      insertBatch(db.sqlite, 'lender-b', 'processing', 3, 1);
      insertBatch(db.sqlite, 'lender-c', 'completed', 9, 9);
      migrate(drizzle(db.sqlite), { migrationsFolder: MIGRATIONS });
      expect(both(db.sqlite, LENDERS)).toEqual({ kept: [1380, 2, 0], summed: [1380, 2, 0] });
      // And the triggers are in place for what comes after.
      insertBatch(db.sqlite, 'lender-c', 'pending', 5, 0);
      expect(both(db.sqlite, LENDERS).kept).toEqual([1380, 2, 5]);
    } finally {
      db.close();
    }
  });

  describe('through the service', () => {
    const ctx = useTestContext();

    test('accepting adds a batch’s authorizers; checking them takes them off; the bound reads it', async () => {
      const other = ctx.newLender('backlog-other');
      const lenders = [ctx.lender.id, other.id];
      const send = (key: string, tag: string, n: number) =>
        ctx.json('POST', '/v1/balance_requests', { key, body: { authorizers: Array.from({ length: n }, (_, i) => bankAuthorizer(`${tag}-${i}`)) } });
      expect((await send(ctx.lender.key, 'a', 7)).status).toBe(201);
      expect((await send(ctx.lender.key, 'b', 5)).status).toBe(201);
      expect((await send(other.key, 'c', 3)).status).toBe(201);
      expect(both(ctx.sql, lenders)).toEqual({ kept: [12, 3], summed: [12, 3] });
      expect(await ctx.rt.stores.balances.pendingAuthorizers({ deps: ctx.rt }, ctx.lender.id)).toBe(12);
      expect(await ctx.rt.stores.balances.pendingAuthorizers({ deps: ctx.rt }, null)).toBe(15);
      await processBalances(ctx.rt);
      expect(both(ctx.sql, lenders)).toEqual({ kept: [0, 0], summed: [0, 0] });
      expect(await ctx.rt.stores.balances.pendingAuthorizers({ deps: ctx.rt }, null)).toBe(0);
    });
  });
});
