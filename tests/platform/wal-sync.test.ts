// engine: sqlite
// Commits made durable off the event loop: the service's connections run with synchronous=NORMAL, and a
// transaction resolves only once a sync of the WAL, started after its COMMIT, has returned. The disk is the
// outside world here: a stand-in for the sync shows when each caller is answered.
import { afterAll, beforeEach, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestContext } from '../helpers/context';
import { commitsSyncedLater, transaction, withTransaction } from '../../src/platform/context';
import { openDatabase } from '../../src/platform/db';
import { writeAlone } from '../../src/platform/tx-lock';
import { datasyncFile, syncCommitsOffLoop, WalSync, walSyncOf } from '../../src/platform/wal-sync';

const c = createTestContext();
const dir = mkdtempSync(join(tmpdir(), 'wal-sync-'));
afterAll(() => {
  c.close();
  rmSync(dir, { recursive: true, force: true });
});

c.sql.run('CREATE TABLE sync_probe (x INTEGER)');
const ins = (x: number) => c.sql.query('INSERT INTO sync_probe VALUES (?)').run(x);
/** What another connection to the file sees: committed rows, synced or not. */
const committed = () => (c.rt.reader.$client.query('SELECT x FROM sync_probe ORDER BY x').all() as { x: number }[]).map((r) => r.x);

/** A disk whose syncs return when the test says, each one in turn. */
function heldDisk() {
  const syncs: { resolve: () => void; reject: (e: Error) => void }[] = [];
  const datasync = (path: string) => {
    expect(path).toBe(`${c.rt.config.databasePath}-wal`);
    return new Promise<void>((resolve, reject) => syncs.push({ resolve, reject }));
  };
  const sync = new WalSync(`${c.rt.config.databasePath}-wal`, datasync);
  syncCommitsOffLoop(c.sql, sync);
  return { sync, syncs };
}

/** Whether a promise has settled, after the event loop has turned. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
}

const realDisk = walSyncOf(c.sql)!;
beforeEach(() => {
  syncCommitsOffLoop(c.sql, realDisk);
  c.sql.run('DELETE FROM sync_probe');
});

test("the service's connections commit without a sync of their own (NORMAL); a file opened otherwise keeps FULL", () => {
  expect(realDisk).toBeInstanceOf(WalSync);
  expect(c.sql.query('PRAGMA synchronous').get()).toEqual({ synchronous: 1 });
  const own = openDatabase(join(dir, 'plain.sqlite'));
  try {
    expect(own.sqlite.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 });
    expect(walSyncOf(own.sqlite)).toBeUndefined();
  } finally {
    own.close();
  }
});

test('a database opened through a symbolic link syncs the WAL that SQLite writes, beside the file itself', () => {
  const real = join(dir, 'real.sqlite');
  openDatabase(real).close();
  symlinkSync(real, join(dir, 'link.sqlite'));
  const h = openDatabase(join(dir, 'link.sqlite'), { syncOffLoop: true });
  try {
    h.sqlite.exec('CREATE TABLE t (x INTEGER)');
    expect(walSyncOf(h.sqlite)!.walPath).toBe(`${realpathSync(real)}-wal`);
    expect(existsSync(`${real}-wal`)).toBe(true);
  } finally {
    h.close();
  }
});

test('a transaction resolves once a sync started after its commit returns, and the connection is free meanwhile', async () => {
  const { sync, syncs } = heldDisk();
  const first = transaction({ deps: c.rt }, () => ins(1));
  while (syncs.length === 0) await new Promise((r) => setImmediate(r));
  // Committed (another connection sees it) but not answered: its sync has not returned.
  expect(committed()).toEqual([1]);
  expect(await settled(first)).toBe(false);
  // The next writer is not held behind the disk.
  const second = transaction({ deps: c.rt }, () => ins(2));
  while (committed().length < 2) await new Promise((r) => setImmediate(r));
  expect(await settled(second)).toBe(false);
  syncs[0]!.resolve();
  await first;
  // The first sync may have started before the second commit: the second waits for one after it.
  expect(await settled(second)).toBe(false);
  expect(syncs.length).toBe(2);
  syncs[1]!.resolve();
  await second;
  expect(sync.syncs).toBe(2);
});

test('the writers committed during one sync share the next one', async () => {
  const { sync, syncs } = heldDisk();
  const first = transaction({ deps: c.rt }, () => ins(1));
  while (syncs.length === 0) await new Promise((r) => setImmediate(r));
  const later = [2, 3, 4, 5].map((x) => transaction({ deps: c.rt }, () => ins(x)));
  // writeAlone (the group commit, the job runs) waits for the disk as a transaction does.
  later.push(writeAlone(c.sql, () => ins(6)));
  while (committed().length < 6) await new Promise((r) => setImmediate(r));
  syncs[0]!.resolve();
  await first;
  expect(syncs.length).toBe(2);
  for (const p of later) expect(await settled(p)).toBe(false);
  syncs[1]!.resolve();
  await Promise.all(later);
  expect(sync.syncs).toBe(2);
});

test('a sync that fails fails the transactions waiting for it: their commit is not known to be on disk', async () => {
  const { syncs } = heldDisk();
  const p = transaction({ deps: c.rt }, () => ins(7));
  while (syncs.length === 0) await new Promise((r) => setImmediate(r));
  syncs[0]!.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await expect(p).rejects.toThrow(/EIO/);
  // The next transaction syncs again, from the start.
  const next = transaction({ deps: c.rt }, () => ins(8));
  while (syncs.length < 2) await new Promise((r) => setImmediate(r));
  syncs[1]!.resolve();
  await next;
  expect(committed()).toEqual([7, 8]);
});

test('the synchronous form, which cannot wait, starts its sync at once', async () => {
  const { sync, syncs } = heldDisk();
  withTransaction({ deps: c.rt }, () => ins(9));
  expect(sync.syncs).toBe(1);
  syncs[0]!.resolve();
  const p = transaction({ deps: c.rt }, () => ins(10));
  while (syncs.length < 2) await new Promise((r) => setImmediate(r));
  syncs[1]!.resolve();
  await p;
  expect(committed()).toEqual([9, 10]);
});

test('work whose commits nobody outside learns of goes on at each commit; the next transaction that answers waits for a sync covering it', async () => {
  const { sync, syncs } = heldDisk();
  // Answered at its commit, its sync started.
  await commitsSyncedLater(() => transaction({ deps: c.rt }, () => ins(11)));
  await commitsSyncedLater(() => writeAlone(c.sql, () => ins(12)));
  expect(committed()).toEqual([11, 12]);
  expect(sync.syncs).toBe(1);
  // A transaction outside that work, after it (a payment claimed before its processor call, say), waits for a
  // sync started after its own commit, which covers the ones before.
  const after = transaction({ deps: c.rt }, () => ins(13));
  while (committed().length < 3) await new Promise((r) => setImmediate(r));
  syncs[0]!.resolve();
  expect(await settled(after)).toBe(false);
  expect(syncs.length).toBe(2);
  syncs[1]!.resolve();
  await after;
  // The scope is the async context's: a transaction begun beside it, not inside it, still waits.
  const inside = commitsSyncedLater(() => transaction({ deps: c.rt }, () => ins(14)));
  const beside = transaction({ deps: c.rt }, () => ins(15));
  await inside;
  expect(await settled(beside)).toBe(false);
  syncs[2]!.resolve();
  while (syncs.length < 4) await new Promise((r) => setImmediate(r));
  expect(await settled(beside)).toBe(false);
  syncs[3]!.resolve();
  await beside;
});

test('on the real disk: each transaction is synced, and a file not there has nothing to sync', async () => {
  const before = realDisk.syncs;
  await Promise.all([1, 2, 3].map((x) => transaction({ deps: c.rt }, () => ins(x))));
  expect(realDisk.syncs).toBeGreaterThan(before);
  expect(realDisk.syncs - before).toBeLessThanOrEqual(3);
  expect(committed()).toEqual([1, 2, 3]);
  await datasyncFile(join(dir, 'absent-wal'));
});
