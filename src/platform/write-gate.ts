// The write gate: how the main thread and a worker with its own SQLite connection take turns at the one
// write lock without the main thread ever spinning on SQLITE_BUSY (busy_timeout blocks the event loop).
//
// The main thread's write transactions are synchronous, so between two awaits it either writes or does not.
// A worker that needs the write lock for a long transaction asks for `exclusive`; it is granted once no
// main-thread span holds a `share`, and while it is held every `turn()` and `share()` waits, asynchronously,
// in arrival order: other requests wait for the database without blocking the event loop, and reads go on
// from WAL snapshots. Once it is released, the waiters go in the order they came, GRANTS_PER_TURN at a time
// with a turn of the event loop between: a long transaction gathers every write sent meanwhile (hundreds of
// requests, each job's step), and granting them all at once would run them back to back, holding the loop.
// A worker whose transaction is a run of short steps reads `waitingFlag` between them and commits as soon as
// anything waits, so that the waiters go after one step rather than after the whole run.

type Waiter = { kind: 'turn' | 'share' | 'exclusive'; grant: () => void };

/** Waiters granted in one turn of the event loop; the rest go in the next turns, in order. */
export const GRANTS_PER_TURN = 8;

export class WriteGate {
  private writing = false;
  private shares = 0;
  private readonly queue: Waiter[] = [];
  /** A slice of waiters was just granted: the next is granted in the next turn of the event loop. */
  private resting = false;
  /** Main-thread writes that found the gate held (they wait on SQLite's busy timeout instead): should stay 0. */
  bypassed = 0;
  /**
   * 1 while anything waits for the gate, else 0, in memory a worker thread can read: a worker that holds the
   * gate for a run of short steps (an upload's slices) lets it go at its next step once something waits.
   */
  readonly waitingFlag = new Int32Array(new SharedArrayBuffer(4));

  /** Whether a worker holds the write lock now: a main-thread write would wait on SQLite. */
  get held(): boolean {
    return this.writing;
  }

  /** How many turns, shares and exclusive holders wait for the gate now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Whether anything is waiting for or holding the gate (a main-thread write should await `turn()` first). */
  get contended(): boolean {
    return this.writing || this.queue.length > 0;
  }

  /**
   * Resolves when a synchronous write transaction may run: at once unless a worker holds the gate or waits
   * for it. Call it right before the transaction, with no await in between.
   */
  turn(): Promise<void> {
    if (!this.contended) return Promise.resolve();
    return new Promise((resolve) => this.enqueue({ kind: 'turn', grant: () => resolve() }));
  }

  /** A span of main-thread work that may write at any point (a request's handler): the worker waits for it. */
  share(): Promise<() => void> {
    if (!this.contended) return Promise.resolve(this.shareNow());
    // Granted only while no worker writes (pump), so shareNow holds.
    return new Promise((resolve) => this.enqueue({ kind: 'share', grant: () => resolve(this.shareNow()) }));
  }

  /**
   * A share taken at once, ahead of a worker that waits (never while one writes: call it once `held` is
   * false). For a span that a worker must wait for and that may already be inside a share of its own, where
   * queueing behind the worker would wait for itself.
   */
  shareNow(): () => void {
    if (this.writing) throw new Error('shareNow while a worker holds the write gate');
    this.shares++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.shares--;
      this.pump();
    };
  }

  /** Holds the gate for `fn` (a worker's write transaction), once every share before it is released. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await new Promise<void>((resolve) => this.enqueue({ kind: 'exclusive', grant: resolve }));
    try {
      return await fn();
    } finally {
      this.writing = false;
      this.pump();
    }
  }

  private enqueue(w: Waiter): void {
    this.queue.push(w);
    Atomics.store(this.waitingFlag, 0, 1);
    this.pump();
  }

  private pump(): void {
    if (this.resting) return;
    let granted = 0;
    while (this.queue.length > 0 && !this.writing) {
      const head = this.queue[0]!;
      if (head.kind === 'exclusive') {
        if (this.shares > 0) return;
        // The turns just granted run their transactions in the microtasks that follow: the worker starts after.
        if (granted > 0) return this.rest();
        this.shift();
        this.writing = true;
        head.grant();
        return;
      }
      if (granted === GRANTS_PER_TURN) return this.rest();
      this.shift();
      head.grant();
      granted++;
    }
  }

  /** The first waiter leaves the queue. */
  private shift(): void {
    this.queue.shift();
    if (this.queue.length === 0) Atomics.store(this.waitingFlag, 0, 0);
  }

  /** Lets the event loop turn (what those just granted do runs first, then I/O), then grants on. */
  private rest(): void {
    this.resting = true;
    setImmediate(() => {
      this.resting = false;
      this.pump();
    });
  }
}

const gates = new WeakMap<object, WriteGate>();

/** The gate of a database connection (one per connection: the main thread's is the one that matters). */
export function gateOf(sqlite: object): WriteGate {
  let g = gates.get(sqlite);
  if (!g) {
    g = new WriteGate();
    gates.set(sqlite, g);
  }
  return g;
}
