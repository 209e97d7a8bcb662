// What the balance pipeline's stores on both engines share (store.sqlite.ts, store.pg.ts): neither imports the other.

/** How long a claimed read stays leased: after that, a claim takes it again (a crash, a stuck read). */
export const ITEM_LEASE_MS = 120_000;

/** A batch gives at least this many items to a claim, so many open batches are served in turn. */
export const MIN_BATCH_CHUNK = 16;

/** The lock under which a lender's pending authorizers are counted and its new batches inserted (lockFor). */
export const BACKLOG_LOCK = 'balance-backlog';
