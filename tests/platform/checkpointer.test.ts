// engine: sqlite
import { expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { waitFor } from '../helpers/server';
import { FALLBACK_AUTOCHECKPOINT_PAGES, startCheckpointer } from '../../src/platform/checkpointer';
import { openThreadPlatform } from '../../src/platform/thread';

test('WAL checkpoints run in the worker; the main connection no longer checkpoints at 1000 pages', async () => {
  const ctx = createTestContext();
  try {
    const seen: { log: number; checkpointed: number }[] = [];
    const cp = startCheckpointer(ctx.sql, ctx.rt.config.databasePath, ctx.rt.logger, {
      intervalMs: 20,
      onCheckpoint: (f) => seen.push(f),
    });
    expect((ctx.sql.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint).toBe(10_000);
    // The migrations leave about 140 frames in the WAL: the worker's first report describes them alone.
    await waitFor('the first checkpoint report', async () => seen.length > 0);
    expect(seen.every((f) => f.checkpointed < 400)).toBe(true);
    ctx.sql.exec('CREATE TABLE filler (v TEXT)');
    const insert = ctx.sql.query('INSERT INTO filler (v) VALUES (?)');
    ctx.sql.transaction(() => {
      for (let i = 0; i < 2000; i++) insert.run('x'.repeat(1000));
    })();
    // The 2 MB insert adds about 500 frames: a later report includes them.
    await waitFor('a checkpoint report that covers the insert', async () => seen.some((f) => f.checkpointed > 400));
    await cp.stop();
    // Data written by the main connection is all still there.
    expect((ctx.sql.query('SELECT COUNT(*) AS n FROM filler').get() as { n: number }).n).toBe(2000);
  } finally {
    ctx.close();
  }
});

test('a worker thread’s connection (the upload worker’s) leaves checkpoints to the checkpointer too', () => {
  const ctx = createTestContext();
  try {
    const platform = openThreadPlatform(ctx.rt.config, () => undefined);
    try {
      expect((platform.sqlite.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint).toBe(FALLBACK_AUTOCHECKPOINT_PAGES);
    } finally {
      platform.sqlite.close();
    }
  } finally {
    ctx.close();
  }
});
