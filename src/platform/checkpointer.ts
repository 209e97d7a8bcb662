import type { Database } from 'bun:sqlite';
import type { Logger } from './logger';

/** WAL pages the main connection lets pile up before it checkpoints itself: a safety net, normally unused. */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * Moves WAL checkpoints to a worker thread. Without it SQLite checkpoints inside whichever commit crosses
 * 1000 WAL pages, and that request pays for copying megabytes and an fsync of the database file. The
 * main connection keeps a much larger automatic checkpoint as a fallback should the worker stop.
 */
export function startCheckpointer(
  sqlite: Database,
  path: string,
  logger: Logger,
  opts: { intervalMs?: number; onCheckpoint?: (frames: { log: number; checkpointed: number }) => void } = {},
): { stop(): Promise<void> } {
  const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url).href);
  sqlite.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  worker.onmessage = (event: MessageEvent<{ type: string; message?: string; log?: number; checkpointed?: number }>) => {
    if (event.data.type === 'error') logger.warn({ err: event.data.message }, 'WAL checkpoint failed');
    if (event.data.type === 'checkpoint') opts.onCheckpoint?.({ log: event.data.log!, checkpointed: event.data.checkpointed! });
  };
  worker.postMessage({ type: 'start', path, intervalMs: opts.intervalMs ?? 1000 });
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          worker.terminate();
          resolve();
        };
        const timeout = setTimeout(done, 2000);
        worker.onmessage = (event: MessageEvent<{ type: string }>) => {
          if (event.data.type === 'stopped') {
            clearTimeout(timeout);
            done();
          }
        };
        worker.postMessage({ type: 'stop' });
      }),
  };
}
