import { sql } from 'drizzle-orm';
import { listOf, readerOf, rows, writerOf } from '../../platform/sql/pg';
import type { RightsNoticeStore } from './store';
import { attemptsOfLender, latestRowOf, noticeRowOf, noticeStatements } from './store-shared';

// The consumer-rights notices' SQL on PostgreSQL: the statements of store.sqlite.ts (store-shared.ts), a list
// bound as one array. A notice made twice for one reference, by two transactions at once, is one row: the
// second insert waits on the unique index and then does nothing; a notice recorded as sent twice at once is
// recorded by the first update, and the second finds it sent.

const q = noticeStatements({ inTexts: (values) => sql`= ANY(${listOf(values)}::text[])` });

export const pgRightsNoticeStore: RightsNoticeStore = {
  async attemptsOf(c, lenderId, paymentIds) {
    if (paymentIds.length === 0) return [];
    return attemptsOfLender(await rows(readerOf(c), q.attemptsOf(paymentIds)), lenderId);
  },
  async insertNotice(c, row) {
    return (await rows(writerOf(c), q.insert(row))).length === 1;
  },
  async oldestOpen(c, enrollmentId) {
    const [r] = await rows<Parameters<typeof noticeRowOf>[0]>(readerOf(c), q.oldestOpen(enrollmentId));
    return r ? noticeRowOf(r) : undefined;
  },
  async markSent(c, v) {
    return (await rows(writerOf(c), q.markSent(v))).length === 1;
  },
  async latestAmong(c, enrollmentIds) {
    if (enrollmentIds.length === 0) return [];
    return (await rows<Parameters<typeof latestRowOf>[0]>(readerOf(c), q.latestAmong(enrollmentIds))).map(latestRowOf);
  },
  async noticesPage(c, query) {
    return (await rows<Parameters<typeof noticeRowOf>[0]>(readerOf(c), q.page(query))).map(noticeRowOf);
  },
};
