import { sql, type SQL } from 'drizzle-orm';
import type { Db, Orm } from '../../platform/db';
import { listOf, lockFor, num, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { FraudStore } from './store';
import { alertCountOf, alertRowOf, dispositionRowOf, fraudStatements, policyRowOf, returnContextOf, reviewRowOf } from './store-shared';

// Fraud monitoring's SQL on SQLite (store.pg.ts is the PostgreSQL one): the shared statements, lists bound as
// one JSON parameter. One writer at a time: an alert raised twice for one fact is one insert that does nothing
// the second time, and a second final disposition finds the first.

const q = fraudStatements({
  inTexts: (values) => sql`IN (SELECT value FROM json_each(${listOf(values)}))`,
  channelOf: (column) => `CASE WHEN json_valid(${column}) THEN json_extract(${column}, '$.channel') END`,
  pairs: (values) => sql`(SELECT json_extract(value, '$[0]') AS account, json_extract(value, '$[1]') AS but, CAST(key AS INTEGER) AS i FROM json_each(${listOf(values)})) AS x`,
});
const rowsOf = <T>(db: Db | Orm, query: SQL): T[] => db.all<T>(query);
const countOf = (db: Db | Orm, query: SQL): number => num(rowsOf<{ n: number }>(db, query)[0]?.n ?? 0);

export const sqliteFraudStore: FraudStore = {
  async latestPolicy(c, lenderId) {
    const [r] = rowsOf<Parameters<typeof policyRowOf>[0]>(readerOf(c), q.latestPolicy(lenderId));
    return r ? policyRowOf(r) : undefined;
  },
  async serializePolicy(c, lenderId) {
    await lockFor(c, 'fraud-policy', lenderId);
  },
  async insertPolicy(c, row) {
    writerOf(c).run(q.insertPolicy(row));
  },
  async insertAlert(c, row) {
    return rowsOf(writerOf(c), q.insertAlert(row)).length === 1;
  },
  async alertOf(c, lenderId, id) {
    const [r] = rowsOf<Parameters<typeof alertRowOf>[0]>(readerOf(c), q.alertOf(lenderId, id));
    return r ? alertRowOf(r) : undefined;
  },
  async alertsPage(c, query) {
    return rowsOf<Parameters<typeof alertRowOf>[0]>(readerOf(c), q.alertsPage(query)).map(alertRowOf);
  },
  async dispositionsOf(c, alertIds) {
    if (alertIds.length === 0) return [];
    return rowsOf<Parameters<typeof dispositionRowOf>[0]>(readerOf(c), q.dispositionsOf(alertIds)).map(dispositionRowOf);
  },
  async serializeAlert(c, alertId) {
    await lockFor(c, 'fraud-alert', alertId);
  },
  async insertDisposition(c, row) {
    return rowsOf(writerOf(c), q.insertDisposition(row)).length === 1;
  },
  async setAlertState(c, v) {
    return rowsOf(writerOf(c), q.setAlertState(v)).length === 1;
  },
  async holdsDebit(c, enrollmentId) {
    return rowsOf(readerOf(c), q.holdsDebit(enrollmentId)).length === 1;
  },
  async debitFacts(c, v) {
    const db = readerOf(c);
    const [sw] = rowsOf<{ id: string; at: number }>(db, q.lastSwitch(v.enrollmentId));
    return {
      earlierToAccount: rowsOf(db, q.earlierToAccount(v.enrollmentId, v.bankAccountId, v.paymentId)).length,
      borrowerAmounts: rowsOf<{ amountCents: number }>(db, q.borrowerAmounts(v.enrollmentId, v.paymentId)).map((r) => num(r.amountCents)),
      lenderAmounts: rowsOf<{ amountCents: number }>(db, q.lenderAmounts(v.lenderId, v.paymentId)).map((r) => num(r.amountCents)),
      debitsToAccount: v.bankAccountId === null ? 0 : countOf(db, q.debitsToAccount(v.bankAccountId, v.since, v.cap)),
      lastSwitch: sw ? { id: sw.id, at: num(sw.at) } : null,
    };
  },
  async accountSharing(c, lenderId, accounts, cap) {
    if (accounts.length === 0) return [];
    const db = readerOf(c);
    const found = rowsOf<{ i: number; borrowers: number; firstId: string | null }>(db, q.sharing(lenderId, accounts, cap));
    const firsts = [...new Set(found.flatMap((r) => (r.firstId ? [r.firstId] : [])))];
    const sealed = new Map(firsts.length > 0 ? rowsOf<{ id: string; sealed: string | null }>(db, q.sealedOf(firsts)).map((r) => [r.id, r.sealed]) : []);
    return found.map((r) => ({ accountId: accounts[num(r.i)]!.accountId, borrowers: num(r.borrowers), firstId: r.firstId, firstSealed: r.firstId ? (sealed.get(r.firstId) ?? null) : null }));
  },
  async recordSwitch(c, row) {
    writerOf(c).run(q.recordSwitch(row));
  },
  async returnContext(c, paymentId) {
    const [r] = rowsOf<Parameters<typeof returnContextOf>[0]>(readerOf(c), q.returnContext(paymentId));
    return r ? returnContextOf(r) : undefined;
  },
  async streakCounts(c, s) {
    const db = readerOf(c);
    return {
      routing: countOf(db, q.streak(s, q.byRouting(s.routing))),
      day: countOf(db, q.streak(s, q.byDay(s.dayStart, s.dayEnd))),
      channel: countOf(db, q.streak(s, q.byChannel(s.channel))),
    };
  },
  async policyVersionsBefore(c, lenderId, until, limit) {
    return rowsOf<Parameters<typeof policyRowOf>[0]>(readerOf(c), q.policyVersionsBefore(lenderId, until, limit)).map(policyRowOf);
  },
  async insertReview(c, row) {
    writerOf(c).run(q.insertReview(row));
  },
  async reviewsPage(c, query) {
    return rowsOf<Parameters<typeof reviewRowOf>[0]>(readerOf(c), q.reviewsPage(query)).map(reviewRowOf);
  },
  async reviewsBetween(c, lenderId, fromDay, toDay, limit) {
    return rowsOf<Parameters<typeof reviewRowOf>[0]>(readerOf(c), q.reviewsBetween(lenderId, fromDay, toDay, limit)).map(reviewRowOf);
  },
  async alertCounts(c, lenderId, from, to) {
    return rowsOf<Parameters<typeof alertCountOf>[0]>(readerOf(c), q.alertCounts(lenderId, from, to)).map(alertCountOf);
  },
  async accountsConfirmed(c, lenderId, from, to) {
    return countOf(readerOf(c), q.accountsConfirmed(lenderId, from, to));
  },
};
