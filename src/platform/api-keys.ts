import type { Db } from './db';
import type { PgHandle } from './pg';
import { gateOf } from './write-gate';
import { txLockOf } from './tx-lock';
import { randomBase62 } from './ids';
import { API_KEY_PREFIX } from './api-key-format';
import type { ApiKeyLookup, KeyHolder } from './engine';

export type { KeyHolder };

// The service's own API keys: stored as SHA-256 hashes with a short display prefix.

// Shown to operators (key list, revoke); 8 random characters tell keys apart and cannot authenticate.
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

export const hashApiKey = (key: string): string => new Bun.CryptoHasher('sha256').update(key).digest('hex');
export const generateApiKey = (): string => API_KEY_PREFIX + randomBase62(32);
export const displayPrefix = (key: string): string => key.slice(0, DISPLAY_PREFIX_LENGTH);


/**
 * The statements of authentication, prepared once: the live key with this hash and its lender, and the
 * key's last use (a single-row write that commits on its own; it runs at most once a minute per key).
 */
export function apiKeyStatements(db: Db): ApiKeyLookup {
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

/**
 * The same on PostgreSQL: the lookup is a query on the pool (asynchronous), the last use an update sent
 * without waiting for it (a failure is logged by the caller's next write, never the request's).
 */
export function pgApiKeyStatements(pg: PgHandle): ApiKeyLookup {
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
