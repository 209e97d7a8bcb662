import { expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { startCheckpointer } from '../../src/platform/checkpointer';

test('WAL checkpoints run in the worker; the main connection no longer checkpoints at 1000 pages', async () => {
  const ctx = createTestContext();
  try {
    const seen: { log: number; checkpointed: number }[] = [];
    const cp = startCheckpointer(ctx.rt.sqlite, ctx.rt.config.databasePath, ctx.rt.logger, {
      intervalMs: 20,
      onCheckpoint: (f) => seen.push(f),
    });
    expect((ctx.rt.sqlite.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint).toBe(10_000);
    ctx.rt.sqlite.exec('CREATE TABLE filler (v TEXT)');
    const insert = ctx.rt.sqlite.query('INSERT INTO filler (v) VALUES (?)');
    ctx.rt.sqlite.transaction(() => {
      for (let i = 0; i < 2000; i++) insert.run('x'.repeat(1000));
    })();
    const deadline = Date.now() + 5000;
    while (seen.length === 0 && Date.now() < deadline) await Bun.sleep(20);
    await cp.stop();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.some((f) => f.checkpointed > 400)).toBe(true);
    // Data written by the main connection is all still there.
    expect((ctx.rt.sqlite.query('SELECT COUNT(*) AS n FROM filler').get() as { n: number }).n).toBe(2000);
  } finally {
    ctx.close();
  }
});
