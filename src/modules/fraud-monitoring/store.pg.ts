import { sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import type { PgDb } from '../../platform/pg';
import { listOf, lockFor, num, readerOf, rows, writerOf } from '../../platform/sql/pg';
import type { FraudStore } from './store';
import { alertCountOf, alertRowOf, dispositionRowOf, fraudStatements, policyRowOf, returnContextOf, reviewRowOf } from './store-shared';

// Fraud monitoring's SQL on PostgreSQL: the statements of store.sqlite.ts (store-shared.ts), a list bound as one
// array. An alert raised for one fact by two transactions at once is one row: the second insert waits on the
// unique index and then does nothing. A policy change and a disposition each take a transaction-scoped lock
// first, so two at once are one after the other; a second final disposition waits on the partial unique index
// and then does nothing.

const q = fraudStatements({
  inTexts: (values) => sql`= ANY(${listOf(values)}::text[])`,
  channelOf: (column) => `(${column}::jsonb ->> 'channel')`,
  pairs: (values) =>
    sql`unnest(${listOf(values.map((v) => v[0]))}::text[], ${listOf(values.map((v) => v[1]))}::text[]) WITH ORDINALITY AS x(account, but, i)`,
});
const countOf = async (db: PgDb, query: SQL): Promise<number> => num((await rows<{ n: number | string }>(db, query))[0]?.n ?? 0);

export const pgFraudStore: FraudStore = {
  async latestPolicy(c, lenderId) {
    const [r] = await rows<Parameters<typeof policyRowOf>[0]>(readerOf(c), q.latestPolicy(lenderId));
    return r ? policyRowOf(r) : undefined;
  },
  async serializePolicy(c, lenderId) {
    await lockFor(c, 'fraud-policy', lenderId);
  },
  async insertPolicy(c, row) {
    await writerOf(c).execute(q.insertPolicy(row));
  },
  async insertAlert(c, row) {
    return (await rows(writerOf(c), q.insertAlert(row))).length === 1;
  },
  async alertOf(c, lenderId, id) {
    const [r] = await rows<Parameters<typeof alertRowOf>[0]>(readerOf(c), q.alertOf(lenderId, id));
    return r ? alertRowOf(r) : undefined;
  },
  async alertsPage(c, query) {
    return (await rows<Parameters<typeof alertRowOf>[0]>(readerOf(c), q.alertsPage(query))).map(alertRowOf);
  },
  async dispositionsOf(c, alertIds) {
    if (alertIds.length === 0) return [];
    return (await rows<Parameters<typeof dispositionRowOf>[0]>(readerOf(c), q.dispositionsOf(alertIds))).map(dispositionRowOf);
  },
  async serializeAlert(c, alertId) {
    await lockFor(c, 'fraud-alert', alertId);
  },
  async insertDisposition(c, row) {
    return (await rows(writerOf(c), q.insertDisposition(row))).length === 1;
  },
  async setAlertState(c, v) {
    return (await rows(writerOf(c), q.setAlertState(v))).length === 1;
  },
  async holdsDebit(c, enrollmentId) {
    return (await rows(readerOf(c), q.holdsDebit(enrollmentId))).length === 1;
  },
  async debitFacts(c, v) {
    const db = readerOf(c);
    const [sw] = await rows<{ id: string; at: number | string }>(db, q.lastSwitch(v.enrollmentId));
    return {
      earlierToAccount: (await rows(db, q.earlierToAccount(v.enrollmentId, v.bankAccountId, v.paymentId))).length,
      borrowerAmounts: (await rows<{ amountCents: number | string }>(db, q.borrowerAmounts(v.enrollmentId, v.paymentId))).map((r) => num(r.amountCents)),
      lenderAmounts: (await rows<{ amountCents: number | string }>(db, q.lenderAmounts(v.lenderId, v.paymentId))).map((r) => num(r.amountCents)),
      debitsToAccount: v.bankAccountId === null ? 0 : await countOf(db, q.debitsToAccount(v.bankAccountId, v.since, v.cap)),
      lastSwitch: sw ? { id: sw.id, at: num(sw.at) } : null,
    };
  },
  async accountSharing(c, lenderId, accounts, cap) {
    if (accounts.length === 0) return [];
    const db = readerOf(c);
    const found = await rows<{ i: number | string; borrowers: number | string; firstId: string | null }>(db, q.sharing(lenderId, accounts, cap));
    const firsts = [...new Set(found.flatMap((r) => (r.firstId ? [r.firstId] : [])))];
    const sealed = new Map(firsts.length > 0 ? (await rows<{ id: string; sealed: string | null }>(db, q.sealedOf(firsts))).map((r) => [r.id, r.sealed]) : []);
    // WITH ORDINALITY counts from 1.
    return found.map((r) => ({ accountId: accounts[num(r.i) - 1]!.accountId, borrowers: num(r.borrowers), firstId: r.firstId, firstSealed: r.firstId ? (sealed.get(r.firstId) ?? null) : null }));
  },
  async recordSwitch(c, row) {
    await writerOf(c).execute(q.recordSwitch(row));
  },
  async returnContext(c, paymentId) {
    const [r] = await rows<Parameters<typeof returnContextOf>[0]>(readerOf(c), q.returnContext(paymentId));
    return r ? returnContextOf(r) : undefined;
  },
  async streakCounts(c, s) {
    const db = readerOf(c);
    return {
      routing: await countOf(db, q.streak(s, q.byRouting(s.routing))),
      day: await countOf(db, q.streak(s, q.byDay(s.dayStart, s.dayEnd))),
      channel: await countOf(db, q.streak(s, q.byChannel(s.channel))),
    };
  },
  async policyVersionsBefore(c, lenderId, until, limit) {
    return (await rows<Parameters<typeof policyRowOf>[0]>(readerOf(c), q.policyVersionsBefore(lenderId, until, limit))).map(policyRowOf);
  },
  async insertReview(c, row) {
    await writerOf(c).execute(q.insertReview(row));
  },
  async reviewsPage(c, query) {
    return (await rows<Parameters<typeof reviewRowOf>[0]>(readerOf(c), q.reviewsPage(query))).map(reviewRowOf);
  },
  async reviewsBetween(c, lenderId, fromDay, toDay, limit) {
    return (await rows<Parameters<typeof reviewRowOf>[0]>(readerOf(c), q.reviewsBetween(lenderId, fromDay, toDay, limit))).map(reviewRowOf);
  },
  async alertCounts(c, lenderId, from, to) {
    return (await rows<Parameters<typeof alertCountOf>[0]>(readerOf(c), q.alertCounts(lenderId, from, to))).map(alertCountOf);
  },
  async accountsConfirmed(c, lenderId, from, to) {
    return countOf(readerOf(c), q.accountsConfirmed(lenderId, from, to));
  },
};
