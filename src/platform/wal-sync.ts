import type { Database } from 'bun:sqlite';
import { AsyncLocalStorage } from 'node:async_hooks';
import { open, type FileHandle } from 'node:fs/promises';

// Commits whose sync to disk is made off the event loop. The service's connection runs with synchronous=FULL:
// each COMMIT syncs the WAL before it returns, on the thread that commits, so that no caller learns of a write
// (an answer, a processor call, a webhook) that a power cut could still undo. On the event loop, that sync
// stops every request for the disk's time, once a commit.
//
// Work whose commits nobody outside the process learns of directly runs inside `commitsSyncedLater`: the
// balance pipeline's queue, claims and flushes, whose results and decisions reach the outside only through
// later steps (a payment's claim before its processor call, a webhook's delivery) that commit under FULL in
// transactions of their own. Its transactions commit under synchronous=NORMAL, holding the write lock, and a
// sync of the WAL file starts on the file-system thread pool after each, not waited for: the writers committed
// during one sync share the next. The WAL holds frames in commit order in one file, so any later FULL commit
// or sync covers them too; a power cut may undo the last of them, as if the work had stopped before them, and
// a process that ends loses nothing (the frames are in the operating system's hands at COMMIT). A checkpoint
// (platform/checkpointer.ts) syncs the WAL before it copies it, and the database file after.

/** What syncs a file's data to the disk: the disk itself, unless a test stands in for it. */
export interface Datasync {
  sync(path: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Syncs the file's data and size on the file-system thread pool, through a handle kept open: one trip to the
 * pool a sync, where opening and closing the file each time made three, each waiting for a turn of a busy event
 * loop to be taken up. The WAL is the same file for as long as the connection that owns this is open (SQLite
 * truncates it, and removes it only when the last connection closes). A WAL not there has nothing to sync:
 * SQLite removes it only after copying it into the database file and syncing that.
 */
export function fileDatasync(): Datasync {
  let handle: FileHandle | null = null;
  return {
    async sync(path) {
      if (!handle) {
        try {
          handle = await open(path, 'r');
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
          throw e;
        }
      }
      try {
        await handle.datasync();
      } catch (e) {
        // Opened again by the next sync rather than kept in a state that failed.
        const failed = handle;
        handle = null;
        await failed.close().catch(() => undefined);
        throw e;
      }
    },
    async close() {
      const h = handle;
      handle = null;
      await h?.close();
    },
  };
}

export class WalSync {
  /** The sync in flight. */
  private current: Promise<void> | null = null;
  /** The sync that starts when the one in flight ends: shared by every caller meanwhile. */
  private next: Promise<void> | null = null;
  /** Syncs started (the tests count them). */
  syncs = 0;

  constructor(
    readonly walPath: string,
    private readonly datasync: Datasync = fileDatasync(),
  ) {}

  /** Lets go of the file once the sync in flight, if any, has ended (the connection is closing). */
  async close(): Promise<void> {
    await Promise.allSettled([this.next, this.current]);
    await this.datasync.close();
  }

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
    const sync: Promise<void> = this.datasync.sync(this.walPath).finally(() => {
      if (this.current === sync) this.current = null;
    });
    return sync;
  }
}

const syncs = new WeakMap<Database, WalSync>();

/** The connection's WAL sync, for commits made inside `commitsSyncedLater` (openDatabase, the service's connection). */
export function syncLaterThrough(sqlite: Database, sync: WalSync): void {
  syncs.set(sqlite, sync);
}

/** The connection's WAL sync, when its work may commit without a sync of its own. */
export const walSyncOf = (sqlite: Database): WalSync | undefined => syncs.get(sqlite);

const syncedLater = new AsyncLocalStorage<true>();

/**
 * Runs fn with its transactions committed without a sync of their own, a sync of the WAL started off the event
 * loop after each and not waited for: for work whose commits nobody outside the process learns of directly (a
 * queue, a job's claims, results that later steps read in transactions of their own).
 */
export function commitsSyncedLater<T>(fn: () => T): T {
  return syncedLater.run(true, fn);
}

/**
 * For a transaction about to begin, with the write lock held: inside `commitsSyncedLater` on a connection with a
 * WAL sync, makes its COMMIT go without a sync of its own (NORMAL) and returns what sets the connection's own
 * setting (FULL, openDatabase) back, before the lock is let go; elsewhere null, the COMMIT syncing itself.
 */
export function unsyncedCommit(sqlite: Database): (() => void) | null {
  if (syncedLater.getStore() !== true || !syncs.has(sqlite)) return null;
  const own = (sqlite.query('PRAGMA synchronous').get() as { synchronous: number }).synchronous;
  if (own <= 1) return () => undefined;
  sqlite.exec('PRAGMA synchronous = NORMAL');
  return () => sqlite.exec(`PRAGMA synchronous = ${own}`);
}

/** Starts a sync of what the connection committed, not waited for: a failing disk fails the next FULL COMMIT. */
export function syncSoon(sqlite: Database): void {
  syncs.get(sqlite)?.afterCommits().catch(() => undefined);
}
