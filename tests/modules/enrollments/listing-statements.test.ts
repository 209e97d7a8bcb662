// GET /v1/payment_enrollments reads a page in a fixed number of statements, whatever its size: the borrowers'
// ledgers, payments, last readings and bank links' health are read for the whole page at once, never one
// borrower at a time (a page of 50 borrowers used to make up to 250 statements).
import type { Database } from 'bun:sqlite';
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { startFakePlaid } from '../../fakes/plaid-server';
import { cycle, dispatchAndSettle } from '../../helpers/collection';

const plaid = startFakePlaid();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  plaid.stop();
});

const BORROWERS = 50;
const SETTLE = 60_000;
const aidOf = (i: number) => `page-${String(i).padStart(3, '0')}`;
const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';

const EXECUTIONS = new Set<PropertyKey>(['all', 'get', 'run', 'values', 'iterate']);

/**
 * Counts the statements the service runs from now on, on either engine: on SQLite each execution of a statement
 * handed out by one of its connections (the writer and the read-only one) or by their query builders, on PostgreSQL each query sent through
 * the pool (every store statement goes through Drizzle, which sends it with `unsafe`).
 */
function statementCounter(c: TestContext): { count: () => number; stop: () => void } {
  let n = 0;
  const undo: (() => void)[] = [];
  const patch = <T extends object, K extends keyof T>(target: T, key: K, wrap: (orig: T[K]) => T[K]) => {
    const orig = target[key];
    target[key] = wrap(orig);
    undo.push(() => {
      target[key] = orig;
    });
  };
  if (c.rt.pg) {
    const pool = c.rt.pg.sql as unknown as { unsafe: (...a: unknown[]) => unknown };
    patch(pool, 'unsafe', (orig) => (...a: unknown[]) => {
      n++;
      return orig.apply(pool, a);
    });
  } else {
    const counted = <S extends object>(stmt: S): S =>
      new Proxy(stmt, {
        get(t, p) {
          const v = Reflect.get(t, p, t) as unknown;
          if (typeof v !== 'function') return v;
          return (...a: unknown[]) => {
            if (EXECUTIONS.has(p)) n++;
            const out = (v as (...x: unknown[]) => unknown).apply(t, a);
            // A statement's settings (safeIntegers, as) answer the statement: its executions are counted too.
            return out === t ? counted(t) : out;
          };
        },
      });
    for (const db of new Set([c.rt.sqlite, c.rt.reader.$client])) {
      patch(db, 'query', (orig) => ((sql: string) => counted(orig.call(db, sql))) as typeof orig);
      patch(db, 'prepare', (orig) => ((...a: Parameters<typeof orig>) => counted(orig.apply(db, a))) as typeof orig);
    }
    // The query builder asks its own client, which keeps each statement once prepared (platform/db.ts) and
    // hands it out on every call: what it hands out is counted.
    for (const orm of new Set([c.rt.db, c.rt.reader])) {
      const session = (orm as unknown as { session: { client: Database } }).session;
      patch(session, 'client', (client) =>
        new Proxy(client, {
          get(t, p) {
            const v = Reflect.get(t, p, t) as unknown;
            return p === 'prepare' ? (sql: string) => counted(t.prepare(sql)) : v;
          },
        }),
      );
    }
  }
  return { count: () => n, stop: () => undo.reverse().forEach((u) => u()) };
}

/** A lender's borrowers with everything a listing shows of them: bank links (some needing the borrower), readings, payments, ledger entries. */
async function borrowersWithHistory(): Promise<TestContext> {
  const c = createTestContext({ PLAID_API_URL: plaid.url, SANDBOX_SETTLEMENT_MS: String(SETTLE) }, { clockAt: new Date().toISOString() });
  contexts.push(c);
  plaid.addClient('client_listing', 'secret-listing');
  expect(
    (await c.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: 'client_listing', secret: 'secret-listing', environment: 'production' } })).status,
  ).toBe(201);
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_listing_00000000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
  const borrowers = Array.from({ length: BORROWERS }, (_, i) => {
    const token = `access-production-listing-${i}`;
    plaid.addItem(token, [{ account_id: `acct-listing-${i}`, available: 1000 + i, current: 1200 + i }]);
    // Every fifth link needs the borrower (not the first: a page of one shows every kind of row): its health
    // shows an open episode, and its account is neither read nor debited.
    if (i % 5 === 4) plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
    return enrollBorrower(aidOf(i), { bank_link: { provider: 'plaid', access_token: token, account_id: `acct-listing-${i}` } });
  });
  const enrolled = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
  expect(enrolled.status).toBe(207);
  expect(enrolled.body.enrolled).toBe(BORROWERS);
  // Read through the links, and debited where the balance covers the amount: a payment, settled and credited.
  await cycle(c);
  await dispatchAndSettle(c, SETTLE);

  // Two more payments each, reported by the lender, one of them then returned: credits and a reversal in every ledger.
  const upload = async (rows: string[]) => {
    const form = new FormData();
    form.append('file', new File([[HEADER, ...rows].join('\n') + '\n'], 'results.csv', { type: 'text/csv' }));
    const res = await c.request('POST', '/v1/payment_results/uploads', { form });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { problems: unknown[] };
    expect(body.problems).toEqual([]);
  };
  await upload(
    Array.from({ length: BORROWERS }, (_, i) => [
      `${aidOf(i)},INV-${i}-a,${10 + i}.25,settled,2026-11-02,2026-11-03,,`,
      `${aidOf(i)},INV-${i}-b,${20 + i}.50,settled,2026-11-02,2026-11-03,,`,
    ]).flat(),
  );
  await upload(Array.from({ length: BORROWERS }, (_, i) => `${aidOf(i)},INV-${i}-b,${20 + i}.50,returned,2026-11-02,2026-11-03,2026-11-05,R01`));
  return c;
}

describe('GET /v1/payment_enrollments', () => {
  test('a page of 50 borrowers is read in as many statements as a page of 1', async () => {
    const c = await borrowersWithHistory();
    const full = (await c.json('GET', `/v1/payment_enrollments?limit=${BORROWERS}`)).body;
    // What each borrower holds is on the page, so the reads counted below have rows to read.
    expect(full.enrollments).toHaveLength(BORROWERS);
    for (const e of full.enrollments) {
      expect(e.last_read).not.toBeNull();
      expect(e.bank_link).not.toBeNull();
      expect(e.ledger.entries.length).toBeGreaterThanOrEqual(3);
    }
    // The linked accounts that could be read were debited.
    expect(full.enrollments.filter((e: { payments: unknown[] }) => e.payments.length === 1)).toHaveLength(BORROWERS - BORROWERS / 5);
    expect(full.enrollments.filter((e: { bank_link: { health: { status: string } } }) => e.bank_link.health.status !== 'ok')).toHaveLength(BORROWERS / 5);

    const statementsOf = async (limit: number) => {
      const counter = statementCounter(c);
      try {
        const r = await c.json('GET', `/v1/payment_enrollments?limit=${limit}`);
        expect(r.status).toBe(200);
        expect(r.body.enrollments).toHaveLength(limit);
        return counter.count();
      } finally {
        counter.stop();
      }
    };
    const one = await statementsOf(1);
    const fifty = await statementsOf(BORROWERS);
    // The counter sees the listing's reads: the page, and the rows shown of its borrowers.
    expect(one).toBeGreaterThanOrEqual(6);
    expect(fifty).toBe(one);
  }, 60_000);
});
