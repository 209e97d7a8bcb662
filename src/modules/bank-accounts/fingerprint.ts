import { randomBytes } from 'node:crypto';
import type { PlatformDeps } from '../../platform/context';
import type { TxCtx } from '../../platform/store';
import type { SealedColumn } from '../../platform/vault';

// A bank account is recognised by its fingerprint: HMAC-SHA-256 of `routing:account` under the service's
// fingerprint key. The key is one random 32-byte value kept in the database (service_secrets), sealed with the
// vault, made once: `vault rotate` re-seals it with everything else, so the same account has the same
// fingerprint before and after a rotation (a key derived from the vault key would change with it, and an
// account blocked before a rotation would no longer be recognised after it). Nothing readable is kept of the
// number but its last four.

/** Columns of this feature holding vault-sealed values. */
export const sealedColumns: SealedColumn[] = [
  { table: 'service_secrets', key: 'name', column: 'secret_sealed' },
  // A Notification of Change's corrected data (changes.ts): it holds an account number.
  { table: 'account_changes', key: 'id', column: 'corrected_sealed' },
];

const KEY_NAME = 'bank-account-fingerprint';

/** The key once read from its database (it never changes there): per database (its transactions, one set each). */
const keys = new WeakMap<object, Buffer>();
const handleOf = (c: TxCtx): object => c.deps.engine.transactions;
/** The transactions that made the key: what they read of it is not known to be committed. */
const madeIn = new WeakSet<object>();

/**
 * The fingerprint key, made on first use in the caller's transaction: one statement that makes nothing when
 * another transaction made it first (which then waits for that one and reads its key). Only a key another
 * transaction made is kept in memory: one made in this transaction is read again until it has committed, so
 * a transaction that rolls back leaves no key behind in memory either.
 */
export async function fingerprintKey(c: TxCtx & { deps: Pick<PlatformDeps, 'vault' | 'clock'> }): Promise<Buffer> {
  const cached = keys.get(handleOf(c));
  if (cached) return cached;
  const store = c.deps.stores.bankAccounts;
  let sealed = await store.sealedSecret(c, KEY_NAME);
  if (sealed === undefined) {
    await store.keepSecret(c, { name: KEY_NAME, sealed: c.deps.vault.sealBytes(randomBytes(32)), now: c.deps.clock.now() });
    sealed = (await store.sealedSecret(c, KEY_NAME))!;
    // Made here, unless another transaction's was there first (this one's then made nothing): ours is not
    // known to be committed until the transaction ends.
    madeIn.add(c.tx);
  }
  const key = c.deps.vault.openBytes(sealed);
  if (!madeIn.has(c.tx)) keys.set(handleOf(c), key);
  return key;
}

/** An account number as it is fingerprinted: as stored, without the spaces and hyphens of its writing (leading zeros kept). */
export const canonicalAccount = (accountNumber: string): string => accountNumber.replace(/[\s-]/g, '');

/** The fingerprint (hex) of an ACH account: HMAC-SHA-256 of `routing:account` under the key, the number canonical already. */
export const fingerprintOf = (key: Buffer, routing: string, canonicalNumber: string): string =>
  new Bun.CryptoHasher('sha256', key).update(`${routing.trim()}:${canonicalNumber}`).digest('hex');
