// Holding a results upload between two of its transactions, on either engine, by states rather than times.
// SQLite: a share of the write gate, which the upload's transactions wait for; one asked for while the upload
// holds the gate makes it commit after the slice it has under way. PostgreSQL, where the upload takes no
// gate: the lender's upload lock, which each of its transactions takes first (serializeUploads), held by a
// transaction of the test; what waits for it is read from pg_locks.
import { transaction, writeGate } from '../../src/platform/context';
import { uploadWorkerOf } from '../../src/modules/payment-results-upload/offload';
import type { TestContext } from './context';

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; !(await check()); i++) {
    if (i > 20_000) throw new Error(`never reached: ${what}`);
    await Bun.sleep(5);
  }
}

/** Transactions of the test's database waiting for an advisory lock now (PostgreSQL). */
export async function waitingForLocks(c: TestContext): Promise<number> {
  const [r] = await c.rows<{ n: number }>(
    "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
  );
  return Number(r!.n);
}

/**
 * The lender's upload lock asked for by a transaction of the test (PostgreSQL): `taken` once it holds it,
 * `release` lets it go. A pool closed under it takes the lock with its connection.
 */
export function uploadLock(c: TestContext, lenderId: string): { taken: Promise<void>; release: () => Promise<void> } {
  let held!: () => void;
  const taken = new Promise<void>((resolve) => (held = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const done = transaction({ deps: c.rt }, async (tx) => {
    await tx.deps.stores.uploads.serializeUploads(tx, lenderId);
    held();
    await released;
  }).catch(() => undefined);
  return {
    taken: Promise.race([taken, done.then(() => Promise.reject(new Error('the upload lock was never taken')))]),
    release: async () => {
      release();
      await done;
    },
  };
}

/**
 * The upload worker has been told that the upload's first slice is committed (a message from its thread, which
 * may come after the commit is seen in the database): from then on, what stops the upload answers that part
 * of it is recorded. No worker (a database in memory): the upload runs in the test's thread, which knows.
 */
async function recordingKnown(c: TestContext): Promise<void> {
  const worker = uploadWorkerOf(c.rt);
  if (worker) await until('the upload worker knows the first slice is recorded', async () => worker.recording > 0);
}

/**
 * Holds the next upload of `lenderId` after its first transaction, of one slice: called before the upload is
 * sent, then `afterFirst()` once it is, which resolves once the upload has committed its first slice and its
 * next transaction waits, with what lets it go on.
 */
export async function holdAfterFirstTransaction(c: TestContext, lenderId: string): Promise<{ afterFirst: () => Promise<() => void> }> {
  if (!c.rt.pg) {
    const gate = writeGate(c.rt);
    const first = await gate.share();
    return {
      afterFirst: async () => {
        // The upload has read its file and waits for the gate; the test's next share is queued behind it, so
        // the upload's first transaction finds it waiting after its first slice, and commits.
        await until('the upload asks for the write gate', async () => gate.waiting === 1);
        const second = gate.share();
        first();
        const release = await second;
        await recordingKnown(c);
        return release;
      },
    };
  }
  const first = uploadLock(c, lenderId);
  await first.taken;
  return {
    afterFirst: async () => {
      // The upload's first transaction waits for the lock; the test's next request for it is queued behind
      // that one, which is given the lock first, records its slice and commits.
      await until('the upload’s first transaction waits for the lock', async () => (await waitingForLocks(c)) === 1);
      const second = uploadLock(c, lenderId);
      await until('the test’s request for the lock is queued behind it', async () => (await waitingForLocks(c)) === 2);
      await first.release();
      await second.taken;
      await recordingKnown(c);
      return () => void second.release();
    },
  };
}
