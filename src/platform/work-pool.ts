import type { WriteGate } from './write-gate';

/**
 * Works through claimed items with at most `concurrency` in flight. When the local queue runs dry, one
 * worker claims the next chunk (claims are synchronous, so two workers never claim at once); the run ends
 * when a claim comes back empty or `signal` aborts, after the items already held are finished.
 * `finish` runs last, whatever happened, so buffered results are always written. With `gate`, each claim,
 * each item's start and the finish wait for the write gate's turn (they write at once).
 */
export async function drainClaims<T>(opts: {
  concurrency: number;
  claim: () => T[];
  handle: (item: T) => Promise<unknown>;
  finish: () => void;
  signal?: AbortSignal;
  gate?: WriteGate;
}): Promise<void> {
  const queue: T[] = [];
  const worker = async () => {
    for (;;) {
      if (queue.length === 0) {
        if (opts.signal?.aborted) return;
        if (opts.gate?.contended) {
          await opts.gate.turn();
          // Another worker may have claimed meanwhile.
          if (queue.length > 0) continue;
        }
        const more = opts.claim();
        if (more.length === 0) return;
        queue.push(...more);
      }
      const item = queue.shift();
      if (item === undefined) continue;
      if (opts.gate?.contended) await opts.gate.turn();
      await opts.handle(item);
    }
  };
  try {
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
  } finally {
    if (opts.gate?.contended) await opts.gate.turn();
    opts.finish();
  }
}
