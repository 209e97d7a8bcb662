import { sql } from 'drizzle-orm';
import type { LinkHealthRow, LinkHealthStore } from './link-health-store';
import { listOf, num, numOrNull, readerOf, rows, writerOf } from '../../platform/sql/pg';

// The link-health rows on PostgreSQL: the statements of link-health-store.sqlite.ts. A probe is taken by moving
// its next_probe_at only when it still holds the value read, so two replicas never probe one link at once.

const COLUMNS = sql.raw(`lender_id AS "lenderId", link_digest AS digest, provider, authorizer_unique_id AS aid, health, since,
  expires_at AS "expiresAt", next_probe_at AS "nextProbeAt", probe_interval_ms AS "probeIntervalMs", link_sealed AS "linkSealed"`);

const row = (r: LinkHealthRow): LinkHealthRow => ({
  ...r,
  since: num(r.since),
  expiresAt: numOrNull(r.expiresAt),
  nextProbeAt: numOrNull(r.nextProbeAt),
  probeIntervalMs: numOrNull(r.probeIntervalMs),
});

export const pgLinkHealthStore: LinkHealthStore = {
  async healthOf(c, lenderId, digest) {
    const [r] = await rows<LinkHealthRow>(readerOf(c), sql`SELECT ${COLUMNS} FROM bank_link_relinks WHERE lender_id = ${lenderId} AND link_digest = ${digest}`);
    return r ? row(r) : undefined;
  },
  async healthsAmong(c, lenderId, digests) {
    if (digests.length === 0) return [];
    const found = await rows<LinkHealthRow>(
      readerOf(c),
      sql`SELECT ${COLUMNS} FROM bank_link_relinks WHERE lender_id = ${lenderId} AND link_digest = ANY(${listOf(digests)}::text[])`,
    );
    return found.map(row);
  },
  async put(c, r) {
    await writerOf(c).execute(
      sql`INSERT INTO bank_link_relinks (lender_id, link_digest, provider, authorizer_unique_id, created_at, health, since, expires_at, next_probe_at, probe_interval_ms, link_sealed)
          VALUES (${r.lenderId}, ${r.digest}, ${r.provider}, ${r.aid}, ${r.since}, ${r.health}, ${r.since}, ${r.expiresAt}, ${r.nextProbeAt}, ${r.probeIntervalMs}, ${r.linkSealed})
          ON CONFLICT (lender_id, link_digest) DO UPDATE SET authorizer_unique_id = excluded.authorizer_unique_id, health = excluded.health,
            since = excluded.since, expires_at = excluded.expires_at, next_probe_at = excluded.next_probe_at,
            probe_interval_ms = excluded.probe_interval_ms, link_sealed = COALESCE(excluded.link_sealed, bank_link_relinks.link_sealed)`,
    );
  },
  async dueProbes(c, now, limit) {
    const found = await rows<LinkHealthRow>(
      readerOf(c),
      sql`SELECT ${COLUMNS} FROM bank_link_relinks WHERE next_probe_at IS NOT NULL AND next_probe_at <= ${now} ORDER BY next_probe_at LIMIT ${limit}`,
    );
    return found.map(row);
  },
  async claimProbe(c, lenderId, digest, expected, until) {
    const taken = await rows<{ one: number }>(
      writerOf(c),
      sql`UPDATE bank_link_relinks SET next_probe_at = ${until}
           WHERE lender_id = ${lenderId} AND link_digest = ${digest} AND next_probe_at = ${expected} RETURNING 1 AS one`,
    );
    return taken.length > 0;
  },
  async probeNow(c, lenderId, digests, now) {
    if (digests.length === 0) return 0;
    const moved = await rows<{ one: number }>(
      writerOf(c),
      sql`UPDATE bank_link_relinks SET next_probe_at = ${now}
           WHERE lender_id = ${lenderId} AND health <> 'ok' AND link_sealed IS NOT NULL AND link_digest = ANY(${listOf(digests)}::text[]) RETURNING 1 AS one`,
    );
    return moved.length;
  },
  async eraseBorrower(c, lenderId, aid) {
    await writerOf(c).execute(sql`DELETE FROM bank_link_relinks WHERE lender_id = ${lenderId} AND authorizer_unique_id = ${aid}`);
    await writerOf(c).execute(sql`DELETE FROM bank_link_owners WHERE lender_id = ${lenderId} AND authorizer_unique_id = ${aid}`);
  },
  async putOwners(c, rs) {
    if (rs.length === 0) return;
    await writerOf(c).execute(
      sql`INSERT INTO bank_link_owners (lender_id, link_digest, authorizer_unique_id, provider)
          SELECT * FROM unnest(${listOf(rs.map((r) => r.lenderId))}::text[], ${listOf(rs.map((r) => r.digest))}::text[], ${listOf(rs.map((r) => r.aid))}::text[], ${listOf(rs.map((r) => r.provider))}::text[])
          ON CONFLICT DO NOTHING`,
    );
  },
  async ownersOfLink(c, lenderId, digest) {
    const found = await rows<{ aid: string }>(
      readerOf(c),
      sql`SELECT authorizer_unique_id AS aid FROM bank_link_owners WHERE lender_id = ${lenderId} AND link_digest = ${digest} ORDER BY authorizer_unique_id`,
    );
    return found.map((r) => r.aid);
  },
  async ownersOfItem(c, itemId) {
    return rows<{ lenderId: string; digest: string; aid: string }>(
      readerOf(c),
      sql`SELECT lender_id AS "lenderId", link_digest AS digest, authorizer_unique_id AS aid FROM bank_link_owners WHERE plaid_item_id = ${itemId} ORDER BY lender_id, authorizer_unique_id LIMIT 10000`,
    );
  },
  async noteItem(c, lenderId, digest, itemId) {
    await writerOf(c).execute(
      sql`UPDATE bank_link_owners SET plaid_item_id = ${itemId} WHERE lender_id = ${lenderId} AND link_digest = ${digest} AND plaid_item_id IS DISTINCT FROM ${itemId}`,
    );
  },
  async dropOwner(c, lenderId, digest, aid) {
    await writerOf(c).execute(sql`DELETE FROM bank_link_owners WHERE lender_id = ${lenderId} AND link_digest = ${digest} AND authorizer_unique_id = ${aid}`);
  },
  async receipt(c, provider, key, now, before) {
    await writerOf(c).execute(sql`DELETE FROM provider_webhook_receipts WHERE received_at < ${before}`);
    const taken = await rows<{ one: number }>(
      writerOf(c),
      sql`INSERT INTO provider_webhook_receipts (provider, receipt_key, received_at) VALUES (${provider}, ${key}, ${now}) ON CONFLICT DO NOTHING RETURNING 1 AS one`,
    );
    return taken.length > 0;
  },
};
