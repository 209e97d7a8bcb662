import { transaction, type PlatformDeps, type Tx } from './context';
import { betweenSlices } from './jobs';

// Rows a feature left unprocessed from before it existed (borrowers to index for search, to link to their bank
// account) are worked through after each start: a slice of rows a transaction, in key order, with a turn of the
// event loop between, until a pass finds none left. From then on this process skips the work: what is stored
// since is processed as it is stored. A row another transaction held while a pass went by (PostgreSQL skips
// it) is taken by the next pass.

/**
 * The pass of one backfill: `slice` handles the rows after the key `after`, at most `size`, in the transaction
 * it is given and returns them in key order. Resolves to the rows handled by this pass.
 */
export function backfill<D extends PlatformDeps>(
  size: number,
  slice: (tx: { deps: D; tx: Tx }, after: string) => Promise<readonly { id: string }[]>,
): (deps: D, signal?: AbortSignal) => Promise<number> {
  const done = new WeakMap<D, boolean>();
  return async (deps, signal) => {
    if (done.get(deps)) return 0;
    let after = '';
    let n = 0;
    for (;;) {
      if (signal?.aborted) return n;
      const rows = await transaction({ deps }, (tx) => slice(tx, after));
      n += rows.length;
      if (rows.length < size) break;
      after = rows[rows.length - 1]!.id;
      await betweenSlices(deps);
    }
    if (n === 0) done.set(deps, true);
    return n;
  };
}
