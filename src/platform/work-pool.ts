import type { WriteGate } from './write-gate';

/**
 * Works through claimed items with at most `concurrency` in flight. When the local queue runs dry, one
 * worker claims the next chunk (claims are synchronous, so two workers never claim at once); the run ends
 * when a claim comes back empty or `signal` aborts, after the items already held are finished.
 * `finish` runs last, whatever happened, so buffered results are always written. With `gate`, each claim,
 * each item's start and the finish wait for the write gate's turn (they write at once). Each claim after the
 * first waits for a turn of the event loop: items whose work answers at once (an in-process sandbox) would
 * otherwise chain claim after claim in microtasks, and hold the loop for the whole run.
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
  let claims = 0;
  const worker = async () => {
    for (;;) {
      if (queue.length === 0) {
        if (opts.signal?.aborted) return;
        if (claims > 0) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          // Another worker may have claimed meanwhile.
          if (queue.length > 0) continue;
          if (opts.signal?.aborted) return;
        }
        if (opts.gate?.contended) {
          await opts.gate.turn();
          // Another worker may have claimed meanwhile.
          if (queue.length > 0) continue;
        }
        const more = opts.claim();
        claims++;
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
