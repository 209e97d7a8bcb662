// What collection's stores on both engines share (store.sqlite.ts, store.pg.ts): neither imports the other.

/** How long a claimed payment stays leased: longer than a processor call can take with the SDK's own retries. */
export const DISPATCH_LEASE_MS = 120_000;
