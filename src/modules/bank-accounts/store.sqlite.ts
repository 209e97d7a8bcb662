import { ACCOUNT_STATE_SEVERITY } from '../../adapters/processors/account-states';
import type { Db, Orm } from '../../platform/db';
import { listOf, lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { BankAccountStore, LinkedAccount } from './store';
import { sql, type SQL } from 'drizzle-orm';
import { ACCOUNT_COLUMNS, accountRowOf, changeRowOf, changeStatements, changeWithTotalOf, severityOf, standingColumns, standingOf, type RawStanding } from './store-shared';

// The bank accounts' SQL on SQLite (store.pg.ts is the PostgreSQL one). One writer at a time: an account made
// on first use is made by one statement that does nothing when it exists, and read back in the same
// transaction. Raw cached statements; a list read or updated at once is bound as one JSON parameter.

type RawRow = Parameters<typeof accountRowOf>[0];

/**
 * Accounts made where new, in the order of their fingerprints. A cached statement run once a row rather than one
 * INSERT … SELECT over the list: SQLite checks a statement that may write many rows into a parent table against
 * every table that refers to it (enrollments, account_changes), a lookup each per row, and a row inserted alone
 * cannot break a foreign key.
 */
function makeAccounts(tx: Orm, lenderId: string, list: { id: string; fp: string; l4: string }[], now: number): void {
  const insert = tx.$client.query<unknown, [string, string, string, string, number]>(
    `INSERT INTO bank_accounts (id, lender_id, fingerprint, last4, state, state_since, created_at, updated_at)
     VALUES (?1, ?2, unhex(?3), ?4, 'ok', ?5, ?5, ?5)
     ON CONFLICT (lender_id, fingerprint) DO NOTHING`,
  );
  for (const a of [...list].sort((x, y) => (x.fp < y.fp ? -1 : x.fp > y.fp ? 1 : 0))) insert.run(a.id, lenderId, a.fp, a.l4, now);
}

/** The lender's accounts of these fingerprints (a JSON list of hex), with their standing. */
const standingsOf = (db: Db, lenderId: string, fingerprints: string) =>
  db.$client
    .query<RawStanding & { id: string; fp: string }, [string, string]>(
      `SELECT lower(hex(fingerprint)) AS fp, id, ${standingColumns('')} FROM bank_accounts
        WHERE lender_id = ?1 AND fingerprint IN (SELECT unhex(value) FROM json_each(?2))`,
    )
    .all(lenderId, fingerprints);

/** The Notifications of Change's statements, as SQLite binds a list (JSON) and a fingerprint (unhex). */
const q = changeStatements({ inTexts: (values) => sql`IN (SELECT value FROM json_each(${listOf(values)}))`, bytes: (hex) => sql`unhex(${hex})`, forUpdate: sql`` });
const rowsOf = async <T = unknown>(db: Db, query: SQL): Promise<T[]> => db.all<T>(query);
const runOf = (tx: Orm, query: SQL): void => void tx.run(query);

export const sqliteBankAccountStore: BankAccountStore = {
  async sealedSecret(c, name) {
    return readerOf(c).$client.query<{ v: string }, [string]>('SELECT secret_sealed AS v FROM service_secrets WHERE name = ?').get(name)?.v;
  },
  async keepSecret(c, v) {
    writerOf(c)
      .$client.query('INSERT INTO service_secrets (name, secret_sealed, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING')
      .run(v.name, v.sealed, v.now);
  },
  async accountsFor(c, lenderId, accounts, now) {
    const out = new Map<string, LinkedAccount>();
    if (accounts.length === 0) return out;
    // The first of each fingerprint, made where new, then read back in one statement (an enrollment links up to 1000).
    const distinct = new Map<string, { id: string; fp: string; l4: string }>();
    for (const a of accounts) if (!distinct.has(a.fingerprint)) distinct.set(a.fingerprint, { id: a.id, fp: a.fingerprint, l4: a.last4 });
    const tx = writerOf(c);
    makeAccounts(tx, lenderId, [...distinct.values()], now);
    for (const r of standingsOf(tx, lenderId, listOf([...distinct.keys()]))) out.set(r.fp, { id: r.id, ...standingOf(r) });
    return out;
  },
  async recordValidations(c, list) {
    writerOf(c)
      .$client.query(
        `UPDATE bank_accounts SET validation_method = v.value ->> 'method', validation_source = v.value ->> 'source',
                validation_reference = v.value ->> 'reference', validated_at = v.value ->> 'at', updated_at = max(updated_at, v.value ->> 'at'),
                blocks_due_at = max(COALESCE(blocks_due_at, 0) + 1, v.value ->> 'at')
           FROM json_each(?) AS v
          WHERE bank_accounts.id = v.value ->> 'id' AND (bank_accounts.validated_at IS NULL OR bank_accounts.validated_at < v.value ->> 'at')`,
      )
      .run(listOf(list));
  },
  async recordReturn(c, v) {
    writerOf(c)
      .$client.query(
        `UPDATE bank_accounts SET
            state = CASE WHEN ?2 > ${severityOf('state')} THEN ?3 ELSE state END,
            state_since = CASE WHEN ?2 > ${severityOf('state')} THEN ?6 ELSE state_since END,
            state_reference = CASE WHEN ?2 > ${severityOf('state')} THEN ?5 ELSE state_reference END,
            return_codes = CASE WHEN ?4 IS NULL THEN return_codes
                                WHEN return_codes IS NULL THEN ?4
                                WHEN instr(',' || return_codes || ',', ',' || ?4 || ',') > 0 THEN return_codes
                                ELSE return_codes || ',' || ?4 END,
            last_return_at = CASE WHEN ?4 IS NULL THEN last_return_at ELSE MAX(COALESCE(last_return_at, ?6), ?6) END,
            blocks_due_at = MAX(COALESCE(blocks_due_at, 0) + 1, ?6),
            updated_at = ?6
          WHERE id = ?1`,
      )
      .run(v.id, ACCOUNT_STATE_SEVERITY.indexOf(v.state), v.state, v.code, v.reference, v.at);
  },
  async accountsPage(c, q) {
    const db = readerOf(c);
    const rows = q.state
      ? db.$client
          .query<RawRow, [string, string, string, number]>(
            `SELECT ${ACCOUNT_COLUMNS} FROM bank_accounts INDEXED BY bank_accounts_lender_state_idx WHERE lender_id = ? AND state = ? AND id > ? ORDER BY id LIMIT ?`,
          )
          .all(q.lenderId, q.state, q.after, q.limit)
      : db.$client
          .query<RawRow, [string, string, number]>(`SELECT ${ACCOUNT_COLUMNS} FROM bank_accounts INDEXED BY bank_accounts_lender_idx WHERE lender_id = ? AND id > ? ORDER BY id LIMIT ?`)
          .all(q.lenderId, q.after, q.limit);
    return rows.map(accountRowOf);
  },
  async accountOf(c, lenderId, id) {
    const r = readerOf(c).$client.query<RawRow, [string, string]>(`SELECT ${ACCOUNT_COLUMNS} FROM bank_accounts WHERE id = ? AND lender_id = ?`).get(id, lenderId);
    return r ? accountRowOf(r) : undefined;
  },
  async borrowersOn(c, accountIds, perAccount) {
    if (accountIds.length === 0) return [];
    return readerOf(c)
      .$client.query<{ accountId: string; aid: string; total: number }, [string, number]>(
        `SELECT accountId, aid, total FROM (
           SELECT bank_account_id AS accountId, authorizer_unique_id AS aid,
                  ROW_NUMBER() OVER (PARTITION BY bank_account_id ORDER BY authorizer_unique_id) AS n,
                  COUNT(*) OVER (PARTITION BY bank_account_id) AS total
             FROM enrollments INDEXED BY enrollments_bank_account_idx
            WHERE bank_account_id IN (SELECT value FROM json_each(?1)))
          WHERE n <= ?2 ORDER BY accountId, aid`,
      )
      .all(listOf(accountIds), perAccount);
  },
  async unvalidatedAmong(c, enrollmentIds) {
    if (enrollmentIds.length === 0) return [];
    return (await rowsOf<{ id: string }>(readerOf(c), q.unvalidatedAmong(enrollmentIds))).map((r) => r.id);
  },
  async accountOfMatch(c, paymentId, enrollmentId) {
    const [r] = await rowsOf<{ id: string; last4: string }>(readerOf(c), q.accountOfMatch(paymentId, enrollmentId));
    return r;
  },
  async serializeAccount(c, accountId) {
    await lockFor(c, 'bank-account', accountId);
  },
  async insertChange(c, row) {
    return (await rowsOf(writerOf(c), q.insert(row))).length === 1;
  },
  async holdForChange(c, v) {
    runOf(writerOf(c), q.hold(v));
  },
  async changeOf(c, id, lenderId) {
    const [r] = await rowsOf<Parameters<typeof changeRowOf>[0]>(readerOf(c), q.changeOf(id, lenderId));
    return r ? changeRowOf(r) : undefined;
  },
  async changesToApply(c, limit) {
    return rowsOf<{ id: string }>(readerOf(c), q.toApply(limit));
  },
  async changesOn(c, accountIds, perAccount) {
    if (accountIds.length === 0) return [];
    return (await rowsOf<Parameters<typeof changeWithTotalOf>[0]>(readerOf(c), q.changesOn(accountIds, perAccount))).map(changeWithTotalOf);
  },


  async accountByFingerprint(c, lenderId, fingerprint) {
    const [r] = await rowsOf<{ id: string }>(readerOf(c), q.byFingerprint(lenderId, fingerprint));
    return r?.id;
  },

  async finishChange(c, v) {
    runOf(writerOf(c), q.finishChange({ changeId: v.changeId, status: v.status, by: v.by, now: v.now }));
    runOf(writerOf(c), q.finishAccount(v));
  },
  async confirmChange(c, lenderId, id) {
    return (await rowsOf(writerOf(c), q.confirm(lenderId, id))).length === 1;
  },
  async accountsToTell(c, limit) {
    return readerOf(c)
      .$client.query<{ id: string; due: number }, [number]>(
        'SELECT id, blocks_due_at AS due FROM bank_accounts INDEXED BY bank_accounts_blocks_due_idx WHERE blocks_due_at IS NOT NULL ORDER BY blocks_due_at LIMIT ?',
      )
      .all(limit);
  },
  async monitoredOn(c, accountId, after, limit) {
    return readerOf(c)
      .$client.query<{ id: string }, [string, string, number]>(
        `SELECT id FROM enrollments INDEXED BY enrollments_bank_account_idx WHERE bank_account_id = ? AND state = 'monitored' AND id > ? ORDER BY id LIMIT ?`,
      )
      .all(accountId, after, limit);
  },
  async told(c, id, due) {
    writerOf(c).$client.query('UPDATE bank_accounts SET blocks_due_at = NULL WHERE id = ? AND blocks_due_at = ?').run(id, due);
  },
};
