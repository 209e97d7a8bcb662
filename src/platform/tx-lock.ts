import { AsyncLocalStorage } from 'node:async_hooks';
import type { Database } from 'bun:sqlite';
import { gateOf } from './write-gate';
import { syncSoon, unsyncedCommit } from './wal-sync';

// The write lock of the main thread's connection, for transactions that stay open across awaits.
//
// A synchronous bun:sqlite transaction cannot interleave with anything: between BEGIN and COMMIT the event
// loop does not turn. An asynchronous one can: between two awaits, other requests and jobs run on the same
// connection. So one asynchronous transaction is open at a time (FIFO, asynchronously: nobody spins on the
// busy lock), every other write on the connection waits for it, and the code it runs is marked (an async
// context), so that a call that must never run while the write lock is held (the network: a processor, a
// bank-data provider, a webhook receiver) is refused inside it.

/** The token of an open asynchronous transaction, carried by every promise continuation inside it. */
interface Open {
  /** The connection (SQLite) or the pool (PostgreSQL) the transaction is open on. */
  readonly client: object;
  open: boolean;
  /** On PostgreSQL, the open transaction's handle: a call inside it that did not pass its ctx joins it. */
  readonly tx?: unknown;
}

const inside = new AsyncLocalStorage<Open>();

/** The holder between a release and the next in line taking its turn. */
const HANDED_OVER: Open = { client: null as unknown as object, open: false };

/** A network call (or any wait on the outside world) inside a write transaction: refused, never sent. */
export class NetworkInTransactionError extends Error {
  constructor(what: string) {
    super(`${what} inside a write transaction: the write lock is never held across the network`);
    this.name = 'NetworkInTransactionError';
  }
}

/** A synchronous write on a connection while another caller's asynchronous transaction is open on it. */
export class OverlappingWriteError extends Error {
  constructor() {
    super('a synchronous write while an asynchronous transaction is open on the connection: run it through transaction()');
    this.name = 'OverlappingWriteError';
  }
}

/** Throws when the caller runs inside an open write transaction. Called before every outbound request. */
export function assertOutsideTransaction(what: string): void {
  const t = inside.getStore();
  if (t?.open) throw new NetworkInTransactionError(what);
}

/** Whether the caller runs inside an open asynchronous transaction on this connection. */
export function insideTransactionOn(client: object): boolean {
  const t = inside.getStore();
  return !!t && t.open && t.client === client;
}

/** The handle of the transaction the caller runs inside on this pool (PostgreSQL), if any. */
export function openTransactionOn<T>(client: object): T | undefined {
  const t = inside.getStore();
  return t && t.open && t.client === client ? (t.tx as T) : undefined;
}

/**
 * Runs fn marked as inside the transaction `tx` open on `client` (a PostgreSQL pool, where transactions run
 * side by side, each on a connection of its own): the network is refused inside it, and a call that did not
 * pass its ctx joins it. The mark ends when fn settles.
 */
export async function runInside<T>(client: object, tx: unknown, fn: () => Promise<T>): Promise<T> {
  const token: Open = { client, open: true, tx };
  try {
    return await inside.run(token, fn);
  } finally {
    token.open = false;
  }
}

export class TxLock {
  private holder: Open | null = null;
  private readonly queue: (() => void)[] = [];
  /** Acquisitions that had to wait for another transaction (a gauge of contention, for tests and metrics). */
  waited = 0;

  constructor(private readonly client: Database) {}

  /** Whether an asynchronous transaction is open on the connection now. */
  get held(): boolean {
    return this.holder !== null;
  }

  /** The transaction open on the connection between BEGIN and its end (set by its runner), if any. */
  private active: Open | null = null;

  /** Whether a write now, by a caller outside the open transaction, would land inside it. */
  heldByAnother(): boolean {
    return this.active !== null && this.active.open && !insideTransactionOn(this.client);
  }

  /** Marks the holder's transaction open (after its BEGIN) or ended (after its COMMIT or ROLLBACK). */
  setOpen(open: boolean): void {
    this.active = open ? this.holder : null;
  }

  /**
   * Resolves once this caller holds the connection's write turn: after every caller before it (FIFO), and
   * once no worker holds the write gate (the worker waits for it in turn).
   */
  async acquire(): Promise<() => void> {
    // A worker writing on its own connection is waited for (the caller then holds no share: a worker writes
    // only once every share is released); from here on the worker waits for this caller instead.
    const gate = gateOf(this.client);
    while (gate.held) await gate.turn();
    const releaseShare = gate.shareNow();
    const token: Open = { client: this.client, open: true };
    if (this.holder !== null) {
      this.waited++;
      // Handed over by the release before it, so nobody arriving meanwhile takes the turn first.
      await new Promise<void>((resolve) => this.queue.push(resolve));
    }
    this.holder = token;
    return () => {
      if (!token.open) return;
      token.open = false;
      releaseShare();
      const next = this.queue.shift();
      if (next) {
        // Held for the next in line until it runs: a caller arriving meanwhile queues behind it.
        this.holder = HANDED_OVER;
        next();
      } else {
        this.holder = null;
      }
    };
  }

  /** Runs fn in the async context of the current holder (its promises carry the mark). */
  runMarked<T>(fn: () => T): T {
    return inside.run(this.holder!, fn);
  }
}

const locks = new WeakMap<Database, TxLock>();

export function txLockOf(client: Database): TxLock {
  let l = locks.get(client);
  if (!l) {
    l = new TxLock(client);
    locks.set(client, l);
  }
  return l;
}

/**
 * Runs fn, synchronous, in its own BEGIN IMMEDIATE transaction once no asynchronous transaction is open on the
 * connection (waiting for its turn if one is). For writers that are not services (the group commit, the
 * sandbox processor sharing the file): their writes never land inside another caller's transaction.
 */
export async function writeAlone<T>(client: Database, fn: () => T): Promise<T> {
  const lock = txLockOf(client);
  if (insideTransactionOn(client)) return client.transaction(fn).immediate();
  const release = await lock.acquire();
  // Work whose commits nobody outside learns of directly: committed without a sync of its own (platform/wal-sync.ts).
  let restoreSync: (() => void) | null = null;
  try {
    restoreSync = unsyncedCommit(client);
    return client.transaction(fn).immediate();
  } finally {
    restoreSync?.();
    release();
    if (restoreSync) syncSoon(client);
  }
}

/**
 * The same object, each of its methods refusing to run inside a write transaction: for the adapters that call
 * the outside world (processors, bank-data providers), so that no caller holds the write lock across them.
 */
export function refusedInTransaction<T extends object>(what: string, target: T): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const v = Reflect.get(obj, prop, receiver);
      if (typeof v !== 'function') return v;
      return function (this: unknown, ...args: unknown[]) {
        assertOutsideTransaction(`${what} (${String(prop)})`);
        return v.apply(this === receiver ? obj : this, args);
      };
    },
  });
}
