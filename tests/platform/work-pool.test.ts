// engine: once
// The pool that works through claimed items: a failure (a claim's or an item's) ends the run, but only after
// the items other workers hold are finished and `finish` has run after all of them, so that what they
// produced is written; the failure is raised then, and no item is taken after it.
import { expect, test } from 'bun:test';
import { drainClaims, writesInOrder } from '../../src/platform/work-pool';

test('a failed claim: the items in hand finish, nothing more is taken, finish runs last, the failure is raised', async () => {
  const events: string[] = [];
  let claims = 0;
  let release!: () => void;
  const slow = new Promise<void>((r) => (release = r));
  const run = drainClaims<number>({
    concurrency: 2,
    claim: async () => {
      claims++;
      if (claims === 1) return [1, 2];
      throw new Error('claim failed');
    },
    handle: async (item) => {
      events.push(`start ${item}`);
      if (item === 1) await slow;
      events.push(`end ${item}`);
    },
    finish: () => {
      events.push('finish');
    },
  });
  // Item 2 ends at once and its worker's next claim fails while item 1 is still in hand.
  while (claims < 2) await Bun.sleep(1);
  expect(events).not.toContain('finish');
  release();
  await expect(run).rejects.toThrow('claim failed');
  expect(events).toEqual(['start 1', 'start 2', 'end 2', 'end 1', 'finish']);
});

test('a failed item: the other worker takes no further item; finish runs; the failure is raised', async () => {
  const handled: number[] = [];
  let finished = 0;
  const run = drainClaims<number>({
    concurrency: 2,
    claim: (() => {
      let n = 0;
      return () => (n++ === 0 ? [1, 2, 3, 4, 5, 6] : []);
    })(),
    handle: async (item) => {
      handled.push(item);
      await Bun.sleep(0);
      if (item === 1) throw new Error('item failed');
    },
    finish: () => {
      finished++;
    },
  });
  await expect(run).rejects.toThrow('item failed');
  expect(finished).toBe(1);
  // Item 1 fails while item 2 is in hand: neither worker starts another.
  expect(handled).toEqual([1, 2]);
});

test('writes in order: a failed write is raised by every settled() after it, and later writes still run', async () => {
  const writes = writesInOrder();
  const done: string[] = [];
  writes.add(() => done.push('a'));
  writes.add(() => {
    throw new Error('b failed');
  }, () => done.push('after b'));
  writes.add(() => done.push('c'));
  await expect(writes.settled()).rejects.toThrow('b failed');
  expect(done).toEqual(['a', 'after b', 'c']);
  await expect(writes.settled()).rejects.toThrow('b failed');
});
