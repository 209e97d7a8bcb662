// Runs in a worker thread with its own connection: copies the WAL into the database file (PASSIVE, so it
// never waits for or blocks a writer) off the main thread, where it would otherwise run inside a commit.
import { Database } from 'bun:sqlite';

declare const self: Worker;

let db: Database | null = null;
let timer: ReturnType<typeof setInterval> | null = null;

self.onmessage = (event: MessageEvent<{ type: 'start'; path: string; intervalMs: number } | { type: 'stop' }>) => {
  const msg = event.data;
  if (msg.type === 'start') {
    db = new Database(msg.path);
    db.exec('PRAGMA busy_timeout = 5000');
    timer = setInterval(() => {
      try {
        const r = db!.query('PRAGMA wal_checkpoint(PASSIVE)').get() as { busy: number; log: number; checkpointed: number };
        if (r.checkpointed > 0) postMessage({ type: 'checkpoint', log: r.log, checkpointed: r.checkpointed });
      } catch (e) {
        postMessage({ type: 'error', message: (e as Error).message });
      }
    }, msg.intervalMs);
  } else {
    if (timer) clearInterval(timer);
    db?.close();
    postMessage({ type: 'stopped' });
  }
};
