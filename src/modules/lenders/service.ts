import { transaction, withTransaction, type Tx } from '../../platform/context';
import { Conflict } from '../../platform/errors';
import type { Db } from '../../platform/db';
import type { Lender } from '../../platform/context';
import type { StoreCtx, TxCtx } from '../../platform/store';
import { newId } from '../../platform/ids';
import { displayPrefix, generateApiKey, hashApiKey } from '../../platform/api-keys';
import { LenderError } from './errors';
import { type ApiKeyListing, type LenderRow } from './store';
import { lenderStatementsNow as syncStatements } from './store.sqlite';

// Lenders and their API keys: operator functions (the CLI and start-up), not API services, and the portal's
// key management. Each writes through the transaction runner.

export type { Lender };
export { displayPrefix };

/** The database connections an operator function works on: the service's runtime, or the CLI's handle. */
type StoreDeps = StoreCtx['deps'];

export { LenderError };

function checkName(name: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$/.test(name)) {
    throw new LenderError('A lender name is 1 to 80 letters, digits, spaces, dots, dashes or underscores');
  }
}

/** A new lender and its first API key (returned once). */
export function createLender(deps: StoreDeps, name: string, now: number): Promise<{ lender: Lender; apiKey: string }> {
  checkName(name);
  return transaction({ deps }, async (tx) => {
    await tx.deps.stores.lenders.serializeLenderCreation(tx);
    if (await tx.deps.stores.lenders.lenderNamed(tx, name)) throw new LenderError(`A lender named ${name} already exists`);
    const lender = { id: newId(), name, debitCardApproved: false, createdAt: now };
    await tx.deps.stores.lenders.addLender(tx, lender);
    const apiKey = await issueKey(tx, lender.id, now);
    return { lender, apiKey };
  });
}

/**
 * createLender for callers not yet asynchronous (the test set-up).
 * @deprecated transitional: await createLender
 */
export function createLenderNow(db: Db, name: string, now: number): { lender: Lender; apiKey: string } {
  checkName(name);
  if (syncStatements.lenderNamed(db, name)) throw new LenderError(`A lender named ${name} already exists`);
  return withTransaction({ deps: { db } }, ({ tx }) => {
    const lender = { id: newId(), name, debitCardApproved: false, createdAt: now };
    syncStatements.addLender(tx, lender);
    const apiKey = issueKeyNow(tx, lender.id, now);
    return { lender, apiKey };
  });
}

export function findLender(deps: StoreDeps, name: string): Promise<LenderRow | undefined> {
  return deps.stores.lenders.lenderNamed({ deps }, name);
}

export function listLenders(deps: StoreDeps): Promise<LenderRow[]> {
  return deps.stores.lenders.listLenders({ deps });
}

/** Live (unrevoked) API keys a lender may hold at once. */
export const MAX_LIVE_API_KEYS = 25;

/** A lender already holds MAX_LIVE_API_KEYS live keys: one is revoked before another is created. */
export class TooManyApiKeys extends Conflict {
  constructor() {
    super(
      `A lender has at most ${MAX_LIVE_API_KEYS} live API keys, and this one has ${MAX_LIVE_API_KEYS}`,
      { limit: MAX_LIVE_API_KEYS },
      'Revoke a key that is no longer used, then create the new one',
    );
  }
}

const keyRow = (lenderId: string, now: number, key: string) => ({ id: newId(), lenderId, prefix: displayPrefix(key), keyHash: hashApiKey(key), createdAt: now });

/**
 * Every new API key is issued here (a new lender's first key, the CLI, the portal, the bootstrap key), inside
 * the caller's write transaction: the live keys are counted under the lender's key-issue lock (SQLite's write
 * lock), held until the transaction ends, so two creations at once cannot both take the last place.
 */
export async function issueKey(c: TxCtx, lenderId: string, now: number, key: string = generateApiKey()): Promise<string> {
  await c.deps.stores.lenders.serializeKeyIssue(c, lenderId);
  if ((await c.deps.stores.lenders.liveKeyCount(c, lenderId)) >= MAX_LIVE_API_KEYS) throw new TooManyApiKeys();
  await c.deps.stores.lenders.addKey(c, keyRow(lenderId, now, key));
  return key;
}

/**
 * issueKey for callers not yet asynchronous (a synchronous transaction).
 * @deprecated transitional: await issueKey
 */
export function issueKeyNow(tx: Tx, lenderId: string, now: number, key: string = generateApiKey()): string {
  if (syncStatements.liveKeyCount(tx, lenderId) >= MAX_LIVE_API_KEYS) throw new TooManyApiKeys();
  syncStatements.addKey(tx, keyRow(lenderId, now, key));
  return key;
}

/** The lender's API keys, oldest first (never their hashes). */
export function listKeys(deps: StoreDeps, lenderId: string): Promise<ApiKeyListing[]> {
  return deps.stores.lenders.listKeys({ deps }, lenderId);
}

/** A new API key for the lender (the portal's "Create API key"); the key itself is returned once. Throws TooManyApiKeys at the limit. */
export function createLenderKey(deps: StoreDeps, lenderId: string, now: number): Promise<string> {
  return transaction({ deps }, (tx) => issueKey(tx, lenderId, now));
}

/** Revokes one of the lender's own live keys by its id; false when the lender has no such live key. */
export const revokeLenderKey = (deps: StoreDeps, lenderId: string, keyId: string, now: number): Promise<boolean> =>
  transaction({ deps }, (tx) => tx.deps.stores.lenders.revokeLenderKey(tx, lenderId, keyId, now));

/** Revokes the key with this display prefix; false when no live key has it. */
export const revokeKey = (deps: StoreDeps, prefix: string, now: number): Promise<boolean> =>
  transaction({ deps }, (tx) => tx.deps.stores.lenders.revokeKeyByPrefix(tx, prefix, now));

export function setDebitCardApproval(deps: StoreDeps, lenderId: string, approved: boolean): Promise<void> {
  return transaction({ deps }, (tx) => tx.deps.stores.lenders.setDebitCardApproval(tx, lenderId, approved));
}

/**
 * setDebitCardApproval for callers not yet asynchronous (the test set-up).
 * @deprecated transitional: await setDebitCardApproval
 */
export function setDebitCardApprovalNow(db: Db, lenderId: string, approved: boolean): void {
  withTransaction({ deps: { db } }, ({ tx }) => syncStatements.setDebitCardApproval(tx, lenderId, approved));
}

/**
 * Start-up: BOOTSTRAP_API_KEY makes sure a lender `default` holds that key. With no key configured and
 * no lender at all, the first start creates `default` and returns its new key to print once.
 */
export async function ensureBootstrapLender(
  deps: StoreDeps,
  bootstrapKey: string | null,
  now: number,
): Promise<{ printedKey: string | null; bootstrapRefused?: string }> {
  if (bootstrapKey) {
    // The lender already holds its most live keys: the refusal is given back for the start to stop on with
    // one line (never a stack trace), naming the setting and what to do.
    const refused = (e: unknown) => {
      if (!(e instanceof TooManyApiKeys)) throw e;
      return { printedKey: null, bootstrapRefused: `the lender default already has ${MAX_LIVE_API_KEYS} live API keys, the most it may hold` };
    };
    return transaction({ deps }, async (tx) => {
      // Replicas starting at once with the same key: one registers it, the others find it.
      await tx.deps.stores.lenders.serializeLenderCreation(tx);
      if (await tx.deps.stores.lenders.keyHashKnown(tx, hashApiKey(bootstrapKey))) return { printedKey: null };
      let lender: Lender | undefined = await tx.deps.stores.lenders.lenderNamed(tx, 'default');
      if (!lender) {
        lender = { id: newId(), name: 'default', debitCardApproved: false };
        await tx.deps.stores.lenders.addLender(tx, { ...lender, createdAt: now });
      }
      await issueKey(tx, lender.id, now, bootstrapKey);
      return { printedKey: null };
    }).catch(refused);
  }
  if (await deps.stores.lenders.anyLender({ deps })) return { printedKey: null };
  try {
    const { apiKey } = await createLender(deps, 'default', now);
    return { printedKey: apiKey };
  } catch (e) {
    // Another start (a replica on the same database) created it in between: that one prints its key.
    if (e instanceof LenderError && (await deps.stores.lenders.lenderNamed({ deps }, 'default'))) return { printedKey: null };
    throw e;
  }
}
