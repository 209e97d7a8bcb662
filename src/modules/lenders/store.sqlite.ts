import { and, asc, count, eq, isNull, type SQL } from 'drizzle-orm';
import { apiKeys, lenders } from '../../../db/schema';
import type { Db, Orm } from '../../platform/db';
import { handleOf, lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { Tx } from '../../platform/tx';
import type { ApiKeyRow, LenderRow, LenderStore } from './store';
import type { ApiKeyLookup, KeyHolder } from '../../platform/engine';
import { gateOf } from '../../platform/write-gate';
import { txLockOf } from '../../platform/tx-lock';

const lenderNamed = (db: Db, name: string) => db.select().from(lenders).where(eq(lenders.name, name)).get();

const addLender = (db: Orm, lender: LenderRow) => db.insert(lenders).values(lender).run();

const setDebitCardApproval = (db: Orm, lenderId: string, approved: boolean) =>
  db.update(lenders).set({ debitCardApproved: approved }).where(eq(lenders.id, lenderId)).run();

const liveKeyCount = (db: Db, lenderId: string): number =>
  db.select({ n: count() }).from(apiKeys).where(and(eq(apiKeys.lenderId, lenderId), isNull(apiKeys.revokedAt))).get()!.n;

const addKey = (db: Orm, key: Pick<ApiKeyRow, 'id' | 'lenderId' | 'prefix' | 'keyHash' | 'createdAt'>) => db.insert(apiKeys).values(key).run();

const listKeys = (db: Db, lenderId: string) =>
  db
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

/** Revokes the live key that `which` names; false when no live key is named. */
const revokeWhere = (db: Orm, which: SQL, now: number): boolean =>
  db
    .update(apiKeys)
    .set({ revokedAt: now })
    .where(and(which, isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id })
    .all().length > 0;

/**
 * The statements of the lenders' synchronous set-up on SQLite (tests and benchmarks, before anything is
 * served), in a transaction of platform/context.ts's withTransaction.
 * @deprecated transitional: await `lenderStore`.
 */
export const lenderStatementsNow = {
  lenderNamed,
  addLender: (tx: Tx, lender: LenderRow) => addLender(handleOf(tx), lender),
  setDebitCardApproval: (tx: Tx, lenderId: string, approved: boolean) => setDebitCardApproval(handleOf(tx), lenderId, approved),
  liveKeyCount: (tx: Tx, lenderId: string) => liveKeyCount(handleOf(tx), lenderId),
  addKey: (tx: Tx, key: Pick<ApiKeyRow, 'id' | 'lenderId' | 'prefix' | 'keyHash' | 'createdAt'>) => addKey(handleOf(tx), key),
};

export const sqliteLenderStore: LenderStore = {
  async lenderNamed(c, name) {
    return lenderNamed(readerOf(c), name);
  },
  async listLenders(c) {
    return readerOf(c).select().from(lenders).orderBy(asc(lenders.createdAt)).all();
  },
  async anyLender(c) {
    return !!readerOf(c).select({ id: lenders.id }).from(lenders).limit(1).get();
  },
  async addLender(c, lender) {
    addLender(writerOf(c), lender);
  },
  async setDebitCardApproval(c, lenderId, approved) {
    setDebitCardApproval(writerOf(c), lenderId, approved);
  },
  // One writer at a time: the transaction that checks already runs alone.
  async serializeLenderCreation(c) {
    await lockFor(c, 'lender-creation');
  },

  async serializeKeyIssue(c, lenderId) {
    await lockFor(c, 'api-key-issue', lenderId);
  },

  async liveKeyCount(c, lenderId) {
    return liveKeyCount(readerOf(c), lenderId);
  },
  async keyHashKnown(c, keyHash) {
    return !!readerOf(c).select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.keyHash, keyHash)).get();
  },
  async addKey(c, key) {
    addKey(writerOf(c), key);
  },
  async listKeys(c, lenderId) {
    return listKeys(readerOf(c), lenderId);
  },
  async revokeLenderKey(c, lenderId, keyId, now) {
    return revokeWhere(writerOf(c), and(eq(apiKeys.id, keyId), eq(apiKeys.lenderId, lenderId))!, now);
  },
  async revokeKeyByPrefix(c, prefix, now) {
    return revokeWhere(writerOf(c), eq(apiKeys.prefix, prefix), now);
  },
};

/**
 * The statements of authentication, prepared once: the live key with this hash and its lender, and the
 * key's last use (a single-row write that commits on its own; it runs at most once a minute per key).
 */
export function sqliteKeyLookup(db: Db): ApiKeyLookup {
  const lookup = db.$client.query<KeyHolder, [string]>(
    `SELECT k.id AS keyId, k.last_used_at AS lastUsedAt, l.id AS id, l.name AS name,
            l.debit_card_approved AS debitCardApproved, k.revoked_at AS revokedAt
       FROM api_keys k JOIN lenders l ON l.id = k.lender_id
      WHERE k.key_hash = ?`,
  );
  const touch = db.$client.query<unknown, [number, string]>('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
  return { holderOf: async (hash: string) => lookup.get(hash) ?? undefined, touch: (keyId: string, now: number) => {
      // A timestamp, not worth waiting for: skipped while a worker holds the write lock or a transaction is
      // open on the connection (its write would land inside that one), and written next time.
      if (!gateOf(db.$client).held && !txLockOf(db.$client).held) touch.run(now, keyId);
    },
  };
}
