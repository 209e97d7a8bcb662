// engine: once
// The write gate's order: turns and shares go at once while nothing holds it; an exclusive holder waits for
// the shares before it and is never overlapped by a turn; waiters go in arrival order after it; a flag in
// shared memory says whether anything waits.
import { describe, expect, test } from 'bun:test';
import { GRANTS_PER_TURN, WriteGate } from '../../src/platform/write-gate';

describe('WriteGate', () => {
  test('uncontended: a turn and a share are granted at once', async () => {
    const g = new WriteGate();
    expect(g.contended).toBe(false);
    await g.turn();
    const release = await g.share();
    release();
    release(); // twice is once
    expect(g.contended).toBe(false);
  });

  test('an exclusive holder waits for earlier shares; turns after it wait for it; nothing overlaps it', async () => {
    const g = new WriteGate();
    const log: string[] = [];
    const release = await g.share();
    let inside = false;
    const ex = g.exclusive(async () => {
      inside = true;
      log.push('exclusive start');
      await Bun.sleep(20);
      log.push('exclusive end');
      inside = false;
    });
    const turns = [1, 2, 3].map((i) =>
      g.turn().then(() => {
        expect(inside).toBe(false);
        expect(g.held).toBe(false);
        log.push(`turn ${i}`);
      }),
    );
    await Bun.sleep(5);
    expect(log).toEqual([]); // the share holds the exclusive, which holds the turns
    log.push('share released');
    release();
    await Promise.all([ex, ...turns]);
    expect(log).toEqual(['share released', 'exclusive start', 'exclusive end', 'turn 1', 'turn 2', 'turn 3']);
    expect(g.contended).toBe(false);
  });

  test('turns granted before an exclusive holder run their synchronous work before it starts', async () => {
    const g = new WriteGate();
    const first = g.exclusive(() => Bun.sleep(5));
    const order: string[] = [];
    const t = g.turn().then(() => {
      expect(g.held).toBe(false);
      order.push('turn');
    });
    const second = g.exclusive(async () => {
      order.push('second exclusive');
    });
    await Promise.all([first, t, second]);
    expect(order).toEqual(['turn', 'second exclusive']);
  });

  test('waiters gathered behind an exclusive holder go GRANTS_PER_TURN a turn of the event loop, in arrival order', async () => {
    const g = new WriteGate();
    let end!: () => void;
    const ex = g.exclusive(() => new Promise<void>((resolve) => (end = resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    const granted: number[] = [];
    const waiters = Array.from({ length: 3 * GRANTS_PER_TURN + 1 }, (_, i) => (i % 2 ? g.share().then((release) => (granted.push(i), release())) : g.turn().then(() => granted.push(i))));
    // How many had gone when the event loop first turned after the release, and at the turn after it.
    const seen: number[] = [];
    setImmediate(() => {
      seen.push(granted.length);
      setImmediate(() => seen.push(granted.length));
    });
    end();
    await ex;
    await Promise.all(waiters);
    expect(seen).toEqual([GRANTS_PER_TURN, 2 * GRANTS_PER_TURN]);
    expect(granted).toEqual(Array.from({ length: 3 * GRANTS_PER_TURN + 1 }, (_, i) => i));
    expect(g.contended).toBe(false);
  });

  test('an exclusive holder that throws releases the gate', async () => {
    const g = new WriteGate();
    await expect(g.exclusive(async () => Promise.reject(new Error('worker died')))).rejects.toThrow('worker died');
    expect(g.held).toBe(false);
    await g.turn();
  });

  test('the waiting flag is 1 while anything waits, as a worker thread holding the gate reads it', async () => {
    const g = new WriteGate();
    const flag = () => Atomics.load(g.waitingFlag, 0);
    expect(flag()).toBe(0);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const seen: number[] = [];
    const ex = g.exclusive(async () => {
      seen.push(flag());
      await held;
    });
    await Bun.sleep(0);
    expect(g.held).toBe(true);
    // Nothing waits yet: the holder may go on.
    expect(flag()).toBe(0);
    const turn = g.turn();
    const share = g.share();
    expect(flag()).toBe(1);
    release();
    await ex;
    await turn;
    (await share)();
    // Every waiter was granted: the flag is down again.
    expect(flag()).toBe(0);
    expect(seen).toEqual([0]);
    // A flag in shared memory: what a worker thread is given reads the same.
    expect(g.waitingFlag.buffer).toBeInstanceOf(SharedArrayBuffer);
  });
});
