import type { WriteGate } from './write-gate';
import { yieldNow, yieldWhenSpent } from './slices';

/**
 * Works through claimed items with at most `concurrency` in flight. When the local queue runs dry, one
 * worker claims the next chunk (one claim at a time: the others wait for it and take from it); the run ends
 * when a claim comes back empty or `signal` aborts, after the items already held are finished.
 * `finish` runs last, whatever happened, so buffered results are always written: when a claim or an item fails,
 * the other workers end their item in hand and take no other, and the first failure is raised after `finish`.
 * With `gate`, each claim,
 * each item's start and the finish wait for the write gate's turn (they write at once). Each claim after the
 * first waits for a turn of the event loop, and so does an item once the slice has used its time: items whose
 * work answers at once (an in-process sandbox) would otherwise chain one after the other in microtasks, and
 * hold the loop for the whole run.
 */
export async function drainClaims<T>(opts: {
  concurrency: number;
  claim: () => T[] | Promise<T[]>;
  handle: (item: T) => Promise<unknown>;
  finish: () => void | Promise<void>;
  signal?: AbortSignal;
  gate?: WriteGate;
}): Promise<void> {
  const queue: T[] = [];
  let claims = 0;
  /** The claim under way, if any: one at a time, the others wait for it and take from what it brought. */
  let claiming: Promise<boolean> | null = null;
  const claimMore = async (): Promise<boolean> => {
    const more = await opts.claim();
    claims++;
    queue.push(...more);
    return more.length > 0;
  };
  let failed = null as { error: unknown } | null;
  const worker = async () => {
    try {
      await work();
    } catch (error) {
      failed ??= { error };
    }
  };
  const work = async () => {
    for (;;) {
      if (failed) return;
      if (queue.length === 0) {
        if (opts.signal?.aborted) return;
        if (claiming) {
          // Another worker is claiming: take from what it brings, or stop with it when it brings nothing.
          if (!(await claiming) && queue.length === 0) return;
          continue;
        }
        if (claims > 0) {
          await yieldNow();
          // Another worker may have claimed meanwhile.
          if (queue.length > 0 || claiming) continue;
          if (opts.signal?.aborted) return;
        }
        if (opts.gate?.contended) {
          await opts.gate.turn();
          // Another worker may have claimed meanwhile.
          if (queue.length > 0 || claiming) continue;
        }
        claiming = claimMore();
        let got: boolean;
        try {
          got = await claiming;
        } finally {
          claiming = null;
        }
        if (!got) return;
      }
      // Items whose work answers at once run one after the other in microtasks: a turn of the event loop
      // once the slice has used its time (platform/slices.ts), however many items that was.
      await yieldWhenSpent();
      if (failed) return;
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
    await opts.finish();
  }
  if (failed) throw failed.error;
}

/**
 * Writes of a run that buffers its results, made one after the other in the order they were added. A write
 * that fails is kept and raised by `settled()` from then on, so the run sees it at its next claim or at its end;
 * `after` runs once its write has ended, however it ended.
 */
export function writesInOrder(): { add(write: () => unknown, after?: () => void): void; settled(): Promise<void> } {
  let last: Promise<void> = Promise.resolve();
  let failed: { error: unknown } | null = null;
  return {
    add(write, after) {
      last = last
        .then(write)
        .then(
          () => undefined,
          (error) => {
            failed ??= { error };
          },
        )
        .finally(() => after?.());
    },
    settled: () =>
      last.then(() => {
        if (failed) throw failed.error;
      }),
  };
}
