import { and, asc, desc, eq, gt, gte, inArray, isNotNull, lt, notExists, sql } from 'drizzle-orm';
import { enrollments, paymentAuthorizations, payments, searchableBorrowers } from '../../../db/schema';
import type { Db, Orm } from '../../platform/db';
import { builtOnce, listOf, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { BorrowerToLink, DueRead, EnrollmentPaymentOf, EnrollmentStore, LedgerEntryOf, LedgerTotalsOf, SearchEntries } from './store';

// The enrollment's SQL (the writes of a monitor's state are in monitor-store.sqlite.ts). Raw cached statements
// where a path is hot: the monitoring due check runs every second against every borrower's index entry (bench:
// under 2 ms with 100,000 not due), and an enrollment of 1000 borrowers writes their search entries.

/** Monitored borrowers whose read is due, off enrollments_read_due_idx (the partial index of monitored rows). */
const dueReads = (db: Db, now: number, limit: number) =>
  db.$client
    .query<DueRead, [number, number]>(
      `SELECT id, lender_id AS lenderId, authorizer_unique_id AS aid, routing_number AS routing, sealed, metadata
         FROM enrollments INDEXED BY enrollments_read_due_idx
        WHERE state = 'monitored' AND next_read_at <= ? AND sealed IS NOT NULL
        ORDER BY next_read_at LIMIT ?`,
    )
    .all(now, limit);

// A page of borrowers read at once (the listings): the ids bound as one JSON array, so each read is one cached
// statement whatever the page's size. The index is named: without it the ledger's reads were planned on the
// lender's index (every entry of the lender) rather than on each borrower's entries.

/** The borrowers' ledger entries, each borrower's in the order posted. */
const ledgerEntriesAmong = (db: Db, lenderId: string, enrollmentIds: readonly string[]) =>
  db.$client
    .query<LedgerEntryOf, [string, string]>(
      `SELECT enrollment_id AS enrollmentId, reference, kind, amount_cents AS amountCents, at
         FROM ledger_entries INDEXED BY ledger_entries_enrollment_idx
        WHERE lender_id = ? AND enrollment_id IN (SELECT value FROM json_each(?))
        ORDER BY enrollment_id, id`,
    )
    .all(lenderId, JSON.stringify(enrollmentIds));

/** The borrowers' credited and reversed cents, summed in 64-bit integers and read as BigInt (exact). */
const ledgerTotalsAmong = (db: Db, lenderId: string, enrollmentIds: readonly string[]) =>
  db.$client
    .query<LedgerTotalsOf, [string, string]>(
      `SELECT enrollment_id AS enrollmentId,
              COALESCE(SUM(CASE WHEN kind = 'credit' THEN amount_cents END), 0) AS collected,
              COALESCE(SUM(CASE WHEN kind = 'reversal' THEN amount_cents END), 0) AS reversed
         FROM ledger_entries INDEXED BY ledger_entries_enrollment_idx
        WHERE lender_id = ? AND enrollment_id IN (SELECT value FROM json_each(?))
        GROUP BY enrollment_id`,
    )
    .safeIntegers(true)
    .all(lenderId, JSON.stringify(enrollmentIds));

/** The borrowers' payments, each borrower's oldest first, with the original's reference for reinitiations. */
const paymentsAmong = (db: Db, lenderId: string, enrollmentIds: readonly string[]) =>
  db.$client
    .query<EnrollmentPaymentOf, [string, string]>(
      `SELECT p.enrollment_id AS enrollmentId, p.reference, p.amount_cents AS amount, p.status, p.attempt, o.reference AS reinitiationOf,
              p.created_at AS createdAt, p.debit_on AS debitOn, p.reported_status AS reportedStatus, p.reported_return_code AS reportedReturnCode,
              p.reported_at AS reportedAt, p.report_hold AS reportHold, p.id, p.notice_class AS noticeClass, p.notice_needs AS noticeNeeds,
              p.notice_due_from AS noticeDueFrom, p.notice_due_by AS noticeDueBy, p.notice_sent_at AS noticeSentAt
         FROM payments p INDEXED BY payments_enrollment_idx LEFT JOIN payments o ON o.id = p.reinitiation_of
        WHERE p.enrollment_id IN (SELECT value FROM json_each(?2)) AND p.lender_id = ?1
        ORDER BY p.enrollment_id, p.created_at, p.id`,
    )
    .all(lenderId, JSON.stringify(enrollmentIds));

// Borrower search (search.ts, db/schema/search.ts): an entry is (hash, borrower) in one WITHOUT ROWID b-tree,
// and searchable_borrowers holds each borrower's hashes, so its own entries are found without an index of them.

/** A borrower's key id and hashes (12 bytes each, concatenated), or null when it has no search entries. */
const searchRowOf = (tx: Orm, lenderId: string, aid: string) =>
  tx.$client
    .query<{ keyId: string; hashes: Uint8Array }, [string, string]>('SELECT key_id AS keyId, hashes FROM searchable_borrowers WHERE lender_id = ? AND authorizer_unique_id = ?')
    .get(lenderId, aid);

/** Removes a borrower's entries (the hashes its row lists) and the row. */
function deleteSearchEntries(tx: Orm, lenderId: string, aid: string, hashes: Uint8Array, width: number): void {
  const del = tx.$client.query('DELETE FROM borrower_search WHERE hash = ? AND authorizer_unique_id = ?');
  for (let i = 0; i + width <= hashes.length; i += width) del.run(hashes.subarray(i, i + width), aid);
  tx.$client.query('DELETE FROM searchable_borrowers WHERE lender_id = ? AND authorizer_unique_id = ?').run(lenderId, aid);
}

const entriesSql: string[] = [];
const insertEntriesSql = (n: number) =>
  (entriesSql[n] ??= `INSERT OR IGNORE INTO borrower_search (hash, authorizer_unique_id) VALUES ${Array.from({ length: n }, () => '(?, ?)').join(', ')}`);

/**
 * A borrower's row and entries (the entries in one statement, one cached statement per count, at most five);
 * false, writing nothing, when the borrower already has a row.
 */
function insertSearchEntries(tx: Orm, lenderId: string, aid: string, keyId: string, hashes: Uint8Array[]): boolean {
  // Written even with no entries: the borrower is indexed under this key, and the start-up job leaves it be.
  const row = tx.$client
    .query('INSERT INTO searchable_borrowers (lender_id, authorizer_unique_id, key_id, hashes) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING')
    .run(lenderId, aid, keyId, Buffer.concat(hashes));
  if (row.changes === 0) return false;
  if (hashes.length > 0) {
    const args: (Uint8Array | string)[] = [];
    for (const h of hashes) args.push(h, aid);
    tx.$client.query(insertEntriesSql(hashes.length)).run(...args);
  }
  return true;
}

/** One borrower's entries replaced: a re-send whose hashes are the same under the same key writes nothing. */
function replaceSearchEntries(tx: Orm, e: SearchEntries, width: number): void {
  if (e.fresh && insertSearchEntries(tx, e.lenderId, e.aid, e.keyId, e.hashes)) return;
  // A re-send (or a row already there for a borrower said to be new): its entries replaced.
  const prior = searchRowOf(tx, e.lenderId, e.aid);
  if (prior) {
    if (prior.keyId === e.keyId && Buffer.from(prior.hashes).equals(Buffer.concat(e.hashes))) return;
    deleteSearchEntries(tx, e.lenderId, e.aid, prior.hashes, width);
  }
  insertSearchEntries(tx, e.lenderId, e.aid, e.keyId, e.hashes);
}

/**
 * The search's two queries. CROSS JOIN keeps the order written: the hash is sought first, then each borrower
 * found is checked to be the lender's; the other way round would walk every borrower of the lender.
 */
export const SEARCH_SQL = {
  byHash: `SELECT s.authorizer_unique_id AS aid FROM borrower_search s
             CROSS JOIN searchable_borrowers b ON b.lender_id = ?1 AND b.authorizer_unique_id = s.authorizer_unique_id
            WHERE s.hash = ?2 LIMIT ?3`,
  named: `SELECT a.authorizer_unique_id AS aid FROM borrower_search a
            CROSS JOIN borrower_search o ON o.hash = ?3 AND o.authorizer_unique_id = a.authorizer_unique_id
            CROSS JOIN searchable_borrowers b ON b.lender_id = ?1 AND b.authorizer_unique_id = a.authorizer_unique_id
           WHERE a.hash = ?2 LIMIT ?4`,
};

/** The lender's borrowers among some identifiers (the unique index on lender and identifier). */
const borrowersAmong = (db: Db, lenderId: string, aids: string[]) =>
  db.$client
    .query<{ id: string; aid: string }, [string, string]>(
      'SELECT id, authorizer_unique_id AS aid FROM enrollments WHERE lender_id = ? AND authorizer_unique_id IN (SELECT value FROM json_each(?))',
    )
    .all(lenderId, listOf(aids));

/** The results' batches that are monitoring batches. */
const monitoringBatchesAmong = (db: Db, batchIds: string[]) =>
  db.$client
    .query<{ id: string }, [string]>("SELECT id FROM batches WHERE id IN (SELECT value FROM json_each(?)) AND source = 'monitoring'")
    .all(listOf(batchIds))
    .map((b) => b.id);

/** A borrower's enrollment id (the flush's monitoring reads, one by one: a cached statement a row). */
const enrollmentIdOf = builtOnce((db: Db) =>
  (db as Orm)
    .select({ id: enrollments.id })
    .from(enrollments)
    .where(and(eq(enrollments.lenderId, sql.placeholder('lenderId')), eq(enrollments.authorizerUniqueId, sql.placeholder('aid'))))
    .prepare(),
);

export const sqliteEnrollmentStore: EnrollmentStore = {
  async recordReauthorization(c, v) {
    const db = writerOf(c);
    db.update(enrollments).set({ reauthorizedAt: v.at, reauthorization: v.record, updatedAt: v.now }).where(eq(enrollments.id, v.id)).run();
    db.insert(paymentAuthorizations).values({ id: v.authorizationId, lenderId: v.lenderId, enrollmentId: v.id, obtainedAt: v.at, record: v.record, recordedAt: v.now }).run();
  },
  async reauthorizationsOf(c, enrollmentId, limit) {
    const rows = readerOf(c)
      .select({ record: paymentAuthorizations.record })
      .from(paymentAuthorizations)
      .where(eq(paymentAuthorizations.enrollmentId, enrollmentId))
      .orderBy(desc(paymentAuthorizations.recordedAt), desc(paymentAuthorizations.id))
      .limit(limit)
      .all();
    return rows.map((r) => r.record);
  },
  async recordRegEElection(c, v) {
    writerOf(c).update(enrollments).set({ regEElection: v.election, updatedAt: v.now }).where(eq(enrollments.id, v.id)).run();
  },
  async recordRevocation(c, v) {
    writerOf(c)
      .$client.query(
        `UPDATE enrollments SET revocation_channel = CASE WHEN revoked_at IS NULL OR revoked_at < ?2 THEN ?3 ELSE revocation_channel END,
                revocation_ref = CASE WHEN revoked_at IS NULL OR revoked_at < ?2 THEN ?4 ELSE revocation_ref END,
                revoked_at = CASE WHEN revoked_at IS NULL OR revoked_at < ?2 THEN ?2 ELSE revoked_at END, updated_at = ?5
          WHERE id = ?1`,
      )
      .run(v.id, v.at, v.channel, v.ref, v.now);
  },
  async detailsOnAccount(c, accountId, after, limit) {
    return readerOf(c)
      .$client.query<{ id: string; lenderId: string; aid: string; sealed: string; routing: string | null }, [string, string, number]>(
        `SELECT id, lender_id AS lenderId, authorizer_unique_id AS aid, sealed, routing_number AS routing FROM enrollments INDEXED BY enrollments_bank_account_idx
          WHERE bank_account_id = ? AND sealed IS NOT NULL AND authorizer_unique_id > ? ORDER BY authorizer_unique_id LIMIT ?`,
      )
      .all(accountId, after, limit);
  },
  async correctDetails(c, v) {
    writerOf(c).$client.query('UPDATE enrollments SET sealed = ?, routing_number = ?, bank_name = ?, updated_at = ? WHERE id = ?').run(v.sealed, v.routing, v.bankName, v.now, v.id);
  },
  async moveToAccount(c, from, to, now) {
    writerOf(c).$client.query('UPDATE enrollments SET bank_account_id = ?, updated_at = ? WHERE bank_account_id = ?').run(to, now, from);
  },
  async dueReads(c, now, limit) {
    return dueReads(readerOf(c), now, limit);
  },
  async setNextReads(c, enrollmentIds, at) {
    if (enrollmentIds.length === 0) return;
    writerOf(c).$client.query('UPDATE enrollments SET next_read_at = ? WHERE id IN (SELECT value FROM json_each(?))').run(at, listOf(enrollmentIds));
  },
  async setNextReadEach(c, reads) {
    // A cached statement run a row: nothing to gain from one statement in process.
    const update = writerOf(c).$client.query<unknown, [number, string]>("UPDATE enrollments SET next_read_at = ? WHERE id = ? AND state = 'monitored'");
    for (const r of reads) update.run(r.at, r.enrollmentId);
  },
  async readNoLaterThan(c, enrollmentId, at) {
    writerOf(c)
      .$client.query("UPDATE enrollments SET next_read_at = ?1 WHERE id = ?2 AND state = 'monitored' AND (next_read_at IS NULL OR next_read_at > ?1)")
      .run(at, enrollmentId);
  },
  async setPayCycle(c, enrollmentId, cycle) {
    writerOf(c)
      .$client.query(
        `UPDATE enrollments SET pay_cycle_frequency = ?, pay_cycle_next_payday = ?, pay_cycle_confidence = ?, pay_cycle_source = ?, pay_cycle_at = ?,
                pay_cycle_alternative_frequency = ?, pay_cycle_alternative_next_payday = ?, pay_cycle_lands_early = ? WHERE id = ?`,
      )
      .run(
        cycle.frequency,
        cycle.nextPayday,
        cycle.confidence,
        cycle.source,
        cycle.at,
        cycle.alternative?.frequency ?? null,
        cycle.alternative?.nextPayday ?? null,
        cycle.landsEarly === undefined ? null : cycle.landsEarly ? 1 : 0,
        enrollmentId,
      );
  },
  async setPaymentsUsed(c, enrollmentId, n, now) {
    writerOf(c).$client.query('UPDATE enrollments SET payments_used = ?, updated_at = ? WHERE id = ?').run(n, now, enrollmentId);
  },
  async giveBackPresentment(c, enrollmentId, now) {
    writerOf(c).$client.query('UPDATE enrollments SET payments_used = MAX(payments_used - 1, 0), updated_at = ? WHERE id = ?').run(now, enrollmentId);
  },
  async monitoringBatchesAmong(c, batchIds) {
    return monitoringBatchesAmong(readerOf(c), batchIds);
  },
  async borrowersAmong(c, lenderId, aids) {
    return borrowersAmong(readerOf(c), lenderId, aids);
  },
  async enrollmentsOfReads(c, reads) {
    const find = enrollmentIdOf(readerOf(c));
    return reads.map((r) => find.get({ lenderId: r.lenderId, aid: r.authorizerUniqueId })?.id ?? null);
  },
  async setLastReads(c, reads) {
    // A cached statement run a row; the next read is written only where the cadence set one.
    const client = writerOf(c).$client;
    const last = client.query<unknown, [number | null, number, string]>('UPDATE enrollments SET last_read_cents = ?, last_read_at = ? WHERE id = ?');
    const both = client.query<unknown, [number | null, number, number, string]>(
      "UPDATE enrollments SET last_read_cents = ?1, last_read_at = ?2, next_read_at = CASE WHEN enrollments.state = 'monitored' THEN ?3 ELSE next_read_at END WHERE id = ?4",
    );
    for (const r of reads) {
      if (r.next === null) last.run(r.balanceCents, r.at, r.enrollmentId);
      else both.run(r.balanceCents, r.at, r.next, r.enrollmentId);
    }
  },
  async heldBorrowers(c, after, limit) {
    return readerOf(c)
      .select({ id: enrollments.id, lenderId: enrollments.lenderId, routing: enrollments.routingNumber })
      .from(enrollments)
      .where(and(eq(enrollments.state, 'held'), sql`${enrollments.sealed} IS NOT NULL`, gt(enrollments.id, after)))
      .orderBy(asc(enrollments.id))
      .limit(limit)
      .all();
  },
  async setBankName(c, enrollmentId, bankName) {
    writerOf(c).update(enrollments).set({ bankName }).where(eq(enrollments.id, enrollmentId)).run();
  },
  async enrollmentOf(c, lenderId, aid) {
    return readerOf(c)
      .select()
      .from(enrollments)
      .where(and(eq(enrollments.lenderId, lenderId), eq(enrollments.authorizerUniqueId, aid)))
      .get();
  },
  async enrollmentsPage(c, p) {
    const conds = [eq(enrollments.lenderId, p.lenderId), gt(enrollments.authorizerUniqueId, p.after)];
    if (p.prefix) conds.push(gte(enrollments.authorizerUniqueId, p.prefix.from), lt(enrollments.authorizerUniqueId, p.prefix.to));
    if (p.state) conds.push(eq(enrollments.state, p.state));
    if (p.blockedReason) conds.push(eq(enrollments.blockedReason, p.blockedReason));
    return readerOf(c).select().from(enrollments).where(and(...conds)).orderBy(asc(enrollments.authorizerUniqueId)).limit(p.limit).all();
  },
  async eraseBorrowerData(c, enrollmentIds, now) {
    if (enrollmentIds.length === 0) return;
    writerOf(c)
      .update(enrollments)
      .set({ sealed: null, metadata: null, cardTokenSealed: null, cardLast4: null, cardBrand: null, bankAccountId: null, erasedAt: now, updatedAt: now })
      .where(inArray(enrollments.id, enrollmentIds))
      .run();
  },
  async ledgerEntriesAmong(c, lenderId, enrollmentIds) {
    return enrollmentIds.length === 0 ? [] : ledgerEntriesAmong(readerOf(c), lenderId, enrollmentIds);
  },
  async ledgerTotalsAmong(c, lenderId, enrollmentIds) {
    return enrollmentIds.length === 0 ? [] : ledgerTotalsAmong(readerOf(c), lenderId, enrollmentIds);
  },
  async paymentsAmong(c, lenderId, enrollmentIds) {
    return enrollmentIds.length === 0 ? [] : paymentsAmong(readerOf(c), lenderId, enrollmentIds);
  },
  async replaceSearchEntries(c, entries, width) {
    const tx = writerOf(c);
    for (const e of entries) replaceSearchEntries(tx, e, width);
  },
  async removeSearchEntries(c, lenderId, aids, width) {
    const tx = writerOf(c);
    for (const aid of aids) {
      const prior = searchRowOf(tx, lenderId, aid);
      if (prior) deleteSearchEntries(tx, lenderId, aid, prior.hashes, width);
    }
  },
  async borrowersWith(c, lenderId, hash, limit) {
    return readerOf(c).$client.query<{ aid: string }, [string, Uint8Array, number]>(SEARCH_SQL.byHash).all(lenderId, hash, limit);
  },
  async borrowersNamed(c, lenderId, one, other, limit) {
    return readerOf(c).$client.query<{ aid: string }, [string, Uint8Array, Uint8Array, number]>(SEARCH_SQL.named).all(lenderId, one, other, limit);
  },
  async borrowersByReference(c, lenderId, prefix, limit) {
    return readerOf(c)
      .select({ aid: payments.authorizerUniqueId })
      .from(payments)
      .where(and(eq(payments.lenderId, lenderId), gte(payments.reference, prefix.from), lt(payments.reference, prefix.to)))
      .orderBy(asc(payments.reference))
      .limit(limit)
      .all();
  },
  async borrowersByIdPrefix(c, lenderId, prefix, limit) {
    return readerOf(c)
      .select({ aid: enrollments.authorizerUniqueId })
      .from(enrollments)
      .where(and(eq(enrollments.lenderId, lenderId), gte(enrollments.authorizerUniqueId, prefix.from), lt(enrollments.authorizerUniqueId, prefix.to)))
      .orderBy(asc(enrollments.authorizerUniqueId))
      .limit(limit)
      .all();
  },
  async unsearchedBorrowers(c, after, keyId, limit) {
    const db = readerOf(c);
    return db
      .select({ id: enrollments.id, lenderId: enrollments.lenderId, aid: enrollments.authorizerUniqueId, sealed: enrollments.sealed, cardLast4: enrollments.cardLast4 })
      .from(enrollments)
      .where(
        and(
          gt(enrollments.id, after),
          isNotNull(enrollments.sealed),
          notExists(
            db
              .select({ one: sql`1` })
              .from(searchableBorrowers)
              .where(
                and(
                  eq(searchableBorrowers.lenderId, enrollments.lenderId),
                  eq(searchableBorrowers.authorizerUniqueId, enrollments.authorizerUniqueId),
                  eq(searchableBorrowers.keyId, keyId),
                ),
              ),
          ),
        ),
      )
      .orderBy(asc(enrollments.id))
      .limit(limit)
      .all();
  },
  async unlinkedBorrowers(c, after, limit) {
    return readerOf(c)
      .$client.query<BorrowerToLink, [string, number]>(
        `SELECT id, lender_id AS lenderId, rail, routing_number AS routing, sealed, bank_account_id AS bankAccountId
           FROM enrollments INDEXED BY enrollments_unlinked_idx
          WHERE bank_account_id IS NULL AND rail = 'ach' AND sealed IS NOT NULL AND id > ? ORDER BY id LIMIT ?`,
      )
      .all(after, limit);
  },
  async borrowerToLink(c, enrollmentId) {
    return (
      readerOf(c)
        .$client.query<BorrowerToLink, [string]>(
          'SELECT id, lender_id AS lenderId, rail, routing_number AS routing, sealed, bank_account_id AS bankAccountId FROM enrollments WHERE id = ?',
        )
        .get(enrollmentId) ?? undefined
    );
  },
  async linkBankAccounts(c, links) {
    const link = writerOf(c).$client.query('UPDATE enrollments SET bank_account_id = ? WHERE id = ? AND bank_account_id IS NULL');
    for (const l of links) link.run(l.bankAccountId, l.id);
  },
  async serializeBorrowers() {
    // One writer at a time: the transaction that calls this is alone already.
  },
};
