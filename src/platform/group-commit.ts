import type { Database } from 'bun:sqlite';
import type { PlatformDeps, Tx } from './context';
import { txOf } from './sql/sqlite-handle';
import { writeAlone } from './tx-lock';

// Group commit. Under synchronous=FULL every COMMIT waits for the WAL to reach the disk, and on the event
// loop that wait blocks every request. Write transactions queued in the same turn of the event loop (requests
// answered by a worker at about the same moment, say) run one after the other inside one BEGIN IMMEDIATE, each
// in a savepoint of its own, and share one COMMIT. A transaction that throws is rolled back to its savepoint
// alone and its caller gets the error; the others go on. No caller is answered before the COMMIT that made
// its writes durable, and when the COMMIT itself fails every caller in the group gets that error.

/** At most this many transactions share a commit, so one commit's work stays short. */
const MAX_GROUP = 32;

interface Queued {
  fn: (tx: Tx) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

class GroupCommit {
  private queue: Queued[] = [];
  private scheduled = false;

  constructor(
    private readonly sqlite: Database,
    private readonly tx: Tx,
  ) {}

  run<T>(fn: (tx: Tx) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const group = this.queue.splice(0, MAX_GROUP);
    if (this.queue.length > 0) this.schedule();
    let outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[];
    try {
      // After any asynchronous transaction open on the connection, never inside it.
      outcomes = await writeAlone(this.sqlite, () =>
        group.map((q) => {
          try {
            // A nested bun:sqlite transaction is a savepoint: rolled back alone when fn throws.
            const value = this.sqlite.transaction(() => {
              const v = q.fn(this.tx);
              // A promise would resolve after the commit: refused, and what it wrote so far undone.
              if (v instanceof Promise) throw new Error('groupCommit: the callback must be synchronous');
              return v;
            })();
            return { ok: true as const, value };
          } catch (error) {
            return { ok: false as const, error };
          }
        }),
      );
    } catch (error) {
      for (const q of group) q.reject(error);
      return;
    }
    group.forEach((q, i) => {
      const o = outcomes[i]!;
      if (o.ok) q.resolve(o.value);
      else q.reject(o.error);
    });
  }
}

const groups = new WeakMap<Database, GroupCommit>();

/**
 * Runs fn in a write transaction that may share its COMMIT with others queued in the same turn of the event
 * loop (or joins the caller's transaction); resolves once it is committed. For a request's short write after an await, where many requests
 * arrive at once: fn must be synchronous and must not depend on being alone in its transaction.
 */
export function groupCommit<C extends { deps: Pick<PlatformDeps, 'db'>; tx?: Tx }, T>(ctx: C, fn: (ctx: C & { tx: Tx }) => T): Promise<T> {
  // Inside a caller's transaction it joins that one, as withTransaction does.
  if (ctx.tx) return Promise.resolve(fn(ctx as C & { tx: Tx }));
  const sqlite = ctx.deps.db.$client;
  let g = groups.get(sqlite);
  if (!g) {
    g = new GroupCommit(sqlite, txOf(ctx.deps.db));
    groups.set(sqlite, g);
  }
  return g.run((tx) => fn({ ...ctx, tx }));
}
