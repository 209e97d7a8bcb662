import { sql, type SQL } from 'drizzle-orm';
import type { Db, Orm } from '../../platform/db';
import { listOf, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { RightsNoticeStore } from './store';
import { attemptsOfLender, latestRowOf, noticeRowOf, noticeStatements } from './store-shared';

// The consumer-rights notices' SQL on SQLite (store.pg.ts is the PostgreSQL one): the shared statements, lists
// bound as one JSON parameter. One writer at a time: a notice made twice for one reference is one insert that
// does nothing the second time.

const q = noticeStatements({ inTexts: (values) => sql`IN (SELECT value FROM json_each(${listOf(values)}))` });
const rowsOf = <T>(db: Db | Orm, query: SQL): T[] => db.all<T>(query);

export const sqliteRightsNoticeStore: RightsNoticeStore = {
  async attemptsOf(c, lenderId, paymentIds) {
    if (paymentIds.length === 0) return [];
    return attemptsOfLender(rowsOf(readerOf(c), q.attemptsOf(paymentIds)), lenderId);
  },
  async insertNotice(c, row) {
    return rowsOf(writerOf(c), q.insert(row)).length === 1;
  },
  async oldestOpen(c, enrollmentId) {
    const [r] = rowsOf<Parameters<typeof noticeRowOf>[0]>(readerOf(c), q.oldestOpen(enrollmentId));
    return r ? noticeRowOf(r) : undefined;
  },
  async markSent(c, v) {
    return rowsOf(writerOf(c), q.markSent(v)).length === 1;
  },
  async latestAmong(c, enrollmentIds) {
    if (enrollmentIds.length === 0) return [];
    return rowsOf<Parameters<typeof latestRowOf>[0]>(readerOf(c), q.latestAmong(enrollmentIds)).map(latestRowOf);
  },
  async noticesPage(c, query) {
    return rowsOf<Parameters<typeof noticeRowOf>[0]>(readerOf(c), q.page(query)).map(noticeRowOf);
  },
};
