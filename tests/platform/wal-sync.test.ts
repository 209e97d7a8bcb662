// engine: sqlite
// Commits synced later: inside commitsSyncedLater (the balance pipeline's jobs), a transaction commits without a
// sync of its own (synchronous=NORMAL for its COMMIT alone) and a sync of the WAL starts off the event loop,
// not waited for; everywhere else the COMMIT syncs (FULL), as the connection is set. The disk is the outside
// world here: a stand-in for the sync shows when each one starts and ends.
import { afterAll, beforeEach, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestContext } from '../helpers/context';
import { commitsSyncedLater, transaction, withTransaction } from '../../src/platform/context';
import { openDatabase } from '../../src/platform/db';
import { writeAlone } from '../../src/platform/tx-lock';
import { syncLaterThrough, WalSync, walSyncOf } from '../../src/platform/wal-sync';
import { balanceProcessingJob } from '../../src/modules/balance-requests/processing';
import { bankAuthorizer } from '../helpers/fixtures';

const c = createTestContext();
const dir = mkdtempSync(join(tmpdir(), 'wal-sync-'));
afterAll(() => {
  c.close();
  rmSync(dir, { recursive: true, force: true });
});

c.sql.run('CREATE TABLE sync_probe (x INTEGER)');
const ins = (x: number) => c.sql.query('INSERT INTO sync_probe VALUES (?)').run(x);
/** The connection's synchronous level, as the COMMIT about to run will use it: 2 FULL, 1 NORMAL. */
const level = () => (c.sql.query('PRAGMA synchronous').get() as { synchronous: number }).synchronous;
/** What another connection to the file sees: committed rows, synced or not. */
const committed = () => (c.rt.reader.$client.query('SELECT x FROM sync_probe ORDER BY x').all() as { x: number }[]).map((r) => r.x);

/** A disk whose syncs return when the test says, each one in turn. */
function heldDisk() {
  const syncs: { resolve: () => void; reject: (e: Error) => void }[] = [];
  const datasync = {
    sync: (path: string) => {
      expect(path).toBe(`${realpathSync(c.rt.config.databasePath)}-wal`);
      return new Promise<void>((resolve, reject) => syncs.push({ resolve, reject }));
    },
    close: async () => undefined,
  };
  const sync = new WalSync(`${realpathSync(c.rt.config.databasePath)}-wal`, datasync);
  syncLaterThrough(c.sql, sync);
  return { sync, syncs };
}

const realDisk = walSyncOf(c.sql)!;
beforeEach(() => {
  syncLaterThrough(c.sql, realDisk);
  c.sql.run('DELETE FROM sync_probe');
});

test("the service's connection commits under FULL and has a WAL sync for the work synced later; a file opened otherwise has none", () => {
  expect(realDisk).toBeInstanceOf(WalSync);
  expect(realDisk.walPath).toBe(`${realpathSync(c.rt.config.databasePath)}-wal`);
  expect(level()).toBe(2);
  const own = openDatabase(join(dir, 'plain.sqlite'));
  try {
    expect(own.sqlite.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 });
    expect(walSyncOf(own.sqlite)).toBeUndefined();
  } finally {
    own.close();
  }
});

test('a transaction outside that work commits under FULL and starts no sync of its own', async () => {
  const { sync } = heldDisk();
  let seen = 0;
  await transaction({ deps: c.rt }, () => {
    seen = level();
    ins(1);
  });
  await writeAlone(c.sql, () => {
    expect(level()).toBe(2);
    ins(2);
  });
  expect(seen).toBe(2);
  expect(committed()).toEqual([1, 2]);
  expect(sync.syncs).toBe(0);
});

test('inside it, a transaction commits under NORMAL, is answered at its commit, and a sync of the WAL starts after it', async () => {
  const { sync, syncs } = heldDisk();
  let seen = 0;
  // Answered though its sync has not returned: the held disk never answers in this test's first part.
  await commitsSyncedLater(() =>
    transaction({ deps: c.rt }, async () => {
      seen = level();
      ins(3);
    }),
  );
  expect(seen).toBe(1);
  expect(committed()).toEqual([3]);
  expect(sync.syncs).toBe(1);
  // The connection's own setting is back for every other writer.
  expect(level()).toBe(2);
  // writeAlone alike (the job's sandbox writes, say); its sync waits for the one in flight, then starts.
  await commitsSyncedLater(() =>
    writeAlone(c.sql, () => {
      expect(level()).toBe(1);
      ins(4);
    }),
  );
  expect(level()).toBe(2);
  expect(committed()).toEqual([3, 4]);
  syncs[0]!.resolve();
  while (syncs.length < 2) await new Promise((r) => setImmediate(r));
  syncs[1]!.resolve();
  expect(sync.syncs).toBe(2);
});

test('writers committed during one sync share the next one', async () => {
  const { sync, syncs } = heldDisk();
  await commitsSyncedLater(async () => {
    await transaction({ deps: c.rt }, () => ins(5));
    await Promise.all([6, 7, 8, 9].map((x) => transaction({ deps: c.rt }, () => ins(x))));
  });
  expect(committed()).toEqual([5, 6, 7, 8, 9]);
  expect(sync.syncs).toBe(1);
  syncs[0]!.resolve();
  while (syncs.length < 2) await new Promise((r) => setImmediate(r));
  syncs[1]!.resolve();
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  // The four committed while the first was in flight: one more sync for all of them.
  expect(sync.syncs).toBe(2);
});

test('a transaction that fails inside it is rolled back, starts no sync, and leaves the connection under FULL', async () => {
  const { sync } = heldDisk();
  await expect(
    commitsSyncedLater(() =>
      transaction({ deps: c.rt }, async () => {
        ins(10);
        throw new Error('refused');
      }),
    ),
  ).rejects.toThrow('refused');
  expect(committed()).toEqual([]);
  expect(sync.syncs).toBe(0);
  expect(level()).toBe(2);
});

test('a sync that fails is not an error of the work that started it: the next FULL COMMIT meets the disk itself', async () => {
  const { syncs } = heldDisk();
  await commitsSyncedLater(() => transaction({ deps: c.rt }, () => ins(11)));
  syncs[0]!.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  // Nothing unhandled; the work went on.
  await commitsSyncedLater(() => transaction({ deps: c.rt }, () => ins(12)));
  while (syncs.length < 2) await new Promise((r) => setImmediate(r));
  syncs[1]!.resolve();
  expect(committed()).toEqual([11, 12]);
});

test('the scope is the async context: a transaction begun beside the work, not inside it, commits under FULL', async () => {
  heldDisk();
  const levels: number[] = [];
  const inside = commitsSyncedLater(() =>
    transaction({ deps: c.rt }, async () => {
      levels.push(level());
      ins(13);
    }),
  );
  const beside = transaction({ deps: c.rt }, async () => {
    levels.push(level());
    ins(14);
  });
  await Promise.all([inside, beside]);
  expect(levels).toEqual([1, 2]);
  // The synchronous set-up form is never inside it.
  withTransaction({ deps: c.rt }, () => {
    expect(level()).toBe(2);
    ins(15);
  });
});

test("the balance pipeline's job commits without waiting for the disk; a request's answer commits under FULL", async () => {
  // A disk whose syncs never return here: the job must not wait for one.
  const { sync } = heldDisk();
  const { status, body } = await c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('wal-sync-1')] } });
  expect(status).toBe(201);
  expect(sync.syncs).toBe(0);
  await balanceProcessingJob.tick(c.rt, new AbortController().signal);
  expect(sync.syncs).toBeGreaterThan(0);
  expect(level()).toBe(2);
  expect((await c.json('GET', `/v1/balance_requests/${body.batch_id}`)).body).toMatchObject({ status: 'completed' });
});

test('on the real disk: the work synced later is synced, and a WAL not there has nothing to sync', async () => {
  const before = realDisk.syncs;
  await commitsSyncedLater(() => Promise.all([1, 2, 3].map((x) => transaction({ deps: c.rt }, () => ins(x)))));
  await realDisk.afterCommits();
  expect(realDisk.syncs).toBeGreaterThan(before);
  expect(committed()).toEqual([1, 2, 3]);
  const absent = new WalSync(join(dir, 'absent.sqlite-wal'));
  await absent.afterCommits();
  await absent.close();
});

test('a database opened through a symbolic link syncs the WAL that SQLite writes, beside the file itself', () => {
  const real = join(dir, 'real.sqlite');
  openDatabase(real).close();
  symlinkSync(real, join(dir, 'link.sqlite'));
  const h = openDatabase(join(dir, 'link.sqlite'), { walSync: true });
  try {
    h.sqlite.exec('CREATE TABLE t (x INTEGER)');
    expect(walSyncOf(h.sqlite)!.walPath).toBe(`${realpathSync(real)}-wal`);
    expect(existsSync(`${realpathSync(real)}-wal`)).toBe(true);
  } finally {
    h.close();
  }
});
