import { and, asc, count, eq, isNull, type SQL } from 'drizzle-orm';
import { apiKeys, lenders } from '../../../db/schema-pg';
import { isUniqueViolation, type PgDb, type PgHandle } from '../../platform/pg';
import type { ApiKeyLookup, KeyHolder } from '../../platform/engine';
import { lockFor, readerOf, writerOf } from '../../platform/sql/pg';
import { LenderError } from './errors';
import type { LenderStore } from './store';

/** Revokes the live key that `which` names; false when no live key is named. */
const revokeWhere = async (db: PgDb, which: SQL, now: number): Promise<boolean> =>
  (
    await db
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(which, isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id })
  ).length > 0;

/** The name of the unique constraint a violation names, as PostgreSQL reports it. */
const constraintOf = (e: unknown): string | undefined => {
  const err = e as { constraint?: unknown; cause?: { constraint?: unknown } };
  const c = err?.constraint ?? err?.cause?.constraint;
  return typeof c === 'string' ? c : undefined;
};

// Ties of created_at (a key made in the same millisecond) in the order they were made, as SQLite gives them
// (its rowid order): ids are UUIDv7, ordered by creation.
export const pgLenderStore: LenderStore = {
  async lenderNamed(c, name) {
    return (await readerOf(c).select().from(lenders).where(eq(lenders.name, name)))[0];
  },
  async listLenders(c) {
    return readerOf(c).select().from(lenders).orderBy(asc(lenders.createdAt), asc(lenders.id));
  },
  async anyLender(c) {
    return (await readerOf(c).select({ id: lenders.id }).from(lenders).limit(1)).length > 0;
  },
  // The name's check and the insert are one step under the creation lock (serializeLenderCreation); a name
  // stored by a writer that did not take it is refused by the unique constraint, with the same error.
  async addLender(c, lender) {
    try {
      await writerOf(c).insert(lenders).values(lender);
    } catch (e) {
      if (isUniqueViolation(e) && (constraintOf(e) ?? 'lenders_name_unique') === 'lenders_name_unique') {
        throw new LenderError(`A lender named ${lender.name} already exists`);
      }
      throw e;
    }
  },
  async setDebitCardApproval(c, lenderId, approved) {
    await writerOf(c).update(lenders).set({ debitCardApproved: approved }).where(eq(lenders.id, lenderId));
  },
  async serializeLenderCreation(c) {
    await lockFor(c, 'lender-creation');
  },

  async serializeKeyIssue(c, lenderId) {
    await lockFor(c, 'api-key-issue', lenderId);
  },
  async liveKeyCount(c, lenderId) {
    const [row] = await readerOf(c)
      .select({ n: count() })
      .from(apiKeys)
      .where(and(eq(apiKeys.lenderId, lenderId), isNull(apiKeys.revokedAt)));
    return Number(row!.n);
  },
  async keyHashKnown(c, keyHash) {
    return (await readerOf(c).select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.keyHash, keyHash)).limit(1)).length > 0;
  },
  async addKey(c, key) {
    await writerOf(c).insert(apiKeys).values(key);
  },
  async listKeys(c, lenderId) {
    return readerOf(c)
      .select({
        id: apiKeys.id,
        prefix: apiKeys.prefix,
        createdAt: apiKeys.createdAt,
        lastUsedAt: apiKeys.lastUsedAt,
        revokedAt: apiKeys.revokedAt,
      })
      .from(apiKeys)
      .where(eq(apiKeys.lenderId, lenderId))
      .orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
  },
  async revokeLenderKey(c, lenderId, keyId, now) {
    return revokeWhere(writerOf(c), and(eq(apiKeys.id, keyId), eq(apiKeys.lenderId, lenderId))!, now);
  },
  async revokeKeyByPrefix(c, prefix, now) {
    return revokeWhere(writerOf(c), eq(apiKeys.prefix, prefix), now);
  },
};

/**
 * Authentication's statements on PostgreSQL: the lookup is a query on the pool (asynchronous), the last use an update sent
 * without waiting for it (a failure is logged by the caller's next write, never the request's).
 */
export function pgKeyLookup(pg: PgHandle): ApiKeyLookup {
  return {
    holderOf: async (hash: string): Promise<KeyHolder | undefined> => {
      const rows = (await pg.sql`
        SELECT k.id AS "keyId", k.last_used_at::float8 AS "lastUsedAt", l.id AS id, l.name AS name,
               l.debit_card_approved AS "debitCardApproved", k.revoked_at::float8 AS "revokedAt"
          FROM api_keys k JOIN lenders l ON l.id = k.lender_id
         WHERE k.key_hash = ${hash}`) as KeyHolder[];
      return rows[0];
    },
    touch: (keyId: string, now: number) => {
      void pg.sql`UPDATE api_keys SET last_used_at = ${now} WHERE id = ${keyId}`.then(
        () => undefined,
        () => undefined,
      );
    },
  };
}
