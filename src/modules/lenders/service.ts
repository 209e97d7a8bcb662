import { transaction, withTransaction, type Tx } from '../../platform/context';
import { and, asc, count, eq, isNull, type SQL } from 'drizzle-orm';
import { Conflict } from '../../platform/errors';
import { apiKeys, lenders } from '../../../db/schema';
import type { Db } from '../../platform/db';
import type { Lender } from '../../platform/context';
import { newId } from '../../platform/ids';
import { displayPrefix, generateApiKey, hashApiKey } from '../../platform/api-keys';

// Lenders and their API keys: operator functions (the CLI and start-up), not API services. Those that run only
// at start-up or in the CLI's own process write in a synchronous transaction; those the portal calls while the
// service serves go through the transaction runner.

export type { Lender };
export { displayPrefix };

export class LenderError extends Error {}

export function createLender(db: Db, name: string, now: number): { lender: Lender; apiKey: string } {
  if (!/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$/.test(name)) {
    throw new LenderError('A lender name is 1 to 80 letters, digits, spaces, dots, dashes or underscores');
  }
  if (db.select().from(lenders).where(eq(lenders.name, name)).get()) {
    throw new LenderError(`A lender named ${name} already exists`);
  }
  return withTransaction({ deps: { db } }, ({ tx }) => {
    const lender = { id: newId(), name, debitCardApproved: false, createdAt: now };
    tx.insert(lenders).values(lender).run();
    const apiKey = issueKey(tx, lender.id, now);
    return { lender, apiKey };
  });
}

export function findLender(db: Db, name: string): Lender | undefined {
  return db.select().from(lenders).where(eq(lenders.name, name)).get();
}

export function listLenders(db: Db) {
  return db.select().from(lenders).orderBy(asc(lenders.createdAt)).all();
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

/**
 * Every new API key is issued here (a new lender's first key, the CLI, the portal, the bootstrap key), inside
 * the caller's write transaction: the live keys are counted under the write lock, so two creations at once
 * cannot both take the last place.
 */
export function issueKey(tx: Tx, lenderId: string, now: number, key: string = generateApiKey()): string {
  const live = tx.select({ n: count() }).from(apiKeys).where(and(eq(apiKeys.lenderId, lenderId), isNull(apiKeys.revokedAt))).get()!.n;
  if (live >= MAX_LIVE_API_KEYS) throw new TooManyApiKeys();
  tx.insert(apiKeys)
    .values({ id: newId(), lenderId, prefix: displayPrefix(key), keyHash: hashApiKey(key), createdAt: now })
    .run();
  return key;
}

export function listKeys(db: Db, lenderId: string) {
  return db
    .select({
      id: apiKeys.id,
      prefix: apiKeys.prefix,
      createdAt: apiKeys.createdAt,
      lastUsedAt: apiKeys.lastUsedAt,
      revokedAt: apiKeys.revokedAt,
    })
    .from(apiKeys)
    .where(eq(apiKeys.lenderId, lenderId))
    .orderBy(asc(apiKeys.createdAt))
    .all();
}

/** A new API key for the lender (the portal's "Create API key"); the key itself is returned once. Throws TooManyApiKeys at the limit. */
export function createLenderKey(db: Db, lenderId: string, now: number): Promise<string> {
  return transaction({ deps: { db } }, ({ tx }) => issueKey(tx, lenderId, now));
}

/** Revokes the live key that `which` names; false when no live key is named. */
async function revokeWhere(db: Db, which: SQL, now: number): Promise<boolean> {
  const revoked = await transaction({ deps: { db } }, ({ tx }) =>
    tx
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(which, isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id })
      .all(),
  );
  return revoked.length > 0;
}

/** Revokes one of the lender's own live keys by its id; false when the lender has no such live key. */
export const revokeLenderKey = (db: Db, lenderId: string, keyId: string, now: number): Promise<boolean> => revokeWhere(db, and(eq(apiKeys.id, keyId), eq(apiKeys.lenderId, lenderId))!, now);

/** Revokes the key with this display prefix; false when no live key has it. */
export const revokeKey = (db: Db, prefix: string, now: number): Promise<boolean> => revokeWhere(db, eq(apiKeys.prefix, prefix), now);

export function setDebitCardApproval(db: Db, lenderId: string, approved: boolean): void {
  withTransaction({ deps: { db } }, ({ tx }) => tx.update(lenders).set({ debitCardApproved: approved }).where(eq(lenders.id, lenderId)).run());
}

/**
 * Start-up: BOOTSTRAP_API_KEY makes sure a lender `default` holds that key. With no key configured and
 * no lender at all, the first start creates `default` and returns its new key to print once.
 */
export function ensureBootstrapLender(db: Db, bootstrapKey: string | null, now: number): { printedKey: string | null } {
  if (bootstrapKey) {
    return withTransaction({ deps: { db } }, ({ tx }) => {
      const existing = tx.select().from(apiKeys).where(eq(apiKeys.keyHash, hashApiKey(bootstrapKey))).get();
      if (existing) return { printedKey: null };
      let lender = findLender(tx, 'default');
      if (!lender) {
        lender = { id: newId(), name: 'default', debitCardApproved: false };
        tx.insert(lenders).values({ ...lender, createdAt: now }).run();
      }
      issueKey(tx, lender.id, now, bootstrapKey);
      return { printedKey: null };
    });
  }
  if (db.select({ id: lenders.id }).from(lenders).limit(1).get()) return { printedKey: null };
  const { apiKey } = createLender(db, 'default', now);
  return { printedKey: apiKey };
}
