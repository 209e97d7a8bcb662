import type { BlockingAccountState } from '../../adapters/processors/account-states';
import type { Db } from '../../platform/db';
import { readerOf } from '../../platform/sql/sqlite';
import type { AchReportStore, ChangeCount, ChangeRow } from './store';
import { BLOCKING_STATES, timelinessOf } from './store-shared';

// The ACH report's reads on SQLite (store.pg.ts is the PostgreSQL one), raw cached statements: the month's
// Notifications of Change off account_changes_lender_idx (lender, received_at), the accounts blocked in it off
// bank_accounts_lender_state_idx, one seek per blocking state (the lender's ok accounts are never read).

const changeCounts = (db: Db, lenderId: string, from: number, to: number, now: number): ChangeCount[] =>
  db.$client
    .query<ChangeCount, [string, number, number, number]>(
      `SELECT code, status, ${timelinessOf('?4')} AS timeliness, COUNT(*) AS n
         FROM account_changes INDEXED BY account_changes_lender_idx
        WHERE lender_id = ?1 AND received_at BETWEEN ?2 AND ?3
        GROUP BY 1, 2, 3`,
    )
    .all(lenderId, from, to, now);

const changesIn = (db: Db, lenderId: string, from: number, to: number, now: number, limit: number): ChangeRow[] =>
  db.$client
    .query<ChangeRow, [string, number, number, number, number]>(
      `SELECT id, code, status, bank_account_id AS bankAccountId, received_at AS receivedAt, due_by AS dueBy, applied_at AS appliedAt,
              ${timelinessOf('?4')} AS timeliness
         FROM account_changes INDEXED BY account_changes_lender_idx
        WHERE lender_id = ?1 AND received_at BETWEEN ?2 AND ?3
        ORDER BY received_at, id LIMIT ?5`,
    )
    .all(lenderId, from, to, now, limit);

const blockedCounts = (db: Db, lenderId: string, from: number, to: number) =>
  db.$client
    .query<{ state: BlockingAccountState; n: number }, [string, number, number]>(
      `SELECT state, COUNT(*) AS n FROM bank_accounts INDEXED BY bank_accounts_lender_state_idx
        WHERE lender_id = ?1 AND state IN (${BLOCKING_STATES}) AND state_since BETWEEN ?2 AND ?3
        GROUP BY state`,
    )
    .all(lenderId, from, to);

export const sqliteAchReportStore: AchReportStore = {
  async changeCounts(c, lenderId, from, to, now) {
    return changeCounts(readerOf(c), lenderId, from, to, now);
  },
  async changesIn(c, lenderId, from, to, now, limit) {
    return changesIn(readerOf(c), lenderId, from, to, now, limit);
  },
  async blockedCounts(c, lenderId, from, to) {
    return blockedCounts(readerOf(c), lenderId, from, to);
  },
};
