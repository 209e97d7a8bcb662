import { sql } from 'drizzle-orm';
import type { BlockingAccountState } from '../../adapters/processors/account-states';
import { num, numOrNull, readerOf, rows } from '../../platform/sql/pg';
import type { AchReportStore, ChangeCount, ChangeRow } from './store';
import { BLOCKING_STATES, timelinessOf } from './store-shared';

// The ACH report's reads on PostgreSQL, the same statements as store.sqlite.ts on the same indexes
// (account_changes_lender_idx, bank_accounts_lender_state_idx), chosen by the planner. Numbers come back as
// text from a raw query (int8) and are read with num.

/** The timeliness CASE (store-shared.ts) with the report's time as a parameter, where the shared text names it. */
const [BEFORE_NOW, AFTER_NOW] = timelinessOf('\u0000').split('\u0000') as [string, string];
const timeliness = (now: number) => sql`${sql.raw(BEFORE_NOW)}${now}::bigint${sql.raw(AFTER_NOW)}`;

export const pgAchReportStore: AchReportStore = {
  async changeCounts(c, lenderId, from, to, now) {
    const found = await rows<Omit<ChangeCount, 'n'> & { n: string }>(
      readerOf(c),
      sql`SELECT code, status, ${timeliness(now)} AS timeliness, count(*) AS n
            FROM account_changes
           WHERE lender_id = ${lenderId} AND received_at BETWEEN ${from} AND ${to}
           GROUP BY 1, 2, 3`,
    );
    return found.map((r) => ({ ...r, n: num(r.n) }));
  },
  async changesIn(c, lenderId, from, to, now, limit) {
    const found = await rows<Omit<ChangeRow, 'receivedAt' | 'dueBy' | 'appliedAt'> & { receivedAt: string; dueBy: string; appliedAt: string | null }>(
      readerOf(c),
      sql`SELECT id, code, status, bank_account_id AS "bankAccountId", received_at AS "receivedAt", due_by AS "dueBy", applied_at AS "appliedAt",
                 ${timeliness(now)} AS timeliness
            FROM account_changes
           WHERE lender_id = ${lenderId} AND received_at BETWEEN ${from} AND ${to}
           ORDER BY received_at, id LIMIT ${limit}`,
    );
    return found.map((r) => ({ ...r, receivedAt: num(r.receivedAt), dueBy: num(r.dueBy), appliedAt: numOrNull(r.appliedAt) }));
  },
  async blockedCounts(c, lenderId, from, to) {
    const found = await rows<{ state: BlockingAccountState; n: string }>(
      readerOf(c),
      sql`SELECT state, count(*) AS n FROM bank_accounts
           WHERE lender_id = ${lenderId} AND state IN (${sql.raw(BLOCKING_STATES)}) AND state_since BETWEEN ${from} AND ${to}
           GROUP BY state`,
    );
    return found.map((r) => ({ state: r.state, n: num(r.n) }));
  },
};
