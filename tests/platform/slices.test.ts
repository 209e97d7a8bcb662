// engine: sqlite
// Work in slices bounded by time: a caller whose slice is spent waits for a turn of the event loop, and callers
// waiting at once share that turn, so that the loop turns between any two of their slices.
import { expect, test } from 'bun:test';
import { SLICE_MS, sliceSpent, yieldNow, yieldWhenSpent } from '../../src/platform/slices';

const spend = (ms: number) => {
  const t = performance.now();
  while (performance.now() - t < ms) {
    /* synchronous work */
  }
};

test('a slice with time left goes on without a turn of the event loop', async () => {
  await yieldNow();
  let turned = false;
  setImmediate(() => (turned = true));
  await yieldWhenSpent();
  expect(sliceSpent()).toBe(false);
  expect(turned).toBe(false);
});

test('a spent slice waits for a turn of the event loop, and a new slice starts after it', async () => {
  await yieldNow();
  spend(SLICE_MS + 1);
  expect(sliceSpent()).toBe(true);
  let turned = false;
  setImmediate(() => (turned = true));
  await yieldWhenSpent();
  expect(turned).toBe(true);
  expect(sliceSpent()).toBe(false);
});

test('workers that each spend the slice resume one slice per turn: the loop turns between any two of them', async () => {
  const log: string[] = [];
  let stop = false;
  // Something else the loop has to do: one entry per turn.
  const probe = () => {
    log.push('turn');
    if (!stop) setImmediate(probe);
  };
  setImmediate(probe);
  const worker = async (name: string) => {
    for (let i = 0; i < 4; i++) {
      await yieldWhenSpent();
      log.push(name);
      spend(SLICE_MS + 1);
    }
  };
  await Promise.all(['a', 'b', 'c'].map(worker));
  stop = true;
  const slices = log.filter((e) => e !== 'turn');
  expect(slices).toHaveLength(12);
  // Once each has started (all three asked before any had spent anything), never two slices without a turn
  // between them.
  const started = log.indexOf('c');
  expect(log.slice(started + 1).filter((e) => e !== 'turn')).toHaveLength(9);
  for (let i = started + 1; i < log.length; i++) if (log[i] !== 'turn') expect(log[i - 1]).toBe('turn');
});
