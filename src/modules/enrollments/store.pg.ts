import { and, asc, desc, eq, gt, gte, isNotNull, isNull, lt, lte, notExists, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { batches, enrollments, ledgerEntries, paymentAuthorizations, payments, searchableBorrowers } from '../../../db/schema-pg';
import type { PgDb } from '../../platform/pg';
import { inList, inTransaction, listOf, readerOf, rows, writerOf } from '../../platform/sql/pg';
import type { TxCtx } from '../../platform/store';
import type { Enrollment } from './borrower';
import type { DueRead, EnrollmentStore, SearchEntries } from './store';

// The enrollment's SQL on PostgreSQL (store.sqlite.ts is the SQLite one, and says why each query is shaped as it
// is). Transactions run side by side here, so what SQLite's single writer gave for free is asked for:
// - a lender's change to its borrowers (enrollment, removal, erasure, a read now) first takes the advisory
//   locks of their buckets (serializeBorrowers), so two requests about one borrower run one after the other,
//   a borrower that does not exist yet included;
// - the due check, read inside its transaction, claims the rows it returns (FOR NO KEY UPDATE SKIP LOCKED): two
//   ticks, or two replicas, never queue the same read;
// - the start-up search job locks the borrowers it indexes, so it never indexes a borrower erased meanwhile.
// Lists of values are bound as one array each (`= ANY`, `unnest`): a 1000-borrower enrollment is a few
// statements, not thousands.


/**
 * Buckets of a lender's borrowers for serializeBorrowers: few enough that a 1000-borrower request takes at most
 * this many advisory locks (each is a slot of the server's lock table), many enough that requests about
 * different borrowers rarely wait on each other.
 */
const BORROWER_BUCKETS = 64;

/**
 * The advisory locks of the buckets of these borrowers, taken in the order of their keys, in one statement: every
 * caller takes them in the same order, so two requests never wait on each other in a cycle.
 */
async function lockBorrowers(c: TxCtx, lenderId: string, aids: readonly string[]): Promise<void> {
  if (aids.length === 0) return;
  await writerOf(c).execute(sql`
    SELECT pg_advisory_xact_lock(k) FROM (
      SELECT DISTINCT hashtextextended('enrollment-borrowers' || chr(31) || ${lenderId}::text || chr(31) || (hashtextextended(a, 0) & ${BORROWER_BUCKETS - 1})::text, 0) AS k
        FROM unnest(${listOf(aids)}::text[]) AS a
       ORDER BY k) AS keys`);
}

const keyOf = (e: { lenderId: string; aid: string }) => `${e.lenderId}\u001f${e.aid}`;

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** The search entries (hash, borrower) of rows of searchable_borrowers, split from their concatenated hashes. */
const entriesOfRows = (width: number, where: ReturnType<typeof sql>) => sql`
  SELECT substring(b.hashes FROM g * ${width}::int + 1 FOR ${width}::int) AS hash, b.authorizer_unique_id AS aid
    FROM searchable_borrowers b, generate_series(0, length(b.hashes) / ${width}::int - 1) AS g
   WHERE ${where}`;

/** The borrowers' search rows and their entries removed (a replacement, or an erasure). */
async function deleteSearchRows(tx: PgDb, lenders: string[], aids: string[], width: number, erasing: boolean): Promise<void> {
  if (aids.length === 0) return;
  const these = sql`(b.lender_id, b.authorizer_unique_id) IN (SELECT * FROM unnest(${listOf(lenders)}::text[], ${listOf(aids)}::text[]))`;
  await tx.execute(sql`
    DELETE FROM borrower_search s USING (${entriesOfRows(width, these)}) AS d
     WHERE s.hash = d.hash AND s.authorizer_unique_id = d.aid`);
  const rowsOf = sql`(lender_id, authorizer_unique_id) IN (SELECT * FROM unnest(${listOf(lenders)}::text[], ${listOf(aids)}::text[]))`;
  // At erasure the hashes are overwritten before the row goes, so no version of it this transaction writes holds
  // them. The versions before it stay in the table's pages until VACUUM reclaims them (PostgreSQL has no
  // secure_delete); an entry of borrower_search is its key, and is deleted only.
  if (erasing) await tx.execute(sql`UPDATE searchable_borrowers SET hashes = ''::bytea WHERE ${rowsOf}`);
  await tx.execute(sql`DELETE FROM searchable_borrowers WHERE ${rowsOf}`);
}

/** Borrowers' rows and entries inserted; returns the borrowers whose row was written (those without one already). */
async function insertSearchRows(tx: PgDb, entries: readonly SearchEntries[]): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const inserted = await rows<{ lender_id: string; aid: string }>(
    tx,
    sql`INSERT INTO searchable_borrowers (lender_id, authorizer_unique_id, key_id, hashes)
        SELECT l, a, k, decode(h, 'hex')
          FROM unnest(${listOf(entries.map((e) => e.lenderId))}::text[], ${listOf(entries.map((e) => e.aid))}::text[],
                      ${listOf(entries.map((e) => e.keyId))}::text[], ${listOf(entries.map((e) => e.hashes.map(hex).join('')))}::text[]) AS t(l, a, k, h)
        ON CONFLICT DO NOTHING
        RETURNING lender_id, authorizer_unique_id AS aid`,
  );
  const written = new Set(inserted.map((r) => `${r.lender_id}\u001f${r.aid}`));
  const hashes: string[] = [];
  const aids: string[] = [];
  for (const e of entries) {
    if (!written.has(keyOf(e))) continue;
    for (const h of e.hashes) {
      hashes.push(hex(h));
      aids.push(e.aid);
    }
  }
  if (hashes.length > 0) {
    await tx.execute(sql`
      INSERT INTO borrower_search (hash, authorizer_unique_id)
      SELECT decode(h, 'hex'), a FROM unnest(${listOf(hashes)}::text[], ${listOf(aids)}::text[]) AS t(h, a)
      ON CONFLICT DO NOTHING`);
  }
  return written;
}

/**
 * Borrowers' entries replaced, as store.sqlite.ts does it one borrower at a time: a fresh borrower's row and
 * entries inserted; a re-send (or a fresh borrower with a row already) compared with its row, left as it is
 * when the key and the hashes are the same, else its entries removed and written again.
 */
async function replaceSearchEntries(tx: PgDb, entries: readonly SearchEntries[], width: number): Promise<void> {
  const done = await insertSearchRows(tx, entries.filter((e) => e.fresh));
  const rest = entries.filter((e) => !done.has(keyOf(e)));
  if (rest.length === 0) return;
  const priors = await rows<{ lender_id: string; aid: string; key_id: string; hashes: string }>(
    tx,
    sql`SELECT lender_id, authorizer_unique_id AS aid, key_id, encode(hashes, 'hex') AS hashes FROM searchable_borrowers
         WHERE (lender_id, authorizer_unique_id) IN (SELECT * FROM unnest(${listOf(rest.map((e) => e.lenderId))}::text[], ${listOf(rest.map((e) => e.aid))}::text[]))`,
  );
  const prior = new Map(priors.map((p) => [`${p.lender_id}\u001f${p.aid}`, p]));
  const changed = rest.filter((e) => {
    const p = prior.get(keyOf(e));
    return !p || p.key_id !== e.keyId || p.hashes !== e.hashes.map(hex).join('');
  });
  const replaced = changed.filter((e) => prior.has(keyOf(e)));
  await deleteSearchRows(tx, replaced.map((e) => e.lenderId), replaced.map((e) => e.aid), width, false);
  await insertSearchRows(tx, changed);
}

/** A reinitiation's original, for a borrower's payments. */
const original = alias(payments, 'original');

/** A borrower as linking to its bank account reads it. */
const TO_LINK = {
  id: enrollments.id,
  lenderId: enrollments.lenderId,
  rail: enrollments.rail,
  routing: enrollments.routingNumber,
  sealed: enrollments.sealed,
  bankAccountId: enrollments.bankAccountId,
};

export const pgEnrollmentStore: EnrollmentStore = {
  async recordReauthorization(c, v) {
    const db = writerOf(c);
    await db.update(enrollments).set({ reauthorizedAt: v.at, reauthorization: v.record, updatedAt: v.now }).where(eq(enrollments.id, v.id));
    await db.insert(paymentAuthorizations).values({ id: v.authorizationId, lenderId: v.lenderId, enrollmentId: v.id, obtainedAt: v.at, record: v.record, recordedAt: v.now });
  },
  async reauthorizationsOf(c, enrollmentId, limit) {
    const rows = await readerOf(c)
      .select({ record: paymentAuthorizations.record })
      .from(paymentAuthorizations)
      .where(eq(paymentAuthorizations.enrollmentId, enrollmentId))
      .orderBy(desc(paymentAuthorizations.recordedAt), desc(paymentAuthorizations.id))
      .limit(limit);
    return rows.map((r) => r.record);
  },
  async recordRegEElection(c, v) {
    await writerOf(c).update(enrollments).set({ regEElection: v.election, updatedAt: v.now }).where(eq(enrollments.id, v.id));
  },
  async recordRevocation(c, v) {
    const later = sql`(revoked_at IS NULL OR revoked_at < ${v.at}::bigint)`;
    await writerOf(c).execute(sql`
      UPDATE enrollments SET revocation_channel = CASE WHEN ${later} THEN ${v.channel}::text ELSE revocation_channel END,
             revocation_ref = CASE WHEN ${later} THEN ${v.ref}::text ELSE revocation_ref END,
             revoked_at = CASE WHEN ${later} THEN ${v.at}::bigint ELSE revoked_at END, updated_at = ${v.now}
       WHERE id = ${v.id}`);
  },
  async detailsOnAccount(c, accountId, after, limit) {
    return rows<{ id: string; lenderId: string; aid: string; sealed: string; routing: string | null }>(
      readerOf(c),
      sql`SELECT id, lender_id AS "lenderId", authorizer_unique_id AS aid, sealed, routing_number AS routing FROM enrollments
           WHERE bank_account_id = ${accountId} AND sealed IS NOT NULL AND authorizer_unique_id > ${after} ORDER BY authorizer_unique_id LIMIT ${limit}`,
    );
  },
  async correctDetails(c, v) {
    await writerOf(c).execute(sql`UPDATE enrollments SET sealed = ${v.sealed}, routing_number = ${v.routing}, bank_name = ${v.bankName}, updated_at = ${v.now} WHERE id = ${v.id}`);
  },
  async moveToAccount(c, from, to, now) {
    await writerOf(c).execute(sql`UPDATE enrollments SET bank_account_id = ${to}, updated_at = ${now} WHERE bank_account_id = ${from}`);
  },
  async dueReads(c, now, limit) {
    const q = readerOf(c)
      .select({
        id: enrollments.id,
        lenderId: enrollments.lenderId,
        aid: enrollments.authorizerUniqueId,
        routing: enrollments.routingNumber,
        sealed: enrollments.sealed,
        metadata: enrollments.metadata,
      })
      .from(enrollments)
      .where(and(eq(enrollments.state, 'monitored'), lte(enrollments.nextReadAt, now), isNotNull(enrollments.sealed)))
      // In the due index's order alone, as on SQLite: a second key (the id) had the rows of one due time read
      // whole and sorted before the first were locked (an incremental sort), for every slice of the due check.
      .orderBy(asc(enrollments.nextReadAt))
      .limit(limit);
    // In its transaction, the due check claims what it reads: a row another transaction holds is left for the
    // next tick, and a row moved on meanwhile is read again and left out.
    return (await (inTransaction(c) ? q.for('no key update', { skipLocked: true }) : q)) as DueRead[];
  },
  async setNextReads(c, enrollmentIds, at) {
    if (enrollmentIds.length === 0) return;
    await writerOf(c).update(enrollments).set({ nextReadAt: at }).where(inList(enrollments.id, enrollmentIds));
  },
  async setNextReadEach(c, reads) {
    if (reads.length === 0) return;
    // One statement for them all, each borrower once (the later), in id order.
    const these = [...new Map(reads.map((r) => [r.enrollmentId, r.at])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    await writerOf(c).execute(sql`
      UPDATE enrollments AS e SET next_read_at = v.at
        FROM unnest(${listOf(these.map(([id]) => id))}::text[], ${listOf(these.map(([, at]) => at))}::bigint[]) AS v(id, at)
       WHERE e.id = v.id AND e.state = 'monitored'`);
  },
  async readNoLaterThan(c, enrollmentId, at) {
    await writerOf(c)
      .update(enrollments)
      .set({ nextReadAt: at })
      .where(and(eq(enrollments.id, enrollmentId), eq(enrollments.state, 'monitored'), or(isNull(enrollments.nextReadAt), gt(enrollments.nextReadAt, at))));
  },
  async setPayCycle(c, enrollmentId, cycle) {
    await writerOf(c)
      .update(enrollments)
      .set({
        payCycleFrequency: cycle.frequency,
        payCycleNextPayday: cycle.nextPayday,
        payCycleConfidence: cycle.confidence,
        payCycleSource: cycle.source,
        payCycleAt: cycle.at,
        payCycleAlternativeFrequency: cycle.alternative?.frequency ?? null,
        payCycleAlternativeNextPayday: cycle.alternative?.nextPayday ?? null,
        payCycleLandsEarly: cycle.landsEarly === undefined ? null : cycle.landsEarly,
      })
      .where(eq(enrollments.id, enrollmentId));
  },
  async setPaymentsUsed(c, enrollmentId, n, now) {
    await writerOf(c).update(enrollments).set({ paymentsUsed: n, updatedAt: now }).where(eq(enrollments.id, enrollmentId));
  },
  async giveBackPresentment(c, enrollmentId, now) {
    await writerOf(c)
      .update(enrollments)
      .set({ paymentsUsed: sql`GREATEST(${enrollments.paymentsUsed} - 1, 0)`, updatedAt: now })
      .where(eq(enrollments.id, enrollmentId));
  },
  async monitoringBatchesAmong(c, batchIds) {
    if (batchIds.length === 0) return [];
    const found = await readerOf(c)
      .select({ id: batches.id })
      .from(batches)
      .where(and(inList(batches.id, batchIds), eq(batches.source, 'monitoring')));
    return found.map((b) => b.id);
  },
  async borrowersAmong(c, lenderId, aids) {
    if (aids.length === 0) return [];
    return readerOf(c)
      .select({ id: enrollments.id, aid: enrollments.authorizerUniqueId })
      .from(enrollments)
      .where(and(eq(enrollments.lenderId, lenderId), inList(enrollments.authorizerUniqueId, aids)));
  },
  async enrollmentsOfReads(c, reads) {
    if (reads.length === 0) return [];
    const keyOf = (lenderId: string, aid: string) => `${lenderId}\u0000${aid}`;
    const these = [...new Map(reads.map((r) => [keyOf(r.lenderId, r.authorizerUniqueId), r])).values()];
    const found = await rows<{ id: string; lenderId: string; aid: string }>(
      writerOf(c),
      sql`SELECT e.id, e.lender_id AS "lenderId", e.authorizer_unique_id AS aid
            FROM enrollments e JOIN unnest(${listOf(these.map((r) => r.lenderId))}::text[], ${listOf(these.map((r) => r.authorizerUniqueId))}::text[]) AS v(lender_id, aid)
              ON e.lender_id = v.lender_id AND e.authorizer_unique_id = v.aid`,
    );
    const ids = new Map(found.map((u) => [keyOf(u.lenderId, u.aid), u.id]));
    return reads.map((r) => ids.get(keyOf(r.lenderId, r.authorizerUniqueId)) ?? null);
  },
  async setLastReads(c, reads) {
    if (reads.length === 0) return;
    // One statement for them all, each borrower once (the later), in id order; the next read is left as it is
    // where none is given or the borrower is no longer monitored (the same value: PostgreSQL can keep the
    // update on its page, as no indexed column changes).
    const these = [...new Map(reads.map((r) => [r.enrollmentId, r])).values()].sort((a, b) => (a.enrollmentId < b.enrollmentId ? -1 : a.enrollmentId > b.enrollmentId ? 1 : 0));
    await writerOf(c).execute(sql`
      UPDATE enrollments AS e SET last_read_cents = v.cents, last_read_at = v.at,
             next_read_at = CASE WHEN v.next IS NOT NULL AND e.state = 'monitored' THEN v.next ELSE e.next_read_at END
        FROM unnest(${listOf(these.map((r) => r.enrollmentId))}::text[], ${listOf(these.map((r) => r.balanceCents))}::bigint[],
                    ${listOf(these.map((r) => r.at))}::bigint[], ${listOf(these.map((r) => r.next))}::bigint[]) AS v(id, cents, at, next)
       WHERE e.id = v.id`);
  },
  async heldBorrowers(c, after, limit) {
    return readerOf(c)
      .select({ id: enrollments.id, lenderId: enrollments.lenderId, routing: enrollments.routingNumber })
      .from(enrollments)
      .where(and(eq(enrollments.state, 'held'), isNotNull(enrollments.sealed), gt(enrollments.id, after)))
      .orderBy(asc(enrollments.id))
      .limit(limit);
  },
  async setBankName(c, enrollmentId, bankName) {
    await writerOf(c).update(enrollments).set({ bankName }).where(eq(enrollments.id, enrollmentId));
  },
  async enrollmentOf(c, lenderId, aid) {
    const q = readerOf(c)
      .select()
      .from(enrollments)
      .where(and(eq(enrollments.lenderId, lenderId), eq(enrollments.authorizerUniqueId, aid)));
    // Read inside a transaction (a read now), the borrower is held until it ends: the due check skips it meanwhile.
    const [e] = await (inTransaction(c) ? q.for('no key update') : q);
    return e as Enrollment | undefined;
  },
  async enrollmentsPage(c, p) {
    const conds = [eq(enrollments.lenderId, p.lenderId), gt(enrollments.authorizerUniqueId, p.after)];
    if (p.prefix) conds.push(gte(enrollments.authorizerUniqueId, p.prefix.from), lt(enrollments.authorizerUniqueId, p.prefix.to));
    if (p.state) conds.push(eq(enrollments.state, p.state));
    if (p.blockedReason) conds.push(eq(enrollments.blockedReason, p.blockedReason));
    return (await readerOf(c)
      .select()
      .from(enrollments)
      .where(and(...conds))
      .orderBy(asc(enrollments.authorizerUniqueId))
      .limit(p.limit)) as Enrollment[];
  },
  async eraseBorrowerData(c, enrollmentIds, now) {
    if (enrollmentIds.length === 0) return;
    await writerOf(c)
      .update(enrollments)
      .set({ sealed: null, metadata: null, cardTokenSealed: null, cardLast4: null, cardBrand: null, bankAccountId: null, erasedAt: now, updatedAt: now })
      .where(inList(enrollments.id, enrollmentIds));
  },
  async ledgerEntriesAmong(c, lenderId, enrollmentIds) {
    if (enrollmentIds.length === 0) return [];
    return readerOf(c)
      .select({
        enrollmentId: ledgerEntries.enrollmentId,
        reference: ledgerEntries.reference,
        kind: ledgerEntries.kind,
        amountCents: ledgerEntries.amountCents,
        at: ledgerEntries.at,
      })
      .from(ledgerEntries)
      .where(and(eq(ledgerEntries.lenderId, lenderId), sql`${ledgerEntries.enrollmentId} = ANY(${listOf(enrollmentIds)}::text[])`))
      .orderBy(asc(ledgerEntries.enrollmentId), asc(ledgerEntries.id));
  },
  async ledgerTotalsAmong(c, lenderId, enrollmentIds) {
    if (enrollmentIds.length === 0) return [];
    // Summed by PostgreSQL (numeric: exact) and read as text, then BigInt: never a floating-point number.
    const found = await rows<{ enrollmentId: string; collected: string; reversed: string }>(
      readerOf(c),
      sql`SELECT enrollment_id AS "enrollmentId",
                 COALESCE(SUM(amount_cents) FILTER (WHERE kind = 'credit'), 0)::text AS collected,
                 COALESCE(SUM(amount_cents) FILTER (WHERE kind = 'reversal'), 0)::text AS reversed
            FROM ledger_entries WHERE lender_id = ${lenderId} AND enrollment_id = ANY(${listOf(enrollmentIds)}::text[])
           GROUP BY enrollment_id`,
    );
    return found.map((t) => ({ enrollmentId: t.enrollmentId, collected: BigInt(t.collected), reversed: BigInt(t.reversed) }));
  },
  async paymentsAmong(c, lenderId, enrollmentIds) {
    if (enrollmentIds.length === 0) return [];
    return readerOf(c)
      .select({
        enrollmentId: payments.enrollmentId,
        reference: payments.reference,
        amount: payments.amountCents,
        status: payments.status,
        attempt: payments.attempt,
        reinitiationOf: original.reference,
        createdAt: payments.createdAt,
        debitOn: payments.debitOn,
        reportedStatus: payments.reportedStatus,
        reportedReturnCode: payments.reportedReturnCode,
        reportedAt: payments.reportedAt,
        reportHold: payments.reportHold,
        id: payments.id,
        noticeClass: payments.noticeClass,
        noticeNeeds: payments.noticeNeeds,
        noticeDueFrom: payments.noticeDueFrom,
        noticeDueBy: payments.noticeDueBy,
        noticeSentAt: payments.noticeSentAt,
      })
      .from(payments)
      .leftJoin(original, eq(original.id, payments.reinitiationOf))
      .where(and(sql`${payments.enrollmentId} = ANY(${listOf(enrollmentIds)}::text[])`, eq(payments.lenderId, lenderId)))
      .orderBy(asc(payments.enrollmentId), asc(payments.createdAt), asc(payments.id));
  },
  async replaceSearchEntries(c, entries, width) {
    if (entries.length > 0) await replaceSearchEntries(writerOf(c), entries, width);
  },
  async removeSearchEntries(c, lenderId, aids, width) {
    if (aids.length === 0) return;
    await deleteSearchRows(writerOf(c), aids.map(() => lenderId), [...aids], width, true);
  },
  async borrowersWith(c, lenderId, hash, limit) {
    return rows<{ aid: string }>(
      readerOf(c),
      sql`SELECT s.authorizer_unique_id AS aid FROM borrower_search s
            JOIN searchable_borrowers b ON b.lender_id = ${lenderId} AND b.authorizer_unique_id = s.authorizer_unique_id
           WHERE s.hash = ${Buffer.from(hash)} LIMIT ${limit}`,
    );
  },
  async borrowersNamed(c, lenderId, one, other, limit) {
    return rows<{ aid: string }>(
      readerOf(c),
      sql`SELECT a.authorizer_unique_id AS aid FROM borrower_search a
            JOIN borrower_search o ON o.hash = ${Buffer.from(other)} AND o.authorizer_unique_id = a.authorizer_unique_id
            JOIN searchable_borrowers b ON b.lender_id = ${lenderId} AND b.authorizer_unique_id = a.authorizer_unique_id
           WHERE a.hash = ${Buffer.from(one)} LIMIT ${limit}`,
    );
  },
  async borrowersByReference(c, lenderId, prefix, limit) {
    return readerOf(c)
      .select({ aid: payments.authorizerUniqueId })
      .from(payments)
      .where(and(eq(payments.lenderId, lenderId), gte(payments.reference, prefix.from), lt(payments.reference, prefix.to)))
      .orderBy(asc(payments.reference))
      .limit(limit);
  },
  async borrowersByIdPrefix(c, lenderId, prefix, limit) {
    return readerOf(c)
      .select({ aid: enrollments.authorizerUniqueId })
      .from(enrollments)
      .where(and(eq(enrollments.lenderId, lenderId), gte(enrollments.authorizerUniqueId, prefix.from), lt(enrollments.authorizerUniqueId, prefix.to)))
      .orderBy(asc(enrollments.authorizerUniqueId))
      .limit(limit);
  },
  async unsearchedBorrowers(c, after, keyId, limit) {
    const db = readerOf(c);
    const q = db
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
      .limit(limit);
    // In the indexing transaction, the borrowers are locked while they are indexed: one being erased or re-sent is
    // skipped (its own transaction writes or removes its entries), and one locked first waits for this one.
    return inTransaction(c) ? q.for('no key update', { of: enrollments, skipLocked: true }) : q;
  },
  async unlinkedBorrowers(c, after, limit) {
    const q = readerOf(c)
      .select(TO_LINK)
      .from(enrollments)
      .where(and(sql`${enrollments.bankAccountId} IS NULL AND ${enrollments.rail} = 'ach' AND ${enrollments.sealed} IS NOT NULL`, gt(enrollments.id, after)))
      .orderBy(asc(enrollments.id))
      .limit(limit);
    // In the linking transaction, the borrowers are locked while they are linked: one being erased or re-sent is
    // skipped (its own transaction links or unlinks it), and one locked first waits for this one.
    return inTransaction(c) ? q.for('no key update', { of: enrollments, skipLocked: true }) : q;
  },
  async borrowerToLink(c, enrollmentId) {
    const [r] = await readerOf(c).select(TO_LINK).from(enrollments).where(eq(enrollments.id, enrollmentId));
    return r;
  },
  async linkBankAccounts(c, links) {
    if (links.length === 0) return;
    await writerOf(c).execute(sql`
      UPDATE enrollments e SET bank_account_id = s.account
        FROM unnest(${listOf(links.map((l) => l.id))}::text[], ${listOf(links.map((l) => l.bankAccountId))}::text[]) AS s(id, account)
       WHERE e.id = s.id AND e.bank_account_id IS NULL`);
  },
  async serializeBorrowers(c, lenderId, aids) {
    await lockBorrowers(c, lenderId, aids);
  },
};
