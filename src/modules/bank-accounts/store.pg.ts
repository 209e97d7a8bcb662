import { sql, type SQL } from 'drizzle-orm';
import { ACCOUNT_STATE_SEVERITY } from '../../adapters/processors/account-states';
import { listOf, lockFor, readerOf, rows, writerOf } from '../../platform/sql/pg';
import type { BankAccountStore, LinkedAccount } from './store';
import { ACCOUNT_COLUMNS, accountRowOf, changeRowOf, changeStatements, changeWithTotalOf, severityOf, standingColumns, standingOf, type RawStanding } from './store-shared';

// The bank accounts' SQL on PostgreSQL (store.sqlite.ts is the SQLite one). Transactions run side by side:
// - an account (or the fingerprint key) made on first use is one INSERT … ON CONFLICT DO NOTHING: a second
//   transaction making the same one waits for the first, then makes nothing, and its next statement reads what
//   the first committed. Accounts are made in the order of their fingerprints, so two enrollments never wait
//   on each other in a cycle;
// - a return is one UPDATE computing the state from the row it updates, so two returns of one account (two
//   borrowers) never lose one another's code, whichever commits first.

type RawRow = Parameters<typeof accountRowOf>[0];

/** The Notifications of Change's statements, as PostgreSQL binds a list (an array) and a fingerprint (decode). */
const q = changeStatements({ inTexts: (values) => sql`= ANY(${listOf(values)}::text[])`, bytes: (hex) => sql`decode(${hex}, 'hex')`, forUpdate: sql`FOR UPDATE` });
const runOf = async (db: Parameters<typeof rows>[0], query: SQL): Promise<void> => void (await db.execute(query));

export const pgBankAccountStore: BankAccountStore = {
  async sealedSecret(c, name) {
    const [r] = await rows<{ v: string }>(readerOf(c), sql`SELECT secret_sealed AS v FROM service_secrets WHERE name = ${name}`);
    return r?.v;
  },
  async keepSecret(c, v) {
    await writerOf(c).execute(sql`INSERT INTO service_secrets (name, secret_sealed, created_at) VALUES (${v.name}, ${v.sealed}, ${v.now}) ON CONFLICT (name) DO NOTHING`);
  },
  async accountsFor(c, lenderId, accounts, now) {
    const out = new Map<string, LinkedAccount>();
    if (accounts.length === 0) return out;
    // The first of each fingerprint, as on SQLite.
    const distinct = new Map<string, (typeof accounts)[number]>();
    for (const a of accounts) if (!distinct.has(a.fingerprint)) distinct.set(a.fingerprint, a);
    const list = [...distinct.values()].sort((x, y) => (x.fingerprint < y.fingerprint ? -1 : x.fingerprint > y.fingerprint ? 1 : 0));
    const tx = writerOf(c);
    await tx.execute(sql`
      INSERT INTO bank_accounts (id, lender_id, fingerprint, last4, state, state_since, created_at, updated_at)
      SELECT id, ${lenderId}, decode(fp, 'hex'), l4, 'ok', ${now}::bigint, ${now}::bigint, ${now}::bigint
        FROM unnest(${listOf(list.map((a) => a.id))}::text[], ${listOf(list.map((a) => a.fingerprint))}::text[], ${listOf(list.map((a) => a.last4))}::text[]) WITH ORDINALITY AS s(id, fp, l4, n)
       ORDER BY n
      ON CONFLICT (lender_id, fingerprint) DO NOTHING`);
    const found = await rows<RawStanding & { id: string; fp: string }>(
      tx,
      sql`SELECT id, encode(fingerprint, 'hex') AS fp, ${sql.raw(standingColumns(''))} FROM bank_accounts
           WHERE lender_id = ${lenderId} AND fingerprint = ANY(SELECT decode(h, 'hex') FROM unnest(${listOf(list.map((a) => a.fingerprint))}::text[]) AS h)`,
    );
    for (const r of found) out.set(r.fp, { id: r.id, ...standingOf(r) });
    return out;
  },
  async recordValidations(c, list) {
    await writerOf(c).execute(sql`
      UPDATE bank_accounts b SET validation_method = v.method, validation_source = v.source, validation_reference = v.reference,
             validated_at = v.at, updated_at = GREATEST(b.updated_at, v.at),
             blocks_due_at = GREATEST(COALESCE(b.blocks_due_at, 0) + 1, v.at)
        FROM unnest(${listOf(list.map((e) => e.id))}::text[], ${listOf(list.map((e) => e.method))}::text[], ${listOf(list.map((e) => e.source))}::text[],
                    ${listOf(list.map((e) => e.reference))}::text[], ${listOf(list.map((e) => e.at))}::bigint[]) AS v(id, method, source, reference, at)
       WHERE b.id = v.id AND (b.validated_at IS NULL OR b.validated_at < v.at)`);
  },
  async recordReturn(c, v) {
    const rank = ACCOUNT_STATE_SEVERITY.indexOf(v.state);
    const worse = sql`${rank}::int > ${sql.raw(severityOf('state'))}`;
    const at = sql`${v.at}::bigint`;
    await writerOf(c).execute(sql`
      UPDATE bank_accounts SET
             state = CASE WHEN ${worse} THEN ${v.state}::text ELSE state END,
             state_since = CASE WHEN ${worse} THEN ${at} ELSE state_since END,
             state_reference = CASE WHEN ${worse} THEN ${v.reference}::text ELSE state_reference END,
             return_codes = CASE WHEN ${v.code}::text IS NULL THEN return_codes
                                 WHEN return_codes IS NULL THEN ${v.code}::text
                                 WHEN strpos(',' || return_codes || ',', ',' || ${v.code}::text || ',') > 0 THEN return_codes
                                 ELSE return_codes || ',' || ${v.code}::text END,
             last_return_at = CASE WHEN ${v.code}::text IS NULL THEN last_return_at ELSE GREATEST(COALESCE(last_return_at, ${at}), ${at}) END,
             blocks_due_at = GREATEST(COALESCE(blocks_due_at, 0) + 1, ${at}),
             updated_at = ${at}
       WHERE id = ${v.id}`);
  },
  async accountsPage(c, q) {
    const state = q.state ? sql`AND state = ${q.state}` : sql``;
    const found = await rows<RawRow>(
      readerOf(c),
      sql`SELECT ${sql.raw(ACCOUNT_COLUMNS)} FROM bank_accounts WHERE lender_id = ${q.lenderId} ${state} AND id > ${q.after} ORDER BY id LIMIT ${q.limit}`,
    );
    return found.map(accountRowOf);
  },
  async accountOf(c, lenderId, id) {
    const [r] = await rows<RawRow>(readerOf(c), sql`SELECT ${sql.raw(ACCOUNT_COLUMNS)} FROM bank_accounts WHERE id = ${id} AND lender_id = ${lenderId}`);
    return r ? accountRowOf(r) : undefined;
  },
  async borrowersOn(c, accountIds, perAccount) {
    if (accountIds.length === 0) return [];
    const found = await rows<{ accountId: string; aid: string; total: string }>(
      readerOf(c),
      sql`SELECT "accountId", aid, total FROM (
            SELECT bank_account_id AS "accountId", authorizer_unique_id AS aid,
                   ROW_NUMBER() OVER (PARTITION BY bank_account_id ORDER BY authorizer_unique_id) AS n,
                   COUNT(*) OVER (PARTITION BY bank_account_id) AS total
              FROM enrollments WHERE bank_account_id = ANY(${listOf(accountIds)}::text[])) AS e
           WHERE n <= ${perAccount} ORDER BY "accountId", aid`,
    );
    return found.map((r) => ({ accountId: r.accountId, aid: r.aid, total: Number(r.total) }));
  },
  async unvalidatedAmong(c, enrollmentIds) {
    if (enrollmentIds.length === 0) return [];
    return (await rows<{ id: string }>(readerOf(c), q.unvalidatedAmong(enrollmentIds))).map((r) => r.id);
  },
  async accountOfMatch(c, paymentId, enrollmentId) {
    const [r] = await rows<{ id: string; last4: string }>(readerOf(c), q.accountOfMatch(paymentId, enrollmentId));
    return r;
  },
  async serializeAccount(c, accountId) {
    await lockFor(c, 'bank-account', accountId);
  },
  async insertChange(c, row) {
    return (await rows(writerOf(c), q.insert(row))).length === 1;
  },
  async holdForChange(c, v) {
    await runOf(writerOf(c), q.hold(v));
  },
  async changeOf(c, id, lenderId) {
    const [r] = await rows<Parameters<typeof changeRowOf>[0]>(readerOf(c), q.changeOf(id, lenderId));
    return r ? changeRowOf(r) : undefined;
  },
  async changesToApply(c, limit) {
    return rows<{ id: string }>(readerOf(c), q.toApply(limit));
  },
  async changesOn(c, accountIds, perAccount) {
    if (accountIds.length === 0) return [];
    return (await rows<Parameters<typeof changeWithTotalOf>[0]>(readerOf(c), q.changesOn(accountIds, perAccount))).map(changeWithTotalOf);
  },


  async accountByFingerprint(c, lenderId, fingerprint) {
    const [r] = await rows<{ id: string }>(readerOf(c), q.byFingerprint(lenderId, fingerprint));
    return r?.id;
  },

  async finishChange(c, v) {
    await runOf(writerOf(c), q.finishChange({ changeId: v.changeId, status: v.status, by: v.by, now: v.now }));
    await runOf(writerOf(c), q.finishAccount(v));
  },
  async confirmChange(c, lenderId, id) {
    return (await rows(writerOf(c), q.confirm(lenderId, id))).length === 1;
  },
  async accountsToTell(c, limit) {
    const found = await rows<{ id: string; due: string }>(
      readerOf(c),
      sql`SELECT id, blocks_due_at AS due FROM bank_accounts WHERE blocks_due_at IS NOT NULL ORDER BY blocks_due_at LIMIT ${limit}`,
    );
    return found.map((r) => ({ id: r.id, due: Number(r.due) }));
  },
  async monitoredOn(c, accountId, after, limit) {
    return rows<{ id: string }>(
      readerOf(c),
      sql`SELECT id FROM enrollments WHERE bank_account_id = ${accountId} AND state = 'monitored' AND id > ${after} ORDER BY id LIMIT ${limit}`,
    );
  },
  async told(c, id, due) {
    await writerOf(c).execute(sql`UPDATE bank_accounts SET blocks_due_at = NULL WHERE id = ${id} AND blocks_due_at = ${due}::bigint`);
  },
};
