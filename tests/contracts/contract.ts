// A store's contract: one body of tests run against every engine in the same `bun test` run, SQLite and
// PostgreSQL (tests/helpers/pg-server.ts finds or starts the server), each on a fresh migrated database behind
// a real service. A contract states what the store does in terms both engines must meet: the same answers
// through the API, the same rows read back, the same refusals.
//
// Each engine's service is given its stores wrapped to count calls, and after the file the contract fails
// unless every method of its store was called on every engine: that count is what lets CI run the rest of the
// suite on SQLite alone (scripts/test.sh). A call counts whether the test makes it directly
// (`t.store.method(t.storeCtx, …)`) or a service makes it while the test drives the API.
import { afterAll, describe, expect, test } from 'bun:test';
import type { Stores } from '../../src/deps';
import type { StoreCtx, TxCtx } from '../../src/platform/store';
import { transaction } from '../../src/platform/context';
import { createTestContext, type TestContext } from '../helpers/context';
import { txLockOf } from '../../src/platform/tx-lock';
import { contractPgServer, noServerReason } from '../helpers/pg-server';

export type EngineName = 'sqlite' | 'postgres';

export interface ContractContext<K extends keyof Stores> {
  engine: EngineName;
  /** A real service on a fresh database of this engine (the API, the clock, the first lender). */
  ctx: TestContext;
  /** The store under contract, as the service holds it (calls through it are counted). */
  store: Stores[K];
  /** Every store of this engine, as the service holds them. */
  stores: Stores;
  /** A context to call a store with directly, outside a transaction (reads). */
  storeCtx: StoreCtx;
  /** Runs `fn` inside a write transaction of this engine, as a service does. */
  inTx<T>(fn: (tx: TxCtx) => Promise<T>): Promise<T>;
}

let warned = false;

/** The engines a contract runs on here: SQLite always, PostgreSQL when a server is found or started. */
export function contractEngines(): { name: EngineName; pgServer?: string }[] {
  const pg = contractPgServer();
  if (!pg && !warned) {
    warned = true;
    console.warn(`store contracts: on SQLite only, no PostgreSQL server (${noServerReason})`);
  }
  return pg ? [{ name: 'sqlite' }, { name: 'postgres', pgServer: pg }] : [{ name: 'sqlite' }];
}

/** A store's methods that were called, per store key. */
type Calls = Map<string, Set<string>>;

function counting(stores: Stores, calls: Calls): Stores {
  const wrapped = {} as Record<string, unknown>;
  for (const [key, store] of Object.entries(stores) as [string, Record<string, unknown>][]) {
    const seen = calls.get(key) ?? new Set<string>();
    calls.set(key, seen);
    const copy: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(store)) {
      copy[name] =
        typeof member === 'function'
          ? function (this: unknown, ...args: unknown[]) {
              seen.add(name);
              return (member as (...a: unknown[]) => unknown).apply(this === copy ? store : this, args);
            }
          : member;
    }
    wrapped[key] = copy;
  }
  return wrapped as unknown as Stores;
}

/**
 * Declares the contract of store `key`: `body` is run once per engine, inside a `describe` of that engine,
 * with a context whose service runs on it. `opts.env` is added to each service's settings.
 */
export function contract<K extends keyof Stores>(
  key: K,
  body: (t: ContractContext<K>) => void,
  opts: { env?: Record<string, string>; clockAt?: string } = {},
): void {
  const engines = contractEngines();
  const methodsOf = new Map<EngineName, string[]>();
  const calledOn = new Map<EngineName, Calls>();
  for (const engine of engines) {
    const calls: Calls = new Map();
    calledOn.set(engine.name, calls);
    describe(`${key} on ${engine.name}`, () => {
      const ctx = createTestContext(opts.env ?? {}, {
        clockAt: opts.clockAt,
        engine: engine.name === 'postgres' ? { name: 'postgres', pgServer: engine.pgServer! } : { name: 'sqlite' },
        wrapStores: (stores) => {
          methodsOf.set(engine.name, Object.keys(stores[key]).filter((m) => typeof (stores[key] as unknown as Record<string, unknown>)[m] === 'function'));
          return counting(stores, calls);
        },
      });
      afterAll(() => ctx.close());
      const stores = ctx.rt.stores;
      const storeCtx: StoreCtx = { deps: ctx.rt };
      body({
        engine: engine.name,
        ctx,
        store: stores[key],
        stores,
        storeCtx,
        inTx: (fn) => transaction(storeCtx, fn),
      });
    });
  }
  describe(`${key}: every method called on every engine`, () => {
    for (const engine of engines) {
      test(`on ${engine.name}`, () => {
        const called = calledOn.get(engine.name)!.get(key) ?? new Set<string>();
        const missing = (methodsOf.get(engine.name) ?? []).filter((m) => !called.has(m));
        expect(missing).toEqual([]);
      });
    }
  });
}

/** Until `check` holds, yielding to the event loop between looks: a test waits for a state, not a time. */
export async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; !(await check()); i++) {
    if (i > 5_000) throw new Error(`never reached: ${what}`);
    await Bun.sleep(1);
  }
}

/** Transactions waiting for another's turn: SQLite's queue for the connection (a count so far), PostgreSQL's lock waits (now). */
export async function waiting<K extends keyof Stores>(t: ContractContext<K>): Promise<number> {
  if (t.engine === 'sqlite') return txLockOf(t.ctx.rt.sqlite).waited;
  const [r] = await t.ctx.rows<{ n: number }>(
    "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
  );
  return Number(r!.n);
}

/**
 * Two transactions that each take the same turn first (the second `takeSecond`, a part of it, when given): the
 * second is seen waiting while the first holds it, and reads, once it has its turn, what the first wrote after
 * taking it. Returns what the second read.
 */
export async function inTurns<K extends keyof Stores, T>(
  t: ContractContext<K>,
  take: (tx: TxCtx) => Promise<void>,
  write: (tx: TxCtx) => Promise<void>,
  read: (tx: TxCtx) => Promise<T>,
  takeSecond: (tx: TxCtx) => Promise<void> = take,
): Promise<T> {
  const before = await waiting(t);
  let letGo!: () => void;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  let taken!: () => void;
  const isTaken = new Promise<void>((resolve) => (taken = resolve));
  const first = t.inTx(async (tx) => {
    await take(tx);
    taken();
    await held;
    await write(tx);
  });
  await isTaken;
  let secondDone = false;
  const second = t
    .inTx(async (tx) => {
      await takeSecond(tx);
      return read(tx);
    })
    .finally(() => (secondDone = true));
  try {
    await until('the second transaction waits for the first', async () => (await waiting(t)) > before);
    expect(secondDone).toBe(false);
  } finally {
    // Let go whatever was seen, so that a failure here leaves no transaction open.
    letGo();
  }
  await first;
  return second;
}
