import type { Database } from 'bun:sqlite';
import { AsyncLocalStorage } from 'node:async_hooks';
import { open } from 'node:fs/promises';

// Commits made durable off the event loop. With synchronous=FULL, SQLite syncs the WAL inside every COMMIT, on
// the thread that commits: on the event loop, each commit stopped every request for the disk's sync (15–40 ms on
// a slow disk). The service's connections run with synchronous=NORMAL instead, where a COMMIT writes its WAL
// frames without syncing them, and a transaction (platform/transactions.sqlite.ts) resolves only once a sync of
// the WAL file made on a thread of the file-system pool, started after its COMMIT, has returned. The guarantee
// is FULL's: no caller learns that a write committed (no answer, no processor call made after it) before it
// is on disk. What differs: the connection is free for the next writer while the disk syncs, and the writers
// committed during one sync share the next one.
//
// The WAL holds frames in commit order in one file, so one sync covers every commit made before it started, on
// any connection to the file. That lets work whose commits nobody outside learns of go on at each commit
// (`commitsSyncedLater`): the balance pipeline's queue and flushes, say, where whatever leaves the process
// later (a processor call, a webhook, an answer) first passes a transaction of its own that waits for a sync,
// and that sync covers them too. A checkpoint (platform/checkpointer.ts) syncs the WAL before it copies it and the
// database file after, under NORMAL as under FULL, so what a sync made durable stays durable once copied.

/** What syncs a file's data to the disk: the disk itself, unless a test stands in for it. */
export type Datasync = (path: string) => Promise<void>;

/**
 * Syncs the file's data and size, on the file-system thread pool. A WAL not there has nothing to sync: SQLite
 * removes it only when the last connection closes, after copying it into the database file and syncing that.
 */
export const datasyncFile: Datasync = async (path) => {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
};

export class WalSync {
  /** The sync in flight. */
  private current: Promise<void> | null = null;
  /** The sync that starts when the one in flight ends: shared by every caller meanwhile. */
  private next: Promise<void> | null = null;
  /** Syncs started, for tests and the benchmark's account. */
  syncs = 0;

  constructor(
    readonly walPath: string,
    private readonly datasync: Datasync = datasyncFile,
  ) {}

  /** Resolves once every commit made on the file before the call is on disk; rejects when the sync fails. */
  afterCommits(): Promise<void> {
    if (this.next) return this.next;
    if (!this.current) return (this.current = this.start());
    // The sync in flight may have started before the caller's commit: the caller waits for the one after it.
    const next = this.current
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.next = null;
        return (this.current = this.start());
      });
    return (this.next = next);
  }

  private start(): Promise<void> {
    this.syncs++;
    const sync: Promise<void> = this.datasync(this.walPath).finally(() => {
      if (this.current === sync) this.current = null;
    });
    return sync;
  }
}

const syncs = new WeakMap<Database, WalSync>();

/** Makes the connection's commits durable through `sync` (openDatabase, for the service's connections). */
export function syncCommitsOffLoop(sqlite: Database, sync: WalSync): void {
  sqlite.exec('PRAGMA synchronous = NORMAL');
  syncs.set(sqlite, sync);
}

/** The connection's WAL sync, when its commits are made durable off the event loop (else its COMMIT syncs). */
export const walSyncOf = (sqlite: Database): WalSync | undefined => syncs.get(sqlite);

/** Resolves once the connection's commits so far are on disk: at once when its COMMIT syncs them itself. */
export function durable(sqlite: Database): Promise<void> {
  return syncs.get(sqlite)?.afterCommits() ?? Promise.resolve();
}

const syncedLater = new AsyncLocalStorage<true>();

/**
 * Runs fn with its transactions answered at their COMMIT, the sync started but not waited for: for work whose
 * commits nobody outside the process learns of (a job's lease, a queue, results that later steps read in
 * transactions of their own). A power cut may undo its last commits, as if it had stopped before them; a
 * process that ends loses nothing (the WAL is in the operating system's hands at COMMIT).
 */
export function commitsSyncedLater<T>(fn: () => T): T {
  return syncedLater.run(true, fn);
}

/** What a transaction waits for after its COMMIT before it answers: its sync, or nothing inside `commitsSyncedLater`. */
export function answerCommit(sqlite: Database): Promise<void> {
  const sync = durable(sqlite);
  if (syncedLater.getStore() !== true) return sync;
  // A failing disk fails the next transaction that waits for its sync.
  sync.catch(() => undefined);
  return Promise.resolve();
}
