import type { LinkHealthRow, LinkHealthStore } from './link-health-store';
import { listOf, readerOf, writerOf } from '../../platform/sql/sqlite';

// The link-health rows on SQLite (link-health.ts): one statement each.

const COLUMNS = `lender_id AS lenderId, link_digest AS digest, provider, authorizer_unique_id AS aid, health, since,
  expires_at AS expiresAt, next_probe_at AS nextProbeAt, probe_interval_ms AS probeIntervalMs, link_sealed AS linkSealed`;

export const sqliteLinkHealthStore: LinkHealthStore = {
  async healthOf(c, lenderId, digest) {
    return (
      readerOf(c)
        .$client.query<LinkHealthRow, [string, string]>(`SELECT ${COLUMNS} FROM bank_link_relinks WHERE lender_id = ? AND link_digest = ?`)
        .get(lenderId, digest) ?? undefined
    );
  },
  async healthsAmong(c, lenderId, digests) {
    if (digests.length === 0) return [];
    return readerOf(c)
      .$client.query<LinkHealthRow, [string, string]>(`SELECT ${COLUMNS} FROM bank_link_relinks WHERE lender_id = ? AND link_digest IN (SELECT value FROM json_each(?))`)
      .all(lenderId, JSON.stringify(digests));
  },
  async put(c, r) {
    writerOf(c)
      .$client.query(
        `INSERT INTO bank_link_relinks (lender_id, link_digest, provider, authorizer_unique_id, created_at, health, since, expires_at, next_probe_at, probe_interval_ms, link_sealed)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (lender_id, link_digest) DO UPDATE SET authorizer_unique_id = excluded.authorizer_unique_id, health = excluded.health,
           since = excluded.since, expires_at = excluded.expires_at, next_probe_at = excluded.next_probe_at,
           probe_interval_ms = excluded.probe_interval_ms, link_sealed = COALESCE(excluded.link_sealed, bank_link_relinks.link_sealed)`,
      )
      .run(r.lenderId, r.digest, r.provider, r.aid, r.since, r.health, r.since, r.expiresAt, r.nextProbeAt, r.probeIntervalMs, r.linkSealed);
  },
  async dueProbes(c, now, limit) {
    return readerOf(c)
      .$client.query<LinkHealthRow, [number, number]>(
        `SELECT ${COLUMNS} FROM bank_link_relinks WHERE next_probe_at IS NOT NULL AND next_probe_at <= ? ORDER BY next_probe_at LIMIT ?`,
      )
      .all(now, limit);
  },
  async claimProbe(c, lenderId, digest, expected, until) {
    return (
      writerOf(c)
        .$client.query('UPDATE bank_link_relinks SET next_probe_at = ? WHERE lender_id = ? AND link_digest = ? AND next_probe_at = ?')
        .run(until, lenderId, digest, expected).changes > 0
    );
  },
  async probeNow(c, lenderId, digests, now) {
    if (digests.length === 0) return 0;
    return writerOf(c)
      .$client.query(
        `UPDATE bank_link_relinks SET next_probe_at = ? WHERE lender_id = ? AND health <> 'ok' AND link_sealed IS NOT NULL
           AND link_digest IN (SELECT value FROM json_each(?))`,
      )
      .run(now, lenderId, listOf(digests)).changes;
  },
  async eraseBorrower(c, lenderId, aid) {
    writerOf(c).$client.query('DELETE FROM bank_link_relinks WHERE lender_id = ? AND authorizer_unique_id = ?').run(lenderId, aid);
    writerOf(c).$client.query('DELETE FROM bank_link_owners WHERE lender_id = ? AND authorizer_unique_id = ?').run(lenderId, aid);
  },
  async putOwners(c, rows) {
    const q = writerOf(c).$client.query('INSERT OR IGNORE INTO bank_link_owners (lender_id, link_digest, authorizer_unique_id, provider) VALUES (?, ?, ?, ?)');
    for (const r of rows) q.run(r.lenderId, r.digest, r.aid, r.provider);
  },
  async ownersOfLink(c, lenderId, digest) {
    return readerOf(c)
      .$client.query<{ aid: string }, [string, string]>('SELECT authorizer_unique_id AS aid FROM bank_link_owners WHERE lender_id = ? AND link_digest = ? ORDER BY authorizer_unique_id')
      .all(lenderId, digest)
      .map((r) => r.aid);
  },
  async ownersOfItem(c, itemId) {
    return readerOf(c)
      .$client.query<{ lenderId: string; digest: string; aid: string }, [string]>(
        'SELECT lender_id AS lenderId, link_digest AS digest, authorizer_unique_id AS aid FROM bank_link_owners WHERE plaid_item_id = ? ORDER BY lender_id, authorizer_unique_id LIMIT 10000',
      )
      .all(itemId);
  },
  async noteItem(c, lenderId, digest, itemId) {
    writerOf(c)
      .$client.query('UPDATE bank_link_owners SET plaid_item_id = ? WHERE lender_id = ? AND link_digest = ? AND plaid_item_id IS NOT ?')
      .run(itemId, lenderId, digest, itemId);
  },
  async dropOwner(c, lenderId, digest, aid) {
    writerOf(c).$client.query('DELETE FROM bank_link_owners WHERE lender_id = ? AND link_digest = ? AND authorizer_unique_id = ?').run(lenderId, digest, aid);
  },
  async receipt(c, provider, key, now, before) {
    const db = writerOf(c).$client;
    db.query('DELETE FROM provider_webhook_receipts WHERE received_at < ?').run(before);
    return db.query('INSERT OR IGNORE INTO provider_webhook_receipts (provider, receipt_key, received_at) VALUES (?, ?, ?)').run(provider, key, now).changes > 0;
  },
};
